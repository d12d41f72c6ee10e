"""The little semuq-eval needs from ``torch.distributed`` under data parallelism (tasks and models).

lm-eval splits a task's questions over the ranks, runs the filters on every rank and gathers the items to rank 0. What a
rank alone knows (its operators' cost) is exchanged here, in the filter stage, with ``all_gather_object``; without an
initialized process group nothing is exchanged and torch is not imported."""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["all_gather_object", "process_group"]


def process_group() -> tuple[int, int] | None:
    """``(rank, world_size)`` of the initialized default process group, else None."""
    if "torch" not in sys.modules:  # nothing can have initialized a process group
        return None
    try:
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_initialized()):
            return None
        return int(dist.get_rank()), int(dist.get_world_size())
    except Exception:  # pragma: no cover - a torch build without a usable distributed package
        return None


def all_gather_object(obj: Any) -> list[Any]:
    """Every rank's ``obj`` (picklable), in rank order; ``[obj]`` without a process group.
    Collective: every rank of the group must call it, with its own object."""
    group = process_group()
    if group is None or group[1] <= 1:
        return [obj]
    import torch.distributed as dist

    out: list[Any] = [None] * group[1]
    dist.all_gather_object(out, obj)
    return out
