"""The run context: where a run writes, under which id, and which process of how many this is.

Resolved in one place (:meth:`RunContext.resolve`), once per task (run store, breakdown) and once per model
(generation journal):

- **output directory**: an explicit value (task metadata ``output_dir``, model argument ``journal``) >
  ``$SEMUQ_OUTPUT_DIR`` > lm-eval's ``--output_path`` while lm-eval's command line runs (``lm_eval``'s, or the
  one ``semuq-eval run`` hands over: :func:`lm_eval_cli` holds the parsed value for the run) > none (nothing
  written; ``lm_eval.simple_evaluate`` takes metadata ``output_dir``). lm-eval accepts a ``.json`` file for
  ``--output_path``: its folder is used.
- **run id**: metadata ``run_id``, else :func:`model_slug` of the model the run's model arguments name
  (``pretrained``, else ``gguf``, else a served ``model``: `semuq_eval.harness.task.run_model`), so that every LLM
  gets its own folder and ``semuq-eval demo``, ``semuq-eval run`` and ``lm_eval`` with the same model write the same
  one.
- **rank / world size**: the initialized ``torch.distributed`` group (accelerate, torchrun), else the
  ``RANK`` / ``WORLD_SIZE`` environment variables, else a single process.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from semuq_eval.distributed import process_group

__all__ = [
    "OUTPUT_ENV",
    "RunContext",
    "cli_model",
    "lm_eval_cli",
    "model_slug",
    "resolve_output_dir",
    "safe_name",
]

OUTPUT_ENV = "SEMUQ_OUTPUT_DIR"

# (--output_path, --model) of the lm-eval command line that is running
_cli: tuple[str | None, str | None] = (None, None)


@contextlib.contextmanager
def lm_eval_cli(output_path: str | os.PathLike | None, model: str | None) -> Iterator[None]:
    """While lm-eval's command line runs: its parsed ``--output_path`` (the run's output directory unless an
    explicit value or ``$SEMUQ_OUTPUT_DIR`` says otherwise) and ``--model`` (checked against the settings before
    anything is generated). The lm-eval hook (:mod:`semuq_eval._lm_eval_plugin`) and ``semuq-eval run`` open it.

    Examples
    --------
    >>> with lm_eval_cli("results/run.json", "semuq-hf"):
    ...     resolve_output_dir(), cli_model()
    (PosixPath('results'), 'semuq-hf')
    >>> cli_model() is None
    True
    """
    global _cli
    saved, _cli = _cli, (None if output_path is None else os.fspath(output_path), model)
    try:
        yield
    finally:
        _cli = saved


def cli_model() -> str | None:
    """The lm-eval model named by ``--model`` of the lm-eval command line that is running (None: none is, e.g. a
    model handed to ``simple_evaluate``)."""
    return _cli[1]


def resolve_output_dir(explicit: str | os.PathLike | None = None) -> Path | None:
    """The run's output directory (module docstring), or None when the run writes nothing.

    Examples
    --------
    >>> resolve_output_dir("results/run.json")
    PosixPath('results')
    """
    out = explicit or os.environ.get(OUTPUT_ENV) or _cli[0]
    if not out:
        return None
    out = str(out)
    if out.endswith(".json"):
        out = os.path.dirname(out) or "."
    return Path(out).expanduser()


def safe_name(value: object) -> str:
    """A file-name-safe form of any string (runs of other characters become ``__``), never ``.``, ``..`` nor a
    hidden name: leading dots are dropped.

    Raises
    ------
    ValueError
        When nothing usable is left (``..``, ``/``, an empty string).

    Examples
    --------
    >>> safe_name("HuggingFaceTB/SmolLM2-135M")
    'HuggingFaceTB__SmolLM2-135M'
    >>> safe_name("../x")
    'x'
    """
    name = re.sub(r"^[._]+", "", re.sub(r"[^A-Za-z0-9._-]+", "__", str(value))).rstrip("_")
    if not re.search(r"[A-Za-z0-9]", name):
        raise ValueError(f"{value!r} leaves no usable folder name (use letters, digits, '.', '_' or '-')")
    return name


def model_slug(model: object) -> str:
    """One stable folder name for a model: a hub id keeps its owner (``org__name``), a local folder its name.

    Examples
    --------
    >>> model_slug("HuggingFaceTB/SmolLM2-135M-Instruct")
    'HuggingFaceTB__SmolLM2-135M-Instruct'
    >>> model_slug("/root/.cache/semuq-eval/models/smollm2-135m-instruct/")
    'smollm2-135m-instruct'
    """
    text = str(model).rstrip("/\\")
    is_path = os.path.isabs(text) or text.startswith((".", "~")) or Path(text).expanduser().is_dir()
    # a relative path ("..", "./m") is named by the folder it points to (symlinks not followed)
    return safe_name(Path(os.path.abspath(os.path.expanduser(text))).name if is_path else text)


@dataclass(frozen=True)
class RunContext:
    """Where and as which process a run writes; build it with :meth:`resolve`.

    Parameters
    ----------
    output_dir : Path or None
        Root of every file the run writes (None: nothing is written).
    run_id : str or None
        The run's folder under ``<output_dir>/semuq/<task>/`` (None: the task folder itself).
    rank, world_size : int
        This process and the number of processes of the run.
    """

    output_dir: Path | None
    run_id: str | None
    rank: int
    world_size: int

    @classmethod
    def resolve(
        cls,
        *,
        output_dir: str | os.PathLike | None = None,
        run_id: str | None = None,
        model: object = None,
    ) -> RunContext:
        """The context of this process: explicit values first, then the rules of the module docstring."""
        group = process_group()
        if group is None:
            rank = int(os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0")) or 0)
            world = int(os.environ.get("WORLD_SIZE", "1") or 1)
        else:
            rank, world = group
        if run_id:
            run_id = safe_name(run_id)
        elif model:
            run_id = model_slug(model)
        return cls(resolve_output_dir(output_dir), run_id or None, rank, world)

    def store_dir(self, task: str) -> Path | None:
        """``<output_dir>/semuq/<task>[/<run_id>]``: the run store of one task, or None."""
        if self.output_dir is None:
            return None
        path = self.output_dir / "semuq" / task
        return path / self.run_id if self.run_id else path

    def journal_dir(self, model: object) -> Path | None:
        """``<output_dir>/semuq/_journal/<model slug>``: the generation journal of a model, or None."""
        if self.output_dir is None:
            return None
        return self.output_dir / "semuq" / "_journal" / model_slug(model)
