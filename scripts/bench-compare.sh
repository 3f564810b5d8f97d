#!/bin/bash
# bench-compare.sh OLD_COMMIT [ROUNDS] — runs the load benchmarks of OLD_COMMIT
# ("old") and of the working tree ("new") one after the other, alternating
# which goes first, ROUNDS times (default 5), and prints each metric's rounds,
# medians and new/old ratio. BENCH picks the benchmarks (a -bench regexp;
# default chat, list and relay), DUR the length of a measured round (4s).
# Run it on an otherwise idle machine: both binaries share its two cores.
set -euo pipefail
old=${1:?usage: bench-compare.sh OLD_COMMIT [ROUNDS]}
rounds=${2:-5}
root=$(git rev-parse --show-toplevel)
out=$(mktemp -d)
git -C "$root" worktree add -q --detach "$out/old-tree" "$old"
trap 'git -C "$root" worktree remove --force "$out/old-tree"' EXIT
(cd "$out/old-tree" && go test -c -o "$out/old.test" ./app/concierge/)
(cd "$root" && go test -c -o "$out/new.test" ./app/concierge/)
export CONCIERGE_BENCH_ROUNDS=1 CONCIERGE_BENCH_DURATION=${DUR:-4s}
for r in $(seq 1 "$rounds"); do
  order="old new"; [ $((r % 2)) = 0 ] && order="new old"
  for v in $order; do
    echo "round $r: $v" >&2
    (cd "$root/app/concierge" && "$out/$v.test" -test.run '^$' -test.benchmem=false \
      -test.bench "${BENCH:-^Benchmark(ChatFirstToken|ChatThroughput|ConversationList|Relay)$}" \
      -test.benchtime 1x -test.timeout 30m) > "$out/$v.$r.txt" 2>&1
  done
done
python3 "$root/scripts/bench-compare.py" "$out"
echo "raw output: $out" >&2
