#!/usr/bin/env bash
# Installs @dwmkerr/mock-llm (pinned in tools/mock-llm/package-lock.json), the
# OpenAI-compatible server that adapters/llm/openai's contract tests run.
# Idempotent: does nothing when the installed copy matches the lockfile.
# Used by `make test` and .ci/run; needs Node.js and npm.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=tools/mock-llm
bin=$dir/node_modules/.bin/mock-llm
marker=$dir/node_modules/.package-lock.json

if [ -x "$bin" ] && [ -f "$marker" ] && [ ! "$dir/package-lock.json" -nt "$marker" ]; then
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "mock-llm: npm is not installed (apt-get install nodejs npm); the OpenAI adapter's contract tests need it" >&2
  exit 1
fi
echo "mock-llm: installing into $dir" >&2
npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
