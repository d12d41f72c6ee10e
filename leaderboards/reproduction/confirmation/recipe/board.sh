#!/usr/bin/env bash
# The first confirmation's board, rebuilt on a fresh clone from its committed run records (../records/)
# with the comparisons the report was read with: the operators below, the main one first, each with its untrained
# counterpart (../../recipe/report_board.sh says what it compares them with).
# Usage, from anywhere: bash leaderboards/reproduction/confirmation/recipe/board.sh   (OUTPUT= to write elsewhere)
# Extra arguments go to `semuq-eval leaderboard` (e.g. --no-plots).
set -euo pipefail
exec bash "$(dirname "$0")/../../recipe/report_board.sh" confirmation \
    enc_trained_guided_ap:enc_answer_pooling enc_trained:enc enc_trained_answer_pooling:enc_answer_pooling \
    enc_trained_random:enc enc_trained_pairs:enc enc_trained_answer_only:enc enc_trained_fact_swap:enc -- "$@"
