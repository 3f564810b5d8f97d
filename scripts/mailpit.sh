#!/usr/bin/env bash
# Installs mailpit (github.com/axllent/mailpit, pinned below), the SMTP server
# with an HTTP API that the mail adapter's tests (adapters/mail/smtpmail) send
# to and read back from. Idempotent: does nothing when the pinned version is
# installed. Used by `make test` and .ci/run; needs only Go and the module proxy.
# A cold install (download and compile) takes a few minutes; later runs none.
set -euo pipefail
cd "$(dirname "$0")/.."

version=v1.33.1
dir=tools/mailpit
bin=$dir/bin/mailpit
marker=$dir/bin/.version

if [ -x "$bin" ] && [ "$(cat "$marker" 2>/dev/null)" = "$version" ]; then
  exit 0
fi
echo "mailpit: installing $version into $dir/bin" >&2
mkdir -p "$dir/bin"
# GOFLAGS is cleared so a -mod setting of the caller cannot apply to a module
# that is not ours; the build runs outside our module for the same reason.
GOFLAGS= GOBIN="$PWD/$dir/bin" ${GO:-go} install "github.com/axllent/mailpit@$version"
echo "$version" > "$marker"
