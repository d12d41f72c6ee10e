#!/usr/bin/env bash
# The common board (issue 57): every LLM on questions 800-1199 of WebQuestions, TriviaQA (DPR test) and NQ-Open test,
# built from its committed run records (RECORDS/*.jsonl.gz): on a fresh clone, no RUNS needed.
# With RUNS, the records are made first from the run-store archives of those questions:
#   SmolLM2-135M-Instruct: leaderboards/reproduction/confirmation-2/runs/ (in the repository's history: archives.sh)
#   Qwen2.5-Coder-1.5B-Instruct: leaderboards/reproduction/transfer/runs/*-800-1200.tar.xz
#   gemma-3-270m, Qwen2.5-Coder-0.5B-Instruct: leaderboards/offline/common/*-800-1200.tar.xz (recipe/generate-common.sh)
#   1. each store is rescored with the board's operators into WORK/stores (one already there is kept: resumable);
#   2. when JUDGE_ARGS is set, the second judge labels it (label set LABELS; JUDGE_ANSWERS greedy or all; with PANEL
#      both / either, LABELS is that panel of the run's string judge and the judge, whose own set is LABELS-alone);
#      the chosen second judge (docs/judges.md): a llama.cpp server of Qwen2.5-Coder-1.5B-Instruct
#      (python -m semuq_eval.models.llamacpp qwen2.5-coder-1.5b-instruct --port 8091 --slots 4), then
#      LABELS=llm PANEL=either JUDGE=openai JUDGE_ARGS=base_url=http://127.0.0.1:8091/v1,model=qwen2.5-coder-1.5b-instruct,endpoint=chat,concurrency=4,threshold=0.9
#   3. its run record is written to RECORDS/<task>.<run_id>.jsonl.gz (with every label set of the store).
# Then the board is built from RECORDS into OUTPUT, under the run's string judge and every label set in LABELS.
# Usage, from anywhere: bash leaderboards/common/recipe/build.sh   (the variables below can be set in the environment;
# extra arguments go to `semuq-eval leaderboard`, e.g. --no-plots)
set -euo pipefail
cd "$(dirname "$0")/../../.."
RUNS=${RUNS:-}
UNPACK=${UNPACK:-"leaderboards/reproduction/confirmation-2/runs/smollm2-135m-instruct-*-800-1200.tar.xz
leaderboards/reproduction/transfer/runs/qwen2.5-coder-1.5b-instruct-*-800-1200.tar.xz
leaderboards/offline/common/*-800-1200.tar.xz"}
WORK=${WORK:-$RUNS/common-board}
RECORDS=${RECORDS:-leaderboards/common/records}
OUTPUT=${OUTPUT:-leaderboards/common}
LABELS=${LABELS-llm}                        # the second judge's label set (default llm); LABELS= : the string judge only
JUDGE=${JUDGE:-hf}
JUDGE_ARGS=${JUDGE_ARGS:-}                  # e.g. model=/path/to/judge,prompt=reference_match,batch_size=8
JUDGE_ANSWERS=${JUDGE_ANSWERS:-greedy}
PANEL=${PANEL:-}                            # both / either: LABELS is the panel of the run's string judge and the judge
MODELS=${MODELS:-${SEMUQ_EVAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/semuq-eval}/models}
read -ra SEMUQ <<< "${SEMUQ:-semuq-eval}"

if [ -n "$RUNS" ]; then
    OPERATORS=lexical,cos_int,cos_ext,enc,enc_answer_pooling,enc_trained
    OPTIONS=$(cat <<JSON
    {"cos_ext": {"model": "$MODELS/all-minilm-l6-v2"},
     "enc": {"model": "$MODELS/all-minilm-l6-v2"},
     "enc_answer_pooling": {"operator": "enc", "model": "$MODELS/all-minilm-l6-v2", "pooling": "answer"},
     "enc_trained": {"operator": "enc", "model": "$MODELS/enc-trained"}}
JSON
    )
    bash leaderboards/archives.sh > /dev/null  # SmolLM2's archives, from the repository's history
    mkdir -p "$RECORDS"
    for pattern in $UNPACK; do
        for archive in $(compgen -G "$pattern" || true); do
            name=$(basename "$archive" .tar.xz)
            [ -d "$RUNS/$name/semuq" ] || { mkdir -p "$RUNS/$name/semuq" && tar -C "$RUNS/$name/semuq" -xJf "$archive"; }
            for store in "$RUNS/$name"/semuq/semuq_*/*/; do
                store=${store%/}
                task=$(basename "$(dirname "$store")") run_id=$(basename "$store")
                target=$WORK/stores/$task/$run_id
                if [ -f "$target/breakdown.json" ]; then
                    echo "kept $target"
                else
                    rm -rf "$target"
                    echo "rescore $store"; start=$SECONDS
                    "${SEMUQ[@]}" rescore "$store" --operators "$OPERATORS" --operator_options "$OPTIONS" \
                        --store_output "$target" > /dev/null
                    echo "rescored in $((SECONDS - start)) s"
                fi
                if [ -n "$LABELS" ] && [ -n "$JUDGE_ARGS" ] && [ ! -f "$target/labels/$LABELS.json" ]; then
                    alone=$LABELS; [ -n "$PANEL" ] && alone=$LABELS-alone
                    if [ ! -f "$target/labels/$alone.json" ]; then
                        echo "judge $target"; start=$SECONDS
                        "${SEMUQ[@]}" judge "$target" --judge "$JUDGE" --judge_args "$JUDGE_ARGS" --name "$alone" \
                            --answers "$JUDGE_ANSWERS" > "$target.judge.log"
                        echo "judged in $((SECONDS - start)) s"
                    fi
                    if [ -n "$PANEL" ]; then
                        "${SEMUQ[@]}" judge "$target" --panel "run,$alone" --rule "$PANEL" --name "$LABELS" > /dev/null
                    fi
                fi
                "${SEMUQ[@]}" export-record "$target" --force --output "$RECORDS/$task.$run_id.jsonl.gz"
            done
        done
    done
fi

# the headline's reference estimator, fixed before any LLM is looked at: the shipped trained operator, kle_heat
"${SEMUQ[@]}" leaderboard "$RECORDS/*.jsonl.gz" --output "$OUTPUT" --force --labels "run${LABELS:+,$LABELS}" \
    --reference kle_heat@enc_trained --metrics auroc,ece,prr,auarc \
    --compare enc_trained:enc_answer_pooling,enc,cos_ext,lexical,cos_int \
    --header @leaderboards/common/recipe/HEADER.md --title "semuq-eval common board (tiny CPU models, questions 800-1199)" --jobs 2 \
    "$@"
