#!/usr/bin/env bash
# Runs the Go test suite for `make test`. The end-to-end tests of
# app/concierge are the suite's long pole: about ten minutes one after
# another, most of it spent waiting on processes, PostgreSQL, Redis and
# timeouts rather than computing. So they run as SHARDS (default 3) shards at
# the same time as each other and as every other package. That is safe
# because every test there already isolates itself: a fresh PostgreSQL
# database, a Redis database of its own (adapters/redis/redistest claims them
# across processes and waits when all are taken), and listeners on port 0.
#
# The shards run one test binary, built first: when each shard ran its own
# `go test`, each compiled every package with -race at the same time as the
# others (on a cold cache, five of a shard's twelve minutes). Building it
# first also leaves the compiled packages in the cache for the other
# packages' run.
#
# TEST_FLAGS (default: -race -count=1 -timeout 25m) are passed to each run;
# for the shards' binary, -race and -tags go to the build and the rest become
# its -test.* flags. Each run's output is printed whole when it ends; the
# script fails if any run failed. It also runs the fuzz targets
# (scripts/fuzz.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
go="${GO:-go}"
read -r -a flags <<<"${TEST_FLAGS:--race -count=1 -timeout 25m}"
app=./app/concierge
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# Tests are dealt to the shards by their measured time
# (testdata/app-test-seconds.txt), longest first, each to the shard with the
# least time so far, so both shards end at about the same moment; a test not
# listed there counts as 5 s.
mapfile -t tests < <(grep -ho '^func Test[A-Za-z0-9_]*' "$app"/*_test.go | sed 's/^func //' | sort -u)
shards="${SHARDS:-3}"
mapfile -t shard < <(printf '%s\n' "${tests[@]}" | awk -v shards="$shards" '
	NR == FNR { if ($1 !~ /^#/ && NF == 2) secs[$1] = $2; next }
	{ t[++n] = $1; s[n] = ($1 in secs) ? secs[$1] : 5 }
	END {
		# Longest first (a selection sort: a hundred names), then greedy:
		# each test to the shard with the least time so far.
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (s[j] > s[i]) { x = s[i]; s[i] = s[j]; s[j] = x; x = t[i]; t[i] = t[j]; t[j] = x }
		for (i = 1; i <= n; i++) {
			k = 0
			for (j = 1; j < shards; j++) if (load[j] < load[k]) k = j
			load[k] += s[i]; out[k] = out[k] (out[k] == "" ? "" : "|") t[i]
		}
		for (k = 0; k < shards; k++) print out[k]
	}' testdata/app-test-seconds.txt -)

# The shards' binary: build flags for `go test -c`, the rest as -test.* flags.
build_flags=()
run_flags=()
for f in "${flags[@]}"; do
	case "$f" in
	-race | -tags=*) build_flags+=("$f") ;;
	-*) run_flags+=("-test.${f#-}") ;;
	*) run_flags+=("$f") ;; # a flag's value, as in "-timeout 14m"
	esac
done

mapfile -t others < <("$go" list ./... | grep -v '/app/concierge$')

# timed runs a command, then says how long it took (to see when the shards
# need rebalancing) and exits with the command's status.
timed() {
	local start=$SECONDS
	"$@"
	local rc=$?
	echo "(took $((SECONDS - start)) s)"
	return $rc
}

echo "building the end-to-end tests' binary"
if ! timed "$go" test -c "${build_flags[@]}" -o "$logs/app.test" "$app"; then
	exit 1
fi

declare -A pids
names=(packages)
timed "$go" test "${flags[@]}" "${others[@]}" >"$logs/packages" 2>&1 &
pids[packages]=$!
# TEST_SECONDS_OUT=path runs the shards verbosely and writes each top-level
# test's time to path, in testdata/app-test-seconds.txt's format: times
# taken as the suite really runs (shards beside the other packages) balance
# the shards better than a serial run's. Only the summary lines are kept
# in the printed output.
if [ -n "${TEST_SECONDS_OUT:-}" ]; then
	run_flags+=(-test.v)
fi
for ((s = 0; s < shards; s++)); do
	# Like `go test`, run the binary in its package's directory.
	(cd "$app" && timed "$logs/app.test" -test.run "^(${shard[$s]})\$" "${run_flags[@]}") >"$logs/app-shard-$s" 2>&1 &
	pids[app-shard-$s]=$!
	names+=("app-shard-$s")
done
# The fuzz targets (scripts/fuzz.sh) start when the other packages' run or
# every shard has ended, whichever is first: before that, two compiling
# fuzz builds only slowed everything down; after everything, they added
# minutes to the suite (on a cold cache, fuzzing is three minutes of
# instrumented builds).
shard_pids=()
for ((s = 0; s < shards; s++)); do shard_pids+=("${pids[app-shard-$s]}"); done
# any_running reports whether any of the processes still runs.
any_running() {
	local p
	for p in "$@"; do kill -0 "$p" 2>/dev/null && return 0; done
	return 1
}
(
	while any_running "${pids[packages]}" && any_running "${shard_pids[@]}"; do sleep 1; done
	timed env GO="$go" bash scripts/fuzz.sh
) >"$logs/fuzz" 2>&1 &
pids[fuzz]=$!

failed=0
for name in "${names[@]}" fuzz; do
	ok=1
	if wait "${pids[$name]}"; then
		echo "== $name: ok"
	else
		echo "== $name: FAILED"
		failed=1
		ok=0
	fi
	if [ -n "${TEST_SECONDS_OUT:-}" ] && [[ $name == app-shard-* ]] && ((ok)); then
		# A verbose shard that passed: its summary, not every test's lines
		# (a failed one is printed whole).
		grep -vE '^(=== (RUN|PAUSE|CONT|NAME)|[[:space:]]*--- (PASS|SKIP)|[[:space:]]+[a-z_]+_test\.go:[0-9]+: )' "$logs/$name"
	else
		cat "$logs/$name"
	fi
done
if [ -n "${TEST_SECONDS_OUT:-}" ]; then
	{
		echo "# Seconds each app/concierge test took in a \`make test\` run (its shards beside the other"
		echo "# packages, $(nproc) cores, $(date -u +%Y-%m-%d)), used by scripts/test.sh to balance its shards."
		echo "# Refresh: TEST_SECONDS_OUT=testdata/app-test-seconds.txt make test. Tests not listed count as 5 s."
		cat "$logs"/app-shard-* | sed -nE 's/^--- (PASS|FAIL): ([A-Za-z0-9_]+) \(([0-9.]+)s\)$/\2 \3/p' | sort -k2 -rn
	} >"$TEST_SECONDS_OUT.new" && mv "$TEST_SECONDS_OUT.new" "$TEST_SECONDS_OUT"
	echo "test times written to $TEST_SECONDS_OUT"
fi
exit $failed
