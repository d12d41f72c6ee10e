#!/usr/bin/env bash
# ../PLAN-trained-on-qwen.md, the test: both LLMs' test stores (questions 800-1199 of WebQuestions, TriviaQA DPR and
# NQ-Open test; Qwen's ../runs/*-800-1200.tar.xz, SmolLM2's confirmation-2 archives restored from the repository's
# history by leaderboards/archives.sh) rescored with `enc_qwen` (train_on_qwen.sh's operator, in WORK), the shipped
# `enc` (the enc-trained-full asset, as score.sh scores it: the recipe's own output, trained as enc_qwen is) and their
# untrained answer-pooled base `enc_untrained`; a text-only run record per store in ../trained-on-qwen/records/
# (committed), then the report ../report-trained-on-qwen.md from the records and ../training_data/ alone. A store
# already rescored (in RUNS) is kept, so a killed scoring resumes; a record that exists is kept (FORCE=1 rescores).
# Usage, from anywhere: WORK=/tmp/trained-on-qwen RUNS=/tmp/trained-on-qwen-runs \
#   bash leaderboards/reproduction/transfer/recipe/score_trained_on_qwen.sh
set -euo pipefail
cd "$(dirname "$0")/../../../.."
WORK=${WORK:-${TMPDIR:-/tmp}/semuq-trained-on-qwen}
RUNS=${RUNS:-${TMPDIR:-/tmp}/semuq-trained-on-qwen-runs}
HERE=leaderboards/reproduction/transfer
OUT=$HERE/trained-on-qwen/records
MODELS=${MODELS:-${SEMUQ_EVAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/semuq-eval}/models}
TRAINED=$WORK/ops/enc_trained_guided_ap_auroc
read -ra SEMUQ <<< "${SEMUQ:-.venv/bin/semuq-eval}"
for path in "$TRAINED" "$MODELS/all-minilm-l6-v2" "$MODELS/enc-trained-full"; do
    [ -d "$path" ] || { echo "score_trained_on_qwen: no model at $path (train_on_qwen.sh; semuq-eval assets)" >&2; exit 1; }
done
OPTIONS=$(cat <<JSON
{"enc_qwen": {"operator": "enc", "model": "$TRAINED"},
 "enc": {"model": "$MODELS/enc-trained-full"},
 "enc_untrained": {"operator": "enc", "model": "$MODELS/all-minilm-l6-v2", "pooling": "answer"}}
JSON
)
WEIGHTS=$(sha256sum "$TRAINED/model.safetensors" | cut -d' ' -f1)
SHIPPED=$(sha256sum "$MODELS/enc-trained-full/model.safetensors" | cut -d' ' -f1)
echo "enc_qwen model.safetensors sha256: $WEIGHTS; enc: $SHIPPED"
bash leaderboards/archives.sh > /dev/null
mkdir -p "$OUT"
for archive in "$HERE"/runs/*-800-1200.tar.xz leaderboards/reproduction/confirmation-2/runs/*-800-1200.tar.xz; do
    name=$(basename "$archive" .tar.xz)
    IFS=/ read -r task llm _ <<< "$(tar -tJf "$archive" | head -1)"
    record=$OUT/$task.$llm.jsonl.gz
    if [ -f "$record" ] && [ "${FORCE:-0}" != 1 ]; then echo "kept $record (FORCE=1 rescores it)"; continue; fi
    [ -d "$RUNS/$name/semuq" ] || { mkdir -p "$RUNS/$name/semuq" && tar -C "$RUNS/$name/semuq" -xJf "$archive"; }
    scored=$RUNS/scored/$name
    if [ ! -f "$scored/breakdown.json" ]; then
        echo "rescore $name"
        rm -rf "$scored"
        "${SEMUQ[@]}" rescore "$RUNS/$name/semuq/$task/$llm" --operators enc_qwen,enc,enc_untrained \
            --operator_options "$OPTIONS" --store_output "$scored" > "$RUNS/scored-$name.log" 2>&1
    fi
    "${SEMUQ[@]}" export-record "$scored" --output "$record" --force
done
.venv/bin/python "$HERE/recipe/report_trained_on_qwen.py" \
    --qwen "$OUT/*.qwen2.5-coder-1.5b-instruct.jsonl.gz" --smollm2 "$OUT/*.smollm2-135m-instruct.jsonl.gz" \
    --training-data "$HERE/training_data" --weights "$WEIGHTS" --shipped-weights "$SHIPPED" > "$HERE/report-trained-on-qwen.md"
cat "$HERE/report-trained-on-qwen.md"
