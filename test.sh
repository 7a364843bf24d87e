#!/usr/bin/env bash
# Run the whole test suite: unit, end-to-end with real worker processes, and headless-browser tests.
# Extra arguments go to pytest (e.g. ./test.sh -m "not slow" for the fast tests only).
set -euo pipefail
cd "$(dirname "$0")"
source scripts/venv.sh
exec .venv/bin/python -m pytest "$@"
