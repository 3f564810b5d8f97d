#!/usr/bin/env bash
# Installs what the widget's browser tests (app/concierge/widget_browser_test.go)
# need: Debian's chromium (apt) and playwright-core, pinned in
# tools/browser/package-lock.json. Never downloads a browser build of its own
# (no `playwright install`): playwright-core drives /usr/bin/chromium.
# Idempotent: does nothing when both are in place and the lockfile is unchanged.
# Used by `make test` (through `make browser`) and .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x /usr/bin/chromium ]; then
  if ! command -v apt-get >/dev/null; then
    echo "browser: /usr/bin/chromium is missing and apt-get is not available; install Chromium" >&2
    exit 1
  fi
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  echo "browser: installing chromium with apt-get" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi

dir=tools/browser
marker=$dir/node_modules/.package-lock.json
if [ -f "$dir/node_modules/playwright-core/package.json" ] && [ -f "$marker" ] && [ ! "$dir/package-lock.json" -nt "$marker" ] && [ ! "$dir/package.json" -nt "$marker" ]; then
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "browser: npm is not installed (apt-get install nodejs npm); the widget's browser tests need it" >&2
  exit 1
fi
echo "browser: installing the browser test tools (playwright-core, axe-core) into $dir" >&2
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
