#!/bin/sh
# Fills the placeholders the O3 build leaves in index.html and the service worker, then
# (with an argument) runs it, e.g. nginx. Used by the front-end container and the tests.
# Variables: SPA_PATH (/openmrs/spa), API_URL (/openmrs), SPA_CONFIG_URLS (comma or space
# separated; /openmrs/spa/config.json), SPA_DEFAULT_LOCALE (fr), IMPORTMAP_URL (optional).
# Usage: startup.sh <web root> [command…]
set -eu
root=$1
shift
: "${SPA_PATH:=/openmrs/spa}"
: "${API_URL:=/openmrs}"
: "${SPA_CONFIG_URLS=/openmrs/spa/config.json}"
: "${SPA_DEFAULT_LOCALE:=fr}"
export SPA_PATH API_URL SPA_DEFAULT_LOCALE

files="$root/index.html"
for f in "$root/service-worker.js" "$root"/manifest.*.json; do
  [ -f "$f" ] && files="$files $f"
done
if [ -n "${IMPORTMAP_URL:-}" ]; then
  # shellcheck disable=SC2086
  sed -i "s#\"\$SPA_PATH/importmap.json\"#\"$IMPORTMAP_URL\"#" $files
fi
if [ -z "$SPA_CONFIG_URLS" ]; then
  # No config file: an empty list, not a list with an empty string.
  sed -i 's#"$SPA_CONFIG_URLS"##' "$root/index.html"
else
  case "$SPA_CONFIG_URLS" in
    *,*) urls=$(printf '%s' "$SPA_CONFIG_URLS" | tr ',' '\n') ;;
    *) urls=$(printf '%s' "$SPA_CONFIG_URLS" | tr ' ' '\n') ;;
  esac
  list=$(printf '%s\n' "$urls" | sed '/^$/d; s/.*/"&"/' | paste -sd, -)
  sed -i "s#\"\$SPA_CONFIG_URLS\"#$list#" "$root/index.html"
fi
# Substitute only these variables: the files hold other dollar signs.
for f in $files; do
  envsubst '$SPA_PATH $API_URL $SPA_DEFAULT_LOCALE' < "$f" > "$f.tmp"
  mv "$f.tmp" "$f"
done

if [ $# -gt 0 ]; then
  exec "$@"
fi
