#!/usr/bin/env python3
"""FHIR conformance of a running runtime, as a FHIR client and a validator see it.

Run by .ci/api_examples.py once docs/api.md's worked examples have made their records (a
patient with vitals, a laboratory result, conditions, an allergy, a vaccination, a
prescription and its dispense, a practitioner). From the CapabilityStatement it:
  - searches every searchable type the way the statement offers (by the examples' patient,
    by the patient's encounters, by a code the server itself wrote),
  - reads every resource found by its id, and every resource any of them references,
    transitively: every reference must resolve on this server (200),
  - validates every resource and Bundle with tools/fhir-validate (the R4 base specification
    and, for vital signs, R4's vital-signs profiles), and checks what the specification
    cannot: coding systems are absolute URIs, units claimed as UCUM are UCUM-shaped, a
    vital sign carries a LOINC coding,
  - runs a FHIR client library's scenario (.ci/fhir_client.py, with fhirpy),
  - checks the rules a client relies on: an unknown type is 404 with an OperationOutcome, an
    unsupported parameter is refused under `Prefer: handling=strict`, a malformed date is
    400, `_summary=count` answers a total without entries, paging totals add up, a coding
    the server wrote finds its Observation again.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VALIDATOR = ROOT / "tools" / "fhir-validate"
PATIENT = "5b0c8a4e-2f4e-4f4e-9d1a-6c1c6f0a0001"
ABSOLUTE_URI = re.compile(r"^(urn:(uuid|oid):|[a-z][a-z0-9+.-]*://)", re.I)
UCUM = "http://unitsofmeasure.org"
# A UCUM code is printable ASCII without spaces (°, accents and words in French are not).
UCUM_SHAPE = re.compile(r"^[\x21-\x7e]+$")
OBSERVATION_CATEGORY = "http://terminology.hl7.org/CodeSystem/observation-category"


class Client:
    def __init__(self, base, auth):
        self.base = base.rstrip("/") + "/ws/fhir2/R4/"
        self.auth = "Basic " + __import__("base64").b64encode(auth.encode()).decode()

    def get(self, path, headers=None):
        """(status, JSON body or None) of a GET relative to the FHIR base."""
        url = path if path.startswith("http") else self.base + path
        request = urllib.request.Request(url, headers={"Authorization": self.auth, "Accept": "application/fhir+json", **(headers or {})})
        try:
            with urllib.request.urlopen(request, timeout=30) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            body = e.read()
            try:
                return e.code, json.loads(body)
            except ValueError:
                return e.code, None


    def raw(self, path, headers=None):
        """(status, headers, bytes) of a GET relative to the FHIR base, or of a full URL."""
        url = path if path.startswith("http") else self.base + path
        request = urllib.request.Request(url, headers={"Authorization": self.auth, **(headers or {})})
        try:
            with urllib.request.urlopen(request, timeout=30) as r:
                return r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()


class Check:
    def __init__(self, client):
        self.client = client
        self.problems = []
        self.validated = []  # (from, resource)
        self.read = {}  # "Type/id" -> resource
        self.queue = []

    def problem(self, text):
        self.problems.append(text)

    def collect(self, where, resource):
        self.validated.append((where, resource))
        self.lint(where, resource)
        for ref in references(resource):
            if ref not in self.read:
                self.read[ref] = None
                self.queue.append((where, ref))

    def search(self, query, expect_some=True):
        status, bundle = self.client.get(query)
        if status != 200 or not isinstance(bundle, dict) or bundle.get("resourceType") != "Bundle":
            self.problem(f"GET {query}: {status} {json.dumps(bundle)[:300]}")
            return []
        self.validated.append((f"GET {query}", {k: v for k, v in bundle.items() if k != "entry"}))
        entries = bundle.get("entry", [])
        if expect_some and not entries:
            self.problem(f"GET {query}: no entry, where the examples' records should be found")
        found = []
        for e in entries:
            r = e.get("resource", {})
            self.collect(f"GET {query}", r)
            key = f"{r.get('resourceType')}/{r.get('id')}"
            if key not in self.read:
                self.read[key] = None
                self.queue.append((f"GET {query}", key))
            found.append(r)
        return found

    def resolve_all(self):
        while self.queue:
            where, ref = self.queue.pop(0)
            status, resource = self.client.get(ref)
            if status != 200 or not isinstance(resource, dict):
                self.problem(f"{ref} (named by {where}) does not resolve: {status} {json.dumps(resource)[:200]}")
                continue
            self.read[ref] = resource
            self.collect(f"GET {ref}", resource)

    def lint(self, where, resource):
        """What the base specification does not check and R4 clients rely on."""
        def walk(value, path):
            if isinstance(value, dict):
                system = value.get("system")
                # A ContactPoint's system is a code (phone, email), not a URI.
                contact_point = path.split(".")[-1].startswith("telecom")
                if (isinstance(system, str) and ("code" in value or "value" in value)
                        and not contact_point and not ABSOLUTE_URI.match(system)):
                    self.problem(f"{where}: {path}.system {system!r} is not an absolute URI")
                if system == UCUM and isinstance(value.get("code"), str) and not UCUM_SHAPE.match(value["code"]):
                    self.problem(f"{where}: {path}.code {value['code']!r} is claimed as UCUM and is not")
                for k, v in value.items():
                    walk(v, f"{path}.{k}")
            elif isinstance(value, list):
                for i, v in enumerate(value):
                    walk(v, f"{path}[{i}]")
        walk(resource, resource.get("resourceType", "?"))
        if resource.get("resourceType") == "Observation":
            vital = any(c.get("system") == OBSERVATION_CATEGORY and c.get("code") == "vital-signs"
                        for cat in resource.get("category", []) for c in cat.get("coding", []))
            loinc = any(c.get("system") == "http://loinc.org" for c in resource.get("code", {}).get("coding", []))
            if vital and not loinc and resource.get("valueQuantity"):
                self.problem(f"{where}: vital sign Observation/{resource.get('id')} ({resource['code'].get('text')}) has no LOINC coding")

    def expect_outcome(self, query, status, headers=None):
        got, body = self.client.get(query, headers)
        if got != status or not isinstance(body, dict) or body.get("resourceType") != "OperationOutcome":
            self.problem(f"GET {query}: expected {status} with an OperationOutcome, got {got} {json.dumps(body)[:200]}")
        elif isinstance(body, dict):
            self.validated.append((f"GET {query}", body))


def references(resource):
    out = []

    def walk(value):
        if isinstance(value, dict):
            ref = value.get("reference")
            if isinstance(ref, str) and re.match(r"^[A-Z][A-Za-z]+/[^/?#]+$", ref):
                out.append(ref)
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
    walk(resource)
    return out


def run(base, auth):
    """Problems found (a list of lines); prints a summary."""
    client = Client(base, auth)
    check = Check(client)
    status, capability = client.get("metadata")
    if status != 200:
        return [f"GET metadata: {status}"]
    check.validated.append(("GET metadata", capability))
    offered = {r["type"]: {p["name"] for p in r.get("searchParam", [])} for r in capability["rest"][0]["resource"]}

    # The examples' patient.
    patient = client.get(f"Patient/{PATIENT}")[1]
    identifier = patient["identifier"][0]["value"]

    # First a FHIR client library's scenario (fhirpy, installed by .ci/run into .tools/py),
    # whose pulse is then crawled and validated with the rest (R4's heart-rate profile).
    python = ROOT / ".tools" / "py" / "bin" / "python"
    if not python.exists():
        check.problem("the FHIR client scenario needs fhirpy: python3 -m venv .tools/py && .tools/py/bin/pip install -r tools/fhir-validate/requirements.txt")
    else:
        scenario = subprocess.run([str(python), str(ROOT / ".ci" / "fhir_client.py"), base, auth, identifier, PATIENT],
                                  capture_output=True, text=True)
        check.problems.extend(f"fhirpy scenario: {l}" for l in scenario.stdout.splitlines() if l.strip())
        if scenario.returncode not in (0, 1) or (scenario.returncode == 1 and not scenario.stdout.strip()):
            check.problem(f"fhirpy scenario failed: {scenario.stderr[-1500:]}")
        else:
            print("fhirpy scenario: patient by identifier, her observations page by page, a pulse recorded and found by its LOINC code; a patient registered, corrected, found by name, and an encounter recorded for her")

    # Every searchable type, as the CapabilityStatement offers it.
    family = patient["name"][0]["family"]
    check.search(f"Patient?identifier={urllib.parse.quote(identifier)}")
    check.search(f"Patient?family={urllib.parse.quote(family)}")
    check.search(f"Patient?_id={PATIENT}")
    check.search(f"Person?_id={PATIENT}")
    for kind, params in sorted(offered.items()):
        if "patient" in params:
            check.search(f"{kind}?patient={PATIENT}&_count=100", expect_some=kind not in ("MedicationDispense", "RelatedPerson"))
        elif "subject" in params:
            check.search(f"{kind}?subject={PATIENT}&_count=100")
    check.search("Location?_tag=Login%20Location", expect_some=False)
    check.search("Location?_count=100")
    check.search("Observation?_lastUpdated=gt2000-01-01&_count=100")
    check.search(f"Observation/$lastn?patient={PATIENT}&max=2")
    check.search("Encounter?date=gt2000-01-01&_count=100")
    # Her child, of whom she is the RelatedPerson.
    check.search("RelatedPerson?patient=5b0c8a4e-2f4e-4f4e-9d1a-6c1c6f0a0002")
    check.search("Practitioner?name=a", expect_some=False)
    check.search("Medication?_count=20", expect_some=False)
    check.search("Group?_count=100", expect_some=False)
    check.search("Encounter?_query=encountersWithMedicationRequests", expect_some=False)

    # A coding the server wrote finds its resource again.
    observations = [r for (w, r) in check.validated if r.get("resourceType") == "Observation"]
    for obs in observations[:5]:
        for coding in obs.get("code", {}).get("coding", []):
            if "system" in coding:
                code = urllib.parse.quote(f"{coding['system']}|{coding['code']}")
                found = check.search(f"Observation?subject={PATIENT}&code={code}", expect_some=False)
                if not any(r.get("id") == obs["id"] for r in found):
                    check.problem(f"Observation/{obs['id']} is not found by the coding the server wrote for it: {coding['system']}|{coding['code']}")

    # Paging: the pages of a search add up to its total.
    status, first = client.get(f"Observation?subject={PATIENT}&_count=2")
    if status == 200:
        total, seen, page, pages = first.get("total"), 0, first, 0
        while page and pages < 50:
            seen += len(page.get("entry", []))
            pages += 1
            nxt = next((l["url"] for l in page.get("link", []) if l.get("relation") == "next"), None)
            page = client.get(nxt)[1] if nxt else None
        if total is not None and seen != total:
            check.problem(f"Observation paging: total {total}, {seen} entries over {pages} pages")

    # Rules a client relies on.
    check.expect_outcome("NoSuchType?name=x", 404)
    check.expect_outcome("NoSuchType/1", 404)
    check.expect_outcome("Patient?name=x&eye-colour=brown", 400, {"Prefer": "handling=strict"})
    check.expect_outcome("Patient?name=x&birthdate=not-a-date", 400)
    check.expect_outcome(f"Patient/{PATIENT}-nobody", 404)
    status, counted = client.get(f"Patient?_id={PATIENT}&_summary=count")
    if status != 200 or counted.get("total") != 1 or counted.get("entry"):
        check.problem(f"Patient?_summary=count: {status} {json.dumps(counted)[:200]}")
    status, lenient = client.get(f"Patient?_id={PATIENT}&eye-colour=brown")
    if status != 200 or "eye-colour" in json.dumps(lenient.get("link", [])):
        check.problem(f"an unsupported parameter in lenient mode: {status}, self link {json.dumps(lenient.get('link'))[:200]}")

    # Everything in bulk, as a warehouse takes it (Bulk Data Access): every exported resource
    # is validated with the rest, and each file holds the count its manifest says.
    status, headers, _ = client.raw("$export", {"Prefer": "respond-async", "Accept": "application/fhir+json"})
    poll = headers.get("Content-Location") if status == 202 else None
    if not poll:
        check.problem(f"GET $export: {status}, no Content-Location")
    else:
        for _ in range(1500):
            status, manifest = client.get(poll)
            if status != 202:
                break
            time.sleep(0.2)
        if status != 200:
            check.problem(f"the export's poll: {status} {json.dumps(manifest)[:300]}")
        else:
            if manifest.get("error"):
                check.problem(f"the export reported errors: {manifest['error']}")
            exported = 0
            for out in manifest.get("output", []):
                status, headers, body = client.raw(out["url"])
                lines = [l for l in body.decode().splitlines() if l.strip()]
                if status != 200 or not headers.get("Content-Type", "").startswith("application/fhir+ndjson"):
                    check.problem(f"export file {out['url']}: {status} {headers.get('Content-Type')}")
                if len(lines) != out.get("count"):
                    check.problem(f"export file {out['url']}: {len(lines)} lines, the manifest says {out.get('count')}")
                for line in lines:
                    check.validated.append((f"$export {out['type']}", json.loads(line)))
                exported += len(lines)
            types = sorted({o["type"] for o in manifest.get("output", [])})
            print(f"bulk export: {exported} resources of {len(types)} types ({', '.join(types)})")
            if "Patient" not in types or "Observation" not in types:
                check.problem(f"the export lacks patients or observations: {types}")
            client.raw(poll)  # read once more, then deleted
            request = urllib.request.Request(poll, method="DELETE", headers={"Authorization": client.auth})
            with urllib.request.urlopen(request, timeout=30) as r:
                if r.status != 202:
                    check.problem(f"DELETE the export: {r.status}")
    # Everything of one patient, in one Bundle.
    status, everything = client.get(f"Patient/{PATIENT}/$everything")
    if status != 200 or not everything.get("entry"):
        check.problem(f"Patient/$everything: {status}")
    else:
        check.validated.append(("GET Patient/$everything", {k: v for k, v in everything.items() if k != "entry"}))
        for e in everything["entry"]:
            check.validated.append(("GET Patient/$everything", e["resource"]))

    check.resolve_all()

    with tempfile.NamedTemporaryFile("w", suffix=".ndjson", delete=False) as f:
        for where, resource in check.validated:
            f.write(json.dumps({"from": where, "resource": resource}, ensure_ascii=False) + "\n")
        ndjson = f.name
    validation = subprocess.run(["node", str(VALIDATOR / "validate.mjs"), ndjson], capture_output=True, text=True)
    if os.environ.get("FHIR_CHECK_KEEP"):
        print(f"the resources validated are kept in {ndjson}")
    else:
        Path(ndjson).unlink()
    check.problems.extend(l for l in validation.stdout.splitlines() if l.strip())
    print(validation.stderr.strip())
    # Node ends an uncaught error with 1, the validator's "problems found": only its
    # closing line says that it validated at all.
    if validation.returncode not in (0, 1) or "validated " not in validation.stderr:
        check.problem(f"the validator failed: {validation.stderr[-1000:]}")
    return check.problems


if __name__ == "__main__":
    problems = run(sys.argv[1], sys.argv[2])
    seen = set()
    for p in problems:
        if p not in seen:
            print(p)
            seen.add(p)
    print(f"fhir check: {len(seen)} problems")
    sys.exit(1 if problems else 0)
