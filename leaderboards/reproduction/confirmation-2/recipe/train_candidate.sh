#!/usr/bin/env bash
# The second confirmation's candidate (docs/reproduction.md, "Second confirmation"): the shipped recipe (guided
# answers, answer-token pooling, 30-epoch budget, patience 3, seed 0, float32, MiniLM) with the epoch kept on the
# held-out AUROC. Deterministic on one machine: ../candidate/SHA256SUMS holds the bytes it gave on 2026-11-26
# (2,978 s of training on 2 cores with the test suite beside it). WORK: where the trained folders go.
# Usage, from anywhere: WORK=/tmp/confirm-2 bash leaderboards/reproduction/confirmation-2/recipe/train_candidate.sh
set -euo pipefail
cd "$(dirname "$0")/../../../.."
WORK=${WORK:-${TMPDIR:-/tmp}/semuq-confirm-2}
D=semuq_eval/assets/training_data/nqopen-dev-smollm2
.venv/bin/python -m experiments.reproduce --train $D/natural-0[01]*.jsonl.gz $D/natural-02[0-4]*.jsonl.gz \
    --guided $D/guided-0[01]*.jsonl.gz $D/guided-02[0-4]*.jsonl.gz \
    --validation $D/natural-02500-02750.jsonl.gz $D/natural-02750-03000.jsonl.gz --select auroc --val_triplets 20 \
    --ablations guided_answer_pooling_auroc --work "$WORK" --report "$WORK/report" --train_only
sha256sum "$WORK/ops/enc_trained_guided_ap_auroc/model.safetensors"
