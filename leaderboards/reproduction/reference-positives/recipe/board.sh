#!/usr/bin/env bash
# The reference-positive ablations' board, rebuilt on a fresh clone from its committed run records (../records/: per
# question the labels and every estimator's score, exported from the stores experiments/reproduce.py rescored) with
# the comparisons that report was read with, kle_heat@enc as the headline's reference and the default bootstrap
# (1,000 resamples, seed 0). The figures equal those reproduce.py wrote from the stores.
# Usage, from anywhere: bash leaderboards/reproduction/reference-positives/recipe/board.sh   (OUTPUT= to write elsewhere)
# Extra arguments go to `semuq-eval leaderboard` (e.g. --no-plots).
set -euo pipefail
cd "$(dirname "$0")/../../../.."
HERE=leaderboards/reproduction/reference-positives
OUTPUT=${OUTPUT:-$HERE/leaderboard}
read -ra SEMUQ <<< "${SEMUQ:-semuq-eval}"
"${SEMUQ[@]}" leaderboard "$HERE/records/*.jsonl.gz" --output "$OUTPUT" --force --reference kle_heat@enc \
    --compare enc_trained:enc,cos_ext,lexical,cos_int \
    --compare enc_trained_references:enc,enc_trained,cos_ext \
    --compare enc_trained_both:enc,enc_trained,cos_ext \
    --header "Built from the run records in ../records/ (see ../README.md). Tiny CPU LLMs: read the counts and the intervals before the point estimates." \
    --title "Reproduction: a trained enc operator vs the untrained one, offline" --jobs 2 "$@"
