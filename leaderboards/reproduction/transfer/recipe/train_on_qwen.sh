#!/usr/bin/env bash
# ../PLAN-trained-on-qwen.md, training: the shipped recipe exactly as the second confirmation's candidate was trained
# (confirmation-2/recipe/train_candidate.sh: guided answers, answer-token pooling, 30-epoch budget, patience 3,
# seed 0, float32, MiniLM, the epoch kept on the held-out AUROC), on Qwen's NQ-Open dev answers in ../training_data/:
# natural and guided 0-2499 to train, natural 2500-2999 to keep the epoch. First the plan's Q0 count (questions kept
# by App. C's rule), then the training; prints the trained weights' sha256 (the report names it). WORK: where the
# trained folders go.
# Usage, from anywhere: WORK=/tmp/trained-on-qwen bash leaderboards/reproduction/transfer/recipe/train_on_qwen.sh
set -euo pipefail
cd "$(dirname "$0")/../../../.."
WORK=${WORK:-${TMPDIR:-/tmp}/semuq-trained-on-qwen}
D=leaderboards/reproduction/transfer/training_data
TRAIN=$(ls $D/natural-0[01]*.jsonl.gz $D/natural-02[0-4]*.jsonl.gz)
GUIDED=$(ls $D/guided-0[01]*.jsonl.gz $D/guided-02[0-4]*.jsonl.gz)
VALIDATION=$(ls $D/natural-02500-02750.jsonl.gz $D/natural-02750-03000.jsonl.gz)
[ "$(wc -w <<< "$TRAIN $GUIDED $VALIDATION")" = 22 ] || { echo "train_on_qwen: ../training_data/ lacks chunks" >&2; exit 1; }
.venv/bin/semuq-eval train-data stats $TRAIN
.venv/bin/python -m experiments.reproduce --train $TRAIN --guided $GUIDED --validation $VALIDATION \
    --select auroc --val_triplets 20 --ablations guided_answer_pooling_auroc --work "$WORK" --report "$WORK/report" \
    --train_only
sha256sum "$WORK/ops/enc_trained_guided_ap_auroc/model.safetensors"
