#!/usr/bin/env bash
# The backbone ablation of issue 18 (App. E): the paper's recipe on all-mpnet-base-v2 (in the paper's backbone
# table) instead of all-MiniLM-L6-v2, beside the paper's recipe on MiniLM, on exactly the first reproduction's data
# (../../recipe/reproduce.sh: the same training and held-out files, the same evaluation archives ../../runs/, seed 0),
# so that its `enc_trained` figures equal the first report's and the tables join. The trained mpnet operator is
# compared with the same mpnet weights untrained (`enc_all_mpnet_base_v2`, and `cos_ext_all_mpnet_base_v2` without
# the question). The main operator is fixed to the first report's selected one (`--main enc_trained`).
# About 3 h of the 2 cores from nothing (measured on 2026-11-26 with more variants: training mpnet 38 min; rescoring
# about 30 min per store for the three mpnet operators; diagnosis about 30 min): longer than a session.
# Each store's run record is written into ../records/ when the store is rescored: commit it, and a rerun on a new
# machine retrains (same weights) and rescores only the stores without a record.
# Usage, from anywhere: bash leaderboards/reproduction/mpnet/recipe/reproduce.sh   (WORK= the working folder)
set -euo pipefail
cd "$(dirname "$0")/../../../.."
WORK=${WORK:-${TMPDIR:-/tmp}/semuq-reproduce-mpnet}
D=semuq_eval/assets/training_data/nqopen-dev-smollm2
PY=${PY:-.venv/bin/python}
exec "$PY" -m experiments.reproduce \
    --train $D/natural-0[01]*.jsonl.gz $D/natural-02[0-4]*.jsonl.gz \
    --validation $D/natural-02500-02750.jsonl.gz $D/natural-02750-03000.jsonl.gz \
    --main enc_trained --val_triplets 20 \
    --ablations mpnet \
    --secondary 'leaderboards/reproduction/runs/*.tar.xz' \
    --work "$WORK" --report leaderboards/reproduction/mpnet --jobs 2 "$@"
