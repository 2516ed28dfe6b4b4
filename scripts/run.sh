#!/usr/bin/env bash
# `make run`: serves GPUnex on SQLite under ./var at http://127.0.0.1:8080.
# Creates a first admin account if there is none and prints its login once.
# Ctrl-C stops the server cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p var
DB=${GPUNEX_DB:-sqlite:var/gpunex.db}
LISTEN=${GPUNEX_LISTEN:-127.0.0.1:8080}

build/bin/gpunex-server admin bootstrap --db "$DB"
echo "Dashboard: http://$LISTEN/"
exec build/bin/gpunex-server --db "$DB" --listen "$LISTEN" --data-dir var
