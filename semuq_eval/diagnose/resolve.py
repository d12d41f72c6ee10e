"""The operators a diagnosis is asked for, checked by name and built with their options.

Examples
--------
>>> sorted(resolve_operators("lexical,lexical"))
['lexical']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["resolve_operators"]


def resolve_operators(
    operators: Sequence[str] | str,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    progress: bool | None = None,
) -> dict[str, Any]:
    """The named operators built with their options (``{name: operator}``, cached per process as the
    pipeline's), checking the names first; ``progress`` switches the progress bars of those that have them.
    Raises ValueError for an unknown operator name, options for an operator not asked for, or no operator at all."""
    from semuq_eval import operators as registry
    from semuq_eval.harness.operator_runs import get_operator

    if isinstance(operators, str):
        operators = [s.strip() for s in operators.split(",") if s.strip()]
    names = list(dict.fromkeys(operators))
    if not names:
        raise ValueError("no operator given; e.g. --operators enc,cos_ext,lexical")
    options = dict(options or {})
    unknown = [
        n for n in names if n not in registry.names() and registry.VARIANT_KEY not in (options.get(n) or {})
    ]
    if unknown:
        raise ValueError(
            f"unknown operator(s) {unknown}; known: {registry.names()} (or a named variant: "
            f'operator_options {{"<name>": {{"{registry.VARIANT_KEY}": "enc", "model": ...}}}})'
        )
    stray = sorted(set(options) - set(names))
    if stray:
        raise ValueError(f"operator_options for {stray}, which are not among the operators {names}")
    for name, opts in options.items():
        if not isinstance(opts, Mapping):
            raise ValueError(f"operator_options[{name!r}] must be a mapping, got {opts!r}")
    built = {name: get_operator(name, dict(options.get(name) or {})) for name in names}
    for op in built.values():
        if progress is not None and hasattr(op, "progress"):
            op.progress = bool(progress)
    return built
