#!/usr/bin/env bash
# The distribution's operating procedure, run against a real runtime process:
# start it, wait for login.htm to answer 200, authenticate on session, create and search a
# patient, read a concept, change a system setting, reload the content, stop it.
# Usage: bash .ci/procedure.sh [path/to/runtime]   (default: target/debug/runtime)
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${1:-target/debug/runtime}
[ -x "$bin" ] || cargo build -q -p runtime
data=$(mktemp -d)
cookies="$data/cookies"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port/openmrs"
password="Procedure-$RANDOM-pass"

EMR_DATA_DIR="$data/data" EMR_LISTEN="127.0.0.1:$port" EMR_ADMIN_PASSWORD="$password" EMR_LOG=warn "$bin" &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$data"' EXIT

json() { python3 -c "import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1], {'d': d}))" "$1"; }
fail() { echo "procedure failed: $*" >&2; exit 1; }

# 1. Wait for login.htm (operators poll every 10 s; here every 0.2 s, for at most 60 s).
for _ in $(seq 300); do
  code=$(curl -s -o /dev/null -w '%{http_code}' "$base/login.htm" || true)
  [ "$code" = 200 ] && break
  sleep 0.2
done
[ "$code" = 200 ] || fail "login.htm never answered 200"
echo "ok: login.htm answers 200"

# 2. Authenticate on session (HTTP Basic once, then the cookie).
[ "$(curl -s -c "$cookies" -u "admin:$password" "$base/ws/rest/v1/session" | json 'd["authenticated"]')" = True ] || fail "authentication"
[ "$(curl -s -b "$cookies" "$base/ws/rest/v1/session" | json 'd["user"]["username"]')" = admin ] || fail "session cookie"
echo "ok: authenticated"

# 3. Create a patient with a generated identifier, then find it by name without accents.
source=$(curl -s -b "$cookies" "$base/ws/rest/v1/idgen/identifiersource?v=default" | json 'd["results"][0]["uuid"]')
type=$(curl -s -b "$cookies" "$base/ws/rest/v1/idgen/identifiersource?v=default" | json 'd["results"][0]["identifierType"]["uuid"]')
identifier=$(curl -s -b "$cookies" -X POST -H 'Content-Type: application/json' -d '{}' "$base/ws/rest/v1/idgen/identifiersource/$source/identifier" | json 'd["identifier"]')
body=$(cat <<JSON
{"person":{"names":[{"givenName":"Élodie","familyName":"Tshibangu"}],"gender":"F","birthdate":"1992-3-8"},
 "identifiers":[{"identifier":"$identifier","identifierType":"$type","preferred":true}]}
JSON
)
created=$(curl -s -b "$cookies" -w '\n%{http_code}' -X POST -H 'Content-Type: application/json' -d "$body" "$base/ws/rest/v1/patient")
[ "$(tail -n1 <<<"$created")" = 201 ] || fail "patient creation: $created"
uuid=$(head -n1 <<<"$created" | json 'd["uuid"]')
found=$(curl -s -b "$cookies" "$base/ws/rest/v1/patient?q=elodie%20tshi" | json '[p["uuid"] for p in d["results"]]')
[[ "$found" == *"$uuid"* ]] || fail "search did not find the patient: $found"
echo "ok: patient $identifier created and found"

# 4. Read a concept by its mapping.
[ "$(curl -s -b "$cookies" "$base/ws/rest/v1/concept/DRC-EMR:5001?v=custom:(units)" | json 'd["units"]')" = "°C" ] || fail "concept"
echo "ok: concept read"

# 5. Change a system setting.
curl -s -b "$cookies" -X POST -H 'Content-Type: application/json' -d '{"value":"12"}' "$base/ws/rest/v1/systemsetting/visits.autoCloseVisitTimeout" >/dev/null
[ "$(curl -s -b "$cookies" "$base/ws/rest/v1/systemsetting/visits.autoCloseVisitTimeout?v=custom:(value)" | json 'd["value"]')" = 12 ] || fail "setting"
echo "ok: system setting changed"

# 6. Reload the content: the setting returns to the content's value, the patient stays.
[ "$(curl -s -b "$cookies" -X POST "$base/ws/rest/v1/initializer/reload" | json 'd["reset"]["systemsettings"]')" = "['visits.autoCloseVisitTimeout']" ] || fail "reload"
[ "$(curl -s -b "$cookies" "$base/ws/rest/v1/systemsetting/visits.autoCloseVisitTimeout?v=custom:(value)" | json 'd["value"]')" = 24 ] || fail "setting after reload"
[ "$(curl -s -o /dev/null -w '%{http_code}' -b "$cookies" "$base/ws/rest/v1/patient/$uuid")" = 200 ] || fail "patient after reload"
echo "ok: content reloaded"

kill -TERM $pid
wait $pid || fail "the runtime did not stop cleanly"
trap 'rm -rf "$data"' EXIT
echo "procedure: 6 passed, 0 failed"
