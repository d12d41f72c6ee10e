#!/usr/bin/env bash
# The second confirmation's test board, rebuilt on a fresh clone from its committed run records (../test/records/,
# per question the labels and every estimator's score, exported from the stores evaluate.sh rescored) with the
# settings the test was read with: the comparisons fixed in the plan, kle_heat@enc as the headline's reference, the
# default bootstrap (1,000 resamples, seed 0). The figures equal those evaluate.sh wrote from the stores.
# Usage, from anywhere: bash leaderboards/reproduction/confirmation-2/recipe/board.sh   (OUTPUT= to write elsewhere)
# Extra arguments go to `semuq-eval leaderboard` (e.g. --no-plots).
set -euo pipefail
cd "$(dirname "$0")/../../../.."
HERE=leaderboards/reproduction/confirmation-2
OUTPUT=${OUTPUT:-$HERE/test/leaderboard}
read -ra SEMUQ <<< "${SEMUQ:-semuq-eval}"
"${SEMUQ[@]}" leaderboard "$HERE/test/records/*.jsonl.gz" --output "$OUTPUT" --force --reference kle_heat@enc \
    --compare enc_trained_guided_ap_auroc:enc_answer_pooling,enc,cos_ext,lexical,cos_int \
    --compare enc_trained:enc,enc_trained_guided_ap_auroc,cos_ext \
    --compare enc_trained_guided_ap:enc_answer_pooling,enc_trained_guided_ap_auroc,cos_ext \
    --title "Reproduction: a trained enc operator vs the untrained one, offline" --jobs 2 "$@"
