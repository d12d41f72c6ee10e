"""Declared schemas of the run store's files, checked when they are read (pydantic, strict types).

One schema per kind of line, shared by every reader: a bad line is one ValueError naming file, line and field
(``scores.jsonl:3: field scores.kle_heat@enc: ...``), never a TypeError deep in a computation. Unknown fields are kept
as they are."""

from __future__ import annotations

import os
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
)

from semuq_eval.jsonio import MAX_ID

__all__ = [
    "AnswerRecord",
    "BreakdownFile",
    "GenerationsLine",
    "LabelSetLine",
    "Manifest",
    "OperatorBaseline",
    "RecordHeader",
    "RecordQuestion",
    "RecordTexts",
    "ScoresLine",
    "TrainingHeader",
    "TrainingLine",
    "check_line",
]

Count = Annotated[StrictInt, Field(ge=0, le=MAX_ID)]
"""Ids and counts: whole numbers in 0..2**53."""
Score = Annotated[StrictFloat, Field(allow_inf_nan=False)] | StrictInt | None
"""An estimator's score of a question: a finite number, or null when the estimator could not score it."""
Bit = Annotated[StrictInt, Field(ge=0, le=1)]
"""0 or 1 as a whole number (pydantic's Literal[0, 1] would also take 1.0 and true)."""
Verdict = Bit | StrictBool | None
"""A label: 1 / true correct, 0 / false incorrect, null unknown."""


class _Schema(BaseModel):
    """A file's schema: strict types, unknown fields kept."""

    model_config = ConfigDict(extra="allow", strict=True)


class ScoresLine(_Schema):
    """A line of ``scores.jsonl``: one question's scores, labels and problems (:func:`~semuq_eval.harness.pipeline.doc_item`)."""

    doc_id: Count
    id: StrictStr | None = None
    question_hash: StrictStr | None = None
    scores: dict[str, Score] = {}
    reasons: dict[str, StrictStr] = {}
    labels: dict[str, Verdict] = {}
    sample_labels: list[Verdict] = []
    n_missing_verdicts: Count = 0
    n_samples: Count = 0
    n_extra_responses: Count = 0
    problems: list[StrictStr] = []
    approximate: dict[str, StrictStr] = {}


class AnswerRecord(_Schema):
    """One answer as the store keeps it (:meth:`~semuq_eval.models.generation.Generation.to_record`): its text and,
    when the model gave them, tokens, log-probabilities and entropies (null where not finite), character spans and
    hidden vector (kept in ``hidden.rank<R>.npz``, so null here)."""

    text: StrictStr = ""
    greedy: StrictBool = False
    token_ids: list[Count] | None = None
    token_logprobs: list[Score] | None = None
    token_entropies: list[Score] | None = None
    seq_logprob: Score = None
    token_offsets: list[Annotated[list[Count], Field(min_length=2, max_length=2)]] | None = None
    hidden: list[Score] | None = None
    approximate: dict[str, StrictStr] = {}
    error: StrictStr | None = None
    reflexive: dict[str, dict[str, Any]] | None = None


class GenerationsLine(_Schema):
    """A line of ``generations.rank<R>.jsonl``: one question with its greedy answer and its samples."""

    doc_id: Count
    id: StrictStr | StrictInt | None = None
    question: StrictStr = ""
    references: list[StrictStr] = []
    n_extra_responses: Count = 0
    greedy: AnswerRecord
    samples: list[AnswerRecord]


class Manifest(_Schema):
    """``manifest.json``: the store's format, task, settings, the LLM as its model arguments named it, and what
    generated the answers."""

    format: StrictStr
    task: StrictStr
    settings: dict[str, Any]
    model: dict[str, Any] = {}
    generator: dict[str, Any] | None = None


LabelValue = Verdict | Literal[0.0, 1.0]
"""A label in a label set file: 1 / true / 1.0 correct, 0 / false / 0.0 incorrect, null unknown (the string "false"
is refused, never taken for "correct")."""


class LabelSetLine(_Schema):
    """A line of a label set (``labels/<name>.jsonl``, :mod:`semuq_eval.harness.label_sets`): one question's
    labels under both strategies and one per sample."""

    doc_id: Count
    greedy: LabelValue = None
    majority: LabelValue = None
    samples: list[LabelValue] = []
    n_missing_verdicts: Count | None = None


class RecordHeader(_Schema):
    """Line 1 of a run record (:mod:`semuq_eval.harness.record`): what identifies the run."""

    format: Literal["semuq-run-record/1"]
    task: StrictStr
    llm: StrictStr
    n_samples: Count
    n_questions: Count
    question_set: StrictStr
    estimators: list[StrictStr]
    label_sets: dict[str, Any]
    operators: dict[str, Any]
    label_set: StrictStr = "run"
    provenance: dict[str, Any] | None = None


class RecordLabels(_Schema):
    """One label set's labels of a question in a run record."""

    greedy: Verdict = None
    majority: Verdict = None
    samples: list[Verdict]


class RecordTexts(_Schema):
    """A question's texts in a run record that keeps them (training data, check-operator's frozen record): the
    question, references, greedy answer (null when none was kept), sampled answers and, where kept, the generating
    model's token spans in the greedy answer (``[start, end)`` characters)."""

    question: StrictStr
    references: list[StrictStr]
    greedy: StrictStr | None = None
    answers: list[StrictStr]
    greedy_offsets: list[Annotated[list[Count], Field(min_length=2, max_length=2)]] | None = None


class RecordQuestion(_Schema):
    """A question line of a run record: its scores (one per estimator of the header), its labels per label set
    and, in a record that keeps them, its texts."""

    doc_id: Count
    id: StrictStr | None = None
    question_hash: StrictStr
    scores: list[Score]
    labels: dict[str, RecordLabels]
    texts: RecordTexts | None = None


class TrainingHeader(_Schema):
    """Line 1 of a file of the former training-data format (:mod:`semuq_eval.training.data_files` converts it to a
    run record): its format and provenance."""

    format: Literal["semuq-training-data/1"]
    provenance: dict[str, Any]


class TrainingLine(_Schema):
    """A question line of the former training-data format: the LLM's answers with one verdict each, its references
    and its greedy answer with its verdict."""

    doc_id: Count
    question: StrictStr
    references: list[StrictStr]
    answers: list[StrictStr]
    labels: list[Verdict]
    greedy: StrictStr | None = None
    greedy_label: Verdict = None


Tolerance = Annotated[StrictFloat, Field(ge=0, allow_inf_nan=False)] | Annotated[StrictInt, Field(ge=0)]


class BaselineValue(_Schema):
    """One tracked figure of an operator baseline: its value (null: undefined), which way is better, and
    optionally its own tolerance."""

    value: Score = None
    better: Literal["higher", "lower"] = "higher"
    tolerance: Tolerance | None = None


class OperatorBaseline(_Schema):
    """An operator baseline (``check-operator --write-baseline``, :mod:`semuq_eval.diagnose.check`)."""

    format: Literal["semuq-operator-baseline/1"]
    figures: dict[str, BaselineValue]
    max_questions: Count | None = None
    tolerance: Tolerance | None = None
    store_fingerprint: StrictStr | None = None


class BreakdownFile(_Schema):
    """``breakdown.json``: the fields the leaderboard and the commands read (:mod:`semuq_eval.harness.breakdown`)."""

    format: StrictStr
    task: StrictStr
    settings: dict[str, Any] = {}
    n_samples: Count | None = None
    judge: dict[str, Any] = {}
    label_set: StrictStr = "run"
    operators: dict[str, dict[str, Any]] = {}
    n_docs: Count | None = None
    labels: dict[str, dict[str, Any]] = {}
    results: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    generation_kwargs: dict[str, Any] | None = None
    decoding: dict[str, Any] | None = None
    generator: dict[str, Any] | None = None


def check_line(
    schema: type[BaseModel],
    line: Any,
    path: str | os.PathLike,
    number: int | None = None,
    record: str | None = None,
) -> None:
    """ValueError naming ``path:number`` (a whole JSON file: ``path``), the ``record`` when given (``record
    task/llm``) and the first bad field when ``line`` does not follow ``schema``.

    Examples
    --------
    >>> check_line(ScoresLine, {"doc_id": 0, "scores": {"msp": 0.5}, "labels": {}}, "scores.jsonl", 1)
    >>> check_line(ScoresLine, {"doc_id": 0, "scores": {"msp": [1]}, "labels": {}}, "scores.jsonl", 2)
    Traceback (most recent call last):
    ...
    ValueError: scores.jsonl:2: field scores.msp: a finite number, or null, got [1]
    """
    try:
        schema.model_validate(line)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        field = ".".join(str(part) for part in _field_path(first["loc"]))
        where = (f"{path}:{number}" if number is not None else str(path)) + (f": {record}" if record else "")
        raise ValueError(
            f"{where}: field {field or '(the line)'}: {_expected(first)}, got {first.get('input')!r:.60}"
        ) from None


def _field_path(loc: tuple) -> list:
    """The field path of a pydantic error location, without the names of the union members it tried."""
    return [part for part in loc if not (isinstance(part, str) and ("[" in part or part in _MEMBER_NAMES))]


_MEMBER_NAMES = {
    "float",
    "int",
    "bool",
    "str",
    "none",
    "literal",
    "function-after",
    "constrained-float",
    "constrained-int",
}


def _expected(error: dict[str, Any]) -> str:
    """What the field should hold, in words."""
    loc = [str(p) for p in error["loc"]]
    if "constrained-int" in loc or "bool" in loc:  # a Verdict
        return "a label 1, 0, true, false or null"
    if any("float" in p or p == "int" for p in loc):
        return "a finite number, or null"
    return str(error.get("msg", "invalid")).lower()
