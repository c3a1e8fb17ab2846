#!/usr/bin/env bash
# Starts a private PostgreSQL cluster for the tests (Debian's `postgresql` package): its
# data and its Unix socket in a temporary directory, no TCP port, trust authentication
# for the local socket only. Prints the connection string on stdout; stop it with
# `tools/pg-test-cluster.sh stop DIR`.
#   url=$(bash tools/pg-test-cluster.sh start /tmp/emr-pg)
# `small-volume DIR MB` (as root) mounts a tmpfs of MB megabytes at DIR/small, owned by
# the server, and prints its path: a tablespace there fills up while the cluster's own disk
# (and its write-ahead log) keeps room, which is how the tests meet a full database disk.
set -euo pipefail
action=${1:?start|stop|small-volume}
dir=${2:?directory}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/initdb" ] || { echo "PostgreSQL is not installed (apt-get install postgresql)" >&2; exit 1; }
as_owner() {
  # initdb refuses to run as root: as root, the cluster belongs to the postgres user.
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
case "$action" in
  start)
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
      as_owner "$bin/initdb" -D "$dir/data" -A trust -U postgres -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    fi
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
      -o "-c listen_addresses='' -k $dir -c max_connections=400 -c shared_buffers=128MB" start >/dev/null \
      || { cat "$dir/server.log" >&2; exit 1; }
    echo "host=$dir user=postgres dbname=postgres"
    ;;
  small-volume)
    mb=${3:?size in MB}
    [ "$(id -u)" = 0 ] || { echo "mounting a small volume needs root" >&2; exit 1; }
    mkdir -p "$dir/small"
    mountpoint -q "$dir/small" || mount -t tmpfs -o "size=${mb}m,mode=0700" tmpfs "$dir/small"
    chown postgres "$dir/small"
    echo "$dir/small"
    ;;
  stop)
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    if mountpoint -q "$dir/small" 2>/dev/null; then umount "$dir/small"; fi
    ;;
  *) echo "start, stop or small-volume" >&2; exit 2 ;;
esac
