#!/usr/bin/env bash
# The backbone ablation of issue 18 (App. E): the paper's recipe on all-mpnet-base-v2 (in the paper's backbone table)
# instead of all-MiniLM-L6-v2, beside the paper's recipe on MiniLM, on the first reproduction's data
# (../../recipe/ablation.sh says how). The trained mpnet operator is compared with the same mpnet weights untrained
# (`enc_all_mpnet_base_v2`, and `cos_ext_all_mpnet_base_v2` without the question).
# About 3 h of the 2 cores from nothing (measured on 2026-11-26 with more variants: training mpnet 38 min; rescoring
# about 30 min per store for the three mpnet operators; diagnosis about 30 min; on 2026-11-27 the training alone took
# 1,606 s on an AVX-512 machine, nothing else running, 11 epochs, ../timings.json): longer than a session. Each store's
# run record is written into ../records/ when the store is rescored: commit it, and a rerun on a new machine
# retrains (the same weights, checked against ../weights.json) and rescores only the stores without a record.
# Usage, from anywhere: bash leaderboards/reproduction/mpnet/recipe/reproduce.sh   (WORK= the working folder)
set -euo pipefail
exec bash "$(dirname "$0")/../../recipe/ablation.sh" mpnet mpnet "$@"
