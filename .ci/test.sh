#!/usr/bin/env bash
# The project's test command (README: "Run the tests"). Assumes the tools .ci/run installs.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step says when it began, so a slow run shows which step took the time.
step() { printf '\n== %s (at %dm%02ds)\n' "$*" $((SECONDS / 60)) $((SECONDS % 60)); }
# Node.js 22 for the front end's build and the FHIR validator (an older one cannot run it,
# and the FHIR check then fails): already on PATH under .ci/run, put there when run alone.
source tools/node.sh

step "formatting"
cargo fmt --all -- --check

step "clippy (warnings denied)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "OCL archives are up to date with their sources"
python3 tools/ocl/build.py --check

step "content check: the distribution and every site, warnings denied"
cargo build --locked -q -p compiler
./target/debug/compiler check --deny-warnings --build-type distro
for site in $(ls sites); do
  ./target/debug/compiler check --deny-warnings --build-type site --site "$site"
done

step "a private PostgreSQL server for the second storage backend's tests"
pg_dir=$(mktemp -d /tmp/emr-pg.XXXXXX)
EMR_TEST_POSTGRES=$(bash tools/pg-test-cluster.sh start "$pg_dir")
export EMR_TEST_POSTGRES
# Stopped and removed on exit: every run would otherwise leave its cluster (near 1 GB) in /tmp.
trap 'bash tools/pg-test-cluster.sh stop "$pg_dir" || true; rm -rf "$pg_dir"' EXIT

step "tests (the integration suite on redb; several runtimes on one PostgreSQL database)"
cargo test --workspace --locked

step "the integration suite again, every store in PostgreSQL"
EMR_TEST_BACKEND=postgres cargo test --locked -p runtime --test it

step "the worked examples of docs/api.md, then FHIR as a client and an R4 validator see it, against a real runtime"
python3 .ci/api_examples.py target/debug/runtime

step "operating procedure against a real runtime"
bash .ci/procedure.sh target/debug/runtime

step "a real full disk (tmpfs) under a running runtime"
bash .ci/full_disk.sh target/debug/runtime

step "gateway configuration with a real nginx"
bash .ci/gateway_test.sh target/debug/runtime

step "docker-compose.yml and .env.example"
python3 .ci/compose_check.py

# The walk runs whole below through the gateway on redb, and its first five journeys on
# PostgreSQL; here, on the README's first command, its first journey (log-in, search, registration, the chart, a visit
# and the triage queue) shows that one binary serves the whole application.
step "the README's first command (run.sh: one binary with the front end), its first journey driven in Chromium"
E2E_JOURNEY=reception bash frontend/e2e/run.sh

step "the same walk through the compose layout (front-end and gateway nginx configurations)"
E2E_VIA=gateway bash frontend/e2e/run.sh target/debug/runtime

# On PostgreSQL the journeys where two runtimes most share what they change: the queues, the
# forms, the bill, the stock and the dispense drawing from it (every rule is also raced
# through the API by the integration suite on both backends).
step "the walk's reception to orders journeys through the gateway balancing two runtimes on one PostgreSQL database"
E2E_VIA=gateway E2E_BACKEND=postgres E2E_JOURNEY=reception,clinical,billing,stock,orders bash frontend/e2e/run.sh target/debug/runtime

step "the walk's reception and clinical journeys on the distribution's content laid out as a national package publishes it (tools/national-package.py)"
# The national package in OpenMRS's published layout, a thin base and the facility's site
# over it, the national O3 configuration without French of its own, and the defects such
# packages carry: the compiler must report exactly those, a baseline of them must build the
# image, and the journeys that read what the layout changes (registration and its address
# hierarchy, the queues' statuses, the forms, the HIV dashboard's yes/no answers, French from
# the translations) must pass on it. Its build replaces target/debug/runtime, which no later
# step uses (cargo builds the distribution's again when asked: the content variables changed).
national=$(mktemp -d /tmp/emr-national.XXXXXX)
trap 'bash tools/pg-test-cluster.sh stop "$pg_dir" || true; rm -rf "$pg_dir" "$national"' EXIT
python3 tools/national-package.py "$national"
mkdir -p "$national/baselines"
if ./target/debug/compiler check --root "$national" --build-type site --site bondeko >/dev/null 2>&1; then
  echo "the national package's known defects were not reported"; exit 1
fi
./target/debug/compiler check --root "$national" --build-type site --site bondeko --write-baseline "$national/baselines/national.json"
python3 - "$national/baselines/national.json" <<'PY'
import json, sys
found = sorted((e["code"], e["path"].rsplit("/", 1)[-1]) for e in json.load(open(sys.argv[1]))["entries"])
expected = [("E0004", "one_concept_v1_autoexpand-20260301.zip"), ("E0201", "national-sets.csv"), ("E0203", "config.json")]
if found != expected:
    sys.exit(f"the national package's findings are {found}, not {expected}")
PY
CONTENT_ROOT="$national" BUILD_TYPE=site MVN_PROJECT=bondeko VALIDATOR_BASELINE=baselines/national.json \
  cargo build --locked -q -p runtime
cp target/debug/runtime "$national/runtime"
E2E_VIA=gateway E2E_JOURNEY=reception,clinical bash frontend/e2e/run.sh "$national/runtime"
rm -rf "$national"
# The build checks config.json's keys against the built modules; sites' additions too, and
# a stray key must be refused.
for site_config in sites/*/frontend/config.json; do
  if [ -f "$site_config" ]; then node frontend/check-config-keys.mjs frontend/spa "$site_config"; fi
done
stray=$(mktemp --suffix=.json)
node -e 'const c = require(process.argv[1]); c["@openmrs/esm-home-app"] = { buttons: [] };
  require("fs").writeFileSync(process.argv[2], JSON.stringify(c))' "$PWD/frontend/config/config.json" "$stray"
if node frontend/check-config-keys.mjs frontend/spa "$stray" 2>/dev/null; then
  echo "the front-end configuration check accepted a key no module defines"; exit 1
fi
# A setting at the wrong level (the queues' diagnoses concept belongs under "concepts").
node -e 'const c = require(process.argv[1]); c["@openmrs/esm-service-queues-app"] = { visitDiagnosesConceptUuid: "6cce9a27-6f26-4252-93d1-22ed85ff7809" };
  require("fs").writeFileSync(process.argv[2], JSON.stringify(c))' "$PWD/frontend/config/config.json" "$stray"
if node frontend/check-config-keys.mjs frontend/spa "$stray" 2>/dev/null; then
  echo "the front-end configuration check accepted a setting at the wrong level"; exit 1
fi
rm -f "$stray"

step "Dockerfiles replayed without a Docker engine (with Cargo's dev profile, sharing target/ with the tests' build)"
# run.sh's build above compiled the release profile; the replays show that the image builds
# from its context, and that its content check refuses and accepts what it should.
replay() { python3 .ci/dockerfile_check.py "$@" --cargo-target target --cargo-dev-profile; }
replay Dockerfile .
# A bad selection must fail the image build, with the compiler's diagnostic.
if refused=$(replay Dockerfile . --build-arg BUILD_TYPE=site --build-arg MVN_PROJECT=no-such-site 2>&1); then
  echo "the image build accepted an unknown site"; exit 1
fi
grep -q "sites that exist: goma, makala" <<<"$refused" || { echo "$refused"; echo "the refused image build did not say why"; exit 1; }
# Known problems recorded in a baseline still build an image; a new error still fails it.
ctx=$(mktemp -d)
cp -r Cargo.toml Cargo.lock .dockerignore compiler runtime openmrs_config sites content-packages content.properties baselines "$ctx/"
mkdir -p "$ctx/frontend" && cp -r frontend/config frontend/assets frontend/spa-modules.json "$ctx/frontend/"
# The modules the image ships, which the compiler reads from their package.json.
for module in frontend/modules/*/; do
  mkdir -p "$ctx/$module" && cp "$module/package.json" "$ctx/$module"
done
printf 'Uuid,Name,Parent\n4e1f0a52-7c3b-4d8e-9a61-2b5c7d9e0f13,Poste en attente,Zone à créer\n' > "$ctx/openmrs_config/locations/zz-known.csv"
./target/debug/compiler check --root "$ctx" --write-baseline "$ctx/baselines/known.json" 2>/dev/null || true
built=$(replay Dockerfile "$ctx" --build-arg VALIDATOR_BASELINE=baselines/known.json 2>&1) \
  || { echo "$built"; echo "the image build refused content whose only problem the baseline records"; exit 1; }
grep -q "baselines/known.json: 1 known problem(s) accepted, 0 stale entries" <<<"$built" || { echo "$built"; echo "the image build did not summarise the baseline"; exit 1; }
printf 'Uuid,Name,Parent\n7d2c9b1e-3f4a-4b5c-8d6e-9f0a1b2c3d4e,Poste nouveau,Zone inconnue\n' > "$ctx/openmrs_config/locations/zz-new.csv"
if refused=$(replay Dockerfile "$ctx" --build-arg VALIDATOR_BASELINE=baselines/known.json 2>&1); then
  echo "the image build accepted an error the baseline does not record"; exit 1
fi
grep -q "Invalid parent location 'Zone inconnue'" <<<"$refused" || { echo "$refused"; echo "the refused image build did not say why"; exit 1; }
rm -rf "$ctx"
python3 .ci/dockerfile_check.py frontend/Dockerfile frontend
python3 .ci/dockerfile_check.py gateway/Dockerfile gateway
step "every check passed"
