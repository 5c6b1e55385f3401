#!/usr/bin/env bash
# The main job on embedded defaults: installs what is missing, starts the Temporal dev server (or reuses one)
# and the local model server, runs the quickstart agent and prints its steps.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
npx tsx scripts/quickstart.ts "$@"
