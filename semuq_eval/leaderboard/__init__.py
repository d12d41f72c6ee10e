"""The leaderboard: merge runs of many LLMs x tasks into Markdown, CSV, JSON, one static HTML page and plots.

``semuq-eval leaderboard 'out/**/semuq/*/*' --output leaderboards/mine`` runs :func:`.build.build`, one module a
step: :mod:`.runs`, :mod:`.discovery`, :mod:`.read_run`, :mod:`.provenance`, :mod:`.sections` (the inputs),
:mod:`.baselines`, :mod:`.compute` (every figure on one seeded bootstrap per section: :mod:`.run_cells`,
:mod:`.cells`, :mod:`.differences`, :mod:`.ranks`), :mod:`.headline`, :mod:`.curves`, :mod:`.schema`,
:mod:`.write`, :mod:`.markdown`, :mod:`.html`, :mod:`.plots`."""

from __future__ import annotations

from semuq_eval.leaderboard.compute import Leaderboard, LeaderboardConfig
from semuq_eval.leaderboard.discovery import expand_inputs
from semuq_eval.leaderboard.read_run import load_runs
from semuq_eval.leaderboard.runs import LeaderboardInputError
from semuq_eval.leaderboard.sections import group_sections

# ``compute`` stays a module name (semuq_eval.leaderboard.compute.compute is the function), not re-exported

__all__ = [
    "Leaderboard",
    "LeaderboardConfig",
    "LeaderboardInputError",
    "expand_inputs",
    "group_sections",
    "load_runs",
]
