#!/usr/bin/env bash
# Qwen's answers to NQ-Open dev questions, the training data of ../PLAN-trained-on-qwen.md: natural answers to
# questions 0-2999 (N = 10; 0-2499 train, 2500-2999 select the epoch), then reference-guided answers to 0-2499 (N = 5),
# in 250-question chunks named as SmolLM2's (semuq_eval/assets/training_data/nqopen-dev-smollm2/). Each chunk is kept
# in ../training_data/ as soon as it is complete (commit it); a killed run resumes (generate.sh says how).
# Usage, from anywhere: RUNS=/path/to/runs bash leaderboards/reproduction/transfer/recipe/generate_training_data.sh
#   (--save-journals before stopping, as generate.sh)
set -euo pipefail
chunks() { for ((first = 0; first < $2; first += 250)); do echo "$1:$first:250:$3"; done; }
RUNS_LIST="$(chunks semuq_nqopen_train 3000 10) $(chunks semuq_nqopen_train_guided 2500 5)" KEEP=training-data \
    exec bash "$(dirname "$0")/generate.sh" "$@"
