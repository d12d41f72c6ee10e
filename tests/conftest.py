"""Shared pytest configuration: offline guards and access to the real prepared assets."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

# helper modules, not tests: the doctest collection (--doctest-modules) must not import them, since the example
# extensions register themselves on import and would leak into every other test's registries
collect_ignore = ["examples", "fixtures"]

# CI runs the same examples every time (a failure found locally is kept by hypothesis' database).
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# tests choose their own output folders (the run store and the generation journal follow this variable)
os.environ.pop("SEMUQ_OUTPUT_DIR", None)


@pytest.fixture(scope="session")
def real_asset():
    """Return a function name -> local path of a prepared real asset (see `semuq-eval assets`).

    Missing assets skip the test, unless SEMUQ_REQUIRE_ASSETS=1 (as in CI), where they fail it.
    """
    from semuq_eval.assets import locate

    def get(name: str):
        try:
            return locate(name)
        except FileNotFoundError as err:
            if os.environ.get("SEMUQ_REQUIRE_ASSETS") == "1":
                raise
            pytest.skip(str(err))

    return get


@pytest.fixture
def stub():
    """Starts stub servers (``stub(behaviour, port=0)``) and closes every one after the test."""
    from tests.fixtures.stub_openai import StubServer

    servers = []

    def start(behaviour, port=0):
        server = StubServer(behaviour, port)
        servers.append(server)
        return server

    yield start
    for s in servers:
        s.close()
