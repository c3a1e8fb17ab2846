#!/usr/bin/env python3
"""Runs a Dockerfile's build without a Docker engine, as closely as this machine allows.

The development and CI machines have the Docker client but no engine, so `docker build`
cannot run here. This script replays what the Dockerfile asks for in a scratch folder
standing for the image's file system: `ARG` defaults (overridable with --build-arg),
`ENV`, `WORKDIR`, `COPY` from the build context (honouring .dockerignore), and `RUN` with
bash, absolute paths mapped into the scratch folder. Stages after the first only have
their `COPY --from=<stage>` sources checked. It catches a context that lacks a file, a
command that fails, and an artifact the final stage expects but the build does not make.
It does not check base images, users or the runtime behaviour of the image.

With --cargo-dev-profile, `cargo build --release` runs with Cargo's dev profile (and
`target/release/` reads `target/debug/`): the same crates, content checks and commands, a
third of the compile time. The test command's own release build (run.sh's) compiles the
release profile; the replays only need to show that the Dockerfile builds from its context.

Usage: .ci/dockerfile_check.py <Dockerfile> <context> [--build-arg K=V ...] [--cargo-target DIR]
                               [--cargo-dev-profile]
"""

import argparse
import fnmatch
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def instructions(dockerfile):
    text = Path(dockerfile).read_text(encoding="utf-8")
    logical, buf = [], ""
    for line in text.splitlines():
        stripped = line.strip()
        if not buf and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        buf += line
        logical.append(buf.strip())
        buf = ""
    for item in logical:
        word, _, rest = item.partition(" ")
        yield word.upper(), rest.strip()


def ignored(rel, patterns):
    rel = rel.replace(os.sep, "/")
    for p in patterns:
        p = p.strip().rstrip("/")
        if not p or p.startswith("#"):
            continue
        if p.startswith("**/"):
            if any(fnmatch.fnmatch(part, p[3:]) for part in rel.split("/")):
                return True
        elif fnmatch.fnmatch(rel, p) or rel.startswith(p + "/"):
            return True
    return False


def expand(context, sources):
    """Docker's wildcard sources: one that matches nothing is dropped, as long as some
    source of the instruction matches."""
    out = []
    for src in sources:
        if any(c in src for c in "*?["):
            out.extend(str(p.relative_to(context)) for p in sorted(context.glob(src)))
        else:
            out.append(src)
    if not out:
        raise SystemExit(f"COPY {' '.join(sources)}: no source files in the build context")
    return out


def copy_in(context, sources, dest, patterns):
    sources_given = len(sources)
    sources = expand(context, sources)
    for src in sources:
        path = context / src
        if not path.exists():
            raise SystemExit(f"COPY {src}: not in the build context {context}")
        if path.is_dir():
            for f in path.rglob("*"):
                rel = f.relative_to(context)
                if f.is_file() and not ignored(str(rel), patterns):
                    target = dest / f.relative_to(path)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(f, target)
        else:
            if ignored(src, patterns):
                raise SystemExit(f"COPY {src}: excluded by .dockerignore")
            target = dest / path.name if (sources_given > 1 or str(dest).endswith("/") or dest.is_dir()) else dest
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dockerfile")
    parser.add_argument("context")
    parser.add_argument("--build-arg", action="append", default=[])
    parser.add_argument("--cargo-target", help="reuse this folder as the build's target/ (a cache; Docker would start empty)")
    parser.add_argument("--cargo-dev-profile", action="store_true", help="build with Cargo's dev profile where the Dockerfile asks for --release")
    args = parser.parse_args()
    context = Path(args.context).resolve()
    overrides = dict(a.split("=", 1) for a in args.build_arg)
    ignore_file = context / ".dockerignore"
    patterns = ignore_file.read_text().splitlines() if ignore_file.exists() else []

    scratch = Path(tempfile.mkdtemp(prefix="dockerfile-check-"))
    fs = scratch / "root"

    def host(path):
        return fs / path.lstrip("/")

    stage, first_stage_name, steps = 0, None, 0
    env = dict(os.environ)
    variables = {}
    workdir = "/"
    try:
        for word, rest in instructions(args.dockerfile):
            if word == "FROM":
                stage += 1
                m = re.search(r"\bAS\s+(\S+)", rest, re.I)
                if stage == 1:
                    first_stage_name = m.group(1) if m else "0"
                continue
            if stage > 1:
                if word == "COPY" and "--from=" in rest:
                    parts = shlex.split(rest)
                    source_stage = next(p.split("=", 1)[1] for p in parts if p.startswith("--from="))
                    srcs = [p for p in parts if not p.startswith("--")][:-1]
                    if source_stage == first_stage_name:
                        for s in srcs:
                            if not host(s).exists():
                                raise SystemExit(f"final stage copies {s}, which the build stage did not produce")
                            steps += 1
                elif word == "COPY":
                    parts = [p for p in shlex.split(rest) if not p.startswith("--")]
                    for s in expand(context, parts[:-1]):
                        if not (context / s).exists():
                            raise SystemExit(f"COPY {s}: not in the build context")
                continue
            if word == "ARG":
                name, _, default = rest.partition("=")
                variables[name] = overrides.get(name, default)
                env[name] = variables[name]
            elif word == "ENV":
                for k, v in re.findall(r"(\w+)=(\"[^\"]*\"|\S+)", rest):
                    env[k] = v.strip('"')
                    variables[k] = env[k]
            elif word == "WORKDIR":
                workdir = rest
                host(workdir).mkdir(parents=True, exist_ok=True)
                if args.cargo_target:
                    cache = Path(args.cargo_target).resolve()
                    cache.mkdir(parents=True, exist_ok=True)
                    link = host(workdir) / "target"
                    if not link.exists():
                        link.symlink_to(cache)
            elif word == "COPY":
                parts = [p for p in shlex.split(rest) if not p.startswith("--")]
                dest = parts[-1]
                dest_path = host(dest if dest.startswith("/") else f"{workdir}/{dest}")
                if dest.endswith("/") or dest in (".", "./"):
                    dest_path.mkdir(parents=True, exist_ok=True)
                copy_in(context, parts[:-1], dest_path, patterns)
                steps += 1
            elif word == "RUN":
                # Absolute paths of the image become paths in the scratch folder.
                command = re.sub(r"(?<![\w./$-])/(out|spa|build|src|data|app)\b", lambda m: str(host(m.group(0))), rest)
                note = ""
                if args.cargo_dev_profile:
                    dev = re.sub(r"(cargo (?:build|run)[^&|;]*?) --release\b", r"\1", command)
                    dev = dev.replace("target/release/", "target/debug/")
                    note = " (with Cargo's dev profile)" if dev != command else ""
                    command = dev
                print(f"RUN {rest[:100]}{'…' if len(rest) > 100 else ''}{note}", flush=True)
                subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=host(workdir), env=env, check=True)
                steps += 1
    except subprocess.CalledProcessError as e:
        print(f"dockerfile check: a RUN step failed ({e.returncode})", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"dockerfile check {args.dockerfile}: {steps} passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
