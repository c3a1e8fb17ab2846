#!/usr/bin/env python3
"""Runs the worked examples of docs/api.md against a fresh runtime and checks their answers.

Every `console` block of the "Worked examples" section holds commands (`$ ` lines, going on
while a line ends with a backslash or a quote is left open) each followed by the answer it
gets. All commands run in order in one bash, with `EMR` and `AUTH` set as the section says,
so a variable set by one is seen by the next. An answer written as JSON is a pattern: an
object may have more properties than shown, "…" matches any value, and a list ending with
"…" may have more items; any other answer must equal the output exactly.

It also checks that every resource the endpoint table names has at least one example, and
then, on the records the examples made, FHIR as a client and a validator see it
(.ci/fhir_check.py).

Usage: python3 .ci/api_examples.py [path/to/runtime]
"""

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "api.md"
ANY = "…"


def section(text, title):
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start: end if end >= 0 else len(text)]


def complete(command):
    if command.endswith("\\"):
        return False
    try:
        shlex.split(command)
        return True
    except ValueError:
        return False


def examples(text):
    """(command, expected answer text) pairs, in order."""
    out = []
    for block in re.findall(r"```console\n(.*?)```", section(text, "Worked examples"), re.S):
        lines = block.splitlines()
        i = 0
        while i < len(lines):
            if not lines[i].startswith("$ "):
                raise SystemExit(f"docs/api.md: an answer without its command: {lines[i]!r}")
            command = lines[i][2:]
            i += 1
            while not complete(command) and i < len(lines):
                command += "\n" + lines[i]
                i += 1
            answer = []
            while i < len(lines) and not lines[i].startswith("$ "):
                answer.append(lines[i])
                i += 1
            out.append((command, "\n".join(answer).strip()))
    return out


def match(expected, actual, where="answer"):
    """Problems found comparing a pattern with an actual JSON value."""
    if expected == ANY:
        return []
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where}: expected an object, got {json.dumps(actual, ensure_ascii=False)[:200]}"]
        problems = []
        for key, value in expected.items():
            if key not in actual:
                problems.append(f"{where}: no property {key!r}")
            else:
                problems += match(value, actual[key], f"{where}.{key}")
        return problems
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [f"{where}: expected a list, got {json.dumps(actual, ensure_ascii=False)[:200]}"]
        open_ended = bool(expected) and expected[-1] == ANY
        items = expected[:-1] if open_ended else expected
        if len(actual) < len(items) or (not open_ended and len(actual) != len(items)):
            return [f"{where}: {len(actual)} items, expected {'at least ' if open_ended else ''}{len(items)}"]
        problems = []
        for n, item in enumerate(items):
            problems += match(item, actual[n], f"{where}[{n}]")
        return problems
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        ok = isinstance(actual, (int, float)) and not isinstance(actual, bool) and actual == expected
    else:
        ok = actual == expected
    return [] if ok else [f"{where}: expected {json.dumps(expected, ensure_ascii=False)}, got {json.dumps(actual, ensure_ascii=False)[:200]}"]


def documented_resources(text):
    """Resource names of the endpoint table: `ws/rest/v1/<name>` and `ws/fhir2/R4/<Name>`."""
    table = section(text, "Endpoints and the privilege each needs")
    names = set()
    for line in table.splitlines():
        if not line.startswith("| `"):
            continue
        first = line.split(" | ")[0]
        # Parentheses hold parameters and remarks, not resources.
        while re.search(r"\([^()]*\)", first):
            first = re.sub(r"\([^()]*\)", "", first)
        names.update(re.findall(r"ws/rest/v1/([a-z][A-Za-z0-9-]*)", first))
        names.update(re.findall(r"ws/fhir2/R4/([A-Z][A-Za-z]*)", first))
        # "`GET ws/rest/v1/relationship`, `queue-entry`, …" continue the row's resources.
        if "ws/rest/v1/" in first:
            names.update(re.findall(r"`([a-z][a-z-]*)(?:/[a-z]+)?`", first))
    return names


# The patient whose records .ci/fhir_check.py reads.
FHIR_PATIENT = "5b0c8a4e-2f4e-4f4e-9d1a-6c1c6f0a0001"


def run_fhir_check_output(work):
    out = work / "fhir-check.out"
    return out.read_text().strip() if out.exists() else "the FHIR check did not run (no example voids the patient)"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    binary = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "target" / "debug" / "runtime").resolve()
    text = DOC.read_text(encoding="utf-8")
    pairs = examples(text)
    commands = "\n".join(c for c, _ in pairs)
    missing = sorted(n for n in documented_resources(text)
                     if not re.search(rf"/(ws/rest/v1|ws/fhir2/R4)/{re.escape(n)}\b", commands))
    if missing:
        print("docs/api.md: no worked example for " + ", ".join(missing))
        return 1

    work = Path(tempfile.mkdtemp())
    port = free_port()
    password = f"Examples-{os.getpid()}-pass"
    env = dict(os.environ, EMR_DATA_DIR=str(work / "data"), EMR_LISTEN=f"127.0.0.1:{port}",
               EMR_ADMIN_PASSWORD=password, EMR_LOG="warn")
    server = subprocess.Popen([str(binary)], env=env)
    try:
        base = f"http://127.0.0.1:{port}/openmrs"
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{base}/health/started", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        script = [f"EMR={shlex.quote(base)}", f"AUTH={shlex.quote('admin:' + password)}"]
        checked = False
        for n, (command, _) in enumerate(pairs):
            # FHIR as a client and a validator see it, on the records the examples made, just
            # before the examples take the patient away.
            if not checked and re.search(rf"-X DELETE \S*/ws/rest/v1/patient/{FHIR_PATIENT}", command):
                script.append(f"python3 {shlex.quote(str(ROOT / '.ci' / 'fhir_check.py'))} \"$EMR\" \"$AUTH\" > fhir-check.out 2>&1")
                checked = True
            script.append(f"printf '\\n@@example {n}@@\\n'")
            script.append(command)
        run = subprocess.run(["bash", "-c", "\n".join(script)], cwd=work, capture_output=True, text=True)
        chunks = re.split(r"\n@@example \d+@@\n", "\n" + run.stdout)[1:]
        failures = 0
        for n, (command, expected) in enumerate(pairs):
            actual = chunks[n].strip() if n < len(chunks) else "(no output)"
            if expected.startswith(("{", "[")):
                try:
                    problems = match(json.loads(expected), json.loads(actual))
                except json.JSONDecodeError as e:
                    problems = [f"not JSON ({e}): {actual[:300]}"]
            else:
                problems = [] if actual == expected else [f"expected {expected!r}, got {actual[:300]!r}"]
            if problems:
                failures += 1
                print(f"FAILED example {n + 1}: {command.splitlines()[0]}")
                for p in problems:
                    print(f"    {p}")
                print(f"    the whole answer: {actual[:1500]}")
        if run.stderr.strip():
            print(run.stderr.strip())
        print(f"api examples: {len(pairs) - failures} passed, {failures} failed")
        fhir = run_fhir_check_output(work)
        print(fhir)
        return 1 if failures or not fhir.endswith("fhir check: 0 problems") else 0
    finally:
        server.terminate()
        server.wait()
        subprocess.run(["rm", "-rf", str(work)])


if __name__ == "__main__":
    sys.exit(main())
