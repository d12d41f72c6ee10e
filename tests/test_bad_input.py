"""The bad-input suite (issue 20): broken and hostile run stores through every command that reads a store, and
property-based checks of the settings, the label reader and the judge's reply parser.

For every (command, broken store): no traceback, an exit code of 0 (the command had no use for the broken part)
or 2 with ONE line naming the file (and the record and field where there is one), and not a byte of the input
changed. A store broken where every reader needs it (its manifest, its answers) must end in exit 2.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from semuq_eval.commands import main as cli_main
from tests.fixtures.tiny_harness import canned_run

HOSTILE = '<img src=x onerror="alert(1)">'


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _first_line(path: Path, obj) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[0] = json.dumps(obj) if not isinstance(obj, str) else obj
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _scores(path: Path, change) -> None:
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    change(lines[0])
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


def _with(store: Path, change) -> dict:
    """The store's first answer record, changed."""
    record = json.loads((store / "generations.rank0.jsonl").read_text(encoding="utf-8").splitlines()[0])
    change(record)
    return record


BREAKS = {  # name -> (what it does to the store, every reader must refuse it)
    "manifest is a list": (lambda s: (s / "manifest.json").write_text("[1, 2]"), True),
    "manifest is not JSON": (lambda s: (s / "manifest.json").write_text("{not json"), True),
    "manifest missing": (lambda s: (s / "manifest.json").unlink(), True),
    "answers cut short": (lambda s: _truncate(s / "generations.rank0.jsonl"), True),
    "answers: a doc id alone": (lambda s: _first_line(s / "generations.rank0.jsonl", {"doc_id": 0}), True),
    "answers: garbage": (lambda s: _first_line(s / "generations.rank0.jsonl", "\x00\x01garbage"), True),
    "answers: wrong types": (
        lambda s: _first_line(s / "generations.rank0.jsonl", {"doc_id": "zero", "greedy": [], "samples": {}}),
        True,
    ),
    "hidden vectors cut short": (lambda s: _truncate(next(s.glob("hidden.rank*.npz"))), False),
    "scores null": (lambda s: _scores(s / "scores.jsonl", lambda x: x.update(scores=None)), False),
    "manifest claims more samples than stored": (
        lambda s: (s / "manifest.json").write_text(
            json.dumps(
                {
                    **(m := json.loads((s / "manifest.json").read_text())),
                    "settings": {**m["settings"], "n_samples": 20},
                }
            )
        ),
        False,
    ),
    "answers: a doc id of 2**70": (
        lambda s: _first_line(s / "generations.rank0.jsonl", _with(s, lambda r: r.update(doc_id=2**70))),
        True,
    ),
    "scores: a doc id of 2**70": (
        lambda s: _scores(s / "scores.jsonl", lambda x: x.update(doc_id=2**70)),
        False,
    ),
    "answers nested too deep": (
        lambda s: _first_line(
            s / "generations.rank0.jsonl", '{"doc_id": 0, "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
        ),
        True,
    ),
    "labels: the string false": (
        lambda s: _scores(s / "scores.jsonl", lambda x: x["labels"].update(greedy="false")),
        False,
    ),
    "NaN and infinities in the scores": (
        lambda s: (s / "scores.jsonl").write_text(
            (s / "scores.jsonl").read_text().replace('"labels"', '"nan": NaN, "inf": Infinity, "labels"', 1)
        ),
        False,
    ),
    "a huge answer": (
        lambda s: _first_line(
            s / "generations.rank0.jsonl",
            _with(s, lambda r: r["samples"][0].update(text="word " * 200_000)),
        ),
        False,
    ),
    "unicode everywhere": (
        lambda s: _first_line(
            s / "generations.rank0.jsonl",
            _with(
                s, lambda r: r.update(question="\u202e\u0000 Ünïcødé 🙂 \ud7ff?", references=["\u2028", "🙂"])
            ),
        ),
        False,
    ),
    "script in the question": (
        lambda s: _first_line(
            s / "generations.rank0.jsonl",
            {**json.loads((s / "generations.rank0.jsonl").read_text().splitlines()[0]), "question": HOSTILE},
        ),
        False,
    ),
}

COMMANDS = {
    "rescore": lambda store, out: ["rescore", str(store), "--bootstrap", "20"],
    "judge": lambda store, out: ["judge", str(store), "--judge", "string", "--name", "again"],
    "diagnose": lambda store, out: [
        "diagnose",
        str(store),
        "--operators",
        "lexical",
        "--output",
        str(out / "d"),
        "--bootstrap",
        "20",
        "--no_progress",
    ],
    "leaderboard": lambda store, out: [
        "leaderboard",
        str(store),
        "--output",
        str(out / "b"),
        "--bootstrap",
        "20",
        "--no-plots",
    ],
    "train-data": lambda store, out: [
        "train-data",
        "export",
        str(store),
        "--output",
        str(out / "t.jsonl.gz"),
    ],
    "export-record": lambda store, out: ["export-record", str(store), "--output", str(out / "r.jsonl.gz")],
    "check-operator": lambda store, out: [
        "check-operator",
        "lexical",
        "--store",
        str(store),
        "--write-baseline",
        str(out / "baseline.json"),
        "--report",
        str(out / "r"),
        "--no_progress",
    ],
    "train-operator": lambda store, out: [
        "train-operator",
        "--stores",
        str(store),
        "--output",
        str(out / "op"),
        "--backbone",
        str(out / "no-backbone"),
        "--no_progress",
    ],
}


@pytest.fixture(scope="module")
def good_store(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("bad-input")
    return canned_run(tmp, tmp / "runs")


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file()
    }


LOG_LINE = re.compile(r"^(\S+ +)?(WARNING|INFO)\b")


def _run_on_broken_store(store: Path, out: Path, command: str, capsys) -> tuple[int, list[str]]:
    """Run ``command`` on ``store``: no traceback, the input unchanged, exit 0 or 2, and an exit 2 in one line.
    Returns the exit status and the error lines."""
    before = _snapshot(store)
    out.mkdir(parents=True, exist_ok=True)
    capsys.readouterr()
    try:
        code = cli_main(COMMANDS[command](store, out))
    except SystemExit as exit_:  # argparse's parser.exit(2, message): the same one line
        code = exit_.code
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out, captured.err[-3000:]
    labels = store / "labels"
    if command == "judge" and labels.is_dir() and not labels.is_symlink():
        shutil.rmtree(labels)  # its own output (the label set asked for), not an input
    assert _snapshot(store) == before, "the input was changed"
    assert code in (0, 2), captured.err
    lines = [
        line
        for line in captured.err.splitlines()
        if line.strip() and not LOG_LINE.match(line)  # a log record, in lm-eval's format once it set it up
    ]
    if code == 2:
        assert len(lines) == 1, captured.err
    return code, lines


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("broken", sorted(BREAKS))
def test_a_broken_store_ends_in_one_line_or_is_not_needed_and_nothing_changes(
    good_store, tmp_path, capsys, command, broken
):
    store = tmp_path / "semuq" / "semuq_triviaqa_dpr" / "canned"
    shutil.copytree(good_store, store)
    change, fatal = BREAKS[broken]
    change(store)
    code, lines = _run_on_broken_store(store, tmp_path / "out", command, capsys)
    if code == 2 and fatal:  # the broken file is named
        assert str(store) in lines[0] or "manifest" in lines[0], lines[0]
    if fatal and command != "leaderboard":  # the leaderboard reads breakdowns and scores, not the answers
        assert code == 2, f"{command} accepted a store with {broken}"
    if command == "train-operator":  # the canned store has too few usable questions (or no backbone): refused
        assert code == 2


# -- properties ---------------------------------------------------------------------------------------------------

from semuq_eval.harness.label_sets import read_label_set, write_label_set  # noqa: E402
from semuq_eval.harness.settings import Settings  # noqa: E402
from semuq_eval.judges.prompts import parse_yes_no  # noqa: E402

JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)
KEYS = st.sampled_from(
    [
        "n_samples",
        "bootstrap",
        "seed",
        "tau",
        "store",
        "store_hidden",
        "ece_bins",
        "min_minority",
        "operators",
        "operator_options",
        "judge",
        "aggregators",
        "n_smaples",
        "version",
        "limit",
    ]
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(KEYS, JSONISH, max_size=4))
def test_settings_either_validate_into_sane_values_or_raise_a_value_error(metadata):
    try:
        s = Settings.from_metadata(metadata)
    except ValueError:
        return
    assert isinstance(s.n_samples, int) and s.n_samples >= 1 and s.bootstrap >= 1 and s.seed >= 0
    assert 0 < s.tau < 1 and isinstance(s.store, bool) and isinstance(s.store_hidden, bool)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.fixed_dictionaries({"doc_id": JSONISH, "greedy": JSONISH, "samples": JSONISH}), max_size=3)
)
def test_a_label_set_reads_back_as_verdicts_or_a_located_error(tmp_path_factory, records):
    root = tmp_path_factory.mktemp("labels")
    (root / "labels").mkdir()
    (root / "labels" / "x.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    try:
        labels = read_label_set(root, "x")
    except ValueError as err:
        assert "x.jsonl:" in str(err)
        return
    for rec in labels.records.values():
        assert rec["greedy"] in (0, 1, None) and all(v in (0, 1, None) for v in rec["samples"])
    write_label_set(root, "y", list(labels.records.values()), {})
    assert read_label_set(root, "y").records == labels.records


@given(st.text(max_size=60))
def test_the_reply_parser_answers_yes_no_or_unknown(text):
    assert parse_yes_no(text) in (True, False, None)


from semuq_eval.harness.store import open_store  # noqa: E402


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.one_of(JSONISH, st.fixed_dictionaries({"doc_id": JSONISH, "greedy": JSONISH, "samples": JSONISH})),
        min_size=1,
        max_size=3,
    )
)
def test_a_store_reads_as_docs_or_a_located_error(tmp_path_factory, good_store, lines):
    store = tmp_path_factory.mktemp("store")
    shutil.copy(good_store / "manifest.json", store / "manifest.json")
    (store / "generations.rank0.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    try:
        docs = open_store(store).docs(hidden=False)
    except ValueError as err:
        assert "generations.rank0.jsonl:" in str(err)
        return
    for doc in docs:
        assert isinstance(doc.doc_id, int) and isinstance(doc.samples, list)


@pytest.mark.parametrize(
    ("answer", "field"),
    [
        ({"text": 3}, "greedy.text"),
        ({"text": "a", "token_ids": [1, -2]}, "greedy.token_ids.1"),
        ({"text": "a", "token_logprobs": [0.1, "x"]}, "greedy.token_logprobs.1"),
        ({"text": "a", "token_offsets": [[0, 1, 2]]}, "greedy.token_offsets.0"),
        ({"text": "a", "seq_logprob": True}, "greedy.seq_logprob"),
        ({"text": "a", "approximate": {"te": 1}}, "greedy.approximate.te"),
    ],
)
def test_a_malformed_answer_in_the_store_is_named_by_file_line_and_field(tmp_path, good_store, answer, field):
    store = tmp_path / "store"
    store.mkdir()
    shutil.copy(good_store / "manifest.json", store / "manifest.json")
    line = {"doc_id": 0, "question": "q?", "references": ["a"], "greedy": answer, "samples": []}
    (store / "generations.rank0.jsonl").write_text(json.dumps(line) + "\n")
    with pytest.raises(ValueError, match=rf"generations.rank0.jsonl:1: field {re.escape(field)}:"):
        open_store(store).docs(hidden=False)


def test_a_manifest_without_settings_is_named(tmp_path, good_store):
    store = tmp_path / "store"
    shutil.copytree(good_store, store)
    manifest = json.loads((store / "manifest.json").read_text())
    del manifest["settings"]
    (store / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=r"manifest.json: field settings: field required"):
        open_store(store).docs(hidden=False)


# ---------------------------------------------------------------------------------------------------------------
# Options are checked against what the component takes, before anything loads; bad flag values are one line
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "metadata, message",
    [
        ({"judge_options": {"colour": "blue"}}, "judge 'string': unknown option(s) ['colour']"),
        (
            {"judge": "hf", "judge_options": {"model": "x", "colour": 1}},
            "judge 'hf': unknown option(s) ['colour']",
        ),
        (
            {"judge": "openai", "judge_options": {"base_url": "u", "model": "m", "colour": 1}},
            "unknown option(s)",
        ),
        (
            {"aggregator_options": {"kle_heat": {"tt": 1}}},
            "aggregator_options['kle_heat']: unknown option(s) ['tt']",
        ),
        ({"ece_bins": 10**12}, "ece_bins must be in 1..10,000"),
        ({"bootstrap": 10**9}, "bootstrap must be in 1..100,000"),
        ({"seed": 2**70}, "seed must be in 0..4,294,967,295"),
        ({"output_dir": ["x"]}, "output_dir must be a folder path"),
        ({"table_estimators": ["kle_heat@enc"]}, "table_estimators: 'kle_heat@enc' is not"),
    ],
)
def test_options_a_component_does_not_take_are_refused_before_anything_loads(metadata, message):
    with pytest.raises(ValueError) as err:
        Settings.from_metadata({"operators": ["lexical"], **metadata})
    assert message in str(err.value) and "\n" not in str(err.value)


def test_options_a_component_takes_pass():
    for metadata in (
        {"judge_options": {"mode": "em"}},
        {"judge": "hf", "judge_options": {"model": "x", "cache": "none", "batch_size": 4}},
        {
            "judge": "openai",
            "judge_options": {"base_url": "u", "model": "m", "endpoint": "chat", "concurrency": 2},
        },
        {"aggregator_options": {"kle_heat": {"t": 0.5}}},
    ):
        Settings.from_metadata({"operators": ["lexical"], **metadata})


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["diagnose", "STORE", "--operators", "lexical", "--max_questions", "-1"], "--max_questions"),
        (["leaderboard", "STORE", "--output", "OUT", "--ece-bins", "1000000000000"], "--ece-bins"),
        (["leaderboard", "STORE", "--output", "OUT", "--bootstrap", "many"], "--bootstrap"),
        (["train-operator", "--stores", "STORE", "--output", "OUT", "--lr", "inf"], "--lr"),
        (["rescore", "STORE", "--tau", "nan"], "--tau"),
        (
            ["judge", "STORE", "--judge", "string", "--judge_args", "colour=blue"],
            "unknown option(s) ['colour']",
        ),
        (["rescore", "STORE", "--judge", "string", "--judge_options", '{"colour": "blue"}'], "['colour']"),
        (
            ["leaderboard", "STORE", "--output", "OUT", "--reference", "kle_heat@lexcal"],
            "did you mean kle_heat@lexical",
        ),
    ],
)
def test_a_bad_flag_value_is_one_line_naming_the_flag(good_store, tmp_path, capsys, argv, flag):
    store = tmp_path / "store"
    shutil.copytree(good_store, store)
    argv = [str(store) if a == "STORE" else str(tmp_path / "out") if a == "OUT" else a for a in argv]
    before = _snapshot(store)
    capsys.readouterr()
    try:
        code = cli_main(argv)
    except SystemExit as exit_:
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and flag in err and "usage:" not in err, err
    assert _snapshot(store) == before and not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------------------------------------------
# The fuzz test: mutations of a tiny store's files through the commands that read a store
# ---------------------------------------------------------------------------------------------------------------

FUZZED_FILES = ("manifest.json", "generations.rank0.jsonl", "scores.jsonl", "breakdown.json")
FUZZED_COMMANDS = ("rescore", "judge", "export-record", "leaderboard")
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=6,
)
MUTATIONS = st.one_of(
    st.tuples(st.just("value"), st.sampled_from(FUZZED_FILES), st.integers(0, 10_000), JSON_VALUES),
    st.tuples(st.just("truncate"), st.sampled_from(FUZZED_FILES), st.floats(0, 1)),
    st.tuples(st.just("bytes"), st.sampled_from(FUZZED_FILES), st.binary(min_size=1, max_size=12)),
    st.tuples(st.just("nest"), st.sampled_from(FUZZED_FILES), st.integers(1, 200_000)),
    st.tuples(st.just("symlink"), st.sampled_from(FUZZED_FILES)),
    st.tuples(st.just("delete"), st.sampled_from(FUZZED_FILES)),
)


def _paths(node, prefix=()):
    """Every (path, value) of a JSON document, the root included."""
    yield prefix, node
    children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in children:
        yield from _paths(child, (*prefix, key))


def _mutate(store: Path, mutation: tuple, outside: Path) -> None:
    kind, name, *args = mutation
    path = store / name
    if kind == "delete":
        path.unlink()
    elif kind == "symlink":  # the file read through a link to a copy elsewhere
        target = outside / name
        shutil.copy(path, target)
        path.unlink()
        path.symlink_to(target)
    elif kind == "truncate":
        data = path.read_bytes()
        path.write_bytes(data[: int(len(data) * args[0])])
    elif kind == "bytes":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2] + args[0] + data[len(data) // 2 :])
    elif kind == "nest":
        lines = path.read_text(encoding="utf-8").splitlines() or [""]
        lines[0] = "[" * args[0] + "]" * args[0]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    else:  # "value": one field (or the whole first record) replaced by any JSON value
        lines = path.read_text(encoding="utf-8").splitlines()
        document = json.loads(lines[0] if name.endswith(".jsonl") else "\n".join(lines))
        paths = list(_paths(document))
        where, _ = paths[args[0] % len(paths)]
        if not where:
            document = args[1]
        else:
            parent = document
            for key in where[:-1]:
                parent = parent[key]
            parent[where[-1]] = args[1]
        text = json.dumps(document, allow_nan=True)
        path.write_text(
            text + "\n" + "\n".join(lines[1:]) if name.endswith(".jsonl") else text, encoding="utf-8"
        )


FUZZ_EXAMPLES = int(os.environ.get("SEMUQ_FUZZ_EXAMPLES", "0"))
"""0: the same 40 cases on every CI run; N: N new random cases (a longer search, e.g. 500)."""


@settings(
    max_examples=FUZZ_EXAMPLES or 40,
    deadline=None,
    derandomize=not FUZZ_EXAMPLES,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(command=st.sampled_from(FUZZED_COMMANDS), mutation=MUTATIONS)
def test_fuzzed_stores_end_in_a_documented_value_or_one_line_and_change_nothing(
    good_store, tmp_path_factory, capsys, command, mutation
):
    tmp = tmp_path_factory.mktemp("fuzz")
    store = tmp / "semuq" / "semuq_triviaqa_dpr" / "canned"
    shutil.copytree(good_store, store)
    (tmp / "outside").mkdir()
    _mutate(store, mutation, tmp / "outside")
    code, lines = _run_on_broken_store(store, tmp / "out", command, capsys)
    if code == 2:
        assert str(store) in lines[0] or any(f in lines[0] for f in FUZZED_FILES), lines[0]
