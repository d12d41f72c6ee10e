"""A pytest plugin for operator checks in users' own test suites.

Enable it in ``conftest.py`` with ``pytest_plugins = ["semuq_eval.diagnose.pytest_plugin"]``; it adds the fixture
``semuq_check_operator`` (:func:`~semuq_eval.diagnose.check.check_operator` with progress bars off) and the option
``--semuq-write-baseline``, which records the baseline instead of comparing::

    def test_my_operator(semuq_check_operator):
        report = semuq_check_operator("models/my-enc", baseline="tests/operator-baseline.json")
        assert report.ok, report.summary()
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from semuq_eval.diagnose.check import CheckReport, check_operator

__all__ = ["pytest_addoption", "semuq_check_operator"]


def pytest_addoption(parser: Any) -> None:
    parser.addoption(
        "--semuq-write-baseline",
        action="store_true",
        default=False,
        help="semuq_check_operator records the baseline file instead of comparing with it",
    )


@pytest.fixture
def semuq_check_operator(request: Any) -> Callable[..., CheckReport]:
    """``check(model, baseline=PATH, **options) -> CheckReport``; with ``--semuq-write-baseline`` the
    baseline is (re)written from the current figures."""
    write = bool(request.config.getoption("--semuq-write-baseline", default=False))

    def check(model: str, baseline: str, **options: Any) -> CheckReport:
        options.setdefault("progress", False)
        if write:
            return check_operator(model, write_baseline=baseline, **options)
        return check_operator(model, baseline, **options)

    return check
