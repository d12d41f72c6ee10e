"""Operator diagnostics (paper Sec. 3.2, App. A.1, A.4, F) and operator checks for CI.

=====================  ======================================================================
module                 concept
=====================  ======================================================================
``questions``          answers of run stores with a label on every answer
``spans``              where a reference alias occurs in an answer (character spans)
``rewrite``            the context trap's corrupted answers (offline substitution, LLM route)
``traps``              the four traps as pairs of answers
``clustering``         wrong-answer clustering pairs (App. A.1)
``scoring``            an operator's similarity of pairs; means with bootstrap CIs
``localization``       token localization of the answer span (App. A.4)
``checkpoint``         each operator's outcome kept as it comes: a stopped diagnosis resumes
``resolve``            the operators a diagnosis is asked for, built with their options
``comparisons``        paired differences between two operators on the same pairs and answers
``diagnosis``          :class:`Diagnosis` in steps, :func:`diagnose`: all of the above for many operators
``outputs``            JSON + Markdown + plot
``check_values``      the figures an operator check tracks, computed on a run store
``value_cache``       those figures kept between checks of unchanged weights
``check``              :func:`check_operator`: tracked figures vs a baseline
``freeze``             the frozen run record the check reads
``pytest_plugin``      the ``semuq_check_operator`` fixture
=====================  ======================================================================

The commands ``semuq-eval diagnose`` and ``check-operator`` are :mod:`semuq_eval.commands.diagnose` and
:mod:`semuq_eval.commands.check_operator`.
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
