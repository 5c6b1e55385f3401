#!/usr/bin/env bash
# Installs the Debian packages the tests need when they are missing: bubblewrap (shell sandbox), chromium
# (browser integration tests) and postgresql (StagedSql's pg tests start a throwaway cluster). Quiet and cheap
# when everything is present; runs apt-get update only if a first install attempt fails (stale package lists).
set -euo pipefail
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
# mvn fetches the breaker's sentence-embedding model from Maven Central (scripts/embedding-model.sh).
command -v mvn >/dev/null 2>&1 || missing+=(maven)
command -v unzip >/dev/null 2>&1 || missing+=(unzip)
# The kernel's syscall tables, which the shell's seccomp filter is checked against.
[ -f /usr/include/asm-generic/unistd.h ] || missing+=(linux-libc-dev)
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing+=(chromium)
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  missing+=(postgresql)
fi
[ ${#missing[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "jukebox: missing system packages (${missing[*]}) and no apt-get to install them; install them by hand" >&2
  exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo=(sudo); else
    echo "jukebox: missing system packages (${missing[*]}); run as root or install them: apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi
echo "jukebox: installing system packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if ! "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
  "${sudo[@]}" apt-get update -qq >/dev/null
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
