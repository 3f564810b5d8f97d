#!/usr/bin/env bash
# Installs promtool, which the alert rules' tests (deployments/alerts_test.go)
# run as `promtool check rules` and `promtool test rules`: Debian's
# prometheus package (apt) carries it. Never downloads a release of its own.
# Idempotent: does nothing when promtool is on the PATH. Used by `make test`
# (through `make promtool`) and so .ci/run. On a machine without apt-get it
# says what to install and, outside CI, lets the suite run (the tests skip);
# under CI=true it fails, as the tests would.
set -euo pipefail

if command -v promtool >/dev/null; then
  exit 0
fi
if ! command -v apt-get >/dev/null; then
  echo "promtool: promtool is missing and apt-get is not available; install Prometheus's promtool" >&2
  if [ -n "${CI:-}" ]; then exit 1; fi
  exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
echo "promtool: installing Debian's prometheus package (for promtool) with apt-get" >&2
$sudo apt-get update -qq
# --no-install-recommends: promtool needs nothing else.
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends prometheus >/dev/null
command -v promtool >/dev/null
