"""Collect runs for a leaderboard: find the run stores, read them, check them, and group them into sections.

The board's readers import from here; each step is a module of its own:

- :mod:`~.runs`: what a run and a section are (:class:`Run`, :class:`Section`), and :class:`LeaderboardInputError`,
  the error every step raises, naming the file and what to do;
- :mod:`~.discovery`: the inputs named by paths or globs (:func:`expand_inputs`);
- :mod:`~.loading`: one run read from its store, its run record or a breakdown alone (:func:`load_run`,
  :func:`load_runs`), with its provenance (:mod:`~.provenance`: the breakdown and lm-eval's results file);
- :mod:`~.alignment`: runs lined up question by question: sections (:func:`group_sections`), common questions
  (:func:`common_questions`), and whether a record may join a board (:func:`check_join`).
"""

from __future__ import annotations

from semuq_eval.leaderboard.alignment import check_join, common_questions, group_sections
from semuq_eval.leaderboard.discovery import expand_inputs
from semuq_eval.leaderboard.loading import load_run, load_runs
from semuq_eval.leaderboard.runs import LeaderboardInputError, Run, Section, operator_identity

__all__ = [
    "LeaderboardInputError",
    "Run",
    "Section",
    "check_join",
    "common_questions",
    "expand_inputs",
    "group_sections",
    "load_run",
    "load_runs",
    "operator_identity",
]
