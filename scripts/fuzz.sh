#!/usr/bin/env bash
# Runs every fuzz target of the module (func FuzzXxx in a _test.go file) for
# a bounded time, one after the other: `go test -fuzz` takes one target of
# one package at a time. Their seed corpora already run as ordinary tests in
# `go test ./...`; this is the coverage-guided part. A failure leaves the
# crashing input under the package's testdata/fuzz/, which then runs as a
# regression test: commit it with the fix.
#
# FUZZTIME (default 5s) is each target's budget. FUZZJOBS (default 2)
# targets run at a time, each with one fuzzing worker: most of a target's
# time is building its instrumented test binary, and two builds overlap well
# on two cores (one after another, the 17 targets took 4.5 minutes here).
#
# Go 1.26's fuzz coordinator can fail a target with a bare "context deadline
# exceeded" when -fuzztime expires while a worker is mid-run, writing no
# input (golang/go#75804, fixed in Go 1.27). Such a run, and only such a run
# (no "Failing input written", no panic, no test error), is tried again, up
# to three attempts in all (on a loaded machine it hit the same target twice
# in a row); any other failure, or a third race, fails the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-5s}"
jobs="${FUZZJOBS:-2}"
go="${GO:-go}"

targets=$(git ls-files --cached --others --exclude-standard '*_test.go' | xargs grep -l '^func Fuzz' | sort || true)
if [ -z "$targets" ]; then
	echo "fuzz: no fuzz targets found" >&2
	exit 1
fi
# deadline_race reports whether a failed run's log is only the coordinator's
# deadline race: "context deadline exceeded" and no sign of a real failure.
deadline_race() {
	grep -q 'context deadline exceeded' "$1" &&
		! grep -qE 'Failing input written|panic:|_test\.go:[0-9]+:' "$1"
}

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# fuzz_one runs one target, again after the coordinator's deadline race
# only (three attempts at most); its output stays in $3.
fuzz_one() {
	local pkg=$1 name=$2 log=$3 attempt
	for attempt in 1 2 3; do
		if "$go" test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime 2s -parallel 1 "$pkg" >"$log" 2>&1; then
			return 0
		fi
		if [ "$attempt" -lt 3 ] && deadline_race "$log"; then
			echo "fuzz: $pkg $name stopped with the coordinator's deadline race (golang/go#75804), no input written; again"
			continue
		fi
		return 1
	done
}

# logname is a target's log: names may repeat across packages.
logname() { echo "$logs/$(echo "$1" | tr -c 'A-Za-z0-9\n' _)_$2.log"; }

declare -A running=() # pid -> "pkg name"
count=0
failed=""
# reap waits for one running target and records a failure.
reap() {
	local pid status=0
	wait -n -p pid || status=$?
	local what=${running[$pid]}
	unset "running[$pid]"
	if [ "$status" != 0 ] && [ -z "$failed" ]; then
		failed=$what
	fi
}
for file in $targets; do
	pkg="./$(dirname "$file")"
	for name in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$file" | sed 's/^func //'); do
		while [ "${#running[@]}" -ge "$jobs" ]; do reap; done
		[ -n "$failed" ] && break 2
		echo "fuzz: $pkg $name ($fuzztime)"
		fuzz_one "$pkg" "$name" "$(logname "$pkg" "$name")" &
		running[$!]="$pkg $name"
		count=$((count + 1))
	done
done
while [ "${#running[@]}" -gt 0 ]; do reap; done
if [ -n "$failed" ]; then
	read -r pkg name <<<"$failed"
	cat "$(logname "$pkg" "$name")"
	echo "fuzz: $pkg $name failed; the input is in $pkg/testdata/fuzz/$name" >&2
	exit 1
fi
echo "fuzz: $count targets ran for $fuzztime each without a failure"
