"""The run context: where a run writes, under which id, and which process of how many this is.

Resolved once per task and once per model (journal) by :meth:`RunContext.resolve`. **Output directory**: an explicit
value (metadata ``output_dir``, model argument ``journal``) > ``$SEMUQ_OUTPUT_DIR`` > lm-eval's ``--output_path`` while
its command line runs (:func:`lm_eval_cli`; a ``.json`` file: its folder) > none (nothing written). **Run id**: metadata
``run_id``, else :func:`model_slug` of the model argument (``pretrained``, ``gguf`` or a served ``model``), so each LLM
gets one folder whichever command ran it. **Rank / world size**: the ``torch.distributed`` group, else ``RANK`` /
``WORLD_SIZE``, else one process."""

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
    generating). Opened by the lm-eval hook and ``semuq-eval run``.

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
    hidden name: leading dots are dropped. ValueError when nothing usable is left (``..``, ``/``, ``""``).

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

    ``output_dir`` is the root of every file the run writes (None: nothing is written); ``run_id`` the run's folder
    under ``<output_dir>/semuq/<task>/`` (None: the task folder itself); ``rank`` / ``world_size`` this process and the
    run's process count."""

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
