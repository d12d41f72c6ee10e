"""Adding a label strategy: one file, one registration (CONTRIBUTING.md shows this file)."""

from collections.abc import Sequence

from semuq_eval.judges import strategies


@strategies.register("any_sample")
def any_sample(greedy: bool | None, samples: Sequence[bool | None]) -> bool | None:
    """Correct when the judge accepts any sampled answer; no verdict on any sample: unknown (None)."""
    judged = [verdict for verdict in samples if verdict is not None]
    return any(judged) if judged else None
