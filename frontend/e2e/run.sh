#!/usr/bin/env bash
# End-to-end test of the real O3 front end in a real browser, driving Debian's Chromium
# with playwright-core (flow.mjs, which runs the journeys of journeys/ in turn with lib.mjs)
# through login, location, search, registration, the chart, the language switch and logout.
# Screenshots go to frontend/e2e/artifacts/.
#
# Two ways to run the distribution, as it is deployed:
# - default: the README's first command, `bash run.sh` (one binary serving the API and
#   the embedded front end), started exactly as a newcomer starts it, on a free port;
# - E2E_VIA=gateway: the compose layout without Docker: the given runtime binary, the
#   front end served by frontend/nginx.conf.template with its placeholders filled as its
#   container fills them, and gateway/default.conf.template in front, in Debian's nginx.
#   With E2E_BACKEND=postgres, two runtimes share one PostgreSQL database (EMR_TEST_POSTGRES)
#   behind that gateway, which balances between them.
# E2E_JOURNEY=<journey> runs one journey of journeys/ alone (orders, ward…; see flow.mjs),
# from the state the journeys before it would leave, made through the REST API first;
# clinical-review cannot run alone; E2E_JOURNEY=reception,clinical runs consecutive journeys.
# Unset: the whole walk.
# Usage: bash frontend/e2e/run.sh                          (one binary)
#        E2E_VIA=gateway bash frontend/e2e/run.sh [runtime]  (gateway; needs frontend/spa)
#        E2E_JOURNEY=orders bash frontend/e2e/run.sh       (one journey; either way)
#        E2E_VIA=gateway E2E_BACKEND=postgres bash frontend/e2e/run.sh [runtime]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"

command -v chromium >/dev/null || { echo "chromium is missing: apt-get install chromium" >&2; exit 1; }
export IBM_TELEMETRY_DISABLED=true PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
# shellcheck source=../../tools/node.sh
source "$root/tools/node.sh"
[ -d "$here/node_modules/playwright-core" ] || (cd "$here" && npm ci --no-audit --no-fund)

work=$(mktemp -d)
chmod 755 "$work"  # nginx workers run unprivileged
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
export E2E_PASSWORD="E2e-$RANDOM-password"

if [ "${E2E_VIA:-one-binary}" = gateway ]; then
  bin=${1:-target/debug/runtime}
  [ -x "$bin" ] || cargo build -q -p runtime
  spa="${E2E_SPA:-$root/frontend/spa}"
  [ -f "$spa/index.html" ] || { echo "no built front end in $spa: run bash run.sh or bash frontend/build.sh first" >&2; exit 1; }
  cp -r "$spa" "$work/spa"
  SPA_CONFIG_URLS=/openmrs/frontend/config.json sh frontend/startup.sh "$work/spa"

  backend_port=$(free_port); frontend_port=$(free_port); gateway_port=$(free_port)
  if [ "${E2E_BACKEND:-redb}" = postgres ]; then
    # Two runtimes on one PostgreSQL database (a schema of this run's own), the gateway
    # sending requests to each in turn: every screen's calls alternate between them.
    : "${EMR_TEST_POSTGRES:?E2E_BACKEND=postgres needs a server: EMR_TEST_POSTGRES=\$(bash tools/pg-test-cluster.sh start DIR)}"
    schema="e2e_$$_$RANDOM"
    second_port=$(free_port)
    for p in "$backend_port" "$second_port"; do
      EMR_DATABASE_URL="$EMR_TEST_POSTGRES" EMR_DATABASE_SCHEMA="$schema" EMR_DATA_DIR="$work/data-$p" \
        EMR_LISTEN="127.0.0.1:$p" EMR_ADMIN_PASSWORD="$E2E_PASSWORD" EMR_LOG=warn "$bin" &
      pids+=($!)
    done
    export E2E_BACKEND_SERVERS="127.0.0.1:$backend_port 127.0.0.1:$second_port"
  else
    EMR_DATA_DIR="$work/data" EMR_LISTEN="127.0.0.1:$backend_port" EMR_ADMIN_PASSWORD="$E2E_PASSWORD" EMR_LOG=warn "$bin" &
    pids+=($!)
  fi

  # Both nginx configurations, rendered as their images render them, in one nginx.
  export NGINX_PORT="$frontend_port" SPA_ROOT="$work/spa"
  envsubst '${NGINX_PORT} ${SPA_ROOT}' < frontend/nginx.conf.template > "$work/frontend.conf"
  export NGINX_PORT="$gateway_port" BACKEND_SERVERS="${E2E_BACKEND_SERVERS:-127.0.0.1:$backend_port}" FRONTEND_URL="http://127.0.0.1:$frontend_port" FRAME_ANCESTORS="'self'"
  source gateway/backend-upstream.envsh
  envsubst '${NGINX_PORT} ${BACKEND_UPSTREAM} ${FRONTEND_URL} ${FRAME_ANCESTORS}' < gateway/default.conf.template > "$work/gateway.conf"
  cat > "$work/nginx.conf" <<CONF
daemon off;
pid $work/nginx.pid;
error_log $work/nginx-error.log warn;
events {}
http {
    include /etc/nginx/mime.types;
    access_log off;
    client_body_temp_path $work/body;
    proxy_temp_path $work/proxy;
    fastcgi_temp_path $work/fastcgi;
    uwsgi_temp_path $work/uwsgi;
    scgi_temp_path $work/scgi;
    include $work/frontend.conf;
    include $work/gateway.conf;
}
CONF
  nginx -c "$work/nginx.conf" -p "$work" &
  pids+=($!)
  export E2E_BASE="http://127.0.0.1:$gateway_port" E2E_SPA_DIR="$spa"
  wait_seconds=30
else
  # The README's first command, as written there, with a port and data folder of its own.
  port=$(free_port)
  EMR_ADMIN_PASSWORD="$E2E_PASSWORD" EMR_LISTEN="127.0.0.1:$port" EMR_DATA_DIR="$work/data" EMR_LOG=warn \
    bash run.sh > >(sed 's/^/  run.sh: /') 2>&1 &
  pids+=($!)
  export E2E_BASE="http://127.0.0.1:$port" E2E_SPA_DIR="$root/frontend/spa"
  # run.sh builds what is out of date first: the first time on a fresh machine, minutes.
  wait_seconds=3600
fi

for _ in $(seq $((wait_seconds * 10))); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$E2E_BASE/openmrs/login.htm" || true)" = 200 ] && break
  kill -0 "${pids[0]}" 2>/dev/null || { echo "the distribution stopped before answering" >&2; exit 1; }
  sleep 0.1
done

mkdir -p "$here/artifacts"
if [ -n "${E2E_HOLD:-}" ]; then
  echo "serving at $E2E_BASE (admin / $E2E_PASSWORD); press Ctrl-C to stop"
  wait
fi
node "$here/${E2E_FLOW:-flow.mjs}"
