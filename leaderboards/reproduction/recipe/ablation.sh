#!/usr/bin/env bash
# A later App. E ablation of the first reproduction (../README.md), run on exactly its data: the same training and
# held-out files, the same evaluation archives (../runs/), seed 0, up to 20 validation triplets per held-out question,
# beside the paper's recipe (`enc_trained`, so its figures equal the first report's and the tables join), with the
# first report's selected operator fixed as the main one (`--main enc_trained`: nothing is selected), its counts read
# on the first report's ten aggregators (the estimators added since are on the board, not counted). The report goes
# to leaderboards/reproduction/<folder>/; each such folder's recipe/reproduce.sh calls this with its ablations.
# Resumable over sessions and machines: the trained variants (WORK/ops), the rescored stores (WORK/stores), and the
# report's committed run records (records/, kept while weights.json's sha256 match the retrained weights).
# Usage, from anywhere: bash leaderboards/reproduction/recipe/ablation.sh <folder> <ablations> [reproduce.py options]
set -euo pipefail
cd "$(dirname "$0")/../../.."
bash leaderboards/archives.sh > /dev/null  # the evaluation stores, from the repository's history
if [ "$#" -lt 2 ]; then
  echo "usage: bash leaderboards/reproduction/recipe/ablation.sh <folder> <ablations> [options]" >&2
  exit 2
fi
FOLDER=$1 ABLATIONS=$2
shift 2
WORK=${WORK:-${TMPDIR:-/tmp}/semuq-reproduce-$FOLDER}
D=semuq_eval/assets/training_data/nqopen-dev-smollm2
PY=${PY:-.venv/bin/python}
exec "$PY" -m experiments.reproduce \
    --train $D/natural-0[01]*.jsonl.gz $D/natural-02[0-4]*.jsonl.gz \
    --validation $D/natural-02500-02750.jsonl.gz $D/natural-02750-03000.jsonl.gz \
    --main enc_trained --val_triplets 20 --aggregators se,cae,kle_heat,kle_matern,cos,numsets,eigv,deg,ecc,te_enc \
    --ablations "$ABLATIONS" \
    --secondary 'leaderboards/reproduction/runs/*.tar.xz' \
    --work "$WORK" --report "leaderboards/reproduction/$FOLDER" --jobs 2 "$@"
