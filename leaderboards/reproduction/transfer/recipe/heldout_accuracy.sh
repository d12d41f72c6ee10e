#!/usr/bin/env bash
# The transfer test's choice of LLM (../PLAN.md): both Qwen2.5-Coder instruct models, greedy answers (one sample
# beside, scored with `lexical` only) to NQ-Open dev questions 3000-3099, outside the operator's training (0-2499)
# and selection (2500-2999) questions; then heldout_accuracy.py prints ../heldout-accuracy.md's table.
# Usage, from anywhere: bash leaderboards/reproduction/transfer/recipe/heldout_accuracy.sh   (RUNS= to change)
set -euo pipefail
cd "$(dirname "$0")/../../../.."
RUNS=${RUNS:-${TMPDIR:-/tmp}/semuq-transfer-heldout}
read -ra SEMUQ <<< "${SEMUQ:-.venv/bin/semuq-eval}"
for llm in qwen2.5-coder-1.5b-instruct qwen2.5-coder-0.5b-instruct; do
    [ -f "$RUNS/semuq/semuq_nqopen_train/$llm/breakdown.json" ] && continue
    start=$SECONDS
    "${SEMUQ[@]}" run --model semuq-llamacpp --model_args "gguf=$llm,endpoint=chat,threads=2" --apply_chat_template \
        --tasks semuq_nqopen_train --gen_kwargs max_gen_toks=32 \
        --metadata "{\"n_samples\": 1, \"limit\": 100, \"offset\": 3000, \"operators\": [\"lexical\"], \"run_id\": \"$llm\"}" \
        --output_path "$RUNS" > "$RUNS.$llm.log" 2>&1
    echo "$llm: $((SECONDS - start)) s" >&2
done
.venv/bin/python leaderboards/reproduction/transfer/recipe/heldout_accuracy.py "$RUNS/semuq/semuq_nqopen_train"
