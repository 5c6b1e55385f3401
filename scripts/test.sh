#!/usr/bin/env bash
# The whole test suite: type check, lint, then every test against a real Temporal dev server that the
# vitest global setup installs (go install, pinned) and starts when none answers.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
bash scripts/system-deps.sh
echo "== tsc --noEmit"
npx tsc --noEmit
echo "== biome check"
npx biome check .
echo "== Temporal CLI"
npx tsx scripts/temporal.ts install
npx tsx scripts/jaeger.ts install
echo "== breaker embedding model"
bash scripts/embedding-model.sh >/dev/null
echo "== vitest"
npx vitest run "$@"
