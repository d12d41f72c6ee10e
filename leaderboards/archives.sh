#!/usr/bin/env bash
# Restore the run-store archives that live in the repository's history, not in its working tree (archives.txt: each
# with its sha256 and the commit that holds it). They carry the SmolLM2 and gemma evaluation stores with their hidden
# states; every committed board is rebuilt from the text-only run records instead, so only a rescoring from the
# answers needs them (recipe/reproduce.sh, confirmation*/recipe/*.sh, offline/recipe/regenerate.sh with RUNS).
# Each archive goes back to its listed path (ignored by git) and is checked against its hash; one already there and
# sound is kept. Needs a clone with history (not --depth 1).
# Usage, from anywhere: bash leaderboards/archives.sh
set -euo pipefail
cd "$(dirname "$0")/.."
grep -v '^#' leaderboards/archives.txt | while read -r sum commit path; do
    if [ -f "$path" ] && [ "$(sha256sum "$path" | cut -d' ' -f1)" = "$sum" ]; then
        echo "kept $path"
        continue
    fi
    mkdir -p "$(dirname "$path")"
    git show "$commit:$path" > "$path.tmp" || {
        echo "archives: $commit:$path is not in this clone's history (a shallow clone? git fetch --unshallow)" >&2
        rm -f "$path.tmp"; exit 1
    }
    got=$(sha256sum "$path.tmp" | cut -d' ' -f1)
    if [ "$got" != "$sum" ]; then
        echo "archives: $path from $commit has sha256 $got, expected $sum" >&2
        rm -f "$path.tmp"; exit 1
    fi
    mv "$path.tmp" "$path"
    echo "restored $path ($(du -h "$path" | cut -f1))"
done
