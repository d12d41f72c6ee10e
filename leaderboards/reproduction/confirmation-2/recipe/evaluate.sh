#!/usr/bin/env bash
# The second confirmation's test (docs/reproduction.md, "Second confirmation"): the candidate fixed in advance
# (--main), the shipped operator, the paper's recipe, their untrained bases, cos_ext, lexical and cos_int, rescored
# on SmolLM2's answers to questions 800-1199 (../runs/*.tar.xz, made by ../../recipe/eval_runs.sh), the board, the
# diagnosis (traps, localization) and the report in ../test/; the counts are read on the plan's ten aggregators.
# Then: predictions.py ../test/leaderboard/leaderboard.json ../test/diagnosis/training-llm/diagnosis.json.
# WORK: the trained folders (train_candidate.sh's; the variants missing there are trained, deterministic on one
# machine) and the rescored stores.
# Usage, from anywhere: WORK=/tmp/confirm-2 bash leaderboards/reproduction/confirmation-2/recipe/evaluate.sh
set -euo pipefail
cd "$(dirname "$0")/../../../.."
bash leaderboards/archives.sh > /dev/null  # the evaluation stores, from the repository's history
WORK=${WORK:-${TMPDIR:-/tmp}/semuq-confirm-2}
D=semuq_eval/assets/training_data/nqopen-dev-smollm2
HERE=leaderboards/reproduction/confirmation-2
.venv/bin/python -m experiments.reproduce --train $D/natural-0[01]*.jsonl.gz $D/natural-02[0-4]*.jsonl.gz \
    --guided $D/guided-0[01]*.jsonl.gz $D/guided-02[0-4]*.jsonl.gz \
    --validation $D/natural-02500-02750.jsonl.gz $D/natural-02750-03000.jsonl.gz --val_triplets 20 \
    --ablations guided_answer_pooling,guided_answer_pooling_auroc --main enc_trained_guided_ap_auroc \
    --aggregators se,cae,kle_heat,kle_matern,cos,numsets,eigv,deg,ecc,te_enc \
    --secondary "$HERE/runs/*.tar.xz" --max_diagnose_questions 150 --work "$WORK" --report "$HERE/test"
.venv/bin/python $HERE/recipe/predictions.py $HERE/test/leaderboard/leaderboard.json \
    $HERE/test/diagnosis/training-llm/diagnosis.json | tee $HERE/test/predictions.md
