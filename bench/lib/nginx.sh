# Sourced by the benchmarks: starts nginx answering a static 200 with a small
# JSON body on loopback port $1, under folder $2, in the background (its pid in
# NGINX_PID), and waits until it answers. The same baseline in every benchmark.
start_nginx() {
  local port=$1 dir=$2
  local nginx
  nginx=$(command -v nginx || echo /usr/sbin/nginx)
  [ -x "$nginx" ] || { echo "nginx is missing: run scripts/deps.sh" >&2; return 1; }
  mkdir -p "$dir/logs"
  cat >"$dir/nginx.conf" <<CONF
worker_processes $(nproc);
daemon off;
pid $dir/nginx.pid;
error_log $dir/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$port;
    location / { default_type application/json; return 200 '{"status":"ok"}'; }
  }
}
CONF
  "$nginx" -p "$dir" -c "$dir/nginx.conf" &
  NGINX_PID=$!
  for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/" >/dev/null && return 0; sleep 0.1; done
  echo "nginx did not start on port $port (see $dir/logs/error.log)" >&2
  return 1
}
