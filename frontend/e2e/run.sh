#!/usr/bin/env bash
# End-to-end test of the real O3 front end in a real browser:
# builds the SPA from npm (pinned), fills its placeholders as the front-end container does,
# serves it with the front-end and gateway nginx configurations (Debian's nginx) in front
# of a real runtime, and drives Debian's Chromium with playwright-core through the flow:
# French login page, login, location, search, registration with a generated identifier,
# the chart banner, English, logout. Screenshots go to frontend/e2e/artifacts/.
# Usage: bash frontend/e2e/run.sh [path/to/runtime]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"

bin=${1:-target/debug/runtime}
[ -x "$bin" ] || cargo build -q -p runtime
command -v chromium >/dev/null || { echo "chromium is missing: apt-get install chromium" >&2; exit 1; }
export IBM_TELEMETRY_DISABLED=true PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
[ -d "$here/node_modules/playwright-core" ] || (cd "$here" && npm ci --no-audit --no-fund)

work=$(mktemp -d)
chmod 755 "$work"  # nginx workers run unprivileged
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# The front end, built and started as its container does (SPA_DEFAULT_LOCALE unset: French).
spa="${E2E_SPA:-$root/frontend/spa}"
if [ ! -f "$spa/index.html" ] || [ -n "$(find frontend/config frontend/spa-modules.json frontend/package-lock.json -newer "$spa/index.html" 2>/dev/null)" ]; then
  bash frontend/build.sh "$spa" >"$work/build.log" 2>&1 || { tail -30 "$work/build.log"; exit 1; }
fi
cp -r "$spa" "$work/spa"
SPA_CONFIG_URLS=/openmrs/frontend/config.json sh frontend/startup.sh "$work/spa"

backend_port=$(free_port); frontend_port=$(free_port); gateway_port=$(free_port)
export E2E_PASSWORD="E2e-$RANDOM-password"
EMR_DATA_DIR="$work/data" EMR_LISTEN="127.0.0.1:$backend_port" EMR_ADMIN_PASSWORD="$E2E_PASSWORD" EMR_LOG=warn "$bin" &
pids+=($!)

# Both nginx configurations, rendered as their images render them, in one nginx.
export NGINX_PORT="$frontend_port" SPA_ROOT="$work/spa"
envsubst '${NGINX_PORT} ${SPA_ROOT}' < frontend/nginx.conf.template > "$work/frontend.conf"
export NGINX_PORT="$gateway_port" BACKEND_URL="http://127.0.0.1:$backend_port" FRONTEND_URL="http://127.0.0.1:$frontend_port" FRAME_ANCESTORS="'self'"
envsubst '${NGINX_PORT} ${BACKEND_URL} ${FRONTEND_URL} ${FRAME_ANCESTORS}' < gateway/default.conf.template > "$work/gateway.conf"
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

export E2E_BASE="http://127.0.0.1:$gateway_port"
for _ in $(seq 300); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$E2E_BASE/openmrs/login.htm" || true)" = 200 ] && break
  sleep 0.1
done

mkdir -p "$here/artifacts"
if [ -n "${E2E_HOLD:-}" ]; then
  echo "serving at $E2E_BASE (admin / $E2E_PASSWORD); press Ctrl-C to stop"
  wait
fi
node "$here/${E2E_FLOW:-flow.mjs}"
