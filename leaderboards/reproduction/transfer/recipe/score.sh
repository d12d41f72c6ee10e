#!/usr/bin/env bash
# The transfer test's scoring (../PLAN.md): each finished run store of ../runs/<name>.tar.xz is unpacked into RUNS
# (when missing), rescored with the plan's operators (the offline profile without cos_int, which llama.cpp's
# answers cannot have: the shipped `enc` as the plan fixed it, the full fine-tune (the enc-trained-full asset,
# sha256 9a7fe017...; the compact enc-trained is level with it, docs/training.md), its untrained answer-pooled base `enc_untrained`,
# `cos_ext` on all-MiniLM-L6-v2 and `lexical`) into RUNS/scored/<name>, and its run record written to
# ../records/<task>.<llm>.jsonl.gz (text only, committed). A store already rescored is kept, so a killed scoring
# resumes; a set whose record exists is kept (FORCE=1 rescores it). Only the plan's test sets (questions 800-1199) are
# scored here. The sha256 of the enc-trained-full weights used is printed (the report states it). Then the
# diagnosis of the three test stores (traps, localization: the plan's T4) goes to ../diagnosis/, and the report to
# ../report.md.
# Usage, from anywhere: RUNS=/work/runs/transfer bash leaderboards/reproduction/transfer/recipe/score.sh
set -euo pipefail
cd "$(dirname "$0")/../../../.."
RUNS=${RUNS:-${TMPDIR:-/tmp}/semuq-transfer-runs}
HERE=leaderboards/reproduction/transfer
MODELS=${MODELS:-${SEMUQ_EVAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/semuq-eval}/models}
read -ra SEMUQ <<< "${SEMUQ:-.venv/bin/semuq-eval}"
OPTIONS=$(cat <<JSON
{"cos_ext": {"model": "$MODELS/all-minilm-l6-v2"},
 "enc": {"model": "$MODELS/enc-trained-full"},
 "enc_untrained": {"operator": "enc", "model": "$MODELS/all-minilm-l6-v2", "pooling": "answer"}}
JSON
)
for path in "$MODELS/all-minilm-l6-v2" "$MODELS/enc-trained-full"; do
    [ -d "$path" ] || { echo "score: no model at $path (semuq-eval assets --only enc-trained-full)" >&2; exit 1; }
done
WEIGHTS=$(sha256sum "$MODELS/enc-trained-full/model.safetensors" | cut -d' ' -f1)
echo "enc-trained-full model.safetensors sha256: $WEIGHTS"
mkdir -p "$HERE/records"
for archive in "$HERE"/runs/*-800-1200.tar.xz; do
    name=$(basename "$archive" .tar.xz)
    IFS=/ read -r task llm _ <<< "$(tar -tJf "$archive" | head -1)"
    record=$HERE/records/$task.$llm.jsonl.gz
    if [ -f "$record" ] && [ "${FORCE:-0}" != 1 ]; then echo "kept $record (FORCE=1 rescores it)"; continue; fi
    [ -d "$RUNS/$name/semuq" ] || { mkdir -p "$RUNS/$name/semuq" && tar -C "$RUNS/$name/semuq" -xJf "$archive"; }
    for store in "$RUNS/$name"/semuq/*/*; do
        [ -f "$store/breakdown.json" ] || continue
        scored=$RUNS/scored/$name/semuq/$task/$llm
        if [ ! -f "$scored/breakdown.json" ]; then
            echo "rescore $name"
            rm -rf "$scored"
            "${SEMUQ[@]}" rescore "$store" --operators lexical,cos_ext,enc,enc_untrained \
                --operator_options "$OPTIONS" --store_output "$scored" > "$RUNS/scored-$name.log" 2>&1
        fi
        "${SEMUQ[@]}" export-record "$scored" --output "$record" --force
    done
done
# T4 (the plan's mechanism test): the traps and token localization of the shipped enc against its base, on every
# question of the three test stores as generated (their run labels judge every sampled answer)
if [ ! -f "$HERE/diagnosis/diagnosis.json" ] || [ "${FORCE:-0}" = 1 ]; then
    stores=()
    for archive in "$HERE"/runs/*-800-1200.tar.xz; do
        name=$(basename "$archive" .tar.xz)
        [ -d "$RUNS/$name/semuq" ] || { mkdir -p "$RUNS/$name/semuq" && tar -C "$RUNS/$name/semuq" -xJf "$archive"; }
        IFS=/ read -r task llm _ <<< "$(tar -tJf "$archive" | head -1)"
        stores+=("$RUNS/$name/semuq/$task/$llm")
    done
    echo "diagnose ${#stores[@]} stores"
    diagnosed=$(.venv/bin/python -c 'import json, sys; o = json.loads(sys.argv[1]); print(json.dumps({k: o[k] for k in ("enc", "enc_untrained")}))' "$OPTIONS")
    "${SEMUQ[@]}" diagnose "${stores[@]}" --operators enc,enc_untrained --operator_options "$diagnosed" \
        --compare enc:enc_untrained --output "$HERE/diagnosis" --force --no_progress > "$RUNS/diagnose.log" 2>&1
fi
# the report, from the committed records and the diagnosis alone (report.py says how to run it by itself)
.venv/bin/python "$HERE/recipe/report.py" --test "$HERE/records/*.jsonl.gz" \
    --beside "leaderboards/reproduction/confirmation-2/test/records/*.jsonl.gz" \
    --diagnosis "$HERE/diagnosis/diagnosis.json" --weights "$WEIGHTS" > "$HERE/report.md"
cat "$HERE/report.md"
