#!/usr/bin/env bash
# Tests gateway/default.conf.template with a real nginx (Debian's), without Docker:
# renders the template as the nginx image does (envsubst over the defined variables), runs
# nginx on loopback in front of a real runtime and a static front-end folder, and checks
# routes, redirects, forwarded headers, gzip and security headers.
# Usage: bash .ci/gateway_test.sh [path/to/runtime]
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${1:-target/debug/runtime}
[ -x "$bin" ] || cargo build -q -p runtime
work=$(mktemp -d)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
backend_port=$(free_port); frontend_port=$(free_port); gateway_port=$(free_port)
password="Gateway-$RANDOM-pass"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "gateway test failed: $*" >&2; exit 1; }
passed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }

# The back end, and a static folder standing for the front-end container.
EMR_DATA_DIR="$work/data" EMR_LISTEN="127.0.0.1:$backend_port" EMR_ADMIN_PASSWORD="$password" EMR_LOG=warn "$bin" &
pids+=($!)
mkdir -p "$work/spa"
printf '<!doctype html><title>spa</title><p>front end</p>\n' > "$work/spa/index.html"
python3 -m http.server "$frontend_port" --bind 127.0.0.1 --directory "$work/spa" >/dev/null 2>&1 &
pids+=($!)

# Render the template exactly as the nginx image's entrypoint does.
export NGINX_PORT="$gateway_port" BACKEND_SERVERS="127.0.0.1:$backend_port" FRONTEND_URL="http://127.0.0.1:$frontend_port" FRAME_ANCESTORS="'self' https://portal.example.org"
source gateway/backend-upstream.envsh
defined=$(printf '${%s} ' NGINX_PORT BACKEND_UPSTREAM FRONTEND_URL FRAME_ANCESTORS)
envsubst "$defined" < gateway/default.conf.template > "$work/default.conf"
grep -q '\${' "$work/default.conf" && fail "unrendered variable in the template"
cat > "$work/nginx.conf" <<CONF
daemon off;
pid $work/nginx.pid;
error_log $work/error.log warn;
events {}
http {
    include /etc/nginx/mime.types;
    access_log off;
    client_body_temp_path $work/body;
    proxy_temp_path $work/proxy;
    fastcgi_temp_path $work/fastcgi;
    uwsgi_temp_path $work/uwsgi;
    scgi_temp_path $work/scgi;
    include $work/default.conf;
}
CONF
nginx -t -c "$work/nginx.conf" -p "$work" 2>"$work/nginx-t.log" || { cat "$work/nginx-t.log"; fail "nginx rejects the configuration"; }
nginx -c "$work/nginx.conf" -p "$work" &
pids+=($!)

base="http://127.0.0.1:$gateway_port"
# Wait (up to 20 s) until nginx, the back end and the static server all answer.
for _ in $(seq 200); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/openmrs/login.htm" || true)" = 200 ] &&
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/openmrs/spa/" || true)" = 200 ] && break
  sleep 0.1
done

# Redirects.
loc=$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' "$base/")
[ "$loc" = "301 $base/openmrs/spa/" ] || fail "/ should redirect to /openmrs/spa/, got: $loc"
ok "/ redirects to /openmrs/spa/"

# The front end, with the prefix stripped.
curl -s "$base/openmrs/spa/" | grep -q 'front end' || fail "/openmrs/spa/ is not the front end"
curl -s "$base/openmrs/spa/index.html" | grep -q 'front end' || fail "/openmrs/spa/index.html is not the front end"
ok "/openmrs/spa/ serves the front end"

# The back end, with forwarded headers: links are built from the gateway's address.
session=$(curl -s "$base/openmrs/ws/rest/v1/session")
[[ "$session" == *'"authenticated":false'* ]] || fail "/openmrs/ws/rest/v1/session: $session"
link=$(curl -s -u "admin:$password" "$base/openmrs/ws/rest/v1/concept/DRC-EMR:5001?v=ref" | python3 -c 'import json,sys; print(json.load(sys.stdin)["links"][0]["uri"])')
[[ "$link" == "$base/openmrs/ws/rest/v1/concept/"* ]] || fail "links do not use the forwarded host: $link"
link=$(curl -s -u "admin:$password" -H 'X-Forwarded-Proto: https' "$base/openmrs/ws/rest/v1/concept/DRC-EMR:5001?v=ref" | python3 -c 'import json,sys; print(json.load(sys.stdin)["links"][0]["uri"])')
[[ "$link" == "http://127.0.0.1:$gateway_port/"* ]] || fail "the gateway must set X-Forwarded-Proto itself, not pass the client's: $link"
ok "/openmrs goes to the back end with forwarded headers"

# Request ids: the gateway makes one per request; the back end echoes it.
id1=$(curl -s -D - -o /dev/null "$base/openmrs/ws/rest/v1/session" | tr -d '\r' | awk -F': ' 'tolower($1)=="x-request-id"{print $2}')
id2=$(curl -s -D - -o /dev/null -H 'X-Request-Id: forged' "$base/openmrs/ws/rest/v1/session" | tr -d '\r' | awk -F': ' 'tolower($1)=="x-request-id"{print $2}')
[[ "$id1" =~ ^[0-9a-f]{32}$ && "$id2" =~ ^[0-9a-f]{32}$ && "$id1" != "$id2" ]] || fail "request ids: '$id1' '$id2'"
ok "every request through the gateway gets its own request id"

# Security headers on every answer, including redirects and errors.
for path in / /openmrs/spa/ /openmrs/ws/rest/v1/session /openmrs/ws/rest/v1/nothing; do
  headers=$(curl -s -D - -o /dev/null "$base$path")
  grep -qi '^x-content-type-options: nosniff' <<<"$headers" || fail "$path lacks X-Content-Type-Options"
  grep -qi "^content-security-policy: frame-ancestors 'self' https://portal.example.org" <<<"$headers" || fail "$path lacks the frame-ancestors policy"
done
ok "security headers on pages, API answers, redirects and errors"

# gzip for large JSON.
encoding=$(curl -s -D - -o /dev/null -H 'Accept-Encoding: gzip' -u "admin:$password" "$base/openmrs/ws/rest/v1/concept/DRC-EMR:3065?v=full" | tr -d '\r' | awk -F': ' 'tolower($1)=="content-encoding"{print $2}')
[ "$encoding" = gzip ] || fail "large JSON answers are not compressed (got '$encoding')"
ok "gzip on large JSON"

# Login through the gateway keeps the cookie path.
cookie=$(curl -s -D - -o /dev/null -u "admin:$password" "$base/openmrs/ws/rest/v1/session" | tr -d '\r' | grep -i '^set-cookie:')
[[ "$cookie" == *"Path=/openmrs"* && "$cookie" == *HttpOnly* ]] || fail "session cookie through the gateway: $cookie"
ok "session cookie through the gateway"

echo "gateway: $passed passed, 0 failed"
