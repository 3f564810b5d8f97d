#!/usr/bin/env bash
# Runs the Go test suite for `make test`. The end-to-end tests of
# app/concierge are the suite's long pole: about ten minutes one after
# another, most of it spent waiting on processes, PostgreSQL, Redis and
# timeouts rather than computing. So they run as two shards at the same time
# as each other and as every other package. That is safe because every test
# there already isolates itself: a fresh PostgreSQL database, a Redis
# database of its own (adapters/redis/redistest claims them across
# processes and waits when all are taken), and listeners on port 0.
#
# TEST_FLAGS (default: -race -count=1 -timeout 14m) are passed to each run.
# Each run's output is printed whole when it ends; the script fails if any
# run failed.
set -uo pipefail
cd "$(dirname "$0")/.."
go="${GO:-go}"
read -r -a flags <<<"${TEST_FLAGS:--race -count=1 -timeout 14m}"
app=./app/concierge
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# Tests are dealt to the shards in turn, by name, so the heavy ones (the
# evaluation, the browser tests, the cluster tests) spread out.
mapfile -t tests < <(grep -ho '^func Test[A-Za-z0-9_]*' "$app"/*_test.go | sed 's/^func //' | sort -u)
shard=("" "")
for i in "${!tests[@]}"; do
	s=$((i % 2))
	shard[$s]+="${shard[$s]:+|}${tests[$i]}"
done

mapfile -t others < <("$go" list ./... | grep -v '/app/concierge$')

declare -A pids
"$go" test "${flags[@]}" "${others[@]}" >"$logs/packages" 2>&1 &
pids[packages]=$!
for s in 0 1; do
	"$go" test "${flags[@]}" -run "^(${shard[$s]})\$" "$app" >"$logs/app-shard-$s" 2>&1 &
	pids[app-shard-$s]=$!
done

failed=0
for name in packages app-shard-0 app-shard-1; do
	if wait "${pids[$name]}"; then
		echo "== $name: ok"
	else
		echo "== $name: FAILED"
		failed=1
	fi
	cat "$logs/$name"
done
exit $failed
