#!/usr/bin/env bash
# The offline board's common questions (issue 57): an LLM's answers to questions 800-1199 of WebQuestions, TriviaQA
# (DPR test) and NQ-Open test, the transfer test's settings (N = 10 + greedy, 32 tokens, scored at generation time
# with `lexical` only; the board's operators are applied by rescoring, recipe/regenerate.sh). SmolLM2's and
# Qwen2.5-Coder-1.5B's answers to them are the reproduction's and the transfer test's; this makes gemma-3-270m's.
# Qwen2.5-Coder-0.5B-Instruct (a GGUF asset, as its 1.5B sibling) is generated through llama.cpp by the transfer
# test's recipe with ARCHIVE=leaderboards/offline/common (its header gives the command).
# The engine is semuq-vllm (vLLM's CPU build: `.ci/setup` installs it), float32 as the first 100 questions' runs,
# no chat template for a base model (CHAT=1 for an instruct model), no hidden states (cos_int unavailable, as for
# Qwen through llama.cpp).
# Each finished store is kept, text only, as ../common/<llm>-<set>-800-1200.tar.xz (committed); a killed run resumes
# from its generation journal in RUNS. `generate-common.sh --save-journals` keeps each unfinished run's journal as
# ../common/<name>.journal.jsonl.xz (commit it): a later run on a fresh machine starts from it.
# Usage, from anywhere: LLM=gemma-3-270m bash leaderboards/offline/recipe/generate-common.sh
#   (RUNS=, MODELS=, SETS=, CHAT=, BIND= (vLLM's CPU cores, e.g. 0 to leave a core to other work), KV= (the share of
#   memory vLLM reserves, default 0.25))
set -euo pipefail
cd "$(dirname "$0")/../../.."
LLM=${LLM:?name the LLM: LLM=gemma-3-270m (a folder under MODELS)}
MODELS=${MODELS:-${SEMUQ_EVAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/semuq-eval}/models}
SETS=${SETS:-"semuq_webquestions semuq_triviaqa_dpr semuq_nqopen"}
RUNS=${RUNS:-${TMPDIR:-/tmp}/semuq-common-runs}
KEEP=leaderboards/offline/common
read -ra SEMUQ <<< "${SEMUQ:-.venv/bin/semuq-eval}"
[ -d "$MODELS/$LLM" ] || { echo "generate-common: no model at $MODELS/$LLM (semuq-eval assets --only $LLM)" >&2; exit 1; }
[ -n "${BIND:-}" ] && export VLLM_CPU_OMP_THREADS_BIND=$BIND
mkdir -p "$KEEP" "$RUNS"
for task in $SETS; do
    name=$LLM-${task#semuq_}-800-1200
    output=$KEEP/$name.tar.xz
    kept=$KEEP/$name.journal.jsonl.xz
    journal=$RUNS/$name/semuq/_journal/$LLM/rank0.jsonl
    store=$RUNS/$name/semuq/$task/$LLM
    if [ "${1:-}" = "--save-journals" ]; then
        if [ ! -f "$output" ] && [ -s "$journal" ]; then
            xz -9c "$journal" > "$kept.tmp" && mv "$kept.tmp" "$kept"
            echo "kept $(wc -l < "$journal") journaled prompts of $name in $kept"
        fi
        continue
    fi
    if [ -f "$output" ]; then echo "kept $output"; continue; fi
    if [ ! -f "$journal" ] && [ -f "$kept" ]; then
        mkdir -p "$(dirname "$journal")" && xz -dc "$kept" > "$journal"
        echo "resume $name from $kept ($(wc -l < "$journal") prompts)"
    fi
    start=$SECONDS
    echo "generate $name"
    "${SEMUQ[@]}" run --model semuq-vllm \
        --model_args "pretrained=$MODELS/$LLM,dtype=float32,max_model_len=1024,chunk=16,gpu_memory_utilization=${KV:-0.25}" \
        ${CHAT:+--apply_chat_template} --tasks "$task" --gen_kwargs max_gen_toks=32 \
        --metadata "{\"n_samples\": 10, \"limit\": 400, \"offset\": 800, \"operators\": [\"lexical\"], \"run_id\": \"$LLM\"}" \
        --output_path "$RUNS/$name" > "$RUNS/$name.log" 2>&1 || { echo "$name failed: $RUNS/$name.log" >&2; exit 1; }
    tar -C "$RUNS/$name/semuq" -cJf "$output.tmp" "$task/$LLM"
    mv "$output.tmp" "$output"
    rm -f "$kept"
    echo "wrote $output ($(du -h "$output" | cut -f1)) in $((SECONDS - start)) s"
done
