#!/usr/bin/env bash
# The transfer test's generation (../PLAN.md): Qwen2.5-Coder-1.5B-Instruct through llama.cpp (`semuq-llamacpp`), N = 10
# + greedy, 32 tokens, the chat endpoint, scored at generation time with `lexical` only (the plan's operators are
# applied by rescoring). RUNS_LIST names each run as task:offset:limit[:n] (n: samples per question, default 10): by
# default questions 800-1199 of WebQuestions, TriviaQA (DPR test) and NQ-Open test (the plan's test), then questions
# 0-99 of each (the questions the offline board's three LLMs share).
# Each finished store is kept, without its journal, as KEEP says:
#   archive (default)  ARCHIVE/<llm>-<set>-<first>-<end>.tar.xz (text only: the server gives no hidden states;
#                      ARCHIVE defaults to ../runs; the common board's LLMs: ARCHIVE=leaderboards/offline/common);
#   training-data      DATA/<natural|guided>-<first>-<end>.jsonl.gz (`semuq-eval train-data export`: the labelled
#                      answers an operator is trained on; guided for a *_guided task), as ../PLAN-trained-on-qwen.md.
# Either is committed. A run whose output exists is skipped; a killed run resumes from its generation journal in RUNS
# (answers already given are not asked again). A run in which answers came with errors (a request timed out, or a
# reply broke the protocol) is run again, up to three times, asking only for what the journal lacks; it is kept
# only complete (a run still failing is named at the end, and the others go on).
# Between sessions on different machines: `generate.sh --save-journals` keeps each unfinished run's journal as
# ARCHIVE/<name>.journal.jsonl.gz (commit it); a later run on a fresh machine starts from it.
# Usage, from anywhere: bash leaderboards/reproduction/transfer/recipe/generate.sh   (LLM=, RUNS_LIST=, RUNS=, KEEP=,
# ARCHIVE=, DATA= to change; THREADS=1 leaves a core to another job). Qwen2.5-Coder-0.5B-Instruct on the common board:
#   LLM=qwen2.5-coder-0.5b-instruct ARCHIVE=leaderboards/offline/common THREADS=1 \
#   RUNS_LIST="semuq_webquestions:800:400 semuq_triviaqa_dpr:800:400 semuq_nqopen:800:400" bash .../generate.sh
set -euo pipefail
cd "$(dirname "$0")/../../../.."
LLM=${LLM:-qwen2.5-coder-1.5b-instruct}
RUNS_LIST=${RUNS_LIST:-"semuq_webquestions:800:400 semuq_triviaqa_dpr:800:400 semuq_nqopen:800:400
semuq_webquestions:0:100 semuq_triviaqa_dpr:0:100 semuq_nqopen:0:100"}
RUNS=${RUNS:-${TMPDIR:-/tmp}/semuq-transfer-runs}
THREADS=${THREADS:-2}
TIMEOUT=${TIMEOUT:-600}  # seconds per request: eleven slots share two cores, and other work slows them further
ARCHIVE=${ARCHIVE:-leaderboards/reproduction/transfer/runs}
KEEP=${KEEP:-archive}
DATA=${DATA:-leaderboards/reproduction/transfer/training_data}
case $KEEP in archive|training-data) ;; *) echo "generate.sh: KEEP must be archive or training-data, not $KEEP" >&2; exit 2;; esac
read -ra SEMUQ <<< "${SEMUQ:-.venv/bin/semuq-eval}"
mkdir -p "$ARCHIVE" "$RUNS" "$DATA"
unfinished=""
for entry in $RUNS_LIST; do
    IFS=: read -r task offset limit n <<< "$entry"
    n=${n:-10}
    name=$LLM-${task#semuq_}-$offset-$((offset + limit))
    if [ "$KEEP" = archive ]; then
        output=$ARCHIVE/$name.tar.xz
    else
        kind=natural; [[ $task == *_guided ]] && kind=guided
        output=$DATA/$kind-$(printf %05d "$offset")-$(printf %05d $((offset + limit))).jsonl.gz
    fi
    kept=$ARCHIVE/$name.journal.jsonl.gz
    journal=$RUNS/$name/semuq/_journal/$LLM/rank0.jsonl
    store=$RUNS/$name/semuq/$task/$LLM
    if [ "${1:-}" = "--save-journals" ]; then
        if [ ! -f "$output" ] && [ -s "$journal" ]; then
            gzip -9nc "$journal" > "$kept.tmp" && mv "$kept.tmp" "$kept"
            echo "kept $(wc -l < "$journal") journaled prompts of $name in $kept"
        fi
        continue
    fi
    if [ -f "$output" ]; then echo "kept $output"; continue; fi
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
                --metadata "{\"n_samples\": $n, \"limit\": $limit, \"offset\": $offset, \"operators\": [\"lexical\"], \"run_id\": \"$LLM\"}" \
                --output_path "$RUNS/$name" > "$RUNS/$name.log" 2>&1
            failed=$(grep -o "[0-9]* of [0-9]* answers came with an error" "$RUNS/$name.log" | tail -n 1 || true)
            [ -n "$failed" ] || break
            echo "$name: $failed; asking again for them"
        done
        if [ -n "$failed" ]; then
            echo "$name: $failed after 3 attempts; not kept (see $RUNS/$name.log); going on with the next run" >&2
            rm -rf "$store"  # not done: the next run asks again for what the journal lacks
            unfinished="$unfinished $name"
            continue
        fi
    fi
    if [ "$KEEP" = archive ]; then
        tar -C "$RUNS/$name/semuq" -cJf "$output.tmp" "$task/$LLM"
        mv "$output.tmp" "$output"
    else
        "${SEMUQ[@]}" train-data export "$store" --output "$output" --llm "$LLM" --force \
            --note "questions $offset-$((offset + limit - 1)) of NQ-open dev; $LLM Q4_K_M GGUF, llama.cpp (semuq-llamacpp)"
    fi
    rm -f "$kept"
    echo "wrote $output ($(du -h "$output" | cut -f1)) in $((SECONDS - start)) s"
done
if [ -n "$unfinished" ]; then echo "not kept (answers with errors):$unfinished" >&2; exit 1; fi
