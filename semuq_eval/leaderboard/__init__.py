"""The leaderboard: merge runs of many LLMs x tasks into Markdown, CSV, JSON, one static HTML page and plots.

``semuq-eval leaderboard 'out/**/semuq/*/*' --output leaderboards/mine`` runs :func:`.build.build`. The
steps, one module each: :mod:`.runs` (what a run and a section are), :mod:`.discovery`, :mod:`.loading` and
:mod:`.provenance` (find, read and check run stores or records), :mod:`.sections` (group them into sections of runs
comparable question by question), :mod:`.baselines` (which estimator each ``@enc`` estimator is compared with),
:mod:`.compute` (every figure on one shared seeded bootstrap per section: :mod:`.run_cells` per run, :mod:`.cells`,
:mod:`.differences` (paired), :mod:`.ranks` (rank intervals)),
:mod:`.headline` (one row per LLM for the reference estimator, and the optimistic best), :mod:`.curves` (its
rejection curves and reliability diagrams), :mod:`.schema` (the versioned JSON schema), :mod:`.write` (Markdown,
CSV, JSON), :mod:`.html` (the page), :mod:`.plots` (PNGs).
"""

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
