#!/usr/bin/env bash
# A real GPUnex cluster on this machine, started by one command: a throwaway PostgreSQL
# (scripts/pg.sh), N gpunex-server replicas on loopback ports sharing its database, and Debian's
# nginx as the load balancer in front of them, with deploy/nginx/gpunex.conf rendered for those
# ports (the same file an operator installs). For trying scale-out and for its tests; never for
# data that matters (PostgreSQL runs with fsync off, trust authentication).
#
#   scripts/cluster.sh up [N]        start N replicas (default 2) and the rest; prints the
#                                    balancer's URL, the only line on stdout
#   scripts/cluster.sh start-replica I   start replica I again (after a crash), on its port
#   scripts/cluster.sh restart       restart the replicas one at a time (SIGTERM, start, ready),
#                                    waiting out nginx's fail_timeout after each: no request fails
#   scripts/cluster.sh restart-db    restart PostgreSQL on its port (a chaos test: replicas report
#                                    not ready meanwhile, then reconnect)
#   scripts/cluster.sh status        each process, and each replica's /readyz
#   scripts/cluster.sh down          stop everything `up` started (logs are kept)
#
# Environment: GPUNEX_CLUSTER_DIR (default var/cluster): its files, logs and pid files;
# GPUNEX_BIN_DIR (default build/bin); GPUNEX_CLUSTER_PORT: nginx's port (default the first free
# one from 8000; the replicas take the next free ones); GPUNEX_CLUSTER_SERVER_ARGS: more
# gpunex-server flags for every replica (e.g. --allow-simulated-offers).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=${GPUNEX_BIN_DIR:-build/bin}
[[ $BIN = /* ]] || BIN=$ROOT/$BIN
DIR=${GPUNEX_CLUSTER_DIR:-var/cluster}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
NGX=$DIR/nginx
# nginx leaves a replica that refused a connection out this long (deploy/nginx/gpunex.conf).
FAIL_TIMEOUT_S=2

usage() {
  echo "usage: $0 up [N] | start-replica I | restart | restart-db | status | down" >&2
  exit 2
}

log() { echo "cluster: $*" >&2; }

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# The first free port from $1 that is not in the words of $2.
free_port() {
  local p=$1
  while port_in_use "$p" || [[ " ${2:-} " == *" $p "* ]]; do p=$((p + 1)); done
  echo "$p"
}

# True if pid $1 is alive and its command line holds $2 (a pid file's process, not a reused pid).
alive_as() {
  local pid=$1 what=$2
  [[ -n $pid && -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$what"
}

nginx_bin() { command -v nginx || echo /usr/sbin/nginx; }

start_replica() {
  local i=$1 port db
  port=$(sed -n "${i}p" "$DIR/replica-ports")
  [[ -n $port ]] || { log "no replica $i (see $DIR/replica-ports)"; exit 2; }
  db=$(cat "$DIR/db-url")
  local rdir=$DIR/replica-$i
  mkdir -p "$rdir"
  if alive_as "$(cat "$rdir/pid" 2>/dev/null || true)" gpunex-server; then
    log "replica $i is running already"
    return 0
  fi
  # One secret for every replica: a key sealed by one (the approval key) is revealed by another.
  # ${GPUNEX_CLUSTER_SERVER_ARGS} is split into words on purpose.
  # shellcheck disable=SC2086
  GPUNEX_SERVER_SECRET=$(cat "$DIR/server-secret") nohup "$BIN/gpunex-server" \
    --listen "127.0.0.1:$port" --db "$db" --data-dir "$rdir" --trusted-proxies 127.0.0.1 \
    --public-url "http://127.0.0.1:$(cat "$DIR/nginx-port")" \
    --log-level info ${GPUNEX_CLUSTER_SERVER_ARGS:-} </dev/null >>"$rdir/server.log" 2>&1 &
  echo $! >"$rdir/pid"
}

wait_ready() {
  local i=$1 port pid
  port=$(sed -n "${i}p" "$DIR/replica-ports")
  pid=$(cat "$DIR/replica-$i/pid")
  for _ in $(seq 1 300); do
    curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" 2>/dev/null && return 0
    if ! kill -0 "$pid" 2>/dev/null; then
      log "replica $i exited; the end of $DIR/replica-$i/server.log:"
      tail -n 20 "$DIR/replica-$i/server.log" >&2
      exit 1
    fi
    sleep 0.1
  done
  log "replica $i is not ready on port $port after 30 s; see $DIR/replica-$i/server.log"
  exit 1
}

up() {
  local n=${1:-2}
  [[ $n =~ ^[1-9][0-9]?$ ]] || usage
  [[ -x $BIN/gpunex-server ]] || { log "no $BIN/gpunex-server: run make build"; exit 1; }
  [[ -x $(nginx_bin) ]] || { log "nginx is missing: run scripts/deps.sh"; exit 1; }
  if [[ -f $DIR/url ]]; then
    log "a cluster is up already in $DIR ($(cat "$DIR/url")): scripts/cluster.sh down first"
    exit 1
  fi
  rm -f "$DIR"/replica-*/pid

  # PostgreSQL, and the database the replicas share.
  local base db
  base=$(scripts/pg.sh start "$DIR/pg")
  db=${base%/postgres}/gpunex
  if [[ -z $(psql "$base" -tAc "SELECT 1 FROM pg_database WHERE datname = 'gpunex'") ]]; then
    psql "$base" -qc "CREATE DATABASE gpunex"
  fi
  echo "$db" >"$DIR/db-url"
  [[ -s $DIR/server-secret ]] || (umask 077 && openssl rand -hex 32 >"$DIR/server-secret")

  # Ports: nginx's, then one per replica.
  local nport taken ports=()
  nport=$(free_port "${GPUNEX_CLUSTER_PORT:-8000}")
  taken=$nport
  for _ in $(seq 1 "$n"); do
    local p
    p=$(free_port $((nport + 1)) "$taken")
    taken="$taken $p"
    ports+=("$p")
  done
  printf '%s\n' "${ports[@]}" >"$DIR/replica-ports"
  echo "$nport" >"$DIR/nginx-port"  # the replicas' public_url: their links name the balancer

  # The replicas start together: the first migrates the empty database, the others wait on the
  # migration's advisory lock and find nothing left to do.
  for i in $(seq 1 "$n"); do start_replica "$i"; done
  for i in $(seq 1 "$n"); do wait_ready "$i"; done

  # nginx: deploy/nginx/gpunex.conf rendered for these ports, inside a main file of our own.
  mkdir -p "$NGX/logs"
  local replicas=""
  for p in "${ports[@]}"; do replicas+="server 127.0.0.1:$p max_fails=1 fail_timeout=${FAIL_TIMEOUT_S}s;\n    "; done
  # Comment lines keep their placeholders: they document them.
  sed -e "/^[[:space:]]*#/!s|@LISTEN@|127.0.0.1:$nport|" -e "/^[[:space:]]*#/!s|@REPLICAS@|${replicas%\\n    }|" \
    -e "/^[[:space:]]*#/!s|@LOG_DIR@|$NGX/logs|" deploy/nginx/gpunex.conf >"$NGX/gpunex.conf"
  {
    echo "# Written by scripts/cluster.sh around deploy/nginx/gpunex.conf (rendered beside it)."
    # As root (CI), nginx would run its workers as nobody, who may not enter a private folder.
    [[ $(id -u) -eq 0 ]] && echo "user root;  # a throwaway loopback cluster started as root"
    echo "worker_processes 2;"
    echo "pid $NGX/nginx.pid;"
    echo "error_log $NGX/logs/error.log warn;"
    echo "events { worker_connections 1024; }"
    echo "http {"
    echo "  client_body_temp_path $NGX/client_body;"
    echo "  proxy_temp_path $NGX/proxy;"
    echo "  include $NGX/gpunex.conf;"
    echo "}"
  } >"$NGX/nginx.conf"
  "$(nginx_bin)" -q -t -p "$NGX" -e "$NGX/logs/error.log" -c "$NGX/nginx.conf"
  "$(nginx_bin)" -p "$NGX" -e "$NGX/logs/error.log" -c "$NGX/nginx.conf"
  local url=http://127.0.0.1:$nport
  for _ in $(seq 1 100); do
    curl -fsS -o /dev/null "$url/readyz" 2>/dev/null && break
    sleep 0.1
  done
  curl -fsS -o /dev/null "$url/readyz" || { log "nginx does not answer on $url; see $NGX/logs"; exit 1; }
  echo "$url" >"$DIR/url"
  log "$n replicas on ports ${ports[*]}, PostgreSQL at $db, nginx at $url (files in $DIR)"
  echo "$url"
}

# Sends TERM to pid file $1's process if it is `what`, waits up to 15 s, then KILLs it.
stop_pidfile() {
  local file=$1 what=$2 pid
  pid=$(head -n 1 "$file" 2>/dev/null || true)
  if alive_as "$pid" "$what"; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 150); do
      alive_as "$pid" "$what" || break
      sleep 0.1
    done
    if alive_as "$pid" "$what"; then
      log "$what ($pid) did not stop in 15 s: killed"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$file"
}

down() {
  # nginx first (no new requests), then the replicas (each drains what it holds), then PostgreSQL.
  if [[ -f $NGX/nginx.pid ]]; then
    local master
    master=$(cat "$NGX/nginx.pid")
    if alive_as "$master" nginx; then
      kill -QUIT "$master" 2>/dev/null || true
      for _ in $(seq 1 100); do
        alive_as "$master" nginx || break
        sleep 0.1
      done
      if alive_as "$master" nginx; then kill -KILL "$master" 2>/dev/null || true; fi
    fi
    rm -f "$NGX/nginx.pid"
  fi
  local f
  for f in "$DIR"/replica-*/pid; do
    [[ -e $f ]] && stop_pidfile "$f" gpunex-server
  done
  [[ -d $DIR/pg/data ]] && scripts/pg.sh stop "$DIR/pg"
  rm -f "$DIR/url"
  log "down (logs kept in $DIR)"
}

status() {
  local url="(not up)"
  [[ -f $DIR/url ]] && url=$(cat "$DIR/url")
  echo "balancer: $url"
  local i=1 port
  while read -r port; do
    local pid state
    pid=$(cat "$DIR/replica-$i/pid" 2>/dev/null || true)
    state=$(curl -sS "http://127.0.0.1:$port/readyz" 2>/dev/null || echo "no answer")
    if alive_as "$pid" gpunex-server; then
      echo "replica $i: pid $pid, port $port: $state"
    else
      echo "replica $i: not running (port $port)"
    fi
    i=$((i + 1))
  done <"$DIR/replica-ports" 2>/dev/null || true
}

[[ $# -ge 1 ]] || usage
case $1 in
  up) up "${2:-2}" ;;
  start-replica)
    [[ $# -eq 2 ]] || usage
    start_replica "$2"
    wait_ready "$2"
    ;;
  restart)
    # One at a time, as README.md's rolling restart: each drains on SIGTERM and is ready again before
    # the next stops, and nginx, which left it out while it was down, has tried it again by then.
    count=$(wc -l <"$DIR/replica-ports")
    for i in $(seq 1 "$count"); do
      stop_pidfile "$DIR/replica-$i/pid" gpunex-server
      start_replica "$i"
      wait_ready "$i"
      log "replica $i restarted"
      if [[ $i -lt $count ]]; then sleep $((FAIL_TIMEOUT_S + 1)); fi
    done
    ;;
  restart-db) scripts/pg.sh restart "$DIR/pg" ;;
  status) status ;;
  down) down ;;
  *) usage ;;
esac
