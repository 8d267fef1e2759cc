#!/usr/bin/env bash
# Makes sure a Chromium the tests and the demo can launch is present.
# Order matches cdp.FindChrome: $BROWSERAGENT_CHROME, then the usual names on PATH.
# Installs Debian's chromium package when none is found and we may (root + apt-get).
set -euo pipefail

if [ -n "${BROWSERAGENT_CHROME:-}" ]; then
  if [ -x "$BROWSERAGENT_CHROME" ]; then exit 0; fi
  echo "BROWSERAGENT_CHROME=$BROWSERAGENT_CHROME is not an executable file" >&2
  exit 1
fi
for name in chromium chromium-browser google-chrome google-chrome-stable; do
  if command -v "$name" >/dev/null 2>&1; then exit 0; fi
done

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "no Chromium found: installing Debian's chromium package" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium >/dev/null
  command -v chromium >/dev/null && exit 0
fi
echo "no Chromium found: install it (apt-get install chromium) or set BROWSERAGENT_CHROME to its path" >&2
exit 1
