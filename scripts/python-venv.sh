#!/usr/bin/env bash
# Creates (or reuses) the Python virtual environment of the proxy tests at .jukebox/venv and prints its python.
# The venv is keyed by a hash of examples/python/requirements.txt: an unchanged file costs one sha256, a changed one
# rebuilds from scratch so no stale package survives. Install output goes to stderr; stdout is only the path.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.jukebox/venv
want=$(sha256sum examples/python/requirements.txt | cut -d' ' -f1)
have=$(cat "$venv/.requirements-sha256" 2>/dev/null || true)
if [ "$want" != "$have" ]; then
  python=${JUKEBOX_PYTHON:-python3}
  if ! command -v "$python" >/dev/null 2>&1; then
    echo "jukebox: $python not found; install Python 3.11 (or set JUKEBOX_PYTHON) to run the proxy's Python tests." >&2
    exit 1
  fi
  echo "jukebox: building $venv from examples/python/requirements.txt (first time: a few minutes)..." >&2
  start=$(date +%s)
  rm -rf "$venv"
  mkdir -p .jukebox
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r examples/python/requirements.txt >&2
  echo "$want" > "$venv/.requirements-sha256"
  echo "jukebox: $venv ready in $(( $(date +%s) - start )) s" >&2
fi
echo "$PWD/$venv/bin/python"
