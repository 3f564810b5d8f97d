#!/usr/bin/env bash
# Runs every fuzz target of the module (func FuzzXxx in a _test.go file) for
# a bounded time, one after the other: `go test -fuzz` takes one target of
# one package at a time. Their seed corpora already run as ordinary tests in
# `go test ./...`; this is the coverage-guided part. A failure leaves the
# crashing input under the package's testdata/fuzz/, which then runs as a
# regression test: commit it with the fix.
#
# FUZZTIME (default 5s) is each target's budget.
#
# Go 1.26's fuzz coordinator can fail a target with a bare "context deadline
# exceeded" when -fuzztime expires while a worker is mid-run, writing no
# input (golang/go#75804, fixed in Go 1.27). Such a run, and only such a run
# (no "Failing input written", no panic, no test error), is tried once more;
# any other failure, or the same again, fails the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-5s}"
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

count=0
for file in $targets; do
	pkg="./$(dirname "$file")"
	for name in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$file" | sed 's/^func //'); do
		echo "fuzz: $pkg $name ($fuzztime)"
		for attempt in 1 2; do
			if "$go" test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime 2s "$pkg" >/tmp/fuzz.$$.log 2>&1; then
				break
			fi
			if [ "$attempt" = 1 ] && deadline_race /tmp/fuzz.$$.log; then
				echo "fuzz: $pkg $name stopped with the coordinator's deadline race (golang/go#75804), no input written; once more"
				continue
			fi
			cat /tmp/fuzz.$$.log
			rm -f /tmp/fuzz.$$.log
			echo "fuzz: $pkg $name failed; the input is in $pkg/testdata/fuzz/$name" >&2
			exit 1
		done
		count=$((count + 1))
	done
done
rm -f /tmp/fuzz.$$.log
echo "fuzz: $count targets ran for $fuzztime each without a failure"
