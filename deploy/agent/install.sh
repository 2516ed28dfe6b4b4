#!/usr/bin/env bash
# GPUnex agent installer: curl -fsSL <server>/agent/install.sh | bash
# The server serves this file with its own URL filled in below. Every failed
# check says what to do. Unattended: GPUNEX_API_KEY=gpx_... curl ... | bash
# A server on plain http:// (tests, a LAN): curl ... | bash -s -- --insecure-http
#
# The API key never appears on a command line (ps, /proc/*/cmdline) nor in the container's
# environment (docker inspect): curl reads it from a 0600 header file, and the agent from a
# 0600 key file mounted read-only. Everything runs from main, called on the last line, so a
# download cut short runs nothing.

# It needs bash (pipefail, read -s). Piped to sh (dash, busybox ash) it would stop at the first bash-only
# line with a puzzling message, or go on wrongly: this check is plain POSIX sh and comes before any of them.
if [ -z "${BASH_VERSION:-}" ]; then
  printf 'gpunex-install: this installer needs bash, but it was run by another shell (sh, dash, zsh...).\n' >&2
  printf '  what to do: run it with bash: curl -fsSL %s/agent/install.sh | bash\n' \
    "${GPUNEX_SERVER:-__GPUNEX_SERVER_URL__}" >&2
  exit 1
fi

set -euo pipefail

main() {
  GPUNEX_SERVER="${GPUNEX_SERVER:-__GPUNEX_SERVER_URL__}"
  # Pinned to the agent release that goes with this server (src/core/protocol_version.hpp kReleaseVersion), never :latest.
  IMAGE="${GPUNEX_AGENT_IMAGE:-gpunex/agent:0.1.0}"
  KEY_FILE="${GPUNEX_KEY_FILE:-}"
  CUDA_TEST_IMAGE="${GPUNEX_CUDA_TEST_IMAGE:-nvidia/cuda:12.4.1-base-ubuntu22.04}"
  CONTAINER="gpunex-agent"
  VOLUME="gpunex-agent-data"
  WAIT_S="${GPUNEX_INSTALL_WAIT_S:-120}"
  TTY="${GPUNEX_TTY:-/dev/tty}"

  INSECURE_HTTP=""
  for arg in "$@"; do
    case "${arg}" in
      --insecure-http) INSECURE_HTTP=1 ;;
      *) fail "unknown option ${arg}." "run it as: curl -fsSL ${GPUNEX_SERVER}/agent/install.sh | bash" ;;
    esac
  done
  case "${GPUNEX_SERVER}" in
    https://*) ;;
    http://*)
      [ -n "${INSECURE_HTTP}" ] ||
        fail "the server ${GPUNEX_SERVER} is plain http://: the API key would cross the network unencrypted." \
          "use the server's https:// address; on a trusted network only, add --insecure-http (curl ... | bash -s -- --insecure-http)."
      printf 'gpunex-install: warning: %s is plain http://; the API key crosses the network unencrypted\n' \
        "${GPUNEX_SERVER}" >&2 ;;
    *) fail "the server address ${GPUNEX_SERVER} is not an https:// URL." "set GPUNEX_SERVER=https://..." ;;
  esac

  say "Installing the GPUnex agent for ${GPUNEX_SERVER}"

  command -v docker >/dev/null 2>&1 ||
    fail "Docker is not installed." \
      "install Docker Engine (https://docs.docker.com/engine/install/), then run this installer again."
  docker info >/dev/null 2>&1 ||
    fail "Docker is installed but not running, or this user may not use it." \
      "start it (sudo systemctl enable --now docker) and run as root or as a member of the docker group."
  say "Docker is running"

  command -v nvidia-smi >/dev/null 2>&1 ||
    fail "nvidia-smi was not found: the NVIDIA driver is not installed." \
      "install the NVIDIA driver for your GPUs (e.g. sudo apt install nvidia-driver), reboot, then run this again."
  nvidia-smi -L >/dev/null 2>&1 ||
    fail "nvidia-smi failed: the NVIDIA driver is installed but not working." \
      "reboot after a driver install or update; check 'nvidia-smi' and 'dmesg | grep -i nvidia'."
  say "NVIDIA driver: $(nvidia-smi -L 2>/dev/null | wc -l) GPU(s)"

  docker run --rm --gpus all "${CUDA_TEST_IMAGE}" nvidia-smi >/dev/null 2>&1 ||
    fail "Docker cannot give containers the GPUs (docker run --gpus all ${CUDA_TEST_IMAGE} nvidia-smi failed)." \
      "install the NVIDIA Container Toolkit, then: sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker."
  say "Containers can use the GPUs"

  if [ -z "${GPUNEX_API_KEY:-}" ]; then
    if [ -r "${TTY}" ] && { exec 3<"${TTY}"; } 2>/dev/null; then
      printf 'Provider API key (gpx_..., from the dashboard): ' >&2
      IFS= read -r -s GPUNEX_API_KEY <&3 || true
      exec 3<&-
      printf '\n' >&2
    else
      fail "no API key given and no terminal to ask for one." \
        "set GPUNEX_API_KEY=gpx_... in the environment for an unattended install."
    fi
  fi
  case "${GPUNEX_API_KEY}" in
    gpx_?*) ;;
    *) fail "that does not look like a provider API key (they start with gpx_)." \
      "copy the key from the dashboard (Provider > API keys); create a new one if it was lost." ;;
  esac
  # The key at rest, for the agent container: a 0600 file in a 0700 folder of this user, mounted read-only.
  umask 077
  if [ -z "${KEY_FILE}" ]; then
    if [ "$(id -u)" = 0 ]; then KEY_FILE=/etc/gpunex/agent.key; else KEY_FILE="${HOME}/.config/gpunex/agent.key"; fi
  fi
  mkdir -p "$(dirname "${KEY_FILE}")"
  chmod 700 "$(dirname "${KEY_FILE}")"
  rm -f "${KEY_FILE}"
  printf '%s\n' "${GPUNEX_API_KEY}" >"${KEY_FILE}"
  chmod 600 "${KEY_FILE}"
  # curl's Authorization header, from a 0600 file (curl -H @file) removed on exit: not on its command line.
  HEADERS="$(mktemp)"
  trap 'rm -f "${HEADERS}"' EXIT
  printf 'Authorization: Bearer %s\n' "${GPUNEX_API_KEY}" >"${HEADERS}"
  unset GPUNEX_API_KEY

  if docker container inspect "${CONTAINER}" >/dev/null 2>&1; then
    say "Replacing the existing ${CONTAINER} container"
    docker rm -f "${CONTAINER}" >/dev/null
  fi
  # --network host and NET_ADMIN: the agent's network guard writes the host's iptables rules that keep
  # rentals' containers off this host and its LAN.
  docker run -d --name "${CONTAINER}" --restart unless-stopped --gpus all \
    --network host --cap-add NET_ADMIN \
    -v /var/run/docker.sock:/var/run/docker.sock \
    -v "${VOLUME}:/var/lib/gpunex" \
    -v "${KEY_FILE}:/run/secrets/gpunex-api-key:ro" \
    "${IMAGE}" run --server "${GPUNEX_SERVER}" --api-key-file /run/secrets/gpunex-api-key \
    --data-dir /var/lib/gpunex >/dev/null ||
    fail "the agent container did not start." "see the error above; check 'docker pull ${IMAGE}'."
  say "Agent container ${CONTAINER} started; waiting for the server to see this machine"

  deadline=$(($(date +%s) + WAIT_S))
  machine_id=""
  while [ "$(date +%s)" -lt "${deadline}" ]; do
    if [ -z "${machine_id}" ]; then
      machine_id=$(docker exec "${CONTAINER}" cat /var/lib/gpunex/identity.json 2>/dev/null |
        sed -n 's/.*"machine_id": *"\([^"]*\)".*/\1/p' | head -n 1) || true
    fi
    if [ -n "${machine_id}" ]; then
      status=$(curl -fsS -H @"${HEADERS}" \
        "${GPUNEX_SERVER}/v1/provider/machines/${machine_id}" 2>/dev/null |
        grep -o '"status": *"[a-z]*"' | head -n 1 | sed 's/.*"\([a-z]*\)"$/\1/') || true
      if [ "${status:-}" = "online" ]; then
        say "Machine ${machine_id} is Online. Manage it in the dashboard: ${GPUNEX_SERVER}/"
        return 0
      fi
    fi
    sleep 2
  done
  fail "the agent started but the server has not seen this machine online within ${WAIT_S}s." \
    "read 'docker logs ${CONTAINER}': a refused API key, a firewall blocking ${GPUNEX_SERVER}, or a TLS error shows there."
}

say() { printf '==> %s\n' "$*"; }
fail() {
  printf 'gpunex-install: %s\n' "$1" >&2
  printf '  what to do: %s\n' "$2" >&2
  exit 1
}

# The only top-level command: a truncated download ends before it, or inside main's body (a syntax error).
main "$@"
