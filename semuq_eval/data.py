"""Local QA sets: the JSON-lines question files prepared by ``semuq-eval assets`` (or your own, same format).

A set ``name`` with split ``split`` is the file ``<root>/<name>/<split>.jsonl``, one record per line::

    {"id": "triviaqa-test-0", "question": "Who was the man behind The Chipmunks?", "answers": ["David Seville"]}

``root`` is the asset cache's ``data`` folder (:func:`semuq_eval.assets.locate`) or ``data_dir``. Prepared sets:
``triviaqa`` (``dev``, ``test``), ``nq-open`` (``dev``, ``test``), ``webquestions`` (``test``). A line that is not a
JSON object is an error naming file and line; a record without a usable question or answer (missing, mistyped, blank,
invalid Unicode) is skipped with one warning, an invalid answer alias dropped. A record without ``id`` gets
``"<name>-<split>-<line index>"``.

Visual sets (the VQA tasks) are parquet files under ``<data_dir>/<name>/`` (:func:`parquet_files`): ``<split>.parquet``,
``<split>/*.parquet``, ``<split>-*.parquet``, ``data/<split>-*.parquet`` (a local copy of a hub parquet repo) or
``default/<split>/*.parquet`` (its ``refs/convert/parquet`` branch), read in file-name order."""

from __future__ import annotations

import contextlib
import os
import warnings
from pathlib import Path
from typing import Any

from semuq_eval.jsonio import read_jsonl

__all__ = [
    "PARQUET_LAYOUTS",
    "data_path",
    "load_qa",
    "parquet_dataset",
    "parquet_files",
    "qa_dataset",
    "qa_datasets",
]


def data_path(name: str, split: str, *, data_dir: str | os.PathLike | None = None) -> Path:
    """Path of the JSONL file of ``name``/``split``; raises ``FileNotFoundError`` saying how to get it."""
    if data_dir is not None:
        root = Path(data_dir).expanduser()
        path = root / name / f"{split}.jsonl"
        if not path.is_file():
            from semuq_eval.assets import ASSET_NAMES

            hint = (
                f"; prepared sets come from: semuq-eval assets --only {name}" if name in ASSET_NAMES else ""
            )
            raise FileNotFoundError(
                f"no QA file {path} (data_dir={root} must hold <name>/<split>.jsonl; "
                f"{_available(root / name)}){hint}"
            )
        return path
    from semuq_eval.assets import locate

    folder = locate(name)  # FileNotFoundError naming the command when the set is not prepared
    path = folder / f"{split}.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{name} has no split {split!r} ({path} not found; {_available(folder)})")
    return path


def _available(folder: Path) -> str:
    splits = sorted(p.stem for p in folder.glob("*.jsonl")) if folder.is_dir() else []
    return f"available splits: {', '.join(splits)}" if splits else f"{folder} holds no splits"


def load_qa(
    name: str,
    split: str,
    *,
    data_dir: str | os.PathLike | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[dict[str, Any]]:
    """Records ``{"id", "question", "answers"}`` of a QA set, in file order; the first ``limit`` usable ones if given,
    after skipping the first ``offset`` usable ones.

    ``load_qa("triviaqa", "test", limit=1000)`` is the paper's "TriviaQA validation, first 1,000"
    (:mod:`semuq_eval.assets`); ``offset=500, limit=500`` is the second chunk of 500 of a long generation. Raises
    ``FileNotFoundError`` naming the path and the command to run, ``ValueError`` naming file and line for a line that is
    not a JSON object; skips unusable records with one warning."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ValueError(f"limit must be a non-negative integer or None, got {limit!r}")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValueError(f"offset must be a non-negative integer, got {offset!r}")
    path = data_path(name, split, data_dir=data_dir)
    records: list[dict[str, Any]] = []
    skipped: list[tuple[int, str]] = []
    usable = 0
    if limit != 0:
        # stop as soon as `limit` records are kept: the lines after them are not even parsed
        with contextlib.closing(read_jsonl(path, on_error="raise")) as lines:
            for number, obj in lines:
                rec = _clean(obj, f"{name}-{split}-{number - 1}")
                if isinstance(rec, str):
                    skipped.append((number, rec))
                    continue
                usable += 1
                if usable <= offset:
                    continue
                records.append(rec)
                if limit is not None and len(records) >= limit:
                    break
    if skipped:
        warnings.warn(
            f"{path}: skipped {len(skipped)} record(s) without a question or without answers "
            f"(first at line {skipped[0][0]}: {skipped[0][1]})",
            stacklevel=2,
        )
    return records


def _unicode(text: Any) -> bool:
    """Whether ``text`` is a non-blank string of valid Unicode (no lone surrogate)."""
    if not isinstance(text, str) or not text.strip():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _clean(obj: dict[str, Any], default_id: str) -> dict[str, Any] | str:
    """The usable record of ``obj``, or why it is not usable (naming the field)."""
    question = obj.get("question")
    answers = obj.get("answers")
    if not _unicode(question):
        what = (
            "not valid Unicode text" if isinstance(question, str) and question.strip() else "missing or blank"
        )
        return f"field question is {what}"
    if isinstance(answers, str):
        answers = [answers]
    if not isinstance(answers, list):
        return "field answers is not a list of strings"
    answers = [a.strip() for a in answers if _unicode(a)]
    if not answers:
        return "field answers holds no usable answer"
    rid = obj.get("id")
    return {
        "id": str(rid) if rid not in (None, "") else default_id,
        "question": question.strip(),
        "answers": answers,
    }


def qa_dataset(
    name: str,
    split: str,
    *,
    data_dir: str | os.PathLike | None = None,
    limit: int | None = None,
    offset: int = 0,
):
    """:func:`load_qa` as a ``datasets.Dataset`` with columns ``id`` (string), ``question`` (string) and
    ``answers`` (list of strings)."""
    import datasets

    records = load_qa(name, split, data_dir=data_dir, limit=limit, offset=offset)
    features = datasets.Features(
        {
            "id": datasets.Value("string"),
            "question": datasets.Value("string"),
            "answers": datasets.Sequence(datasets.Value("string")),
        }
    )
    columns = {key: [r[key] for r in records] for key in features}
    return datasets.Dataset.from_dict(columns, features=features)


def qa_datasets(
    qa_set: str,
    splits: list[str] | str | None = None,
    data_dir: str | os.PathLike | None = None,
    limit: int | None = None,
    offset: int | None = None,
    **_ignored: Any,
):
    """A ``datasets.DatasetDict`` of the given splits (default: every ``<split>.jsonl`` of the set).

    Shaped for lm-eval's ``custom_dataset`` hook, which passes the task's ``metadata`` and ``dataset_kwargs`` as
    keywords (unrelated keys ignored)::

        # tasks/<task>/utils.py:  from semuq_eval.data import qa_datasets
        custom_dataset: !function utils.qa_datasets
        dataset_kwargs: {qa_set: triviaqa, splits: [test]}

    ``--metadata '{"data_dir": "/path"}'`` points every such task at a local data directory, and
    ``{"offset": K, "limit": M}`` takes the M usable questions after the first K."""
    import datasets

    if splits is None:
        folder = Path(data_dir).expanduser() / qa_set if data_dir is not None else _locate(qa_set)
        splits = sorted(p.stem for p in folder.glob("*.jsonl"))
        if not splits:
            raise FileNotFoundError(f"{folder} holds no <split>.jsonl files")
    elif isinstance(splits, str):
        splits = [s.strip() for s in splits.split(",") if s.strip()]
    if limit is not None:
        limit = int(limit)
    offset = int(offset or 0)
    return datasets.DatasetDict(
        {s: qa_dataset(qa_set, s, data_dir=data_dir, limit=limit, offset=offset) for s in splits}
    )


def _locate(name: str) -> Path:
    from semuq_eval.assets import locate

    return locate(name)


# ------------------------------------------------------------------------------------------ parquet sets
# where a split's parquet files may lie under <data_dir>/<name>/, tried in this order
PARQUET_LAYOUTS = (
    "{split}.parquet",
    "{split}/*.parquet",
    "{split}-*.parquet",
    "data/{split}-*.parquet",
    "default/{split}/*.parquet",
)


def parquet_files(name: str, split: str, data_dir: str | os.PathLike) -> list[Path] | None:
    """The parquet files of ``name``/``split`` under ``<data_dir>/<name>/`` (see the module docstring), sorted by
    file name; ``None`` when that folder does not exist; ``FileNotFoundError`` when it holds no file of the split."""
    folder = Path(data_dir).expanduser() / name
    if not folder.is_dir():
        return None
    for pattern in PARQUET_LAYOUTS:
        files = sorted(p for p in folder.glob(pattern.format(split=split)) if p.is_file())
        if files:
            return files
    tried = ", ".join(pattern.format(split=split) for pattern in PARQUET_LAYOUTS)
    raise FileNotFoundError(f"{folder} holds no parquet file of split {split!r} (looked for {tried})")


def parquet_dataset(files: list[str | os.PathLike], split: str, *, cache_dir: str | None = None):
    """The rows of ``files`` (in the order given) as one ``datasets.Dataset``. An ``image`` column stored as
    ``{bytes, path}`` structs or file paths is cast to ``datasets.Image()``, so docs carry decoded images as from the
    hub."""
    import datasets

    data = datasets.load_dataset(
        "parquet", data_files={split: [str(f) for f in files]}, split=split, cache_dir=cache_dir
    )
    if "image" in data.features and not isinstance(data.features["image"], datasets.Image):
        data = data.cast_column("image", datasets.Image())
    return data
