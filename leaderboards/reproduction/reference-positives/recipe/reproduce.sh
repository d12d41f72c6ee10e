#!/usr/bin/env bash
# The reference-positive ablations of issue 18: App. C's triplets with the dataset's reference answers as extra
# positives, `references` (with the incorrect samples as negatives) and `both` (with the correct samples too), beside
# the paper's recipe on the first reproduction's data (../../recipe/ablation.sh says how). About 1 h of the 2 cores
# from nothing (three MiniLM trainings, three rescorings with 7 operators, one diagnosis).
# Usage, from anywhere: bash leaderboards/reproduction/reference-positives/recipe/reproduce.sh   (WORK= the working folder)
set -euo pipefail
exec bash "$(dirname "$0")/../../recipe/ablation.sh" reference-positives references,both "$@"
