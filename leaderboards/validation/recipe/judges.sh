#!/usr/bin/env bash
# The LLM judges available offline, on every item of the judge validation set (../PROTOCOL.md): each writes
# ../verdicts/<name>.jsonl (+ its manifest), read by `semuq-eval judge --validate leaderboards/validation`.
#   llamacpp-<llm>-<prompt>: a Qwen2.5-Coder GGUF served by llama.cpp on loopback (`python -m semuq_eval.models.llamacpp`,
#     SLOTS slots, THREADS threads), the `openai` judge on its chat endpoint, p(yes) from the first token's logprobs;
#   hf-smollm2-135m-<prompt>: SmolLM2-135M-Instruct through transformers (the `hf` judge, shared-prefix batching).
# A judge whose verdicts exist is kept. The verdicts are cached (CACHE, sqlite) as they come, so a killed run resumes
# where it was; the manifest's judge_stats say how many came from the cache (its seconds per answer then cover only
# the rest). JUDGES lists name:backend:model:prompt entries; by default every LLM judge below.
# Usage, from anywhere: bash leaderboards/validation/recipe/judges.sh   (JUDGES=, THREADS=, SLOTS=, CACHE=, PORT=)
set -euo pipefail
cd "$(dirname "$0")/../../.."
read -ra SEMUQ <<< "${SEMUQ:-.venv/bin/semuq-eval}"
PYTHON=${PYTHON:-.venv/bin/python}
MODELS=${MODELS:-${SEMUQ_EVAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/semuq-eval}/models}
THREADS=${THREADS:-2}
SLOTS=${SLOTS:-4}
PORT=${PORT:-8091}
CACHE=${CACHE:-${TMPDIR:-/tmp}/semuq-validation-judges.sqlite}
JUDGES=${JUDGES:-"llamacpp-qwen-0.5b-rm:llamacpp:qwen2.5-coder-0.5b-instruct:reference_match
llamacpp-qwen-1.5b-rm:llamacpp:qwen2.5-coder-1.5b-instruct:reference_match
llamacpp-qwen-1.5b-se:llamacpp:qwen2.5-coder-1.5b-instruct:semantic_entropy_2024
hf-smollm2-135m-se:hf:smollm2-135m-instruct:semantic_entropy_2024"}
FOLDER=leaderboards/validation
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null || true' EXIT

for entry in $JUDGES; do
    IFS=: read -r name backend model prompt <<< "$entry"
    if [ -f "$FOLDER/verdicts/$name.json" ]; then echo "kept $name"; continue; fi
    start=$SECONDS
    if [ "$backend" = llamacpp ]; then
        "$PYTHON" -m semuq_eval.models.llamacpp "$model" --port "$PORT" --slots "$SLOTS" --threads "$THREADS" \
            > "${TMPDIR:-/tmp}/$name.server.log" 2>&1 &
        server=$!
        for _ in $(seq 120); do grep -q "^http" "${TMPDIR:-/tmp}/$name.server.log" && break; sleep 1; done
        if ! grep -q "^http" "${TMPDIR:-/tmp}/$name.server.log" || ! kill -0 "$server" 2>/dev/null; then
            echo "$name: the server did not start (${TMPDIR:-/tmp}/$name.server.log)" >&2; exit 1
        fi
        judge=openai
        args="base_url=http://127.0.0.1:$PORT/v1,model=$model,endpoint=chat,concurrency=$SLOTS,prompt=$prompt"
    else
        judge=hf
        args="model=$MODELS/$model,prompt=$prompt,batch_size=8"
    fi
    echo "judge $name"
    "${SEMUQ[@]}" judge --validate "$FOLDER" --half all --judge "$judge" --judge_args "$args,cache=$CACHE" \
        --name "$name"
    if [ -n "$server" ]; then kill "$server"; wait "$server" 2>/dev/null || true; server=""; fi
    echo "$name done in $((SECONDS - start)) s"
done
