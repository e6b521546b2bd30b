#!/usr/bin/env bash
# System pieces the browser tests need, installed only when missing (safe to run again):
#   - Debian's Chromium, driven by Playwright (the Python package brings its own driver;
#     no browser is ever downloaded by Playwright itself)
#   - a CJK font, so Simplified Chinese screenshots of the viewer show characters, not boxes
# Then the real agent CLIs for integration tests, if that script exists.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then
  SUDO="sudo"
fi

missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
if command -v fc-list >/dev/null 2>&1 && [ -z "$(fc-list :lang=zh 2>/dev/null | head -n1)" ]; then
  missing+=(fonts-wqy-microhei)
fi

if [ "${#missing[@]}" -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    echo "install-system: installing ${missing[*]}" >&2
    $SUDO apt-get update
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y "${missing[@]}"
  else
    echo "install-system: please install ${missing[*]} (no apt-get here); browser tests will be skipped" >&2
  fi
fi

[ -f scripts/install-agents.sh ] && bash scripts/install-agents.sh
exit 0
