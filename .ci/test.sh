#!/usr/bin/env bash
# The project's test command (README: "Run the tests"). Assumes the tools .ci/run installs.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

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

step "tests"
cargo test --workspace --locked

step "the worked examples of docs/api.md, run against a real runtime"
python3 .ci/api_examples.py target/debug/runtime

step "operating procedure against a real runtime"
bash .ci/procedure.sh target/debug/runtime

step "a real full disk (tmpfs) under a running runtime"
bash .ci/full_disk.sh target/debug/runtime

step "gateway configuration with a real nginx"
bash .ci/gateway_test.sh target/debug/runtime

step "docker-compose.yml and .env.example"
python3 .ci/compose_check.py

step "the README's first command (run.sh: one binary with the front end), driven in Chromium"
bash frontend/e2e/run.sh

step "the same walk through the compose layout (front-end and gateway nginx configurations)"
E2E_VIA=gateway bash frontend/e2e/run.sh target/debug/runtime
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

step "Dockerfiles replayed without a Docker engine (sharing target/ with run.sh's release build)"
python3 .ci/dockerfile_check.py Dockerfile . --cargo-target target
# A bad selection must fail the image build, with the compiler's diagnostic.
if refused=$(python3 .ci/dockerfile_check.py Dockerfile . --build-arg BUILD_TYPE=site --build-arg MVN_PROJECT=no-such-site --cargo-target target 2>&1); then
  echo "the image build accepted an unknown site"; exit 1
fi
grep -q "sites that exist: goma, makala" <<<"$refused" || { echo "$refused"; echo "the refused image build did not say why"; exit 1; }
python3 .ci/dockerfile_check.py frontend/Dockerfile frontend
python3 .ci/dockerfile_check.py gateway/Dockerfile gateway
