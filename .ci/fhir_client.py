#!/usr/bin/env python3
"""A FHIR client's scenario with fhirpy (a FHIR client library, from PyPI, pinned in
tools/fhir-validate/requirements.txt), as an integration would run it against the runtime:
find a patient by her identifier, read all her observations page by page, record a pulse
(as a device feed would), find it again by its LOINC code and read it back; then, as a client
registry would, register a new patient (her identifier issued by the identifier source),
correct her, find her by name, and record an encounter for her.

Usage: .tools/py/bin/python .ci/fhir_client.py BASE USER:PASSWORD IDENTIFIER PATIENT_ID
Prints what went wrong, one line each, and exits 1 if anything did.
"""

import base64
import datetime
import json
import sys
import urllib.request

from fhirpy import SyncFHIRClient


def main(base, auth, identifier, patient_id):
    problems = []
    client = SyncFHIRClient(
        base.rstrip("/") + "/ws/fhir2/R4",
        authorization="Basic " + base64.b64encode(auth.encode()).decode(),
    )

    # Who is she? By the identifier on her card.
    found = client.resources("Patient").search(identifier=identifier).fetch_all()
    if [p.id for p in found] != [patient_id]:
        problems.append(f"Patient?identifier={identifier} found {[p.id for p in found]}, not {patient_id}")
        return problems
    patient = found[0]

    # Everything observed of her, every page (fhirpy follows the Bundle's next links).
    search = client.resources("Observation").search(subject=patient.to_reference().reference).limit(5)
    every = search.fetch_all()
    total = search.fetch_raw().get("total")
    if total is None or len(every) != total or len({o.id for o in every}) != total:
        problems.append(f"Observation pages: total {total}, {len(every)} read ({len({o.id for o in every})} distinct)")

    # A pulse from a device, coded in LOINC with a UCUM unit.
    when = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0) - datetime.timedelta(minutes=1)
    pulse = client.resource(
        "Observation",
        status="final",
        subject=patient.to_reference(),
        code={"coding": [{"system": "http://loinc.org", "code": "8867-4"}]},
        effectiveDateTime=when.isoformat(),
        valueQuantity={"value": 72, "unit": "/min", "system": "http://unitsofmeasure.org", "code": "/min"},
    )
    pulse.save()
    if not pulse.id:
        problems.append("the created Observation has no id")
        return problems
    back = client.reference("Observation", pulse.id).to_resource()
    if back.get_by_path(["valueQuantity", "value"]) != 72:
        problems.append(f"the pulse read back: {back.serialize()}")
    by_code = client.resources("Observation").search(
        subject=patient.to_reference().reference, code="http://loinc.org|8867-4").fetch_all()
    if pulse.id not in [o.id for o in by_code]:
        problems.append(f"Observation?code=http://loinc.org|8867-4 does not find the pulse {pulse.id}")
    problems.extend(register_and_see(client, base, auth, patient))
    return problems


def fresh_identifier(base, auth):
    """An identifier the identifier source issues (it carries a check character)."""
    headers = {"Authorization": "Basic " + base64.b64encode(auth.encode()).decode(),
               "Content-Type": "application/json"}
    rest = base.rstrip("/") + "/ws/rest/v1/idgen/identifiersource"
    with urllib.request.urlopen(urllib.request.Request(rest, headers=headers)) as r:
        source = json.load(r)["results"][0]["uuid"]
    ask = urllib.request.Request(f"{rest}/{source}/identifier", data=b"{}", headers=headers, method="POST")
    with urllib.request.urlopen(ask) as r:
        return json.load(r)["identifier"]


def register_and_see(client, base, auth, known):
    """A client registry's turn: a new patient, corrected, found, and an encounter of hers."""
    problems = []
    card = dict(known["identifier"][0])
    card.pop("id", None)
    card["value"] = fresh_identifier(base, auth)
    new = client.resource(
        "Patient",
        identifier=[card],
        name=[{"use": "usual", "family": "Ngalula", "given": ["Dorcas"]}],
        gender="female",
        birthDate="1994-07-02",
        telecom=[{"system": "phone", "value": "+243815550101"}],
    )
    new.save()
    if not new.id:
        return ["the created Patient has no id"]
    new["telecom"] = [{"system": "phone", "value": "+243815550102"}]
    new.save()
    back = client.reference("Patient", new.id).to_resource()
    if back.get_by_path(["telecom", 0, "value"]) != "+243815550102":
        problems.append(f"the corrected Patient read back: {back.serialize()}")
    named = client.resources("Patient").search(family="ngalula", given="dorcas").fetch_all()
    if new.id not in [p.id for p in named]:
        problems.append(f"Patient?family=ngalula&given=dorcas does not find {new.id}")
    # An encounter of a type and at a place the known patient's encounters name.
    seen = client.resources("Encounter").search(subject=known.to_reference().reference).fetch()
    if not seen:
        return problems + ["the known patient has no encounter to take a type and a place from"]
    encounter = client.resource(
        "Encounter",
        status="finished",
        subject=new.to_reference(),
        type=seen[0]["type"],
        location=[{"location": seen[0]["location"][0]["location"]}],
        period={"start": (datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
                          - datetime.timedelta(minutes=2)).isoformat()},
    )
    encounter.save()
    listed = client.resources("Encounter").search(subject=new.to_reference().reference).fetch_all()
    if [e.id for e in listed] != [encounter.id]:
        problems.append(f"Encounter?subject={new.id} found {[e.id for e in listed]}, not {encounter.id}")
    return problems


if __name__ == "__main__":
    problems = main(*sys.argv[1:5])
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)
