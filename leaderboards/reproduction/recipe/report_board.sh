#!/usr/bin/env bash
# A board of an experiments/reproduce.py report, rebuilt on a fresh clone from the run records committed in the
# report's records/ (per question the labels and every estimator's score, exported from the stores reproduce.py
# rescored), with the comparisons reproduce.py read it with: the main operator against its untrained counterpart,
# enc, cos_ext, lexical and cos_int; every other variant against its own counterpart, the main operator and cos_ext.
# kle_heat@enc is the headline's reference, the bootstrap the default (1,000 resamples, seed 0), so the figures
# equal those reproduce.py wrote. Each report's recipe/board.sh calls this with its operators.
# Usage, from anywhere:
#   bash leaderboards/reproduction/recipe/report_board.sh <report folder> <main>:<counterpart> \
#       [<variant>:<counterpart> ...] [-- <semuq-eval leaderboard options, e.g. --no-plots>]
# The report folder is relative to leaderboards/reproduction/ (`.` for the first reproduction); OUTPUT= writes the
# board elsewhere than its leaderboard/.
set -euo pipefail
cd "$(dirname "$0")/../../.."
if [ "$#" -lt 2 ]; then
  echo "usage: bash leaderboards/reproduction/recipe/report_board.sh <report folder> <main>:<counterpart>" \
    "[<variant>:<counterpart> ...] [-- options]" >&2
  exit 2
fi
HERE=leaderboards/reproduction
[ "$1" = . ] || HERE=$HERE/$1
shift
if [ ! -d "$HERE/records" ]; then
  echo "report_board.sh: $HERE/records: no such folder (the report's committed run records)" >&2
  exit 2
fi
for pair in "$@"; do
  [ "$pair" = -- ] && break
  case $pair in
    ?*:?*) ;;
    *) echo "report_board.sh: '$pair': expected <operator>:<its untrained counterpart>" >&2; exit 2 ;;
  esac
done
MAIN=${1%%:*} BASE=${1#*:}
shift
COMPARE=(--compare "$MAIN:$BASE$(for b in enc cos_ext lexical cos_int; do [ "$b" = "$BASE" ] || printf ,%s "$b"; done)")
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
  COMPARE+=(--compare "${1%%:*}:${1#*:},$MAIN,cos_ext")
  shift
done
if [ "$#" -gt 0 ]; then shift; fi
OUTPUT=${OUTPUT:-$HERE/leaderboard}
read -ra SEMUQ <<< "${SEMUQ:-semuq-eval}"
"${SEMUQ[@]}" leaderboard "$HERE/records/*.jsonl.gz" --output "$OUTPUT" --force --reference kle_heat@enc \
    "${COMPARE[@]}" \
    --header "Built from the run records in ../records/ (see ../README.md). Tiny CPU LLMs: read the counts and the intervals before the point estimates." \
    --title "Reproduction: a trained enc operator vs the untrained one, offline" --jobs 2 "$@"
