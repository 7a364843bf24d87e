# Sourced by ./start.sh and ./test.sh: make sure .venv exists with Python 3.11 and the pinned requirements.
# Re-installs only when requirements.txt changed since the last install.
set -euo pipefail
PYTHON_BIN="${PYTHON:-}"
if [ -z "$PYTHON_BIN" ]; then
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
      PYTHON_BIN="$candidate"; break
    fi
  done
fi
if [ -z "$PYTHON_BIN" ]; then
  echo "judgeapp needs Python 3.11 (set PYTHON=/path/to/python3.11)" >&2
  exit 2
fi
if [ ! -x .venv/bin/python ]; then
  echo "Creating .venv with $PYTHON_BIN…" >&2
  "$PYTHON_BIN" -m venv .venv
fi
stamp=".venv/.requirements.sha256"
wanted="$(sha256sum requirements.txt | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$wanted" ]; then
  echo "Installing requirements…" >&2
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
  echo "$wanted" > "$stamp"
fi
if ! command -v bwrap >/dev/null 2>&1; then
  echo "note: bubblewrap is not installed, so the agent judge cannot run workspace files (sudo apt-get install bubblewrap)" >&2
fi
