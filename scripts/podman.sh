#!/usr/bin/env bash
# A throwaway container engine for tests: Podman's Docker-compatible API service, with its own
# storage under DIR, and the test image imported from Debian's busybox-static (no registry here).
#
#   scripts/podman.sh start DIR   start the service on DIR/podman.sock, import localhost/gpunex-test:1,
#                                 and print the DOCKER_HOST URL (the only line on stdout)
#   scripts/podman.sh stop DIR    remove its containers and stop it
#
# runc, not crun (crun refuses this sandbox's cgroups), and ulimits no higher than the host's:
# ../shared/reference/containers.md. For tests only: it runs as the calling user (root on CI).
set -euo pipefail

usage() {
  echo "usage: $0 start|stop DIR" >&2
  exit 2
}
[[ $# -eq 2 ]] || usage
cmd=$1
mkdir -p "$2"
dir=$(cd "$2" && pwd)
for tool in podman runc busybox; do
  command -v "$tool" >/dev/null || { echo "podman.sh: $tool is missing (scripts/deps.sh installs it)" >&2; exit 1; }
done

export CONTAINERS_CONF=$dir/containers.conf
# Podman refuses a runroot longer than 50 characters (DIR may be deep, under make test's folder):
# its state goes to a short folder in /tmp named after DIR, removed by stop.
runroot=/tmp/gpunex-podman-$(printf '%s' "$dir" | sha256sum | cut -c1-12)
engine() { podman --root "$dir/storage" --runroot "$runroot" "$@"; }

case $cmd in
  start)
    cat >"$CONTAINERS_CONF" <<'EOF'
[engine]
runtime = "runc"
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
EOF
    sock=$dir/podman.sock
    rm -f "$sock"
    setsid podman --root "$dir/storage" --runroot "$runroot" system service --time=0 "unix://$sock" \
      >"$dir/service.log" 2>&1 </dev/null &
    echo $! >"$dir/service.pid"
    for _ in $(seq 1 100); do
      curl -sf --unix-socket "$sock" http://d/_ping >/dev/null 2>&1 && break
      sleep 0.1
    done
    curl -sf --unix-socket "$sock" http://d/_ping >/dev/null || {
      echo "podman.sh: the service did not start; its log:" >&2
      cat "$dir/service.log" >&2
      exit 1
    }
    # The test image: busybox and the applets the tests use, nothing else.
    rootfs=$dir/rootfs
    rm -rf "$rootfs"
    mkdir -p "$rootfs/bin" "$rootfs/proc" "$rootfs/sys" "$rootfs/dev" "$rootfs/tmp" "$rootfs/etc"
    cp "$(command -v busybox)" "$rootfs/bin/busybox"
    for applet in sh echo cat ls sleep ps head tail grep seq kill true wc; do ln -sf busybox "$rootfs/bin/$applet"; done
    tar -C "$rootfs" -cf "$dir/rootfs.tar" .
    engine import --quiet "$dir/rootfs.tar" localhost/gpunex-test:1 >/dev/null
    echo "unix://$sock"
    ;;
  stop)
    engine rm -af >/dev/null 2>&1 || true
    if [[ -f $dir/service.pid ]]; then
      pid=$(cat "$dir/service.pid")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
      rm -f "$dir/service.pid"
    fi
    rm -rf "$runroot" 2>/dev/null || true
    ;;
  *) usage ;;
esac
