#!/bin/sh
# Structural check of every evaluation set under testdata/eval; the checks
# live in check.py (python3, standard library only). Pass --all-sets to make
# the totals across sets a failure instead of a warning.
# Usage: sh testdata/eval/check.sh [--all-sets]
exec python3 "$(dirname "$0")/check.py" "$@"
