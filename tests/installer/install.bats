#!/usr/bin/env bats
# The agent installer, run with stand-in docker, nvidia-smi and curl on PATH:
# the success path and each failure path. Run: bats tests/installer

setup() {
  ROOT="$(cd "$(dirname "$BATS_TEST_FILENAME")/../.." && pwd)"
  WORK="$(mktemp -d)"
  BIN="$WORK/bin"
  mkdir -p "$BIN"
  export CALLS="$WORK/calls"
  : >"$CALLS"
  # What the server does: fill in its URL.
  sed 's#__GPUNEX_SERVER_URL__#https://gpunex.test#' "$ROOT/deploy/agent/install.sh" >"$WORK/install.sh"

  cat >"$BIN/docker" <<'SH'
#!/usr/bin/env bash
echo "docker $*" >>"$CALLS"
case "$1" in
  info) [ -z "${FAKE_DOCKER_DOWN:-}" ] || exit 1 ;;
  run)
    if [ "$2" = "--rm" ]; then [ -z "${FAKE_NO_GPU_IN_DOCKER:-}" ] || exit 125; exit 0; fi
    echo "c0ffee" ;;
  container) [ -n "${FAKE_EXISTING:-}" ] || exit 1 ;;
  rm) ;;
  exec) printf '{\n  "fingerprint": "mfp_x",\n  "machine_id": "mch_42",\n  "server_url": "https://gpunex.test"\n}\n' ;;
esac
SH
  cat >"$BIN/nvidia-smi" <<'SH'
#!/usr/bin/env bash
[ -z "${FAKE_DRIVER_BROKEN:-}" ] || exit 9
echo "GPU 0: NVIDIA L40S (UUID: GPU-1)"
echo "GPU 1: NVIDIA L40S (UUID: GPU-2)"
SH
  cat >"$BIN/curl" <<'SH'
#!/usr/bin/env bash
echo "curl $*" >>"$CALLS"
# What the header file said, and its mode, while curl ran (-H @file).
prev=""
for a in "$@"; do
  if [ "$prev" = "-H" ] && [ "${a#@}" != "$a" ]; then
    echo "curl-header-file $(stat -c %a "${a#@}") $(cat "${a#@}")" >>"$CALLS"
  fi
  prev="$a"
done
[ -z "${FAKE_NEVER_ONLINE:-}" ] || { echo '{"id":"mch_42","status":"offline"}'; exit 0; }
echo '{"gpus":[],"id":"mch_42","simulated":false,"status":"online"}'
SH
  chmod +x "$BIN"/*
  # A PATH with the stand-ins and the basic tools, but no real docker or nvidia-smi.
  SYS="$WORK/sys"
  mkdir -p "$SYS"
  for t in bash sh env sed grep head wc date sleep cat printf mktemp dirname id mkdir chmod rm stat; do
    p="$(command -v "$t")" && ln -sf "$p" "$SYS/$t"
  done
  export INSTALL_PATH="$BIN:$SYS"
  export GPUNEX_TTY="$WORK/no-tty"
  export GPUNEX_INSTALL_WAIT_S=4
  export GPUNEX_KEY_FILE="$WORK/keys/agent.key"
  unset GPUNEX_API_KEY GPUNEX_SERVER
}

teardown() { rm -rf "$WORK"; }

# The installer with only the stand-ins and basic tools on PATH (no real docker or nvidia-smi).
installer() { /usr/bin/env PATH="$INSTALL_PATH" bash "$WORK/install.sh"; }

@test "success: starts the named container with restart policy, GPUs, socket and volume, and waits for Online" {
  GPUNEX_API_KEY=gpx_testkey run installer
  [ "$status" -eq 0 ]
  [[ "$output" == *"Machine mch_42 is Online"* ]]
  grep -q -- "docker run --rm --gpus all nvidia/cuda" "$CALLS"
  line="$(grep -- '^docker run -d' "$CALLS")"
  [[ "$line" == *"--name gpunex-agent"* ]]
  [[ "$line" == *"--restart unless-stopped"* ]]
  [[ "$line" == *"--gpus all"* ]]
  [[ "$line" == *"-v /var/run/docker.sock:/var/run/docker.sock"* ]]
  [[ "$line" == *"--network host --cap-add NET_ADMIN"* ]]  # the network guard writes the host's iptables
  [[ "$line" == *"-v gpunex-agent-data:/var/lib/gpunex"* ]]
  [[ "$line" == *"run --server https://gpunex.test"* ]]
  [[ "$line" == *"run --server https://gpunex.test --api-key-file /run/secrets/gpunex-api-key"* ]]
  [[ "$line" == *"-v $GPUNEX_KEY_FILE:/run/secrets/gpunex-api-key:ro"* ]]
  [[ "$line" == *"gpunex/agent:0.1.0"* ]]
  # The key is on no command line (ps, /proc/*/cmdline) and not in the container's environment (docker inspect).
  ! grep -v '^curl-header-file' "$CALLS" | grep -q "gpx_testkey"
  [[ "$line" != *"-e GPUNEX_API_KEY"* ]]
  grep -q "^curl -fsS -H @.* https://gpunex.test/v1/provider/machines/mch_42" "$CALLS"
  grep -q "^curl-header-file 600 Authorization: Bearer gpx_testkey" "$CALLS"
  # The agent's key file: the key alone, 0600 in a 0700 folder.
  [ "$(cat "$GPUNEX_KEY_FILE")" = "gpx_testkey" ]
  [ "$(stat -c %a "$GPUNEX_KEY_FILE")" = 600 ]
  [ "$(stat -c %a "$(dirname "$GPUNEX_KEY_FILE")")" = 700 ]
  # curl's header file is gone once the installer ends.
  hdr="$(grep '^curl -fsS -H @' "$CALLS" | head -n 1 | sed 's/.*-H @\([^ ]*\).*/\1/')"
  [ ! -e "$hdr" ]
  ! grep -q "^docker rm" "$CALLS"
}

@test "a plain http:// server is refused before anything runs, unless --insecure-http" {
  sed 's#__GPUNEX_SERVER_URL__#http://gpunex.test#' "$ROOT/deploy/agent/install.sh" >"$WORK/install.sh"
  GPUNEX_API_KEY=gpx_testkey run installer
  [ "$status" -eq 1 ]
  [[ "$output" == *"plain http://"* ]]
  [[ "$output" == *"--insecure-http"* ]]
  [ ! -s "$CALLS" ]
  [ ! -e "$GPUNEX_KEY_FILE" ]
  # As `curl ... | bash -s -- --insecure-http` runs it.
  GPUNEX_API_KEY=gpx_testkey run /usr/bin/env PATH="$INSTALL_PATH" bash -s -- --insecure-http <"$WORK/install.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"warning: http://gpunex.test is plain http://"* ]]
  [[ "$output" == *"Machine mch_42 is Online"* ]]
}

@test "a download cut short anywhere runs nothing" {
  size=$(wc -c <"$WORK/install.sh")
  last=$(grep -b '^main "\$@"$' "$WORK/install.sh" | cut -d: -f1)
  [ -n "$last" ]
  [ "$((last + 10))" -eq "$size" ]  # main "$@" is the last line
  for n in $(seq 1 53 "$((last + 3))") "$((last + 3))" "$((last - 1))"; do
    head -c "$n" "$WORK/install.sh" >"$WORK/cut.sh"
    GPUNEX_API_KEY=gpx_testkey /usr/bin/env PATH="$INSTALL_PATH" bash <"$WORK/cut.sh" >/dev/null 2>&1 || true
    if [ -s "$CALLS" ]; then echo "cut at $n bytes ran: $(cat "$CALLS")"; false; fi
    [ ! -e "$GPUNEX_KEY_FILE" ]
  done
}

@test "the agent image is pinned to the agent's version, never :latest" {
  version="$(sed -n 's/.*kReleaseVersion = "\([^"]*\)".*/\1/p' "$ROOT/src/core/protocol_version.hpp")"
  [ -n "$version" ]
  grep -q "GPUNEX_AGENT_IMAGE:-gpunex/agent:${version}}" "$ROOT/deploy/agent/install.sh"
  ! grep -q "agent:latest" "$ROOT/deploy/agent/install.sh"
}

@test "run by sh instead of bash (curl ... | sh): refuses before any check, saying to use bash" {
  # As `curl ... | sh` does: the script on standard input of sh (dash on Debian).
  run /usr/bin/env PATH="$INSTALL_PATH" sh -c 'GPUNEX_API_KEY=gpx_k sh <"$1"' sh "$WORK/install.sh"
  [ "$status" -eq 1 ]
  [[ "$output" == *"this installer needs bash, but it was run by another shell"* ]]
  [[ "$output" == *"curl -fsSL https://gpunex.test/agent/install.sh | bash"* ]]
  [ ! -s "$CALLS" ]  # nothing ran: no docker, no curl
}

@test "run by dash by name: the same refusal" {
  command -v dash >/dev/null || skip "dash is not installed"
  GPUNEX_API_KEY=gpx_k run /usr/bin/env PATH="$INSTALL_PATH" "$(command -v dash)" "$WORK/install.sh"
  [ "$status" -eq 1 ]
  [[ "$output" == *"needs bash"* ]]
  [ ! -s "$CALLS" ]
}

@test "re-running replaces the existing container" {
  FAKE_EXISTING=1 GPUNEX_API_KEY=gpx_testkey run installer
  [ "$status" -eq 0 ]
  [[ "$output" == *"Replacing the existing gpunex-agent container"* ]]
  grep -q "^docker rm -f gpunex-agent" "$CALLS"
}

@test "asks for the key on the terminal when GPUNEX_API_KEY is not set" {
  echo "gpx_fromtty" >"$WORK/tty"
  GPUNEX_TTY="$WORK/tty" run installer
  [ "$status" -eq 0 ]
  grep -q "^curl-header-file 600 Authorization: Bearer gpx_fromtty" "$CALLS"
}

@test "no docker: says to install Docker" {
  rm "$BIN/docker"
  GPUNEX_API_KEY=gpx_k run installer
  [ "$status" -eq 1 ]
  [[ "$output" == *"Docker is not installed"* ]]
  [[ "$output" == *"install Docker Engine"* ]]
}

@test "docker not running: says to start it" {
  FAKE_DOCKER_DOWN=1 GPUNEX_API_KEY=gpx_k run installer
  [ "$status" -eq 1 ]
  [[ "$output" == *"not running"* ]]
  [[ "$output" == *"systemctl enable --now docker"* ]]
}

@test "no nvidia-smi: says to install the NVIDIA driver" {
  rm "$BIN/nvidia-smi"
  GPUNEX_API_KEY=gpx_k run installer
  [ "$status" -eq 1 ]
  [[ "$output" == *"NVIDIA driver is not installed"* ]]
}

@test "driver broken: says to reboot and check nvidia-smi" {
  FAKE_DRIVER_BROKEN=1 GPUNEX_API_KEY=gpx_k run installer
  [ "$status" -eq 1 ]
  [[ "$output" == *"not working"* ]]
}

@test "containers cannot see the GPUs: says to install the NVIDIA Container Toolkit" {
  FAKE_NO_GPU_IN_DOCKER=1 GPUNEX_API_KEY=gpx_k run installer
  [ "$status" -eq 1 ]
  [[ "$output" == *"NVIDIA Container Toolkit"* ]]
  ! grep -q "^docker run -d" "$CALLS"
}

@test "no key and no terminal: says to set GPUNEX_API_KEY" {
  run installer
  [ "$status" -eq 1 ]
  [[ "$output" == *"GPUNEX_API_KEY=gpx_"* ]]
}

@test "a key of the wrong form is refused before anything starts" {
  GPUNEX_API_KEY=sk_live_nope run installer
  [ "$status" -eq 1 ]
  [[ "$output" == *"start with gpx_"* ]]
  ! grep -q "^docker run -d" "$CALLS"
}

@test "never seen online: times out and points at docker logs" {
  FAKE_NEVER_ONLINE=1 GPUNEX_API_KEY=gpx_k run installer
  [ "$status" -eq 1 ]
  [[ "$output" == *"has not seen this machine online within 4s"* ]]
  [[ "$output" == *"docker logs gpunex-agent"* ]]
}
