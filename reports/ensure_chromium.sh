#!/usr/bin/env bash
# Make a headless Chromium available from Debian's packages; print its path on the last line.
# Exits non-zero (with the reason on stderr) when it cannot be installed here, so callers can skip.
set -uo pipefail

find_chromium() {
  for name in chromium chromium-browser google-chrome chrome; do
    if command -v "$name" >/dev/null 2>&1; then
      command -v "$name"
      return 0
    fi
  done
  return 1
}

if path=$(find_chromium); then
  echo "$path"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "no chromium and no apt-get to install it" >&2
  exit 2
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "no chromium and not root, so apt-get cannot install it" >&2
  exit 2
fi
export DEBIAN_FRONTEND=noninteractive
# A lock file serialises parallel test workers that would otherwise race on dpkg's own lock.
exec 9>/tmp/ensure_chromium.lock
flock 9
if path=$(find_chromium); then
  echo "$path"
  exit 0
fi
apt-get update -qq >&2 || { echo "apt-get update failed" >&2; exit 3; }
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2 || { echo "apt-get install chromium failed" >&2; exit 3; }
if path=$(find_chromium); then
  echo "$path"
  exit 0
fi
echo "chromium installed but not found on PATH" >&2
exit 3
