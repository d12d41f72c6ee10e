"""DPR topic files (as shipped in anserini) parsed into QA records ``{"id", "question", "answers"}``.

TriviaQA and NQ are tab-separated with a Python list literal of answers (TriviaQA CSV-quoted twice),
WebQuestions is JSON lines. Parsing is strict: a malformed line is an :class:`~semuq_eval.assets.AssetError`
naming file and line, since a dropped line would shift every later id."""

from __future__ import annotations

import ast
import csv
import re
from collections.abc import Iterable
from typing import Any

from semuq_eval.assets.errors import AssetError
from semuq_eval.jsonio import parse_jsonl

_CSV_QUOTED = re.compile(r'"(?:[^"]|"")*"', re.DOTALL)


def _unquote(s: str) -> str:
    """Undo one leftover layer of CSV quoting: ``"a ""b"" c"`` -> ``a "b" c``.

    The DPR TriviaQA files were CSV-quoted twice, so some questions and aliases keep doubled quotes after
    ``csv.reader``."""
    if len(s) >= 2 and _CSV_QUOTED.fullmatch(s):
        return s[1:-1].replace('""', '"')
    return s


def parse_dpr_topics(
    lines: Iterable[str], *, fmt: str, id_prefix: str = "", source: str = "<topics>"
) -> list[dict]:
    """Parse a DPR topic file as shipped in anserini into QA records, in file order.

    ``fmt``: ``"tsv"`` (TriviaQA, NQ: ``question<TAB>python-list-literal``, read with ``csv.reader`` and
    ``ast.literal_eval``, leftover quoting removed by :func:`_unquote`) or ``"jsonl"`` (WebQuestions:
    ``{"question", "answer"}`` per line). Ids are ``id_prefix`` + the 0-based position; ``source`` names the
    file in errors. Answers are stripped, never empty. Raises AssetError for a malformed line, ValueError for
    an unknown ``fmt``."""
    if fmt == "tsv":
        reader = csv.reader(lines, delimiter="\t")
        records = [_tsv_record(row, f"{source}:{reader.line_num}") for row in reader if row]
    elif fmt == "jsonl":
        try:
            records = [
                _record(obj.get("question"), obj.get("answer"), f"{source}:{lineno}", unquote=False)
                for lineno, obj in parse_jsonl(lines, source)
            ]
        except ValueError as err:  # a line that is not a JSON object: the message names source and line
            raise AssetError(str(err)) from None
    else:
        raise ValueError(f"unknown topic format {fmt!r}")
    return [{"id": f"{id_prefix}{i}", **record} for i, record in enumerate(records)]


def _tsv_record(row: list[str], where: str) -> dict:
    if len(row) != 2:
        raise AssetError(f"{where}: expected 2 tab-separated fields, found {len(row)}")
    try:
        answers = ast.literal_eval(row[1])
    except (ValueError, SyntaxError) as err:
        raise AssetError(f"{where}: answers are not a Python list literal ({err})") from None
    return _record(row[0], answers, where, unquote=True)


def _record(question: Any, answers: Any, where: str, *, unquote: bool) -> dict:
    if not isinstance(question, str) or not question.strip():
        raise AssetError(f"{where}: empty or missing question")
    if isinstance(answers, str):
        answers = [answers]
    if not isinstance(answers, (list, tuple)) or not all(isinstance(a, str) for a in answers):
        raise AssetError(f"{where}: answers must be a list of strings")
    if unquote:
        question, answers = _unquote(question), [_unquote(a) for a in answers]
    answers = [a.strip() for a in answers if a.strip()]
    if not answers:
        raise AssetError(f"{where}: no answers")
    return {"question": question.strip(), "answers": answers}
