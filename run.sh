#!/usr/bin/env bash
# The whole distribution on one machine, in one binary: builds the OpenMRS 3 front end from
# npm (pinned versions), builds the runtime with that front end and the content compiled
# in, and starts it. The application is then at http://localhost:8080/openmrs/spa/.
#
#   EMR_ADMIN_PASSWORD='choose-a-long-password' bash run.sh
#
# BUILD_TYPE=site MVN_PROJECT=<site> selects a site's content; every EMR_* setting of the
# README applies (EMR_LISTEN, EMR_DATA_DIR…). The first run downloads and builds everything:
# about 15 to 25 minutes on 2 cores. Later runs rebuild only what changed (seconds).
# Needs: Rust (cargo), python3, and Node.js 22 (installed into .tools/ when missing).
set -euo pipefail
root=$(cd "$(dirname "$0")" && pwd)
cd "$root"

began=$SECONDS
stage() { printf '\n[%s] %s\n' "$1" "$2"; }
took() { printf '    done in %dm%02ds\n' $(((SECONDS - $1) / 60)) $(((SECONDS - $1) % 60)); }

command -v cargo >/dev/null || { echo "cargo is missing: install Rust (https://rustup.rs), 1.88 or newer" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 is missing (Debian: apt-get install python3 python3-venv)" >&2; exit 1; }
data_dir=${EMR_DATA_DIR:-./data}
if [ ! -f "$data_dir/store.redb" ] && [ -z "${EMR_ADMIN_PASSWORD:-}" ]; then
  # Said now rather than after the build: the first start needs it (there is no default).
  echo "EMR_ADMIN_PASSWORD is not set: the first start creates the administrator with it." >&2
  echo "  EMR_ADMIN_PASSWORD='choose-a-long-password' bash run.sh" >&2
  exit 1
fi

spa="$root/frontend/spa"
stage 1/3 "the OpenMRS 3 front end (first time: npm downloads, then about 5 minutes of build)"
t=$SECONDS
# shellcheck source=tools/node.sh
source tools/node.sh
if [ ! -f "$spa/index.html" ] || [ -n "$(find frontend/config frontend/assets frontend/modules frontend/local-modules.mjs frontend/patch-modules.mjs frontend/spa-modules.json frontend/package-lock.json frontend/build.sh -path '*/dist' -prune -o -newer "$spa/index.html" -print 2>/dev/null)" ]; then
  bash frontend/build.sh "$spa"
  took "$t"
else
  echo "    up to date ($spa)"
fi

stage 2/3 "the runtime, with the front end and the ${MVN_PROJECT:-distribution} content compiled in (first time: about 10 minutes)"
t=$SECONDS
EMR_SPA_DIR="$spa" cargo build --release --locked -p runtime
took "$t"

listen=${EMR_LISTEN:-0.0.0.0:8080}
host=${listen%:*}
[ "$host" = "0.0.0.0" ] && host=localhost
stage 3/3 "starting (ready in $(((SECONDS - began) / 60)) min since this command began)"
echo "    the application: http://$host:${listen##*:}${EMR_APP_PATH:-/openmrs}/spa/"
echo "    log in as ${EMR_ADMIN_USERNAME:-admin} with the password in EMR_ADMIN_PASSWORD; data in $data_dir; Ctrl-C stops"
exec "$root/target/release/runtime"
