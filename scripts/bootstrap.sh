#!/usr/bin/env bash
# Installs node dependencies from the lockfile when they are missing or stale; cheap when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v node >/dev/null 2>&1; then
  echo "jukebox: Node.js 20 or newer is required and was not found on PATH (install it from nodejs.org or your distribution)." >&2
  exit 1
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "jukebox: Node.js $(node --version) is too old; install Node.js 20 or newer." >&2
  exit 1
fi
want=$(sha256sum package-lock.json | cut -d' ' -f1)
have=$(cat node_modules/.jukebox-lock-sha256 2>/dev/null || true)
if [ "$want" != "$have" ]; then
  echo "jukebox: installing node dependencies (npm ci)..." >&2
  # A contributor's plain `npm ci`: package.json's allowScripts runs only sqlite3's install script and denies
  # onnxruntime-node's (it would fetch optional CUDA binaries from outside the registry; the CPU ones ship in
  # the package). npm before 11 does not read allowScripts: there the environment variable skips that fetch.
  if [ "$(npm --version | cut -d. -f1)" -ge 11 ]; then
    npm ci --no-audit --no-fund --loglevel=error >&2
  else
    ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund --loglevel=error >&2
  fi
  echo "$want" > node_modules/.jukebox-lock-sha256
fi
