#!/usr/bin/env bash
# The reference-positive ablations of issue 18 (App. C's triplets with the dataset's reference answers as extra
# positives: `references` alone, `both` with the correct samples), run beside the paper's recipe on exactly the first
# reproduction's data (../../recipe/reproduce.sh: the same training and held-out files, the same evaluation archives
# ../../runs/, seed 0), so that its `enc_trained` figures equal the first report's and the two tables join.
# The main operator is fixed to the first report's selected one (`--main enc_trained`): nothing is selected here.
# Resumable (WORK/ops/<name>, WORK/stores/... are kept). About 1 h of the 2 cores from nothing (three MiniLM
# trainings, three rescorings with 7 operators, one diagnosis).
# Usage, from anywhere: bash leaderboards/reproduction/reference-positives/recipe/reproduce.sh   (WORK= the working folder)
set -euo pipefail
cd "$(dirname "$0")/../../../.."
WORK=${WORK:-${TMPDIR:-/tmp}/semuq-reproduce-references}
D=semuq_eval/assets/training_data/nqopen-dev-smollm2
PY=${PY:-.venv/bin/python}
exec "$PY" -m experiments.reproduce \
    --train $D/natural-0[01]*.jsonl.gz $D/natural-02[0-4]*.jsonl.gz \
    --validation $D/natural-02500-02750.jsonl.gz $D/natural-02750-03000.jsonl.gz \
    --main enc_trained --val_triplets 20 \
    --ablations references,both \
    --secondary 'leaderboards/reproduction/runs/*.tar.xz' \
    --work "$WORK" --report leaderboards/reproduction/reference-positives --jobs 2 "$@"
