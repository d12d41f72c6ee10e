#!/usr/bin/env bash
# The transfer test's generation (../PLAN.md): Qwen2.5-Coder-1.5B-Instruct through llama.cpp (`semuq-llamacpp`), N = 10
# + greedy, 32 tokens, the chat endpoint, scored at generation time with `lexical` only (the plan's operators are
# applied by rescoring). RUNS_LIST names each run as task:offset:limit: by default questions 800-1199 of WebQuestions,
# TriviaQA (DPR test) and NQ-Open test (the plan's test), then questions 0-99 of each (the questions the offline board's
# three LLMs share).
# Each finished store is packed, without its journal, into ../runs/<llm>-<set>-<first>-<end>.tar.xz (text only: the
# server gives no hidden states), which is committed. A run whose archive exists is skipped; a killed run resumes
# from its generation journal in RUNS (answers already given are not asked again). A run in which requests failed
# (timed out) is run again, up to three times, asking only for what the journal lacks; it is archived only complete.
# Between sessions on different machines: `generate.sh --save-journals` keeps each unfinished run's journal as
# ../runs/<name>.journal.jsonl.gz (commit it); a later run on a fresh machine starts from it.
# Usage, from anywhere: bash leaderboards/reproduction/transfer/recipe/generate.sh   (LLM=, RUNS_LIST=, RUNS= to change;
# THREADS=1 leaves a core to another job)
set -euo pipefail
cd "$(dirname "$0")/../../../.."
LLM=${LLM:-qwen2.5-coder-1.5b-instruct}
RUNS_LIST=${RUNS_LIST:-"semuq_webquestions:800:400 semuq_triviaqa_dpr:800:400 semuq_nqopen:800:400
semuq_webquestions:0:100 semuq_triviaqa_dpr:0:100 semuq_nqopen:0:100"}
RUNS=${RUNS:-${TMPDIR:-/tmp}/semuq-transfer-runs}
THREADS=${THREADS:-2}
TIMEOUT=${TIMEOUT:-600}  # seconds per request: eleven slots share two cores, and other work slows them further
ARCHIVE=leaderboards/reproduction/transfer/runs
read -ra SEMUQ <<< "${SEMUQ:-.venv/bin/semuq-eval}"
mkdir -p "$ARCHIVE" "$RUNS"
for entry in $RUNS_LIST; do
    IFS=: read -r task offset limit <<< "$entry"
    name=$LLM-${task#semuq_}-$offset-$((offset + limit))
    archive=$ARCHIVE/$name.tar.xz
    kept=$ARCHIVE/$name.journal.jsonl.gz
    journal=$RUNS/$name/semuq/_journal/$LLM/rank0.jsonl
    store=$RUNS/$name/semuq/$task/$LLM
    if [ "${1:-}" = "--save-journals" ]; then
        if [ ! -f "$archive" ] && [ -s "$journal" ]; then
            gzip -9nc "$journal" > "$kept.tmp" && mv "$kept.tmp" "$kept"
            echo "kept $(wc -l < "$journal") journaled prompts of $name in $kept"
        fi
        continue
    fi
    if [ -f "$archive" ]; then echo "kept $archive"; continue; fi
    start=$SECONDS
    if [ ! -f "$store/breakdown.json" ]; then
        if [ ! -f "$journal" ] && [ -f "$kept" ]; then
            mkdir -p "$(dirname "$journal")"
            gunzip -c "$kept" > "$journal"
            echo "resume $name from $kept ($(wc -l < "$journal") prompts)"
        fi
        for attempt in 1 2 3; do
            echo "generate $name (attempt $attempt)"
            rm -rf "$store"  # the journal keeps every answer given; a new attempt asks only for the rest
            "${SEMUQ[@]}" run --model semuq-llamacpp \
                --model_args "gguf=$LLM,endpoint=chat,slots=11,threads=$THREADS,timeout=$TIMEOUT" \
                --apply_chat_template --tasks "$task" --gen_kwargs max_gen_toks=32 \
                --metadata "{\"n_samples\": 10, \"limit\": $limit, \"offset\": $offset, \"operators\": [\"lexical\"], \"run_id\": \"$LLM\"}" \
                --output_path "$RUNS/$name" > "$RUNS/$name.log" 2>&1
            grep -q "came with an error" "$RUNS/$name.log" || break
            echo "$name: some requests failed ($(grep -c 'a request failed' "$RUNS/$name.log")); asking again for them"
        done
        if grep -q "came with an error" "$RUNS/$name.log"; then
            echo "$name: requests still fail after 3 attempts; not archived (see $RUNS/$name.log)" >&2
            exit 1
        fi
    fi
    tar -C "$RUNS/$name/semuq" -cJf "$archive.tmp" "$task/$LLM"
    mv "$archive.tmp" "$archive"
    rm -f "$kept"
    echo "wrote $archive ($(du -h "$archive" | cut -f1)) in $((SECONDS - start)) s"
done
