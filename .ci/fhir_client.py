#!/usr/bin/env python3
"""A FHIR client's scenario with fhirpy (a FHIR client library, from PyPI, pinned in
tools/fhir-validate/requirements.txt), as an integration would run it against the runtime:
find a patient by her identifier, read all her observations page by page, record a pulse
(as a device feed would), find it again by its LOINC code and read it back.

Usage: .tools/py/bin/python .ci/fhir_client.py BASE USER:PASSWORD IDENTIFIER PATIENT_ID
Prints what went wrong, one line each, and exits 1 if anything did.
"""

import base64
import datetime
import sys

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
    return problems


if __name__ == "__main__":
    problems = main(*sys.argv[1:5])
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)
