"""`semuq-eval`: lm-eval's own CLI (run / ls / validate, same flags) with this project's tasks and
models registered, plus the project's commands (`assets`, `demo`, `rescore`, `tasks-dir`).

lm-eval 0.4.13 has no plugin discovery, so this entry point imports the plugin's models
(registering them lazily) and prepends the shipped task folder to ``--include_path``
before handing over to lm-eval's ``HarnessCLI``.

Data parallelism: ``accelerate launch --multi_gpu --num_processes K -m semuq_eval run ...`` (or
``torchrun --nproc_per_node K -m semuq_eval run ...``) starts K processes. On a machine without GPUs
accelerate would give each of them a single-process state, so this entry point sets
``ACCELERATE_USE_CPU=1`` there (accelerate's MULTI_CPU state, gloo backend), see :func:`_prepare_distributed`.
``accelerate launch --cpu --num_processes K`` starts ONE process unless it is given an MPI host file.
"""

from __future__ import annotations

import logging
import os
import sys
from importlib.resources import files
from pathlib import Path

OWN_COMMANDS = ("assets", "demo", "rescore", "tasks-dir")


def tasks_dir() -> Path:
    """The folder of the semuq task YAMLs (``tasks/`` in a checkout, ``semuq_eval/tasks`` in a wheel)."""
    return Path(str(files("semuq_eval.tasks")))


def _env_int(*names: str) -> int:
    for name in names:
        try:
            return int(os.environ[name])
        except (KeyError, ValueError):
            continue
    return 0


def _prepare_distributed() -> None:
    """Make a multi-process launch on a machine without GPUs data-parallel on CPU (gloo).

    torchrun (used by ``accelerate launch --multi_gpu``) sets ``WORLD_SIZE``; without a GPU, accelerate only
    builds its MULTI_CPU state (and the gloo process group) when asked for the CPU, so ``ACCELERATE_USE_CPU``
    is set unless the user set it. ``accelerate launch --cpu --num_processes K`` without MPI starts a single
    process (``MASTER_ADDR`` set, no ``WORLD_SIZE``): that is reported, since it silently runs on one process.
    """
    world = _env_int("WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")
    log = logging.getLogger("semuq_eval")
    if world > 1:
        if "ACCELERATE_USE_CPU" in os.environ:
            return
        import torch

        accel = getattr(torch, "accelerator", None)
        has_device = accel.is_available() if accel is not None else torch.cuda.is_available()
        if not has_device:
            os.environ["ACCELERATE_USE_CPU"] = "1"
    elif os.environ.get("ACCELERATE_USE_CPU", "").lower() in ("1", "true") and os.environ.get("MASTER_ADDR"):
        log.warning(
            "semuq-eval: started by `accelerate launch --cpu` with several processes requested, but "
            "accelerate starts one process on CPU unless it is given an MPI host file; this run is NOT "
            "data-parallel. Use `accelerate launch --multi_gpu --num_processes K -m semuq_eval run ...` "
            "(semuq-eval selects the CPU and gloo when there is no GPU) or torchrun."
        )


def share_lm_eval_logging() -> None:
    """Show semuq-eval's log messages (journal restores, where the breakdown went, ...) as lm-eval shows its own:
    lm-eval's ``setup_logging`` configures only the ``lm_eval`` logger, so INFO from ``semuq_eval.*`` was lost."""
    source, ours = logging.getLogger("lm_eval"), logging.getLogger("semuq_eval")
    ours.setLevel(source.level)
    for handler in source.handlers:
        if handler not in ours.handlers:
            ours.addHandler(handler)
    ours.propagate = not source.handlers


def _run_lm_eval(argv: list[str]) -> int:
    from lm_eval._cli import HarnessCLI
    from lm_eval.utils import setup_logging

    import semuq_eval.models  # noqa: F401  (registers semuq-hf and semuq-hf-multimodal)

    setup_logging()
    share_lm_eval_logging()
    _prepare_distributed()
    saved, sys.argv = sys.argv, ["semuq-eval", *argv]
    try:
        cli = HarnessCLI()
        args = cli.parse_args()
        if hasattr(args, "include_path"):
            extra = (
                [args.include_path] if isinstance(args.include_path, str) else list(args.include_path or [])
            )
            args.include_path = [str(tasks_dir()), *extra]
        cli.execute(args)
    finally:
        sys.argv = saved
    return 0


def _csv(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def rescore_main(argv: list[str]) -> int:
    """`semuq-eval rescore STORE ...`: recompute matrices, scores and metrics from a run store."""
    import argparse
    import json

    from semuq_eval.harness.report import breakdown_table
    from semuq_eval.harness.rescore import rescore

    parser = argparse.ArgumentParser(
        prog="semuq-eval rescore",
        description="Recompute operators, estimators and AUROC/ECE from a run store, without the LLM.",
    )
    parser.add_argument("store", help="a run store directory (<output_path>/semuq/<task>[/<run_id>])")
    parser.add_argument(
        "--operators", type=_csv, help="comma-separated operators to (re)compute, e.g. lexical,enc"
    )
    parser.add_argument("--estimators", type=_csv, help="keep only these estimators, e.g. kle_heat@enc,te")
    parser.add_argument("--n_samples", type=int, help="use the first k stored samples (N-ablation)")
    parser.add_argument("--tau", type=float, help="threshold for clustering graded matrices")
    parser.add_argument(
        "--label_mode", choices=["contains", "em", "f1"], help="re-judge with this string judge"
    )
    parser.add_argument("--bootstrap", type=int, help="number of bootstrap resamples")
    parser.add_argument(
        "--output", help="write the breakdown JSON here (a directory gets breakdown.rescore.json)"
    )
    parser.add_argument("--json", action="store_true", help="print the breakdown JSON instead of the table")
    args = parser.parse_args(argv)
    breakdown = rescore(
        args.store,
        operators=args.operators,
        estimator_names=args.estimators,
        n_samples=args.n_samples,
        tau=args.tau,
        label_mode=args.label_mode,
        bootstrap=args.bootstrap,
        output=args.output,
    )
    print(json.dumps(breakdown, indent=1) if args.json else breakdown_table(breakdown))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``semuq-eval`` console script (and ``python -m semuq_eval``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["assets"]:
        from semuq_eval.assets import main as assets_main

        return assets_main(argv[1:])
    if argv[:1] == ["demo"]:
        from semuq_eval.demo import main as demo_main

        return demo_main(argv[1:])
    if argv[:1] == ["rescore"]:
        return rescore_main(argv[1:])
    if argv[:1] == ["tasks-dir"]:
        print(tasks_dir())
        return 0
    if argv[:1] in (["-h"], ["--help"]) or not argv:
        print(
            __doc__.strip()
            + "\n\nproject commands: assets, demo, rescore, tasks-dir; lm-eval's help follows.\n"
        )
    return _run_lm_eval(argv)
