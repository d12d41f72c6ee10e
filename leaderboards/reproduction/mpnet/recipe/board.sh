#!/usr/bin/env bash
# The mpnet backbone ablation's board, rebuilt on a fresh clone from its committed run records (../records/)
# with the comparisons the report was read with: the operators below, the main one first, each with its untrained
# counterpart (../../recipe/report_board.sh says what it compares them with).
# Usage, from anywhere: bash leaderboards/reproduction/mpnet/recipe/board.sh   (OUTPUT= to write elsewhere)
# Extra arguments go to `semuq-eval leaderboard` (e.g. --no-plots).
set -euo pipefail
exec bash "$(dirname "$0")/../../recipe/report_board.sh" mpnet \
    enc_trained:enc enc_trained_mpnet:enc_all_mpnet_base_v2 -- "$@"
