#!/usr/bin/env bash
# A real full disk: the runtime's data directory on a 6 MiB tmpfs, filled up while the
# service runs. Saving must answer 507 (not 500) while reads keep working and
# health/started reports the store; once space is freed the service must write again by
# itself, and nothing acknowledged may be lost. (The fault-injecting storage layer of
# runtime/tests/it/store_faults.rs covers the same rules in every `cargo test`; this adds
# the real kernel's ENOSPC and the free-space check.) Needs root for the mount.
# Usage: .ci/full_disk.sh path/to/runtime
set -euo pipefail
BIN=$(realpath "$1")
if [ "$(id -u)" != 0 ]; then
  echo "full-disk test: needs root to mount a tmpfs; run it as root (CI does)"; exit 1
fi
MNT=$(mktemp -d)
WORK=$(mktemp -d)   # answers and the log live off the full volume
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mount -t tmpfs -o size=6m tmpfs "$MNT"
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; umount "$MNT"; rmdir "$MNT"; rm -rf "$WORK"; }
trap cleanup EXIT
fail() { echo "full-disk test FAILED: $*"; cat "$WORK/runtime.log" 2>/dev/null | tail -20; exit 1; }

EMR_DATA_DIR="$MNT/data" EMR_LISTEN=127.0.0.1:$PORT EMR_ADMIN_PASSWORD=Full-disk-pass-1 EMR_LOG=warn \
  "$BIN" > "$WORK/runtime.log" 2>&1 &
PID=$!
BASE=http://127.0.0.1:$PORT/openmrs
for _ in $(seq 100); do curl -sf -o /dev/null "$BASE/health/started" && break; sleep 0.1; done
AUTH=admin:Full-disk-pass-1
api() { curl -s -o "$WORK/body" -w '%{http_code}' -u "$AUTH" "$@"; }

# Acknowledged writes before the disk fills: idgen counters (each a durable write).
SOURCES=$(curl -s -u "$AUTH" "$BASE/ws/rest/v1/idgen/identifiersource?v=default")
SOURCE=$(echo "$SOURCES" | python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["uuid"])')
ID_TYPE=$(echo "$SOURCES" | python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["identifierType"]["uuid"])')
# A patient registered with an identifier just generated: a write that grows the store.
register() {
  api -X POST -H 'Content-Type: application/json' \
    -d "{\"person\":{\"names\":[{\"givenName\":\"Plein\",\"familyName\":\"Disque\"}],\"gender\":\"F\",\"birthdate\":\"1990-01-01\"},\"identifiers\":[{\"identifier\":\"$1\",\"identifierType\":\"$ID_TYPE\",\"preferred\":true}]}" \
    "$BASE/ws/rest/v1/patient"
}
gen() { api -X POST -H 'Content-Type: application/json' -d '{}' "$BASE/ws/rest/v1/idgen/identifiersource/$SOURCE/identifier"; }
before=()
for _ in 1 2 3; do
  [ "$(gen)" = 200 ] || fail "generation before the fault: $(cat "$WORK/body")"
  before+=("$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["identifier"])' "$WORK/body")")
done

# Fill the volume. Writes that fit in pages the store file already has may still succeed
# (a counter's page is rewritten in place once freed pages are reused): generate an
# identifier and register a patient with it until a write needs new space; that one must
# be refused with 507.
dd if=/dev/zero of="$MNT/filler" bs=4k 2>/dev/null || true
code=200
for _ in $(seq 500); do
  code=$(gen)
  [ "$code" = 200 ] || break
  id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["identifier"])' "$WORK/body")
  before+=("$id")
  code=$(register "$id")
  [ "$code" = 201 ] || break
done
[ "$code" = 507 ] || fail "a write on a full disk answered $code: $(cat "$WORK/body")"
grep -q emr.store.unwritable "$WORK/body" || fail "no store error body: $(cat "$WORK/body")"
code=$(curl -s -o "$WORK/body" -w '%{http_code}' "$BASE/health/started")
[ "$code" = 503 ] && grep -q '"diskFull":true' "$WORK/body" || fail "health/started answered $code $(cat "$WORK/body")"
code=$(api "$BASE/ws/rest/v1/systemsetting/visits.enabled")
[ "$code" = 200 ] || fail "a read on a full disk answered $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -u admin:wrong-password "$BASE/ws/rest/v1/session")
[ "$code" = 507 ] || fail "a wrong password on a full disk answered $code"

# Free the space: the service writes again by itself (the background task, within 5 s).
rm "$MNT/filler"
for _ in $(seq 100); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/health/started")" = 200 ] && break
  sleep 0.1
done
[ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/health/started")" = 200 ] || fail "health/started did not recover"
code=$(gen)
[ "$code" = 200 ] || fail "a write after freeing space answered $code: $(cat "$WORK/body")"
after=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["identifier"])' "$WORK/body")
for id in "${before[@]}"; do
  [ "$id" != "$after" ] || fail "identifier $id was handed out twice: a counter write was lost"
done
echo "full-disk test passed: 507 while full, reads and health as documented, recovered by itself; ${#before[@]} identifiers acknowledged before, none handed out again"
