"""The trained operator's card: ``semuq_training.json`` (machine-readable) and ``README.md`` in its folder.

The JSON record holds the training data and its provenance, the counts, the hyperparameters, the validation
scores and what reproduces the training; ``enc`` reads what it needs when it loads the folder
(:mod:`semuq_eval.operators.training_record` names the file and its format). Imports neither torch nor
sentence-transformers.

Examples
--------
>>> import tempfile
>>> from semuq_eval.operators.training_record import operator_defaults
>>> folder = tempfile.mkdtemp()
>>> _ = write_record(folder, {"question_conditioned": False, "separator": None})
>>> operator_defaults(folder)
{'condition_on_question': False}
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from semuq_eval.durable import replace_file
from semuq_eval.jsonio import write_json
from semuq_eval.operators.training_record import TRAINING_RECORD_FILE, TRAINING_RECORD_FORMAT

__all__ = ["package_versions", "render_readme", "write_card", "write_record"]

_PACKAGES = "semuq-eval sentence-transformers transformers torch datasets accelerate numpy".split()


def package_versions() -> dict[str, str | None]:
    """Versions of the packages that make the training reproducible (None when not installed)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def write_record(folder: str | os.PathLike, record: Mapping[str, Any]) -> Path:
    """Write ``semuq_training.json`` into ``folder``; returns its path."""
    return write_json(Path(folder) / TRAINING_RECORD_FILE, {"format": TRAINING_RECORD_FORMAT, **dict(record)})


def _kept(kept_epoch: str) -> str:
    """How the card says which epoch the folder holds."""
    if kept_epoch.startswith("best"):
        return ", kept"
    if kept_epoch.startswith("last"):
        return "; the last epoch is kept (early stopping off)"
    return f"; kept: {kept_epoch}"


def _fmt(x: Any, digits: int | None = 3) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:g}" if digits is None else f"{x:.{digits}f}"
    return str(x)


def render_readme(record: Mapping[str, Any]) -> str:
    """The Markdown model card of a training record."""
    hp = record.get("hyperparameters", {})
    counts = record.get("counts", {})
    val = record.get("validation", {})
    backbone = record.get("backbone", {})
    lines = [
        "---",
        "library_name: sentence-transformers",
        "tags: [sentence-transformers, semuq-eval, uncertainty-quantification, triplet-loss]",
        "---",
        "",
        "# Trained `enc` operator (semuq-eval)",
        "",
        "A question-conditioned bi-encoder trained with the contrastive recipe of *Semantic Uncertainty "
        "Quantification Needs Factual Equivalence* (Sec. 4, App. B-C) on a generating LLM's own sampled "
        "answers, labelled correct / incorrect by a judge. Use it as the `enc` operator:",
        "",
        "```bash",
        'semuq-eval run ... --metadata \'{"operator_options": {"enc": {"model": "'
        + str(record.get("output", "PATH"))
        + "\"}}}'",
        "```",
        "",
        f"- Backbone: `{backbone.get('name')}`"
        + (f" (revision `{backbone['revision']}`)" if backbone.get("revision") else ""),
        f"- Input: {'`question <sep> answer`, separator `' + str(record.get('separator')) + '`' if record.get('question_conditioned', True) else 'the answer alone (answer-only ablation; `enc` reads this from the folder)'}",
        f"- Negatives: `{hp.get('negatives')}`; loss `{hp.get('loss')}`",
        "",
        "## Training data",
        "",
        "Evaluate this operator on LLMs and datasets that do NOT appear here (the paper keeps them disjoint); "
        "`semuq-eval run` warns when they overlap.",
        "",
        "| store | generating LLM | task | dataset | split | judge | label set | questions |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in record.get("training_data", {}).get("stores", []):
        judge = s.get("judge") or {}
        judged = ", ".join(f"{k}={v}" for k, v in judge.items() if isinstance(v, (str, int, float))) or "-"
        lines.append(
            f"| `{Path(s.get('path', '')).name}` | {_fmt(s.get('llm'))} | {_fmt(s.get('task'))} | "
            f"{_fmt(s.get('dataset'))} | {_fmt(s.get('split'))} | {judged} | {_fmt(s.get('label_set'))} | "
            f"{_fmt(s.get('n_questions'))} |"
        )
    lines += [
        "",
        "## Counts",
        "",
        f"- Questions seen: {counts.get('seen')}; kept (>= 2 correct and >= 1 incorrect samples): "
        f"{counts.get('kept')}",
        f"- Left out: {counts.get('unlabelled', 0)} without per-sample labels, {counts.get('label_mismatch', 0)} "
        f"with a label count that differs from their samples, {counts.get('fewer_than_2_correct')} with fewer "
        f"than 2 correct samples, {counts.get('no_incorrect')} with no incorrect sample",
        f"- Sampled answers outside P and N: {counts.get('unknown_verdicts')} with an unknown verdict, "
        f"{counts.get('empty_answers')} empty",
        f"- Train / validation questions (split by question): {counts.get('train_questions')} / "
        f"{counts.get('val_questions')}; {counts.get('triplets_per_epoch')} triplets per epoch, resampled every "
        f"epoch; {counts.get('val_triplets')} fixed validation triplets",
        "",
        "## Hyperparameters",
        "",
        "| key | value |",
        "|---|---|",
        *(f"| {k} | {_fmt(v, None)} |" for k, v in hp.items()),
        "",
        "## Validation triplet accuracy",
        "",
        f"Metric: {val.get('metric')}. Before training: {_fmt(val.get('before_training'))}. Best epoch: "
        f"{val.get('best_epoch')} ({_fmt(val.get('best_accuracy'))})"
        f"{_kept(hp.get('kept_epoch', 'best validation epoch'))}; "
        f"{'stopped early' if val.get('stopped_early') else 'ran every epoch'} after {val.get('epochs_run')} epoch(s).",
        "",
        "| epoch | validation accuracy | training loss | training steps (s) |",
        "|---|---|---|---|",
        f"| 0 (untrained) | {_fmt(val.get('before_training'))} | - | - |",
        *(
            f"| {e.get('epoch')} | {_fmt(e.get('accuracy'))} | {_fmt(e.get('train_loss'), 4)} | "
            f"{_fmt(e.get('train_seconds'), 1)} |"
            for e in val.get("per_epoch", [])
        ),
        "",
        "## Reproducibility",
        "",
        f"Seed {record.get('seed')}; created {record.get('created')}; "
        f"{_fmt(record.get('timing', {}).get('train_seconds'), 1)} s of training.",
        "",
        "| package | version |",
        "|---|---|",
        *(f"| {k} | {v} |" for k, v in record.get("versions", {}).items()),
        "",
        f"The full record is `{TRAINING_RECORD_FILE}`.",
        "",
    ]
    return "\n".join(lines)


def write_card(folder: str | os.PathLike, record: Mapping[str, Any]) -> Path:
    """Write ``semuq_training.json`` and ``README.md`` into ``folder``; returns the record's path."""
    path = write_record(folder, record)
    replace_file(Path(folder) / "README.md", render_readme(record))
    return path
