#!/usr/bin/env bash
# Rebuild the offline leaderboard from its committed run records (RECORDS/*.jsonl.gz): on a fresh clone, no RUNS needed.
# With RUNS (the folder of the generation runs, RUNS/<name>/semuq/<task>/<run_id>), the records are made first.
# The board's nine runs are run-store archives: SmolLM2's (the reproduction's) and gemma's (../runs/) in the
# repository's history (`bash leaderboards/archives.sh` restores them), Qwen's (text only: llama.cpp gives no hidden
# states, so no cos_int) in leaderboards/reproduction/transfer/runs/; each <name>.tar.xz of UNPACK is unpacked into
# RUNS/<name> when that folder is missing:
#   1. every finished store of the board's runs is rescored with the board's operators into WORK/stores
#      (a complete run store each; one already there is kept, so an interrupted regeneration resumes);
#   2. each rescored store's run record is written to RECORDS/<task>.<run_id>.jsonl.gz (replacing the old one).
# Then the leaderboard is built from RECORDS into OUTPUT (default leaderboards/offline).
# Usage, from anywhere: bash leaderboards/offline/recipe/regenerate.sh   (the variables below can be set in the environment)
set -euo pipefail
cd "$(dirname "$0")/../../.."
RUNS=${RUNS:-}
DEFAULT_UNPACK="leaderboards/reproduction/runs/smollm2-135m-instruct-*.tar.xz leaderboards/offline/runs/*.tar.xz
leaderboards/reproduction/transfer/runs/qwen2.5-coder-1.5b-instruct-*-0-100.tar.xz"
UNPACK=${UNPACK-$DEFAULT_UNPACK}
RUN_NAMES_GIVEN=${RUN_NAMES:+yes}
RUN_NAMES=${RUN_NAMES:-}                    # default: the names of the unpacked archives
WORK=${WORK:-$RUNS/offline-board}           # the rescored stores
RECORDS=${RECORDS:-leaderboards/offline/records}  # the committed run records the board is built from
OUTPUT=${OUTPUT:-leaderboards/offline}
MODELS=${MODELS:-${SEMUQ_EVAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/semuq-eval}/models}  # `semuq-eval assets`
TRAINED=${TRAINED:-$MODELS/enc-trained}     # the shipped trained operator (`semuq-eval assets`)
read -ra SEMUQ <<< "${SEMUQ:-semuq-eval}"

if [ -n "$RUNS" ]; then
    OPERATORS=lexical,cos_int,cos_ext,enc,enc_answer_pooling,cos_ext_mpnet,enc_mpnet,enc_trained
    OPTIONS=$(cat <<EOF
    {"cos_ext": {"model": "$MODELS/all-minilm-l6-v2"},
     "enc": {"model": "$MODELS/all-minilm-l6-v2"},
     "enc_answer_pooling": {"operator": "enc", "model": "$MODELS/all-minilm-l6-v2", "pooling": "answer"},
     "cos_ext_mpnet": {"operator": "cos_ext", "model": "$MODELS/all-mpnet-base-v2"},
     "enc_mpnet": {"operator": "enc", "model": "$MODELS/all-mpnet-base-v2"},
     "enc_trained": {"operator": "enc", "model": "$TRAINED"}}
EOF
    )
    for path in "$MODELS/all-minilm-l6-v2" "$MODELS/all-mpnet-base-v2" "$TRAINED"; do
        [ -d "$path" ] || { echo "regenerate: no model at $path (semuq-eval assets / experiments/reproduce.py make them)" >&2; exit 1; }
    done

    [ "$UNPACK" = "$DEFAULT_UNPACK" ] && bash leaderboards/archives.sh > /dev/null  # from the repository's history
    archives=()
    for pattern in $UNPACK; do
        matched=$(compgen -G "$pattern") || { echo "regenerate: no archive matches $pattern" >&2; exit 1; }
        mapfile -t -O "${#archives[@]}" archives <<< "$matched"
    done
    for archive in "${archives[@]}"; do
        name=$(basename "$archive" .tar.xz)
        [ -d "$RUNS/$name/semuq" ] || { mkdir -p "$RUNS/$name/semuq" && tar -C "$RUNS/$name/semuq" -xJf "$archive"; }
        [ -n "${RUN_NAMES_GIVEN:-}" ] || RUN_NAMES+=" $name"
    done
    targets=()
    for name in $RUN_NAMES; do
        for store in "$RUNS/$name"/semuq/semuq_*/*/; do
            store=${store%/}
            [ -f "$store/breakdown.json" ] || { echo "skip $store: no breakdown.json (not finished)" >&2; continue; }
            target=$WORK/stores/$(basename "$(dirname "$store")")/$(basename "$store")
            targets+=("$target")
            if [ -f "$target/breakdown.json" ]; then echo "kept $target"; continue; fi
            rm -rf "$target"  # an interrupted rescore left it half written
            echo "rescore $store -> $target"
            start=$SECONDS
            "${SEMUQ[@]}" rescore "$store" --operators "$OPERATORS" --operator_options "$OPTIONS" \
                --store_output "$target" > /dev/null
            echo "rescored in $((SECONDS - start)) s"
        done
    done
    mkdir -p "$RECORDS"
    for target in "${targets[@]}"; do
        "${SEMUQ[@]}" export-record "$target" --force \
            --output "$RECORDS/$(basename "$(dirname "$target")").$(basename "$target").jsonl.gz"
    done
fi

# the headline's reference estimator, fixed here before any LLM is looked at: the trained operator, kle_heat;
# beside AUROC, ECE, PRR and AUARC, the coverage at a certified error rate (coverage_at_risk: 10%, confidence 90%)
"${SEMUQ[@]}" leaderboard "$RECORDS/*.jsonl.gz" --output "$OUTPUT" --force --common-questions also --reference kle_heat@enc_trained \
    --metrics auroc,ece,prr,auarc,coverage_at_risk \
    --compare enc_trained:enc_answer_pooling,enc,cos_ext,lexical,cos_int --compare enc_mpnet:enc,cos_ext_mpnet \
    --header @leaderboards/offline/recipe/HEADER.md --title "semuq-eval offline leaderboard (tiny CPU models)" --jobs 2
