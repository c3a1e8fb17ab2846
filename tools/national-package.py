#!/usr/bin/env python3
"""Lays this distribution's own content out as a national programme publishes its package, with
the mechanisms and the defects such packages carry, so that the compiler, the image build and the
browser walk can be run on that shape (.ci/test.sh, "the walk on a package in the national shape").

The project it writes (OUT):
- content-packages/rdc-national/: the national package in OpenMRS's published layout
  (configuration/backend_configuration/<domain>/, a pom.xml whose artifactId and version the
  package's content.properties takes through Maven placeholders), holding everything of
  openmrs_config/ but the facility's reports and flags, and depending on the shared package;
- content-packages/dse-rdc-socle/: the shared package, as it is;
- openmrs_config/: a thin base, the facility's own reports and flags, depending on the national
  package (content.properties);
- sites/: the sites, as they are, and the facility's own, `bondeko`, which overrides a location of
  the national package (its reception's description): the walk's build is that site's;
- frontend/: the national distribution's O3 configuration as the project's config.json (this
  distribution's, which holds no French of its own: its French is in translations.json, laid
  beneath any package's configuration), the modules the image ships, the logo.

What a national package does that this distribution's own content does not:
- its queues leave their own status and priority concept sets empty, relying on the queue
  module's settings (queue.statusConceptSetName, queue.priorityConceptSetName);
- an OCL export of a single concept that cannot be read (E0004), next to a concept set naming a
  concept the package does not contain (E0201);
- a form uuid in an encounter list's formList that the package does not contain, as a form's
  earlier version left it (E0203), in a tab of a dashboard slot no page mounts;
- a yes/no question whose concept is of datatype Boolean (the HIV enrolment's cotrimoxazole
  prophylaxis), which its form answers with the true and false concepts (the concepts of
  `concept.true` and `concept.false`), and which the chart's HIV dashboard shows;
and, as this distribution's content already does: the EMR API's settings given as metadata term
mappings, yes/no questions answered with the true and false concepts.

The known defects go to a baseline (`compiler check --write-baseline`), with which the image
builds; any other error still fails it.

Usage: python3 tools/national-package.py OUT
"""

import csv
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NATIONAL = "rdc-national"
# Facility-level definitions the base keeps: the rest is national.
BASE_DOMAINS = ("reports", "flags")
STALE_FORM = "0c3e5a7b-9d1f-4b2c-8e4a-6f8b0d2c4e61"
MISSING_CONCEPT = "7e9a1c3b-5d2f-4a6e-8b0c-2e4f6a8c0b99"
COTRIMOXAZOLE = "a7f021fe-40f9-49d5-9755-e71ea484fbf3"


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def empty_queue_sets(queues_dir: Path) -> int:
    """Blanks the status and priority concept set columns of every queues CSV."""
    changed = 0
    for csv_file in sorted(queues_dir.glob("*.csv")):
        with csv_file.open(encoding="utf-8", newline="") as f:
            rows = list(csv.reader(f))
        blank = [i for i, h in enumerate(rows[0]) if h.strip().lower() in ("status concept set", "priority concept set")]
        for row in rows[1:]:
            for i in blank:
                if i < len(row) and row[i]:
                    row[i] = ""
                    changed += 1
        with csv_file.open("w", encoding="utf-8", newline="") as f:
            csv.writer(f, lineterminator="\n").writerows(rows)
    return changed


def make_boolean(concepts_csv: Path, uuid: str) -> int:
    """Gives a coded yes/no question the Boolean datatype (and no answers of its own)."""
    with concepts_csv.open(encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    header = [h.strip().lower() for h in rows[0]]
    datatype, answers = header.index("data type"), header.index("answers")
    changed = 0
    for row in rows[1:]:
        if row and row[0] == uuid:
            row[datatype], row[answers] = "Boolean", ""
            changed += 1
    with concepts_csv.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)
    return changed


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = Path(sys.argv[1]).resolve()
    if out.exists():
        shutil.rmtree(out)
    package = out / "content-packages" / NATIONAL
    backend = package / "configuration" / "backend_configuration"

    # The national package: the distribution's base content in the published layout.
    for domain in sorted((ROOT / "openmrs_config").iterdir()):
        target = (out / "openmrs_config" if domain.name in BASE_DOMAINS else backend) / domain.name
        shutil.copytree(domain, target)
    base_properties = (ROOT / "content.properties").read_text(encoding="utf-8")
    write(package / "pom.xml",
          "<project>\n  <groupId>org.dse-rdc</groupId>\n  <artifactId>rdc-national</artifactId>\n"
          "  <version>2.3.0</version>\n  <packaging>pom</packaging>\n</project>\n")
    national_properties = []
    for line in base_properties.splitlines():
        if line.startswith("name="):
            line = "name=${project.artifactId}"
        elif line.startswith("version="):
            line = "version=${project.version}"
        national_properties.append(line)
    write(package / "content.properties", "\n".join(national_properties) + "\n")
    shutil.copytree(ROOT / "content-packages" / "dse-rdc-socle", out / "content-packages" / "dse-rdc-socle")
    write(out / "content.properties",
          "# A facility's base over the national package, as the national programme publishes it.\n"
          "name=facility-bondeko\nversion=1.0.0\ncontent.rdc-national=2.x\n")
    shutil.copytree(ROOT / "sites", out / "sites")
    locations = (ROOT / "openmrs_config" / "locations" / "bondeko.csv").read_text(encoding="utf-8").splitlines()
    reception = next(line for line in locations if ",Bondeko - Accueil," in line)
    write(out / "sites" / "bondeko" / "openmrs_config" / "locations" / "accueil.csv",
          locations[0] + "\n" + reception.replace(",Réception et enregistrement des patients,",
                                                  ',"Réception, enregistrement et file d’attente",') + "\n")

    # The national package's ways.
    blanked = empty_queue_sets(backend / "queues")
    for site in sorted((out / "sites").iterdir()):
        if (site / "openmrs_config" / "queues").is_dir():
            blanked += empty_queue_sets(site / "openmrs_config" / "queues")
    assert blanked > 0, "no queue had concept sets of its own to empty"
    booleans = make_boolean(backend / "concepts" / "formulaires.csv", COTRIMOXAZOLE)
    assert booleans == 1, "the cotrimoxazole question was not found"
    write(backend / "ocl" / "one_concept_v1_autoexpand-20260301.zip", "not a zip archive: a failed export\n")
    write(backend / "concepts" / "national-sets.csv",
          "Uuid,Fully specified name:fr,Data class,Data type,Members\n"
          f"3b5d7f9a-1c2e-4a6b-8d0f-2a4c6e8b0d11,Indicateurs nationaux,ConvSet,N/A,CIEL:5088;{MISSING_CONCEPT}\n")

    # The national distribution's O3 configuration, as the project's config.json.
    (out / "frontend" / "config").mkdir(parents=True)
    config = json.loads((ROOT / "frontend" / "config" / "config.json").read_text(encoding="utf-8"))
    chart = config.setdefault("@openmrs/esm-patient-chart-app", {})
    slots = chart.setdefault("extensionSlots", {})
    slots["pmtct-dashboard-slot"] = {
        "add": ["encounter-list"],
        "configure": {"encounter-list": {"tabDefinitions": [{
            "tabName": "pmtctVisit",
            "encounterType": "91edcf31-cf56-43c3-a7d8-b8097fbd0035",
            "columns": [{"id": "date", "isDate": True, "title": "visitDate", "type": "encounterDatetime"}],
            "formList": [{"uuid": STALE_FORM}],
        }]}},
    }
    write(out / "frontend" / "config" / "config.json", json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    shutil.copy(ROOT / "frontend" / "config" / "translations.json", out / "frontend" / "config" / "translations.json")
    shutil.copy(ROOT / "frontend" / "spa-modules.json", out / "frontend" / "spa-modules.json")
    (out / "frontend" / "assets").mkdir(parents=True)
    shutil.copy(ROOT / "frontend" / "assets" / "logo.png", out / "frontend" / "assets" / "logo.png")
    for module in sorted((ROOT / "frontend" / "modules").iterdir()):
        (out / "frontend" / "modules" / module.name).mkdir(parents=True)
        shutil.copy(module / "package.json", out / "frontend" / "modules" / module.name / "package.json")
    print(f"national package laid out in {out}")


if __name__ == "__main__":
    main()
