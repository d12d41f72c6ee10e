#!/usr/bin/env bash
# The first reproduction's report (../README.md, ../leaderboard/, ../records/, ../diagnosis/) made again from the
# committed training data and the committed evaluation archives (../runs/), with every ablation of App. E this
# machine can run: the paper's recipe and, each on the same held-out selection questions, guided answers with
# answer-token pooling, answer-token pooling, random negatives, positive pairs only, answer-only, fact-swapped
# triplets, and (issue 18's last ablations) reference positives, reference + sample positives and the mpnet backbone.
# Resumable: a trained variant (WORK/ops/<name>) and a rescored store (WORK/stores/...) are kept; after adding a
# variant to a WORK that has rescored stores, pass --force once (the stores are rescored with every variant).
# About 5.5 h of the 2 cores from nothing (measured 2026-11-25/26, one job at a time: training the 10 variants
# about 2 h, the mpnet one alone 38 min; rescoring 1 h per store with all 17 operators, half of it the three
# mpnet ones; diagnosis 20-40 min).
# Usage, from anywhere: bash leaderboards/reproduction/recipe/reproduce.sh   (WORK= the working folder, kept between runs)
set -euo pipefail
cd "$(dirname "$0")/../../.."
WORK=${WORK:-${TMPDIR:-/tmp}/semuq-reproduce}
D=semuq_eval/assets/training_data/nqopen-dev-smollm2
PY=${PY:-.venv/bin/python}
exec "$PY" -m experiments.reproduce \
    --train $D/natural-0[01]*.jsonl.gz $D/natural-02[0-4]*.jsonl.gz \
    --guided $D/guided-0[01]*.jsonl.gz $D/guided-02[0-4]*.jsonl.gz \
    --validation $D/natural-02500-02750.jsonl.gz $D/natural-02750-03000.jsonl.gz \
    --select --val_triplets 20 \
    --ablations guided_answer_pooling,answer_pooling,random,none,answer_only,fact_swap,references,both,mpnet \
    --secondary 'leaderboards/reproduction/runs/*.tar.xz' \
    --work "$WORK" --report leaderboards/reproduction --jobs 2 "$@"
