#!/usr/bin/env bash
# Generate the trained operator's training data in chunks, and keep each finished chunk in the repository.
#
# For each chunk of CHUNK NQ-open dev questions (offsets 0, CHUNK, 2*CHUNK, ... below TOTAL), in order:
#   1. natural: SmolLM2-135M-Instruct answers `semuq_nqopen_train` (chat template, the paper's sampling, N = 10);
#   2. guided:  the same LLM answers `semuq_nqopen_train_guided` (told the first reference, N = GUIDED_N);
#   3. each finished store is exported to a compact text-only file (gzip JSON lines: question, references, every
#      answer and its verdict, the generating settings; no hidden states) under DATA, which is committed.
# A chunk whose file is already in DATA is skipped, so the script resumes on a fresh machine from the committed
# files; a killed chunk resumes from the model's journal under RUNS on the same machine.
# Usage, from anywhere: bash leaderboards/reproduction/recipe/training_data.sh   (variables below: environment)
set -euo pipefail
cd "$(dirname "$0")/../../.."
TOTAL=${TOTAL:-3000}
CHUNK=${CHUNK:-250}
N=${N:-10}
GUIDED_N=${GUIDED_N:-5}
KINDS=${KINDS:-"natural guided"}
# the text is what is kept: bf16 generates 1.37x faster on a CPU with native bf16; elsewhere it is emulated (slow)
DTYPE=${DTYPE:-$(.venv/bin/python -c 'from semuq_eval.training.config import native_cpu_bf16 as n; print("bfloat16" if n() else "float32")')}
RUNS=${RUNS:-${TMPDIR:-/tmp}/semuq-training-runs}
DATA=${DATA:-semuq_eval/assets/training_data/nqopen-dev-smollm2}
LLM=${LLM:-$(.venv/bin/python -c 'from semuq_eval.assets import locate; print(locate("smollm2-135m-instruct"))')}
read -ra SEMUQ <<< "${SEMUQ:-.venv/bin/semuq-eval}"
mkdir -p "$DATA" "$RUNS"

for ((offset = 0; offset < TOTAL; offset += CHUNK)); do
    for kind in $KINDS; do
        case $kind in
            natural) task=semuq_nqopen_train; n=$N ;;
            guided) task=semuq_nqopen_train_guided; n=$GUIDED_N ;;
            *) echo "training_data: unknown kind $kind (natural, guided)" >&2; exit 2 ;;
        esac
        name=$(printf '%s-%05d-%05d' "$kind" "$offset" "$((offset + CHUNK))")
        file=$DATA/$name.jsonl.gz
        if [ -f "$file" ]; then echo "kept $file"; continue; fi
        store=$RUNS/$name/semuq/$task/smollm2-135m-instruct
        start=$SECONDS
        if [ ! -f "$store/breakdown.json" ]; then
            echo "generate $name ($task, N = $n, questions $offset-$((offset + CHUNK - 1)))"
            "${SEMUQ[@]}" run --model semuq-hf --model_args "pretrained=$LLM,dtype=$DTYPE" --device cpu \
                --batch_size 8 --apply_chat_template --tasks "$task" --gen_kwargs max_gen_toks=32 \
                --metadata "{\"n_samples\": $n, \"offset\": $offset, \"limit\": $CHUNK, \"operators\": [\"lexical\"],
                             \"store_hidden\": false, \"bootstrap\": 100, \"run_id\": \"smollm2-135m-instruct\"}" \
                --output_path "$RUNS/$name" > "$RUNS/$name.log" 2>&1
        fi
        "${SEMUQ[@]}" train-data export "$store" --output "$file" --llm smollm2-135m-instruct \
            --note "questions $offset-$((offset + CHUNK - 1)) of NQ-open dev; $DTYPE; $((SECONDS - start)) s"
        echo "wrote $file in $((SECONDS - start)) s"
    done
done
