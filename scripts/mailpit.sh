#!/usr/bin/env bash
# Installs mailpit (github.com/axllent/mailpit, pinned below), the SMTP server
# with an HTTP API that the mail adapter's tests (adapters/mail/smtpmail) send
# to and read back from. It goes into the user's cache directory, named by its
# version, so every clone on the machine (CI clones afresh each run) shares
# one install. Idempotent: does nothing when that version is there. Used by
# `make test` and so .ci/run; needs only Go and the module proxy. A cold
# install (download and compile) takes minutes; later runs none.
set -euo pipefail

version=v1.33.1
dir=${MAILPIT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/concierge/mailpit/$version}
bin=$dir/mailpit

if [ -x "$bin" ]; then
  exit 0
fi
echo "mailpit: installing $version into $dir" >&2
mkdir -p "$dir"
# Build into a temporary directory and move the binary into place, so an
# interrupted install never leaves a broken binary that later runs trust.
# GOFLAGS is cleared so the caller's flags (-mod=...) cannot apply to a
# module that is not ours.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
GOFLAGS= GOBIN="$tmp" ${GO:-go} install "github.com/axllent/mailpit@$version"
mv "$tmp/mailpit" "$bin"
