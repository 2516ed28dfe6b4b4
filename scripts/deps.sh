#!/usr/bin/env bash
# Installs everything GPUnex needs to build, run and test, from Debian's
# packages and (for the dashboard's chart library and test tooling) npm with lock files. Idempotent: it checks
# first, runs `apt-get update` at most once, and installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  # build
  cmake ninja-build g++ clang libclang-rt-14-dev pkg-config make
  libboost-dev libssl-dev libcurl4-openssl-dev nlohmann-json3-dev libsqlite3-dev libpq-dev
  libsodium-dev libspdlog-dev libfmt-dev libcli11-dev libtomlplusplus-dev libhowardhinnant-date-dev
  libgtest-dev tzdata
  # run and test
  postgresql sqlite3 faketime python3 python3-aiosmtpd chromium bats curl openssl libxml2-utils
  # the load balancer of scripts/cluster.sh (and the benchmarks' static baseline)
  nginx
  # customer containers in tests: Podman's Docker API service with runc, networks, the busybox test image
  podman runc netavark aardvark-dns iptables busybox-static
  # benchmarks
  wrk fio iperf3
)

# Node.js may come from Debian (nodejs + npm) or from a nodejs package that bundles npm.
command -v node >/dev/null || PACKAGES+=(nodejs)
command -v npm >/dev/null || PACKAGES+=(npm)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# JavaScript for the browser and API tests, pinned by the lock file.
if [ ! -d tests/js/node_modules ] || [ tests/js/package-lock.json -nt tests/js/node_modules/.package-lock.json ]; then
  echo "deps: npm ci (tests/js)"
  (cd tests/js && npm ci --no-audit --no-fund --loglevel=error)
fi
# The official SEPA pain.001.001.03 schema, which the payout tests validate files against with
# xmllint: Debian ships it inside a Tryton module; only that file is taken, nothing is installed.
XSD=.deps/xsd/pain.001.001.03.xsd
if [ ! -s "$XSD" ]; then
  echo "deps: the pain.001.001.03 schema (tryton-modules-account-payment-sepa)"
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download -qq tryton-modules-account-payment-sepa 2>/dev/null ||
    { $SUDO apt-get update -qq && apt-get download -qq tryton-modules-account-payment-sepa; })
  dpkg-deb -x "$tmp"/tryton-modules-account-payment-sepa_*.deb "$tmp/x"
  mkdir -p "$(dirname "$XSD")"
  cp "$(find "$tmp/x" -name pain.001.001.03.xsd | head -1)" "$XSD"
  rm -rf "$tmp"
fi
# The dashboard's npm libraries (uPlot; swagger-ui-dist for the API reference page), pinned by the lock file; the build embeds their dist files
# (cmake/web_vendor.cmake), so the server serves them itself.
if [ ! -d web/node_modules ] || [ web/package-lock.json -nt web/node_modules/.package-lock.json ]; then
  echo "deps: npm ci (web)"
  (cd web && npm ci --no-audit --no-fund --loglevel=error)
fi
echo "deps: ok"
