#!/usr/bin/env bash
# The candidate on the first confirmation's questions 400-799 (read before the candidate's lever was chosen, so
# exploratory, not the test), rebuilt on a fresh clone from its committed run records (../exploratory/records/)
# with the comparisons it was read with, the candidate's kle_heat as the headline's reference and the default
# bootstrap (1,000 resamples, seed 0).
# Usage, from anywhere: bash leaderboards/reproduction/confirmation-2/recipe/exploratory_board.sh   (OUTPUT= elsewhere)
# Extra arguments go to `semuq-eval leaderboard` (e.g. --no-plots).
set -euo pipefail
cd "$(dirname "$0")/../../../.."
HERE=leaderboards/reproduction/confirmation-2
OUTPUT=${OUTPUT:-$HERE/exploratory/board}
read -ra SEMUQ <<< "${SEMUQ:-semuq-eval}"
"${SEMUQ[@]}" leaderboard "$HERE/exploratory/records/*.jsonl.gz" --output "$OUTPUT" --force \
    --reference kle_heat@enc_trained_guided_ap_auroc \
    --compare enc_trained_guided_ap_auroc:enc_answer_pooling,enc_trained_guided_ap,cos_ext \
    --title "Second confirmation, exploratory: the candidate on questions 400-799" --no-plots --jobs 2 "$@"
