#!/bin/sh
# Sanity checks for the retrieval evaluation set in this directory.
# Usage: sh testdata/eval/check.sh   (needs jq)
# Exits non-zero if a minimum is not met, an id repeats, or a cited source
# file is missing from corpus/.
set -eu
cd "$(dirname "$0")"
q=questions.json
command -v jq >/dev/null || { echo "check.sh: jq is required" >&2; exit 2; }
jq empty "$q"

fail=0
na=$(jq '.answerable | length' "$q")
nu=$(jq '.unanswerable | length' "$q")
dups=$(jq -r '(.answerable[].id), (.unanswerable[].id)' "$q" | sort | uniq -d)
blank=$(jq '[.answerable[] | select((.question | length) == 0 or (.sources | length) == 0)]
            + [.unanswerable[] | select((.question | length) == 0)] | length' "$q")
nsrc=$(jq -r '.answerable[].sources[]' "$q" | sort -u | wc -l | tr -d ' ')
nfiles=$(ls corpus/*.md | wc -l | tr -d ' ')
bytes=$(cat corpus/*.md | wc -c | tr -d ' ')

for s in $(jq -r '.answerable[].sources[]' "$q" | sort -u); do
	if [ ! -f "corpus/$s" ]; then echo "missing source: corpus/$s"; fail=1; fi
done
if [ -n "$dups" ]; then echo "duplicate ids: $dups"; fail=1; fi
if [ "$blank" -ne 0 ]; then echo "entries with empty question or sources: $blank"; fail=1; fi
if [ "$na" -lt 60 ]; then echo "need >= 60 answerable questions, have $na"; fail=1; fi
if [ "$nu" -lt 20 ]; then echo "need >= 20 unanswerable questions, have $nu"; fail=1; fi
if [ "$nsrc" -lt 30 ]; then echo "answers must cite >= 30 files, cite $nsrc"; fail=1; fi
if [ "$nfiles" -lt 40 ]; then echo "need >= 40 corpus files, have $nfiles"; fail=1; fi
if [ ! -s LICENSE-corpus ] || [ ! -s ATTRIBUTION.md ]; then echo "LICENSE-corpus or ATTRIBUTION.md missing"; fail=1; fi

echo "corpus: $nfiles files, $bytes bytes; questions: $na answerable (citing $nsrc files), $nu unanswerable"
if [ "$fail" -ne 0 ]; then echo "FAIL"; exit 1; fi
echo "OK"
