#!/usr/bin/env bash
# A throwaway PostgreSQL server for tests.
#
#   scripts/pg.sh start DIR   initialise a cluster in DIR/data if needed, start it on a free
#                             loopback port, and print its URL (the only line on stdout)
#   scripts/pg.sh stop DIR    stop it
#   scripts/pg.sh restart DIR stop it (fast: open connections are ended) and start it again on the
#                             same port (chaos tests)
#
# Trust authentication, 127.0.0.1 only, fsync off: for tests, never for data that matters.
# As root (CI), initdb and postgres refuse to run, so they run as the `postgres` system user.
set -euo pipefail

usage() {
  echo "usage: $0 start|stop|restart DIR" >&2
  exit 2
}
[[ $# -eq 2 ]] || usage
cmd=$1
mkdir -p "$2"
dir=$(cd "$2" && pwd)
data=$dir/data
log=$dir/postgres.log

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [[ -z $bindir ]]; then
  echo "pg.sh: no PostgreSQL under /usr/lib/postgresql (apt-get install postgresql)" >&2
  exit 1
fi

# Runs a server binary, as the postgres user when we are root.
as_pg() {
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

port_in_use() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

running_port() {
  # Prints the port of a server already running on this cluster, if any.
  if [[ -f $data/postmaster.pid ]] && as_pg "$bindir/pg_ctl" -D "$data" status >/dev/null 2>&1; then
    sed -n 4p "$data/postmaster.pid"
  fi
}

start() {
  if [[ $(id -u) -eq 0 ]]; then
    chown postgres: "$dir"
    chmod 700 "$dir"
  fi
  if [[ ! -f $data/PG_VERSION ]]; then
    rm -rf "$data"
    as_pg "$bindir/initdb" -D "$data" -U postgres -E UTF8 --no-locale \
      --auth-local=trust --auth-host=trust >"$dir/initdb.log" 2>&1 || {
      cat "$dir/initdb.log" >&2
      exit 1
    }
    cat >>"$data/postgresql.conf" <<EOF
# Added by scripts/pg.sh: a local test server.
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 200
EOF
  fi

  local port
  port=$(running_port)
  if [[ -z $port ]]; then
    port=55432
    local tries=0
    while :; do
      while port_in_use "$port"; do port=$((port + 1)); done
      if as_pg "$bindir/pg_ctl" -D "$data" -l "$log" -w -t 60 -o "-p $port" start >&2; then
        break
      fi
      tries=$((tries + 1))
      if [[ $tries -ge 10 ]]; then
        echo "pg.sh: PostgreSQL did not start; see $log" >&2
        tail -n 20 "$log" >&2 || true
        exit 1
      fi
      port=$((port + 1))
    done
  fi

  for _ in $(seq 1 100); do
    if "$bindir/pg_isready" -q -h 127.0.0.1 -p "$port"; then
      echo "postgresql://postgres@127.0.0.1:$port/postgres"
      return 0
    fi
    sleep 0.1
  done
  echo "pg.sh: PostgreSQL on port $port is not ready; see $log" >&2
  exit 1
}

stop() {
  if [[ -f $data/postmaster.pid ]]; then
    as_pg "$bindir/pg_ctl" -D "$data" -m fast -w stop >&2
  fi
}

restart() {
  # pg_ctl restart keeps the options the server was started with, its port among them.
  as_pg "$bindir/pg_ctl" -D "$data" -l "$log" -m fast -w -t 60 restart >&2
}

case $cmd in
  start) start ;;
  stop) stop ;;
  restart) restart ;;
  *) usage ;;
esac
