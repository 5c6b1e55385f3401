#!/usr/bin/env bash
# The main job on embedded defaults: installs what is missing, starts the Temporal dev server (or reuses one)
# and the local model server, runs the quickstart agent and prints its steps.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
# The breaker's default semantic detector needs its embedding model; without it (no mvn yet) the quickstart
# still runs, with the detector on its character 3-gram fallback, and says why here.
if ! bash scripts/embedding-model.sh >/dev/null; then
  echo "jukebox: the breaker's embedding model is not installed (see above); the quickstart runs with its 3-gram fallback." >&2
fi
# `npx jbx` (which the quickstart's output points to) runs the built package.
node scripts/build.js
npx tsx scripts/quickstart.ts "$@"
