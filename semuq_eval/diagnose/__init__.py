"""Operator diagnostics (paper Sec. 3.2, App. A.1, A.4, F) and operator checks for CI.

Modules: ``questions`` (labelled answers of run stores), ``spans`` (reference mentions in an answer), ``rewrite``
(the context trap's corrupted answers), ``traps`` (the four traps as pairs), ``wrong_clusters`` (App. A.1),
``scoring`` (pair similarities; means with bootstrap CIs; paired operator differences), ``localization`` (App. A.4),
``checkpoint`` (resuming a diagnosis), ``resolve`` (building the operators), ``diagnosis``
(:func:`diagnose`), ``outputs`` (JSON, Markdown, plot), ``check_values``, ``value_cache`` and ``check``
(:func:`check_operator`: tracked figures vs a baseline), ``freeze`` (the frozen record it reads), ``pytest_plugin``.
The commands are :mod:`semuq_eval.commands.diagnose` and :mod:`semuq_eval.commands.check_operator`.
"""

from __future__ import annotations

from semuq_eval.diagnose.check import CheckReport, check_operator
from semuq_eval.diagnose.check_values import frozen_store_path
from semuq_eval.diagnose.diagnosis import diagnose
from semuq_eval.diagnose.outputs import write_report
from semuq_eval.diagnose.questions import DiagnosticQuestion, load_questions

__all__ = [
    "CheckReport",
    "DiagnosticQuestion",
    "check_operator",
    "diagnose",
    "frozen_store_path",
    "load_questions",
    "write_report",
]
