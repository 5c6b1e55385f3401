#!/usr/bin/env bash
# The whole test suite: type check, lint, build, then every test against a real Temporal dev server that the
# vitest global setup installs (go install, pinned) and starts when none answers, and the end-to-end,
# crash-resume, fork and multi-host suites once more against Temporal on PostgreSQL (vitest project `postgres`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
bash scripts/system-deps.sh
echo "== tsc --noEmit"
npx tsc --noEmit
echo "== biome check"
npx biome check .
# The published package (dist/): the package test packs and installs it, and `npx jbx` runs it.
echo "== build"
node scripts/build.js
echo "== Temporal CLI"
npx tsx scripts/temporal.ts install
# Built from the Go module proxy like the CLI (cached under .jukebox/bin): the Temporal server and schema tool
# behind the `postgres` test project, and versitygw, the S3-compatible server of the object tape store tests.
echo "== Temporal server on PostgreSQL, S3 gateway"
npx tsx scripts/temporal-postgres.ts install
npx tsx scripts/object-store.ts install
npx tsx scripts/jaeger.ts install
# The Compose Specification's validator (compose-go's cmd), which checks docker-compose.yml without Docker.
npx tsx scripts/compose-spec.ts install
echo "== breaker embedding model"
bash scripts/embedding-model.sh >/dev/null
echo "== vitest"
npx vitest run "$@"
