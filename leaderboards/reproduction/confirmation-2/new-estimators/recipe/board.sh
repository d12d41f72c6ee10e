#!/usr/bin/env bash
# The estimators added after the second confirmation's test (TokenSAR, and cos_int's greedy-anchored consistency,
# CoCoA and Semantic Density) on its test answers (SmolLM2, questions 800-1199 of WebQuestions, TriviaQA, NQ-Open
# test), the candidate shipped as enc against its untrained answer-pooled base, enc, cos_ext and cos_int; rebuilt
# from the committed records (../records/, exported by the rescore below) with the default bootstrap.
# The records came from: semuq-eval rescore <the test's store> --operators
#   enc_trained_guided_ap_auroc,enc_answer_pooling,enc,cos_ext,cos_int --estimators token_sar@...,consistency@...,
#   cocoa@...,semantic_density@... (each on the four encoders; the three greedy-anchored ones on cos_int too).
# Usage, from anywhere: bash leaderboards/reproduction/confirmation-2/new-estimators/recipe/board.sh
# Extra arguments go to `semuq-eval leaderboard` (e.g. --no-plots).
set -euo pipefail
cd "$(dirname "$0")/../../../../.."
HERE=leaderboards/reproduction/confirmation-2/new-estimators
OUTPUT=${OUTPUT:-$HERE/leaderboard}
read -ra SEMUQ <<< "${SEMUQ:-semuq-eval}"
"${SEMUQ[@]}" leaderboard "$HERE/records/*.jsonl.gz" --output "$OUTPUT" --force \
    --reference token_sar@enc_trained_guided_ap_auroc \
    --compare enc_trained_guided_ap_auroc:enc_answer_pooling,enc,cos_ext,cos_int \
    --title "New estimators on the second confirmation's test answers" --jobs 2 "$@"
