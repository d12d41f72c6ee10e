"""Data parallelism on CPU: the rank and world size HFLM leaves out for multi-process CPU launches.

HFLM splits the requests only when it counts several GPUs, so under `accelerate launch` / `torchrun` on CPU
(MULTI_CPU, gloo) every process would evaluate every question; the semuq models take rank and world size from the
accelerator itself."""

from __future__ import annotations

from typing import Any

__all__ = ["cpu_data_parallel_split"]


def cpu_data_parallel_split(
    accelerator: Any, world_size: int, *, parallelize: bool, tp_plan: Any
) -> tuple[int, int] | None:
    """(rank, world_size) to split the requests over the processes of a multi-process CPU launch, or None.

    ``accelerator``: the `accelerate.Accelerator` HFLM kept, or None; ``world_size``: HFLM's (> 1: HFLM split the
    requests itself); ``parallelize``, ``tp_plan``: model or tensor parallelism, not data parallelism. Returns the
    accelerator's global process index and count (as HFLM on GPUs, so that ``gather_object(dst=0)`` reaches process 0)."""
    if accelerator is None or int(world_size) > 1:
        return None
    if accelerator.num_processes <= 1 or getattr(accelerator.device, "type", None) != "cpu":
        return None
    if parallelize or tp_plan is not None:
        return None
    return int(accelerator.process_index), int(accelerator.num_processes)
