#!/usr/bin/env bash
# The backbone ablation of issue 18 (App. E): the paper's recipe on all-mpnet-base-v2 (in the paper's backbone table)
# instead of all-MiniLM-L6-v2, beside the paper's recipe on MiniLM, on the first reproduction's data
# (../../recipe/ablation.sh says how). The trained mpnet operator is compared with the same mpnet weights untrained
# (`enc_all_mpnet_base_v2`, and `cos_ext_all_mpnet_base_v2` without the question).
# About 3.5-4 h of the 2 cores from nothing, longer than a session (2026-11-27, an AVX-512 machine, the job alone,
# ../timings.json: training mpnet 1,606 s, 11 epochs; rescoring 1,815-1,930 s per store with the eight operators;
# the diagnosis, one pass of the seven operators, 6,537 s with the test suite beside for 23 min of it: 1,659 s for
# the untrained mpnet alone, 1,167 s for cos_ext on mpnet, 519 s for a MiniLM operator, all before the fix that
# stopped computing unread token extras, 2.7x faster on MiniLM; a killed diagnosis resumes at the operator it was
# on). Each store's run record is written into ../records/ when the store is rescored: commit it; a rerun keeps the
# committed records while the retrained weights equal ../weights.json's (another CPU retrains to other bytes: every
# store is rescored) and only redoes what is missing.
# Usage, from anywhere: bash leaderboards/reproduction/mpnet/recipe/reproduce.sh   (WORK= the working folder)
set -euo pipefail
exec bash "$(dirname "$0")/../../recipe/ablation.sh" mpnet mpnet "$@"
