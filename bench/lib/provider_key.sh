# Sourced by the benches: an approved provider's API key, made through the public API as a provider
# gets one (signup, application, a reviewer's approval, then the one reveal after a fresh login).
# provider_key URL DB_URL GPUNEX_SERVER_BIN: prints the key (gpx_...). The reviewer is made with
# `gpunex-server admin create-user` on DB_URL.
provider_key() {
  local url=$1 db=$2 server_bin=$3 email=bench-provider@example.com
  _jget() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval("d"+sys.argv[1]))' "$1"; }
  _api() { # METHOD PATH TOKEN [BODY]
    curl -sS -X "$1" "$url$2" -H "Authorization: Bearer $3" -H 'Content-Type: application/json' ${4:+--data "$4"}
  }
  _login() {
    curl -sSf -X POST "$url/v1/auth/login" -H 'Content-Type: application/json' \
      --data "{\"email\":\"$1\",\"password\":\"$2\"}" | _jget '["token"]'
  }
  curl -sSf -X POST "$url/v1/auth/signup" -H 'Content-Type: application/json' \
    --data "{\"email\":\"$email\",\"password\":\"correct-horse-battery\",\"full_name\":\"Bench Provider\"}" >/dev/null
  local ptoken app rtoken decision key_id shown key
  ptoken=$(_login "$email" correct-horse-battery)
  app=$(_api POST /v1/applications "$ptoken" "{\"full_name\":\"Bench Provider\",\"email\":\"$email\",\"ups\":false,
    \"commitment_months\":3,\"gpus\":[{\"model\":\"L40S\",\"count\":2,\"system_ram_gb\":256,\"download_gbps\":1,
    \"upload_gbps\":1,\"availability\":\"24/7\",\"location\":{\"city\":\"Berlin\",\"country\":\"DE\",\"region\":\"eu-central\"}}]}" \
    | _jget '["id"]')
  _api POST "/v1/applications/$app/submit" "$ptoken" >/dev/null
  echo 'operator-password-1' | "$server_bin" admin create-user --db "$db" --email rev@example.com \
    --role reviewer --full-name 'Bench Reviewer' --password-stdin >/dev/null
  rtoken=$(_login rev@example.com operator-password-1)
  decision=$(_api POST "/v1/review/applications/$app/decision" "$rtoken" \
    '{"decision":"approve","tier":"community","note":"bench"}')
  key_id=$(_jget '.get("api_key_id", "")' <<<"$decision")
  # The applicant reveals the key once, after a fresh login picks up the provider role.
  ptoken=$(_login "$email" correct-horse-battery)
  shown=$(_api POST "/v1/provider/api-keys/$key_id/reveal" "$ptoken")
  key=$(_jget '.get("api_key", "")' <<<"$shown")
  [[ $key == gpx_* ]] || { echo "no API key from the approval: $decision $shown" >&2; return 1; }
  echo "$key"
}
