"""``semuq-eval run`` / ``ls`` / ``validate``: lm-eval's own CLI (same flags) with semuq-eval's models and tasks
registered.

lm-eval 0.4.13 has no plugin discovery, so :func:`run_lm_eval` imports the plugin's models, prepends the
shipped tasks to ``--include_path`` and wraps lm-eval's ``HarnessCLI`` ``run`` as the plugin hook does
(:func:`semuq_eval._lm_eval_plugin.patch_cli_run`). ``accelerate launch --multi_gpu --num_processes K -m
semuq_eval run`` (or torchrun) runs data-parallel; without GPUs :func:`prepare_distributed` makes that work on
CPU."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Sequence

from semuq_eval.harness.finish import WRITE_FAILURES
from semuq_eval.jsonio import loads
from semuq_eval.logs import share_lm_eval_logging
from semuq_eval.task_files import tasks_dir

__all__ = ["prepare_distributed", "run_lm_eval"]


def _env_int(*names: str) -> int:
    for name in names:
        try:
            return int(os.environ[name])
        except (KeyError, ValueError):
            continue
    return 0


def prepare_distributed() -> None:
    """Make a multi-process launch on a machine without GPUs data-parallel on CPU (gloo).

    Without a GPU, accelerate builds its MULTI_CPU state (and the gloo group) only when asked for the CPU, so
    under torchrun (``WORLD_SIZE`` set) ``ACCELERATE_USE_CPU`` is set unless the user set it. ``accelerate
    launch --cpu --num_processes K`` without MPI starts a single process (``MASTER_ADDR``, no ``WORLD_SIZE``),
    which is reported."""
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


def check_settings_early(args) -> None:
    """Validate the semuq settings of ``--metadata`` before lm-eval loads the model (it builds the tasks, which
    validate them again, only after the model): a bad setting, an unwritable output folder, or reflexive
    follow-ups a model cannot answer cost no model load. Raises ValueError naming the setting."""
    output = getattr(args, "output_path", None)
    if output and "semuq" in str(getattr(args, "tasks", "")):
        from semuq_eval.context import resolve_output_dir
        from semuq_eval.writes import check_writable

        check_writable(resolve_output_dir(output), "--output_path")
    metadata = getattr(args, "metadata", None)
    if isinstance(metadata, dict) and metadata and "semuq" in str(getattr(args, "tasks", "")):
        from semuq_eval.harness.settings import Settings
        from semuq_eval.models.reflexive import check_model

        check_model(Settings.from_metadata(metadata).reflexive, getattr(args, "model", None))


def check_json_nesting(argv: Sequence[str]) -> None:
    """ValueError naming the flag whose JSON value (``--metadata``, ``--model_args``, ...) nests too deep to
    read, before lm-eval's parser would end in a RecursionError on it.

    Examples
    --------
    >>> check_json_nesting(["--metadata", '{"n_samples": 5}'])
    >>> check_json_nesting(["--metadata=" + "[" * 100_000])
    Traceback (most recent call last):
    ...
    ValueError: --metadata is not valid JSON (nested too deep)
    """
    flag = "an argument"
    for arg in argv:
        if arg.startswith("--"):
            flag, _, arg = arg.partition("=")
        if not arg.lstrip().startswith(("{", "[")):
            continue
        try:
            loads(arg)
        except json.JSONDecodeError as err:
            if err.msg == "nested too deep":
                raise ValueError(f"{flag} is not valid JSON (nested too deep)") from None


class _SaveFailures(logging.Handler):
    """lm-eval's tracker logs a results file it could not write as a warning (its reason follows at info level)
    and carries on; this handler keeps those lines, so the run can end non-zero."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.failures: list[str] = []
        self._reason_next = False

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("Could not save results"):
            self.failures.append(f"lm-eval: {message.lower()}")
            self._reason_next = True
        elif self._reason_next:
            self.failures[-1] += f" ({' '.join(message.split())}); its results file may be cut short"
            self._reason_next = False


def _report_write_failures(failures: list[str]) -> int:
    """Exit 1 with one line per output that could not be written (0 when every output was written)."""
    for line in failures:
        print(f"semuq-eval run: {line}", file=sys.stderr)
    return 1 if failures else 0


def run_lm_eval(argv: list[str]) -> int:
    """Run lm-eval's CLI on ``argv`` (e.g. ``["run", "--model", "semuq-hf", ...]``) with the plugin registered.

    E.g. ``run_lm_eval(["run", "--model", "semuq-hf", "--model_args", "pretrained=gpt2", "--tasks",
    "semuq_triviaqa", "--limit", "5", "--output_path", "out"])`` writes lm-eval's results and the semuq
    breakdown under ``out/``."""
    import lm_eval._cli.run
    from lm_eval._cli import HarnessCLI
    from lm_eval.utils import setup_logging

    import semuq_eval.models  # noqa: F401  (registers semuq-hf, semuq-hf-multimodal and semuq-api)
    from semuq_eval._lm_eval_plugin import patch_cli_run

    patch_cli_run(lm_eval._cli.run)

    setup_logging()
    share_lm_eval_logging()
    prepare_distributed()
    check_json_nesting(argv)
    saved, sys.argv = sys.argv, ["semuq-eval", *argv]
    try:
        cli = HarnessCLI()
        args = cli.parse_args()
        if hasattr(args, "include_path"):
            extra = (
                [args.include_path] if isinstance(args.include_path, str) else list(args.include_path or [])
            )
            args.include_path = [str(tasks_dir()), *extra]
        check_settings_early(args)
        with _watching_saves() as saves:
            cli.execute(args)
    finally:
        sys.argv = saved
    return _report_write_failures([*WRITE_FAILURES, *saves.failures])


@contextlib.contextmanager
def _watching_saves():
    """A fresh list of this run's write failures, and lm-eval's tracker watched for its own."""
    WRITE_FAILURES.clear()
    handler = _SaveFailures()
    tracker = logging.getLogger("lm_eval.loggers.evaluation_tracker")
    tracker.addHandler(handler)
    try:
        yield handler
    finally:
        tracker.removeHandler(handler)
