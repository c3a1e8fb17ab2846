#!/usr/bin/env python3
"""Builds the distribution's OCL concept-library archives from the sources in sources/.

Each archive is a zip holding one `export.json` in the Open Concept Lab "collection
version" export format (concepts, then mappings). The output is reproducible: the same
sources give byte-identical zips (fixed member timestamp and permissions, stable JSON).

Usage: python3 tools/ocl/build.py [--out openmrs_config/ocl] [--check]
  --check  fail (exit 1) if the archives in --out differ from what the sources give.

Source columns: code, class, datatype, name_en, name_fr, short_fr, units, low_normal,
hi_normal, low_absolute, hi_absolute, allow_decimal, answers, members, mappings.
`answers` and `members` list codes of the project's DRC-EMR dictionary separated by `;`
(they become Q-AND-A and CONCEPT-SET mappings); `mappings` is `MAP-TYPE|SOURCE:CODE`.
A concept with a `SAME-AS|CIEL:<n>` mapping is a standard concept: it takes CIEL's uuid
form (`<n>` padded with `A` to 36 characters, e.g. 5088AAAA…), which the OpenMRS 3 modules
and other OpenMRS tools expect by default; its names stay the project's own.
"""

import argparse
import csv
import io
import json
import sys
import uuid
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

# The project's namespace for concept, name and mapping ids of the DRC-EMR dictionary.
NAMESPACE = uuid.UUID("4c9316cc-4983-45f1-be5d-2b9b0ff92737")
OWNER = "DRC-EMR"
SOURCE = "DRC-EMR"
EXPORT_TIME = "2026-11-01T00:00:00Z"

COLLECTIONS = [
    {
        "file": "drc_dictionnaire-clinique_v4_autoexpand-20261126.zip",
        "id": "dictionnaire-clinique",
        "name": "Dictionnaire clinique",
        "version": "v4",
        "sources": ["answers.csv", "diagnoses.csv", "labs.csv", "medicines.csv", "allergies.csv", "immunizations.csv"],
    },
    {
        "file": "drc_signes-vitaux_v1_autoexpand-20261101.zip",
        "id": "signes-vitaux",
        "name": "Signes vitaux et anthropométrie",
        "version": "v1",
        "sources": ["vitals.csv"],
    },
    {
        "file": "drc_prescription_v1_autoexpand-20261101.zip",
        "id": "prescription",
        "name": "Prescription et examens : formes, unités, voies, durées, fréquences, échantillons",
        "version": "v1",
        "sources": ["orders.csv"],
    },
    {
        "file": "drc_services_v2_autoexpand-20261101.zip",
        "id": "services",
        "name": "Services, files d'attente et programmes",
        "version": "v2",
        "sources": ["services.csv"],
    },
]


def ciel_code(row):
    for m in filter(None, row["mappings"].split(";")):
        map_type, target = m.split("|")
        if map_type == "SAME-AS" and target.startswith("CIEL:"):
            return target.split(":", 1)[1]
    return None


def concept_uuid(row):
    ciel = ciel_code(row)
    if ciel:
        return ciel.ljust(36, "A")
    return str(uuid.uuid5(NAMESPACE, f"{SOURCE}:{row['code']}"))


def concept_url(code):
    return f"/orgs/{OWNER}/sources/{SOURCE}/concepts/{code}/"


def number(value):
    if value == "":
        return None
    f = float(value)
    return int(f) if f.is_integer() else f


def read_rows(name):
    with open(HERE / "sources" / name, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def build_concept(row):
    code = row["code"]
    url = concept_url(code)
    names = []
    for locale, key, name_type, preferred in (
        ("en", "name_en", "FULLY_SPECIFIED", True),
        ("fr", "name_fr", "FULLY_SPECIFIED", True),
        ("fr", "short_fr", "SHORT", False),
    ):
        if row[key]:
            names.append({
                "name": row[key],
                "locale": locale,
                "locale_preferred": preferred,
                "name_type": name_type,
                "external_id": str(uuid.uuid5(NAMESPACE, f"{url}names/{locale}/{name_type}")),
            })
    descriptions = []
    members = [m for m in row["members"].split(";") if m]
    if members:
        descriptions = [
            {"description": f"Set of {len(members)} concepts", "locale": "en",
             "external_id": str(uuid.uuid5(NAMESPACE, f"{url}descriptions/en"))},
            {"description": f"Ensemble de {len(members)} concepts", "locale": "fr",
             "external_id": str(uuid.uuid5(NAMESPACE, f"{url}descriptions/fr"))},
        ]
    extras = {}
    if members:
        extras["is_set"] = 1
    if row["datatype"] == "Numeric":
        for key, extra in (("low_normal", "low_normal"), ("hi_normal", "hi_normal"),
                           ("low_absolute", "low_absolute"), ("hi_absolute", "hi_absolute")):
            if row[key] != "":
                extras[extra] = number(row[key])
        if row["units"]:
            extras["units"] = row["units"]
        extras["allow_decimal"] = row["allow_decimal"] == "true"
    return {
        "type": "Concept",
        "id": code,
        "external_id": concept_uuid(row),
        "concept_class": row["class"],
        "datatype": row["datatype"],
        "retired": False,
        "source": SOURCE,
        "owner": OWNER,
        "owner_type": "Organization",
        "url": url,
        "version_url": f"{url}1/",
        "names": names,
        "descriptions": descriptions,
        "extras": extras,
    }


def mapping(map_type, from_code, to_source, to_code, to_url=None):
    key = f"{from_code}/{map_type}/{to_source}:{to_code}"
    entry = {
        "type": "Mapping",
        "map_type": map_type,
        "from_concept_url": concept_url(from_code),
        "from_source_name": SOURCE,
        "from_concept_code": from_code,
        "to_source_name": to_source,
        "to_concept_code": to_code,
        "external_id": str(uuid.uuid5(NAMESPACE, f"mapping/{key}")),
        "retired": False,
        "url": f"/orgs/{OWNER}/sources/{SOURCE}/mappings/{uuid.uuid5(NAMESPACE, key)}/",
    }
    if to_url:
        entry["to_concept_url"] = to_url
    return entry


def build_mappings(row):
    code = row["code"]
    out = [mapping("SAME-AS", code, SOURCE, code)]
    for m in filter(None, row["mappings"].split(";")):
        map_type, target = m.split("|")
        to_source, to_code = target.split(":", 1)
        out.append(mapping(map_type, code, to_source, to_code))
    for i, answer in enumerate(a for a in row["answers"].split(";") if a):
        out.append(mapping("Q-AND-A", code, SOURCE, answer, concept_url(answer)))
    for i, member in enumerate(m for m in row["members"].split(";") if m):
        m = mapping("CONCEPT-SET", code, SOURCE, member, concept_url(member))
        m["extras"] = {"sort_weight": i + 1}
        out.append(m)
    return out


def export(collection):
    rows = [r for name in collection["sources"] for r in read_rows(name)]
    url = f"/orgs/{OWNER}/collections/{collection['id']}/{collection['version']}/"
    return {
        "type": "Collection Version",
        "id": collection["version"],
        "short_code": collection["id"],
        "name": collection["name"],
        "full_name": collection["name"],
        "description": "Dictionnaire de la distribution DRC-EMR",
        "collection_type": "Dictionary",
        "default_locale": "fr",
        "supported_locales": ["fr", "en"],
        "url": url,
        "owner": OWNER,
        "owner_type": "Organization",
        "version_url": url,
        "released": True,
        "retired": False,
        "autoexpand": True,
        "extras": {},
        "concepts": [build_concept(r) for r in rows],
        "mappings": [m for r in rows for m in build_mappings(r)],
        "export_time": EXPORT_TIME,
    }


def zip_bytes(payload):
    data = json.dumps(payload, ensure_ascii=False, indent=1).encode("utf-8") + b"\n"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        info = zipfile.ZipInfo("export.json", date_time=(2026, 11, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o644 << 16
        z.writestr(info, data, compresslevel=9)
    return buf.getvalue()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "openmrs_config" / "ocl"))
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stale = []
    for c in COLLECTIONS:
        data = zip_bytes(export(c))
        target = out / c["file"]
        if args.check:
            if not target.is_file() or target.read_bytes() != data:
                stale.append(str(target))
        else:
            target.write_bytes(data)
            print(f"wrote {target} ({len(data)} bytes)")
    if stale:
        print("out of date (run tools/ocl/build.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
