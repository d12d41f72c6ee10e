#!/usr/bin/env bash
# Generate the reproduction's evaluation runs and keep each finished run store in the repository.
#
# For each "<llm>:<task>:<n>[:<offset>]" of RUNS_LIST (default: SmolLM2-135M-Instruct on the first 400 questions of
# WebQuestions, TriviaQA (DPR test) and NQ-open test; an offset skips that many usable questions first and names the
# run <llm>-<task>-<offset>-<offset + n>), `semuq-eval run` with the offline profile (lexical, cos_int, cos_ext, enc on
# all-MiniLM-L6-v2), N = 10, 32 tokens, float32, into RUNS/<llm>-<task>; then the finished store is packed, without
# its lm-eval journal, into ARCHIVE/<llm>-<task>.tar.xz (generations, hidden states, scores, breakdown, manifest),
# which is committed: the reproduction rescores these stores with the trained operators on any machine
# (`tar -xJf` restores the store). A run whose archive exists is skipped; a killed run resumes from its journal.
# Usage, from anywhere: bash leaderboards/reproduction/recipe/eval_runs.sh   (variables below: environment)
# The second confirmation's runs: ARCHIVE=leaderboards/reproduction/confirmation-2/runs
#   RUNS_LIST="smollm2-135m-instruct:semuq_webquestions:400:800 smollm2-135m-instruct:semuq_triviaqa_dpr:400:800
#   smollm2-135m-instruct:semuq_nqopen:400:800"
set -euo pipefail
cd "$(dirname "$0")/../../.."
RUNS_LIST=${RUNS_LIST:-"smollm2-135m-instruct:semuq_webquestions:400 smollm2-135m-instruct:semuq_triviaqa_dpr:400 smollm2-135m-instruct:semuq_nqopen:400"}
N=${N:-10}
RUNS=${RUNS:-${TMPDIR:-/tmp}/semuq-eval-runs}
ARCHIVE=${ARCHIVE:-leaderboards/reproduction/runs}
read -ra SEMUQ <<< "${SEMUQ:-.venv/bin/semuq-eval}"
mkdir -p "$ARCHIVE" "$RUNS"

for spec in $RUNS_LIST; do
    IFS=: read -r llm task n offset <<< "$spec"
    offset=${offset:-0}
    name=$llm-${task#semuq_}
    [ "$offset" -gt 0 ] && name=$name-$offset-$((offset + n))
    archive=$ARCHIVE/$name.tar.xz
    if [ -f "$archive" ]; then echo "kept $archive"; continue; fi
    path=$(.venv/bin/python -c "from semuq_eval.assets import locate; print(locate('$llm'))")
    chat=(); [[ $llm == *instruct* ]] && chat=(--apply_chat_template)
    store=$RUNS/$name/semuq/$task/$llm
    start=$SECONDS
    if [ ! -f "$store/breakdown.json" ]; then
        echo "generate $name ($task, first $n questions, N = $N)"
        "${SEMUQ[@]}" run --model semuq-hf --model_args "pretrained=$path,dtype=float32" --device cpu \
            --batch_size 8 "${chat[@]}" --tasks "$task" --gen_kwargs max_gen_toks=32 \
            --metadata "{\"profile\": \"offline\", \"n_samples\": $N, \"limit\": $n, \"offset\": $offset, \"run_id\": \"$llm\"}" \
            --output_path "$RUNS/$name" > "$RUNS/$name.log" 2>&1
    fi
    tar -C "$RUNS/$name/semuq" -cJf "$archive.tmp" "$task/$llm"
    mv "$archive.tmp" "$archive"
    echo "wrote $archive ($(du -h "$archive" | cut -f1)) in $((SECONDS - start)) s"
done
