#!/usr/bin/env bash
# Start judgeapp: environment, database, demo data, the scripted demo judge, a real worker and the web app.
# Open http://127.0.0.1:8000/ and log in with a demo account printed below. Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/venv.sh
exec .venv/bin/python manage.py up "$@"
