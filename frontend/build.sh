#!/usr/bin/env bash
# Assembles and builds the OpenMRS 3 front end from npm, with pinned versions, into a folder
# (default frontend/spa), then adds the distribution's config.json (over its translations.json)
# and logo.png.
# The same steps run in frontend/Dockerfile; this script is for tests and for people
# without Docker. Needs Node.js 22 or newer and npm (tools/node.sh provides them). No telemetry.
# Usage: bash frontend/build.sh [target-folder]
set -euo pipefail
cd "$(dirname "$0")"
target=${1:-spa}
# Node.js 22 on PATH when run from the repository (the image build has it already and
# copies only this folder).
if [ -f ../tools/node.sh ]; then
  # shellcheck source=../tools/node.sh
  source ../tools/node.sh
fi
export IBM_TELEMETRY_DISABLED=true

# The CLI and everything it builds with come from the lockfile.
if [ ! -x node_modules/.bin/openmrs ]; then
  npm ci --legacy-peer-deps --no-audit --no-fund
fi

node select-modules.mjs spa-modules.json config/config.json > spa-assemble-config.json
rm -rf "$target"
# A build that fails part-way leaves no index.html, so that run.sh builds again next time.
trap 'rm -f "$target/index.html"' ERR
node_modules/.bin/openmrs assemble --manifest --mode config --config spa-assemble-config.json --target "$target"
node_modules/.bin/openmrs build --build-config spa-build-config.json --target "$target"
# The distribution's own modules (modules/), built and registered next to the npm ones.
node local-modules.mjs "$target"
# English that pinned modules write without a translation key, made translatable.
node patch-modules.mjs "$target"
[ -f "$target/index.html" ] || { echo "the build produced no index.html" >&2; exit 1; }
# A key the built modules' schemas do not define would be ignored in the browser.
node check-config-keys.mjs "$target" config/translations.json
node check-config-keys.mjs "$target" config/config.json
# The distribution's translations lie under its configuration, as the compiler merges them
# (objects key by key, anything else replaced).
node -e 'const fs = require("fs");
  const merge = (b, o) => { for (const [k, v] of Object.entries(o)) {
    b[k] = v && typeof v === "object" && !Array.isArray(v) && b[k] && typeof b[k] === "object" && !Array.isArray(b[k]) ? merge(b[k], v) : v; } return b; };
  const [t, c, out] = process.argv.slice(1);
  fs.writeFileSync(out, JSON.stringify(merge(JSON.parse(fs.readFileSync(t)), JSON.parse(fs.readFileSync(c))), null, 2) + "\n");' \
  config/translations.json config/config.json "$target/config.json"
cp assets/logo.png "$target/logo.png"
echo "front end built in $(cd "$target" && pwd)"
