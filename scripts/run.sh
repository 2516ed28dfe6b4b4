#!/usr/bin/env bash
# `make run`: serves GPUnex on SQLite under ./var at http://127.0.0.1:8080 and
# starts a local agent registered to a demo provider, so the dashboard shows an
# Online machine: real GPUs when NVML finds them, otherwise simulated ones that this host can
# carry (2x L40S on a large host); the demo provider rates each of its models at the platform's
# recommendation (a GPU with no rate is not offered); once benchmarked, it prints whether each GPU is listed.
# Creates a first admin account if there is none: its login is printed once
# when standard output is a terminal, else written to $GPUNEX_VAR_DIR/first-admin.txt
# (mode 0600) and only that path printed, so the password stays out of logs.
# The demo provider is made through the public API (sign up, apply, submit,
# approve by a demo reviewer); its API key is kept in var/demo/agent-api-key
# (mode 0600) and reused on later runs. Ctrl-C stops the agent and the server.
# Rentals need a container engine: $DOCKER_HOST or /var/run/docker.sock when there is one, else a
# throwaway Podman service under $GPUNEX_VAR_DIR/podman (scripts/podman.sh, with the test image
# localhost/gpunex-test:1), stopped with the rest. Without an engine the demo machine is not offered,
# and the Machines page says why.
#
# Environment: GPUNEX_BIN_DIR (default build/bin), GPUNEX_VAR_DIR (default var),
# GPUNEX_DB (default sqlite:$GPUNEX_VAR_DIR/gpunex.db), GPUNEX_LISTEN
# (default 127.0.0.1:8080), GPUNEX_NO_AGENT=1 to serve without the demo agent.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${GPUNEX_BIN_DIR:-build/bin}
VAR=${GPUNEX_VAR_DIR:-var}
DB=${GPUNEX_DB:-sqlite:$VAR/gpunex.db}
LISTEN=${GPUNEX_LISTEN:-127.0.0.1:8080}
URL="http://$LISTEN"
DEMO="$VAR/demo"
mkdir -p "$VAR"
(umask 077 && mkdir -p "$DEMO")

"$BIN/gpunex-server" admin bootstrap --db "$DB" --data-dir "$VAR"

server_pid=""
agent_pid=""
podman_dir=""
stopping=0
# Both processes are children of this script; a signal to it stops both, agent first.
stop_all() {
  [ "$stopping" = 1 ] && return
  stopping=1
  trap - INT TERM
  echo "Stopping..."
  [ -n "$agent_pid" ] && kill -TERM "$agent_pid" 2>/dev/null || true
  [ -n "$agent_pid" ] && wait "$agent_pid" 2>/dev/null || true
  [ -n "$server_pid" ] && kill -TERM "$server_pid" 2>/dev/null || true
  [ -n "$server_pid" ] && wait "$server_pid" 2>/dev/null || true
  [ -n "$podman_dir" ] && scripts/podman.sh stop "$podman_dir" >/dev/null 2>&1 || true
}
trap 'stop_all; exit 130' INT
trap 'stop_all; exit 143' TERM

# Demo mode: the demo agent's simulated GPUs are offered (each offer says "simulated"); a real
# deployment never sets it, and then only machines with real GPUs reach the marketplace.
"$BIN/gpunex-server" --db "$DB" --listen "$LISTEN" --data-dir "$VAR" --allow-simulated-offers &
server_pid=$!

for _ in $(seq 1 100); do
  curl -fsS -o /dev/null "$URL/readyz" 2>/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || { echo "gpunex-server exited" >&2; wait "$server_pid" || exit $?; exit 1; }
  sleep 0.1
done

# call METHOD PATH [TOKEN] [JSON]: the response body on stdout; the HTTP status in $DEMO/.status.
call() {
  local method=$1 path=$2 token=${3:-} body=${4:-}
  local args=(-sS -X "$method" -o "$DEMO/.body" -w '%{http_code}')
  [ -n "$token" ] && args+=(-H "Authorization: Bearer $token")
  [ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data-binary "$body")
  (umask 077 && curl "${args[@]}" "$URL$path" >"$DEMO/.status")
  cat "$DEMO/.body"
}
status() { cat "$DEMO/.status"; }
json() { python3 -c 'import json,sys; v=json.load(sys.stdin); [v:=v[k] for k in sys.argv[1:]]; print(v)' "$@"; }
jstr() { python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"; }
secret() { python3 -c 'import secrets; print(secrets.token_urlsafe(18))'; }
save() { (umask 077 && printf '%s\n' "$2" >"$DEMO/$1"); chmod 600 "$DEMO/$1"; }
load() { [ -s "$DEMO/$1" ] && head -n1 "$DEMO/$1"; }
fail() { echo "demo provider: $1 (HTTP $(status)): $(cat "$DEMO/.body")" >&2; stop_all; exit 1; }

PROVIDER_EMAIL=demo-provider@example.com

demo_provider_key() {
  local key
  key=$(load agent-api-key || true)
  if [ -n "$key" ]; then
    call GET /v1/provider/profile "$key" >/dev/null
    [ "$(status)" = 200 ] && { echo "$key"; return; }
    echo "The saved demo API key is refused (a fresh database?); making a new demo provider." >&2
  fi
  # A demo reviewer, made once with the admin CLI; its random password stays in $DEMO.
  local rev_email rev_pass
  rev_email=$(load reviewer-email || true)
  rev_pass=$(load reviewer-password || true)
  if [ -z "$rev_email" ] || ! call POST /v1/auth/login "" "{\"email\":$(jstr "$rev_email"),\"password\":$(jstr "$rev_pass")}" >/dev/null \
      || [ "$(status)" != 200 ]; then
    rev_email="demo-reviewer-$(python3 -c 'import secrets; print(secrets.token_hex(4))')@example.com"
    rev_pass=$(secret)
    printf '%s' "$rev_pass" | "$BIN/gpunex-server" admin create-user --db "$DB" --email "$rev_email" \
      --role reviewer --full-name 'Demo Reviewer' --password-stdin >/dev/null
    save reviewer-email "$rev_email"
    save reviewer-password "$rev_pass"
  fi
  # The demo provider: sign up (or reuse the account), log in, apply, submit.
  local pass token app_id
  pass=$(load provider-password || true)
  if [ -z "$pass" ]; then pass=$(secret); save provider-password "$pass"; fi
  call POST /v1/auth/signup "" "{\"email\":\"$PROVIDER_EMAIL\",\"password\":$(jstr "$pass"),\"full_name\":\"Demo Provider\"}" >/dev/null
  case "$(status)" in 201|409) ;; *) fail "sign-up failed" ;; esac
  token=$(call POST /v1/auth/login "" "{\"email\":\"$PROVIDER_EMAIL\",\"password\":$(jstr "$pass")}" | json token) \
    || fail "log-in failed (delete $DEMO to start over with a fresh database)"
  app_id=$(call POST /v1/applications "$token" '{"full_name":"Demo Provider","email":"'"$PROVIDER_EMAIL"'","company":"GPUnex demo",
    "ups":false,"commitment_months":3,"gpus":[{"model":"'"$DEMO_MODEL"'","count":'"$DEMO_COUNT"',"system_ram_gb":256,"download_gbps":1,
    "upload_gbps":1,"availability":"24/7","location":{"city":"Berlin","country":"DE","region":"eu-central"}}]}' | json id) \
    || fail "application failed"
  call POST "/v1/applications/$app_id/submit" "$token" >/dev/null
  [ "$(status)" = 200 ] || fail "submit failed"
  local rtoken
  rtoken=$(call POST /v1/auth/login "" "{\"email\":$(jstr "$rev_email"),\"password\":$(jstr "$rev_pass")}" | json token) \
    || fail "reviewer log-in failed"
  local key_id
  key_id=$(call POST "/v1/review/applications/$app_id/decision" "$rtoken" \
    '{"decision":"approve","tier":"community","note":"make run demo provider"}' | json api_key_id) || fail "approval failed"
  # The reviewer never sees the key: the demo provider, logged in again as a provider, reveals it once.
  token=$(call POST /v1/auth/login "" "{\"email\":\"$PROVIDER_EMAIL\",\"password\":$(jstr "$pass")}" | json token) \
    || fail "log-in after approval failed"
  key=$(call POST "/v1/provider/api-keys/$key_id/reveal" "$token" | json api_key) || fail "revealing the API key failed"
  save agent-api-key "$key"
  echo "$key"
}

# The simulated demo GPUs: the largest of 2x L40S, 1x L40S, 2x L4, 1x L4 that this host can carry
# by the server's default machine checks (host RAM at least the machine's total VRAM, 2 CPU cores
# per GPU), so the demo's GPUs pass their benchmarks where the host allows; where none fits, 1x L4,
# and the summary below says why it is delisted, as it would to a provider.
pick_demo_gpu() {
  local ram_mib cores model vram count
  ram_mib=$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)
  cores=$(nproc)
  for model_vram in L40S:48 L4:24; do
    model=${model_vram%%:*}
    vram=${model_vram##*:}
    for count in 2 1; do
      if ((ram_mib >= count * vram * 1024 && cores >= count * 2)); then
        echo "$model $count"
        return
      fi
    done
  done
  echo "L4 1"
}
read -r DEMO_MODEL DEMO_COUNT < <(pick_demo_gpu)

# Prints what the benchmarks decided for each demo GPU, once every GPU has a verdict: listed with
# its perf score, or delisted with the reason (the Machines page says the same).
read -r -d '' SUMMARY_PY <<'PY' || true
import json, sys
gpus = [(m, g) for m in json.load(sys.stdin)["items"] for g in m["gpus"] if g.get("present", True)]
# A GPU whose run passed but whose challenge answers are still due (awaiting_challenges) is delisted
# only for the moment: its verdict is still to come.
if not gpus or not all(g.get("benchmarked") and not g.get("awaiting_challenges") for _, g in gpus):
    sys.exit(1)
for m, g in gpus:
    what = "listed, perf score %.1f" % g["perf_score"] if g["listed"] else "DELISTED: " + str(g["delist_reason"])
    sim = ", simulated" if m["simulated"] else ""
    print("Demo GPU %d (%s%s): %s" % (g["index"], g.get("model") or g["name"], sim, what))
PY
# The catalog models of the provider's machines (one per line; none when its GPUs are no catalog model),
# once a machine has registered (exit 1 before).
read -r -d '' MODELS_PY <<'PY' || true
import json, sys
machines = json.load(sys.stdin)["items"]
if not any(m["gpus"] for m in machines):
    sys.exit(1)
print("\n".join(sorted({g["model"] for m in machines for g in m["gpus"] if g.get("model")})))
PY
# A GPU with no rate is not offered, so the demo provider gets one for each model of its machine that it
# has not priced: the platform's recommendation for the provider's region (a provider changes it on the
# Pricing page). Fails until the machine has registered; prints each rate set, or why there is none.
price_demo_models() {
  local key=$1 models priced model rate
  models=$(call GET /v1/provider/machines "$key" | python3 -c "$MODELS_PY" 2>/dev/null) || return 1
  [ -n "$models" ] || { echo "Demo rate: its GPUs are no catalog model, so none is set (see $URL/#/pricing)"; return 0; }
  priced=$(call GET /v1/provider/prices "$key" | python3 -c 'import json,sys; print(" ".join(p["model"] for p in json.load(sys.stdin)["items"]))') \
    || return 1
  for model in $models; do
    case " $priced " in *" $model "*) continue ;; esac
    if ! rate=$(call GET "/v1/provider/price-recommendations?model=$model" "$key" | json recommended 2>/dev/null); then
      echo "Demo rate for $model not set: no recommendation (HTTP $(status)): $(cat "$DEMO/.body"); set one at $URL/#/pricing"
      continue
    fi
    call PUT "/v1/provider/prices/$model" "$key" "{\"usdc_per_gpu_hour\":$(jstr "$rate")}" >/dev/null
    if [ "$(status)" != 200 ]; then
      echo "Demo rate for $model not set (HTTP $(status)): $(cat "$DEMO/.body")"
      continue
    fi
    echo "Demo rate: $model at $rate USDC/GPU-hour (the platform's recommendation; change it at $URL/#/pricing)"
  done
}
demo_summary() {
  local key=$1 deadline=$((SECONDS + ${GPUNEX_DEMO_WAIT_S:-300})) priced=0
  while ((SECONDS < deadline)); do
    kill -0 "$agent_pid" 2>/dev/null || return 0
    if [ "$priced" = 0 ] && price_demo_models "$key"; then priced=1; fi
    if [ "$priced" = 1 ] && call GET /v1/provider/machines "$key" | python3 -c "$SUMMARY_PY" 2>/dev/null; then
      return 0
    fi
    sleep 2
  done
  echo "Demo GPUs: no benchmark verdict after ${GPUNEX_DEMO_WAIT_S:-300} s; see $URL/#/machines"
}

echo "Dashboard: $URL/"
[ -f "$VAR/first-admin.txt" ] && echo "First admin login: in $VAR/first-admin.txt (mode 0600)"
if [ "${GPUNEX_NO_AGENT:-0}" != 1 ]; then
  key=$(demo_provider_key)
  rm -f "$DEMO/.body" "$DEMO/.status"
  agent_args=(run --server "$URL" --data-dir "$VAR/agent")
  if "$BIN/gpunex-agent" info >/dev/null 2>&1; then
    echo "Agent: NVML found GPUs; reporting this host's real GPUs."
  else
    echo "Agent: no NVIDIA GPUs found (NVML); running a SIMULATED ${DEMO_COUNT}x $DEMO_MODEL (--simulate $DEMO_MODEL:$DEMO_COUNT)."
    agent_args+=(--simulate "$DEMO_MODEL:$DEMO_COUNT")
  fi
  if [ -z "${DOCKER_HOST:-}" ] && [ ! -S /var/run/docker.sock ] && command -v podman >/dev/null; then
    if engine=$(scripts/podman.sh start "$VAR/podman" 2>"$VAR/podman.log"); then
      podman_dir="$VAR/podman"
      agent_args+=(--docker-host "$engine")
      echo "Containers: a throwaway Podman service at $engine (image localhost/gpunex-test:1 to rent)."
    else
      echo "Containers: Podman did not start ($VAR/podman.log); the demo machine is not offered."
    fi
  fi
  if [ "$(id -u)" != 0 ]; then
    # The network guard writes iptables rules, which takes root: on a developer's own machine the
    # demo runs without it, and says so.
    agent_args+=(--network-guard none)
    echo "Containers: not root, so rentals' containers are not fenced off this host (--network-guard none)."
  fi
  mkdir -p "$VAR/agent"
  GPUNEX_API_KEY="$key" "$BIN/gpunex-agent" "${agent_args[@]}" &
  agent_pid=$!
  echo "Demo provider login: $PROVIDER_EMAIL, its password in $DEMO/provider-password (mode 0600)"
  echo "Its machine: $URL/#/machines"
fi
echo "Ctrl-C stops the agent and the server."
[ -n "$agent_pid" ] && demo_summary "$key"

# Runs until a signal, or until either process exits (then the other is stopped too).
rc=0
wait -n || rc=$?
stop_all
exit "$rc"
