"""Golden values: the library reproduces tests/golden/core.json (made by tests/golden/make_golden.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.golden.make_golden import outputs

GOLDEN = json.loads((Path(__file__).parent / "golden" / "core.json").read_text())


@pytest.mark.parametrize("key", sorted(GOLDEN["outputs"]))
def test_matches_stored_value(key):
    computed = outputs(GOLDEN["inputs"])[key]
    np.testing.assert_allclose(computed, GOLDEN["outputs"][key], rtol=1e-9, atol=1e-12, err_msg=key)
