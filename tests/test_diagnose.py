"""semuq-eval diagnose / check-operator: traps, clustering, localization, reports, baselines, the CLI.

Hand-made stores (tests/fixtures/diagnose/stores.py) make every pair known in advance; the tiny random
sentence-transformers folder stands in for an encoder. ``real`` tests read the shipped frozen store and the
prepared MiniLM asset.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from semuq_eval import signals
from semuq_eval.commands import main as cli_main
from semuq_eval.diagnose.check import check_operator, operator_from_spec
from semuq_eval.diagnose.check_values import compute_values, frozen_store_path
from semuq_eval.diagnose.diagnosis import Diagnosis, diagnose
from semuq_eval.diagnose.freeze import freeze_store
from semuq_eval.diagnose.localization import hit_and_chance, localization
from semuq_eval.diagnose.outputs import write_report
from semuq_eval.diagnose.questions import NoSampleLabelsError, load_questions
from semuq_eval.diagnose.resolve import resolve_operators
from semuq_eval.diagnose.rewrite import LLMRewriter, RewriteRequest, SampleSubstitution
from semuq_eval.diagnose.scoring import difference_with_ci, mean_with_ci
from semuq_eval.diagnose.spans import alias_spans, last_words
from semuq_eval.diagnose.traps import build_traps
from semuq_eval.diagnose.wrong_clusters import clustering_pairs
from semuq_eval.harness.record import read_record
from semuq_eval.harness.store import open_store
from semuq_eval.metrics import Bootstrap
from semuq_eval.models.generation import Generation
from tests.fixtures.diagnose.stores import ROWS, write_store
from tests.fixtures.tiny_encoders import tiny_st_encoder, tiny_wordpiece_dir  # noqa: F401  (fixtures)


@pytest.fixture
def store(tmp_path) -> Path:
    return write_store(tmp_path / "store")


@pytest.fixture
def questions(store):
    return load_questions(store)


# ---------------------------------------------------------------------------------------------- spans
def test_alias_spans_follow_the_string_judge():
    text = "The Jamaican English language, i.e. the English of Jamaica."
    spans = alias_spans(text, ["English", "Jamaican English", "the English"])
    # "English" inside "Jamaican English" is nested and dropped; articles are skipped like SQuAD normalization
    assert [(s.text, s.alias) for s in spans] == [
        ("Jamaican English", "Jamaican English"),
        ("English", "the English"),
    ]
    assert alias_spans("Parisian food", ["Paris"]) == []  # whole words only
    assert [s.text for s in alias_spans("it is PARIS!", ["paris"])] == ["PARIS"]
    assert last_words("Played the role in the film!", 4) == ("role", "in", "the", "film")
    assert last_words("two words", 4) is None


# ---------------------------------------------------------------------------------------------- traps
def test_traps_are_the_exact_pairs_of_app_f(questions):
    traps = build_traps(questions)
    pairs = {name: [(p.uid, p.a, p.b) for p in ps.pairs] for name, ps in traps.items()}
    assert pairs["context"] == [
        ("0:0", "The capital of France is Paris.", "The capital of France is Lyon."),
        ("0:1", "Heath Ledger played the Joker.", "Jack Nicholson played the Joker."),
    ]
    assert [p.meta["source"] for p in traps["context"].pairs] == ["aligned:0", "aligned:1"]
    assert pairs["autoregressive"] == [
        ("0:1", "Heath Ledger played the role in the film.", "Jack Nicholson played the role in the film!")
    ]
    assert traps["autoregressive"].n_questions == 3  # every question has correct and incorrect samples
    assert sum(traps["autoregressive"].skipped.values()) == 2
    assert pairs["entailment"] == [
        ("0:0", "Paris", "It is Paris, the capital of France since 987."),
        ("0:1", "Heath Ledger", "Heath Ledger played the role in the film."),
    ]
    assert traps["entailment"].n_questions == 2  # question 3 has one correct sample
    assert pairs["ood_syntax"] == [
        ("0:0", "The capital of France is Paris.", "Paris"),
        ("0:1", "Heath Ledger played the Joker.", "Heath Ledger"),
    ]
    # pairs of two samples carry their indices (read from the sample matrix), the others do not
    assert (traps["entailment"].pairs[0].sample_a, traps["entailment"].pairs[0].sample_b) == (1, 2)
    assert traps["context"].pairs[0].sample_a is None


def test_context_trap_skips_what_it_cannot_rewrite():
    answer = "The capital of France is Paris."
    mentions = tuple(alias_spans(answer, ["Paris"]))
    long_wrong = RewriteRequest("q", answer, ("Paris",), mentions, ("I really do not know that one.",))
    naming = RewriteRequest(
        "q", answer, ("Paris",), mentions, ("Paris, France",)
    )  # an incorrect label, but names it
    short = RewriteRequest("q", answer, ("Paris",), mentions, ("Lyon!",))
    out = SampleSubstitution().rewrite([long_wrong, naming, short])
    assert [r.text for r in out] == [None, None, "The capital of France is Lyon."]
    assert out[0].reason == "no incorrect sample gives a short wrong answer"
    assert out[2].source == "short:0"
    # every mention is replaced, so the rewrite is incorrect for the string judge
    twice = "Paris. Yes, Paris."
    req = RewriteRequest("q", twice, ("Paris",), tuple(alias_spans(twice, ["Paris"])), ("Rome",))
    assert SampleSubstitution().rewrite([req])[0].text == "Rome. Yes, Rome."


def test_llm_rewriter_checks_replies(monkeypatch):
    answer = "The capital of France is Paris."
    req = RewriteRequest("Capital?", answer, ("Paris",), tuple(alias_spans(answer, ["Paris"])))
    prompts = []

    def fake(prompt):
        prompts.append(prompt)
        return {"a": '"The capital of France is Lyon."\n\nNote: changed.', "b": "It is still Paris."}[
            fake.mode
        ]

    fake.mode = "a"
    assert LLMRewriter(fake, progress=False).rewrite([req])[0].text == "The capital of France is Lyon."
    assert "Correct fact: Paris" in prompts[0] and answer in prompts[0]
    fake.mode = "b"
    assert LLMRewriter(fake, progress=False).rewrite([req])[0].reason == "the rewrite still names a reference"

    def broken(prompt):
        raise TimeoutError("slow")

    assert (
        LLMRewriter(broken, progress=False).rewrite([req])[0].reason == "rewrite request failed: TimeoutError"
    )
    with pytest.raises(ValueError, match="question"):
        LLMRewriter(fake, prompt="no fields")

    # the OpenAI-compatible route: the one server transport, a chat body at temperature 0 (no network)
    from semuq_eval.openai_client import ServerClient

    bodies = []

    def post(self, body):
        bodies.append(body)
        return {"choices": [{"message": {"content": "The capital of France is Rome."}}]}

    monkeypatch.setattr(ServerClient, "post", post)
    rewriter = LLMRewriter.from_openai("http://127.0.0.1:9/v1", "local", progress=False)
    assert rewriter.rewrite([req])[0].text == "The capital of France is Rome."
    assert bodies[0]["temperature"] == 0.0 and bodies[0]["model"] == "local"
    assert bodies[0]["messages"][0]["content"].startswith("Question: Capital?")
    assert rewriter.info["base_url"] == "http://127.0.0.1:9/v1"
    completions = LLMRewriter.from_openai("http://127.0.0.1:9/v1", "local", endpoint="completions", timeout=3)
    assert completions.info["endpoint"] == "completions"
    with pytest.raises(TypeError, match="bogus"):
        LLMRewriter.from_openai("http://127.0.0.1:9/v1", "local", bogus=1)


# ---------------------------------------------------------------------------------------------- clustering
def test_clustering_groups(questions):
    groups = clustering_pairs(questions)
    got = {name: sorted((p.uid, p.a, p.b) for p in ps.pairs) for name, ps in groups.items()}
    assert got["incorrect_equivalent"] == [
        ("0:0", "It is Madrid.", "Madrid"),
        ("0:1", "Jack Nicholson played the role in the film!", "Jack Nicholson"),
    ]
    assert got["correct_equivalent"] == [
        ("0:0", "Paris", "It is Paris, the capital of France since 987."),
        ("0:1", "Heath Ledger played the role in the film.", "Heath Ledger"),
    ]
    # question 0: 3 incorrect -> 3 pairs, 1 equivalent; question 1: 2 incorrect -> 1 pair (equivalent);
    # question 2: 3 incorrect, two identical "Marlowe" -> left out -> 2 different pairs
    assert len(got["incorrect_different"]) == 2 + 0 + 2
    assert groups["incorrect_different"].skipped == {"identical pairs left out": 1}


# ---------------------------------------------------------------------------------------------- statistics
def test_mean_with_ci_resamples_questions():
    b = Bootstrap(500, seed=3)
    values, groups = [0.2, 0.4, 0.9, 0.5], ["a", "a", "b", "c"]
    r = mean_with_ci(values, groups, bootstrap=b, min_pairs=3)
    assert r.mean == pytest.approx(0.5) and (r.n_pairs, r.n_questions, r.small_sample) == (4, 3, False)
    # reference: ratio of resampled sums, questions sorted by name (a, b, c)
    counts = b.counts(3)
    ref = (counts @ np.array([0.6, 0.9, 0.5])) / (counts @ np.array([2.0, 1.0, 1.0]))
    assert (r.ci_low, r.ci_high) == pytest.approx(tuple(np.quantile(ref, [0.025, 0.975])))
    small = mean_with_ci(values, groups, bootstrap=b, min_pairs=30)
    assert small.small_sample and small.note == "small sample: 3 questions, 4 pairs (< 30 questions)"
    empty = mean_with_ci([], [], bootstrap=b)
    assert np.isnan(empty.mean) and empty.n_pairs == 0 and empty.as_dict()["mean"] is None
    nan_dropped = mean_with_ci([np.nan, 1.0], ["a", "b"], bootstrap=b)
    assert (nan_dropped.mean, nan_dropped.n_pairs) == (1.0, 1)
    d = difference_with_ci([0.9, 0.7], ["a", "b"], [0.5, 0.4], ["a", "c"], bootstrap=b)
    assert d["difference"] == pytest.approx(0.35) and d["ci_low"] <= d["ci_high"]


# ---------------------------------------------------------------------------------------------- localization
class _PeakedWeights:
    """A stand-in for enc: all weight on the token starting at the first occurrence of ``target``."""

    name = "fake_enc"
    extras = ("token_weights",)

    def __init__(self, target: dict[str, str]):
        self.target = target

    def token_weights(self, questions, answers, offsets):
        out = []
        for q, (answer,), (spans,) in zip(questions, answers, offsets, strict=True):
            start = answer.index(self.target[q])
            w = np.array([1.0 if s <= start < e else 0.0 for s, e in spans])
            out.append([w / w.sum()])
        return out


def test_localization_against_hand_computed_chance(questions):
    # greedy answers: "The capital of France is Paris." (6 words, "Paris." holds the mention -> 1/6)
    # and "Heath Ledger played the Joker." (5 words, 2 in the mention -> 2/5); question 3 is incorrect
    op = _PeakedWeights({ROWS[0][0]: "Paris", ROWS[1][0]: "Joker"})
    loc = localization(op, questions, bootstrap=Bootstrap(200), min_answers=30)
    assert (loc.n_answers, loc.n_eligible, loc.n_hits) == (2, 2, 1)
    assert loc.chance_rate.mean == pytest.approx((1 / 6 + 2 / 5) / 2)
    assert loc.hit_rate.mean == pytest.approx(0.5)
    assert loc.ratio == pytest.approx(0.5 / ((1 / 6 + 2 / 5) / 2))
    assert loc.hit_rate.small_sample
    assert hit_and_chance(np.array([[0, 2], [2, 2], [3, 5]]), np.array([0.1, 0.0, 0.9]), (3, 4)) == (
        True,
        1 / 3,
    )
    with pytest.raises(ValueError, match="token weights"):
        localization(object(), questions)
    with pytest.raises(ValueError, match="unknown token unit"):
        localization(op, questions, unit="words")


def test_localization_skips_answers_without_offsets_or_with_two_mentions(store):
    qs = load_questions(store)
    qs[0].doc.greedy.token_offsets = None
    qs[1].doc.greedy = Generation("Heath Ledger, yes, Heath Ledger.", greedy=True)
    loc = localization(_PeakedWeights({}), qs, bootstrap=Bootstrap(50))
    assert loc.n_answers == 0 and loc.n_eligible == 1
    assert loc.skipped == {
        "correct greedy answer without exactly one reference mention": 1,
        "no token offsets of the greedy answer (black-box run: use unit 'encoder')": 1,
    }


# ---------------------------------------------------------------------------------------------- diagnose
def test_diagnose_scores_every_pair_and_writes_the_report(store, tmp_path, tiny_st_encoder):  # noqa: F811
    from semuq_eval.operators import get

    enc = str(tiny_st_encoder)
    result = diagnose(
        store,
        operators="enc,cos_ext,lexical",
        operator_options={"enc": {"model": enc}, "cos_ext": {"model": enc}},
        bootstrap=200,
        progress=False,
    )
    assert list(result["operators"]) == ["enc", "cos_ext", "lexical"]
    ctx = result["traps"]["context"]
    assert ctx["n_pairs"] == 2 and ctx["info"]["sources"] == {"aligned": 2}
    # the lexical similarity of each pair is ROUGE-L F of its two answers, averaged
    lex = get("lexical")
    expected = np.mean(
        [
            lex(["q"], [["The capital of France is Paris.", "The capital of France is Lyon."]]).matrices[0][
                0, 1
            ],
            lex(["q"], [["Heath Ledger played the Joker.", "Jack Nicholson played the Joker."]]).matrices[0][
                0, 1
            ],
        ]
    )
    assert ctx["results"]["lexical"]["mean"] == pytest.approx(expected)
    # enc's pair similarity equals the cosine the operator gives the same two answers
    enc_op = get("enc", model=enc, progress=False)
    pair = enc_op([ROWS[0][0]], [["Paris", "It is Paris, the capital of France since 987."]]).matrices[0][
        0, 1
    ]
    ent = result["traps"]["entailment"]["results"]["enc"]
    assert ent["n_pairs"] == 2 and ent["small_sample"] and ent["note"].startswith("small sample")
    first = result["traps"]["entailment"]["examples"]["enc"][0]
    assert first["similarity"] == pytest.approx(pair, abs=1e-6)
    assert result["localization"]["enc"]["n_answers"] == 2
    assert "unavailable" in result["localization"]["lexical"]
    gap = result["clustering"]["gap"]["results"]["lexical"]
    inc = result["clustering"]["incorrect_equivalent"]["results"]["lexical"]["mean"]
    cor = result["clustering"]["correct_equivalent"]["results"]["lexical"]["mean"]
    assert gap["difference"] == pytest.approx(inc - cor)
    paths = write_report(result, tmp_path / "out")
    assert json.loads(paths["json"].read_text())["format"] == "semuq-diagnose/1"
    text = paths["markdown"].read_text()
    assert "| context trap |" in text and " ! |" in text  # small samples flagged
    assert paths["plot"].stat().st_size > 1000


def test_diagnose_named_variant_beside_its_operator(store):
    variant = {"lex_jaccard": {"operator": "lexical", "measure": "jaccard"}}
    result = diagnose(store, operators="lexical,lex_jaccard", operator_options=variant, progress=False)
    ood = result["traps"]["ood_syntax"]["results"]
    assert set(ood) == {"lexical", "lex_jaccard"}
    assert ood["lexical"]["mean"] != ood["lex_jaccard"]["mean"]


def test_paired_comparisons_are_the_difference_of_the_same_pairs(store, tmp_path, tiny_st_encoder):  # noqa: F811
    enc = str(tiny_st_encoder)
    options = {"enc": {"model": enc}, "enc_answer": {"operator": "enc", "model": enc, "pooling": "answer"}}
    result = diagnose(
        store,
        operators="enc,enc_answer,lexical",
        operator_options=options,
        bootstrap=200,
        progress=False,
        compare=[("enc_answer", "enc"), ("lexical", "enc")],
    )
    row = result["comparisons"]["enc_answer vs enc"]
    for trap, t in result["traps"].items():
        d = row[f"trap:{trap}"]
        if t["n_pairs"] == 0:
            assert d["difference"] is None and d["n_pairs"] == 0
            continue
        # every pair scored by both: the difference of the two means, with an interval around it
        expected = t["results"]["enc_answer"]["mean"] - t["results"]["enc"]["mean"]
        assert d["difference"] == pytest.approx(expected) and d["n_pairs"] == t["n_pairs"]
        assert d["ci_low"] <= d["difference"] + 1e-12 and d["difference"] - 1e-12 <= d["ci_high"]
    loc = row["localization"]
    hit_a = result["localization"]["enc_answer"]["hit_rate"]["mean"]
    hit_b = result["localization"]["enc"]["hit_rate"]["mean"]
    assert loc["n_answers"] == 2 and loc["difference"] == pytest.approx(hit_a - hit_b)
    assert "localization" not in result["comparisons"]["lexical vs enc"]  # lexical yields no token weights
    text = write_report(result, tmp_path / "out")["markdown"].read_text()
    assert "## Paired differences" in text and "`enc_answer vs enc`" in text
    table = text.split("## Paired differences")[1].split("## Examples")[0]
    assert " !" in table and " *" not in table  # 3 questions: small samples, flagged and never starred
    with pytest.raises(ValueError, match="not diagnosed"):
        diagnose(store, operators="lexical", compare=[("lexical", "enc")], progress=False)


def _without_run_details(result: dict) -> dict:
    return {k: v for k, v in result.items() if k not in ("created", "timing")}


def test_a_stopped_diagnosis_resumes_from_its_per_operator_checkpoints(
    store,
    tmp_path,
    tiny_st_encoder,  # noqa: F811
    monkeypatch,
    caplog,
):
    from semuq_eval.diagnose import diagnosis as module

    scored: list[str] = []
    real = module.score_diagnostics

    def counting(name, *args, **kwargs):
        scored.append(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(module, "score_diagnostics", counting)
    enc = str(tiny_st_encoder)
    kwargs = {
        "operator_options": {"enc": {"model": enc}},
        "bootstrap": 100,
        "progress": False,
        "compare": [("enc", "lexical")],
        "checkpoint": tmp_path / "ck",
    }
    first = diagnose(store, operators="enc,lexical", **kwargs)
    journal = tmp_path / "ck" / "diagnosis.jsonl"  # one entry per operator, in the folder's journal
    assert scored == ["enc", "lexical"] and [json.loads(x)["key"].split(":")[0] for x in journal.open()] == [
        "enc",
        "lexical",
    ]
    assert "resumed_from_checkpoint" not in first["timing"]
    plain = diagnose(store, operators="enc,lexical", **{**kwargs, "checkpoint": None})
    assert _without_run_details(plain) == _without_run_details(first)  # a checkpoint changes no figure
    scored.clear()
    again = diagnose(store, operators="enc,lexical", **kwargs)
    assert scored == [] and again["timing"]["resumed_from_checkpoint"] == ["enc", "lexical"]
    assert _without_run_details(again) == _without_run_details(first)  # localization and comparisons included
    assert again["timing"]["enc_s"] == first["timing"]["enc_s"]  # the time it took when measured
    enc_line, lexical_line = journal.read_text().splitlines()
    broken = json.loads(lexical_line)
    broken["value"]["sims"] = {"trap:context": "not base64 of floats!"}
    # killed while writing enc's entry (a line cut short), and an entry that does not decode
    journal.write_text(json.dumps(broken) + "\n" + enc_line[: len(enc_line) // 2])
    scored.clear()
    with caplog.at_level("WARNING"):
        resumed = diagnose(store, operators="enc,lexical", **kwargs)
    assert scored == ["enc", "lexical"] and "does not read" in caplog.text
    assert "unreadable journal line(s) of the diagnosis skipped" in caplog.text
    assert _without_run_details(resumed) == _without_run_details(first)
    scored.clear()
    diagnose(store, operators="enc,lexical", **{**kwargs, "bootstrap": 100, "seed": 1})  # other settings
    assert scored == ["enc", "lexical"]
    scored.clear()
    diagnose(
        store, operators="lexical", **{**kwargs, "operator_options": None, "compare": [], "max_questions": 2}
    )
    assert scored == ["lexical"]  # other questions
    run = Diagnosis.prepare(load_questions(store))
    lexical = resolve_operators("lexical")["lexical"]
    with pytest.raises(ValueError, match="token extras"):  # a read-back outcome has no docs to carry them
        run.measure("lexical", lexical, checkpoint=tmp_path / "ck", token_extras=["token_weights"])


def test_diagnose_computes_no_token_extra_it_does_not_read(store, tiny_st_encoder, monkeypatch):  # noqa: F811
    from semuq_eval.operators import encoder

    calls: list[str] = []
    for cls, extra in (
        (encoder._SentenceEncoderOperator, "token_similarity"),
        (encoder.EncoderOperator, "token_weights"),
    ):
        real = getattr(cls, extra)

        def counted(self, *args, _real=real, _extra=extra, **kwargs):
            calls.append(_extra)
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(cls, extra, counted)
    options = {"enc": {"model": str(tiny_st_encoder)}}
    diagnose(store, operators="enc", operator_options=options, bootstrap=50, progress=False)
    assert calls == ["token_weights"]  # localization's own call; no pair reads a token extra
    calls.clear()
    # docs handed out may feed any estimator: asked for, they carry every token extra
    run = Diagnosis.prepare(load_questions(store), bootstrap=Bootstrap(50))
    enc = resolve_operators("enc", options, progress=False)["enc"]
    docs = {"enc": run.measure("enc", enc, options["enc"], token_extras=signals.names(origin="tokens"))}
    assert sorted(calls) == ["token_similarity", "token_weights", "token_weights"]
    with_offsets = [d for d in docs["enc"] if d.greedy.token_offsets is not None]
    assert with_offsets and all("token_similarity" in d.extras["enc"] for d in with_offsets)
    calls.clear()  # check-operator: only the extras its tracked estimators read
    compute_values("enc", options["enc"], store, n_resamples=20, progress=False)  # kle_heat, cos, cae: none
    assert calls == ["token_weights"]
    calls.clear()
    compute_values("enc", options["enc"], store, estimators=["te_enc@enc"], n_resamples=20, progress=False)
    assert calls == ["token_weights", "token_weights"]


def test_checkpoints_tell_retrained_weights_apart(store, tmp_path, tiny_st_encoder):  # noqa: F811
    import shutil

    from semuq_eval import operators
    from semuq_eval.diagnose.checkpoint import fingerprint
    from semuq_eval.diagnose.diagnosis import build_pair_sets

    questions = load_questions(store)
    traps, groups = build_pair_sets(questions)
    pairs = {f"trap:{k}": v.pairs for k, v in {**traps, **groups}.items()}
    model = tmp_path / "enc"
    shutil.copytree(tiny_st_encoder, model)

    def key() -> str:  # a new process: the operator is built anew
        return fingerprint("enc", operators.get("enc", model=str(model)).info, {}, questions, pairs, {})

    before = key()
    assert key() == before
    weights = next(model.glob("*.safetensors"))
    weights.write_bytes(weights.read_bytes()[:-8] + b"retrain!")  # same path, other weights
    assert key() != before


def test_diagnose_bad_input(store, tmp_path):
    with pytest.raises(ValueError, match="unknown operator"):
        diagnose(store, operators="nope", progress=False)
    with pytest.raises(ValueError, match="not among the operators"):
        diagnose(store, operators="lexical", operator_options={"enc": {}}, progress=False)
    old = write_store(tmp_path / "old", sample_labels=False)
    with pytest.raises(NoSampleLabelsError, match="--judge string"):
        diagnose(old, operators="lexical", progress=False)
    from semuq_eval.judges import StringJudge

    result = diagnose(old, operators="lexical", judge=StringJudge(), progress=False, bootstrap=50)
    assert result["traps"]["ood_syntax"]["n_pairs"] == 2
    wrong = [(q, refs, g, 0, s, [0] * len(s)) for q, refs, g, _, s, _ in ROWS]
    with pytest.raises(ValueError, match="none of the 3 questions has a correct answer"):
        diagnose(write_store(tmp_path / "wrong", wrong), operators="lexical", progress=False)
    with pytest.raises(FileNotFoundError, match="not a semuq run store"):
        diagnose(tmp_path, operators="lexical", progress=False)


def test_cli_diagnose(store, tmp_path, capsys):
    out = tmp_path / "diag"
    code = cli_main(
        ["diagnose", str(store), "--operators", "lexical", "--output", str(out), "--bootstrap", "100"]
    )
    assert code == 0
    assert {p.name for p in out.iterdir()} == {"diagnosis.json", "diagnosis.md", "diagnosis.png"}
    assert "# Operator diagnosis" in capsys.readouterr().out
    stopped = tmp_path / "stopped"  # a run killed after its first operator left only its checkpoint folder
    diagnose(store, operators="lexical", bootstrap=100, progress=False, checkpoint=stopped / "checkpoint")
    argv = ["diagnose", str(store), "--operators", "lexical", "--output", str(stopped), "--bootstrap", "100"]
    assert cli_main(argv) == 0, capsys.readouterr().err
    assert {p.name for p in stopped.iterdir()} == {"diagnosis.json", "diagnosis.md", "diagnosis.png"}
    resumed = json.loads((stopped / "diagnosis.json").read_text())
    assert resumed["timing"]["resumed_from_checkpoint"] == ["lexical"]
    assert cli_main(["diagnose", str(store), "--operators", "bogus", "--output", str(out)]) == 2
    assert "unknown operator(s) ['bogus']" in capsys.readouterr().err
    old = write_store(tmp_path / "old", sample_labels=False)
    assert cli_main(["diagnose", str(old), "--operators", "lexical", "--output", str(out)]) == 2
    assert "per-sample labels" in capsys.readouterr().err
    assert cli_main(["diagnose", str(store), "--operator_options", "{bad", "--operators", "lexical"]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    for bad, message in (
        ("lexical", "give two diagnosed operators as A:B"),
        ("lexical:nope", "not diagnosed"),
    ):
        argv = ["diagnose", str(store), "--operators", "lexical", "--compare", bad, "--output", str(out)]
        assert cli_main(argv) == 2
        assert message in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------- check-operator
def test_operator_spec():
    assert operator_from_spec("lexical") == ("lexical", {})
    assert operator_from_spec("enc:/m", {"batch_size": 4}) == ("enc", {"model": "/m", "batch_size": 4})
    assert operator_from_spec("/some/folder") == ("enc", {"model": "/some/folder"})
    with pytest.raises(ValueError):
        operator_from_spec("")


def _baseline(tmp_path, store) -> Path:
    path = tmp_path / "baseline.json"
    code = cli_main(
        ["check-operator", "lexical", "--store", str(store), "--write-baseline", str(path), "--no_progress"]
    )
    assert code == 0
    return path


def test_check_operator_round_trip_and_regressions(store, tmp_path, capsys):
    path = _baseline(tmp_path, store)
    base = json.loads(path.read_text())
    figures = base["figures"]
    assert base["store_fingerprint"] == open_store(store).fingerprint()
    assert {"trap.context", "trap.autoregressive", "trap.entailment", "trap.ood_syntax"} <= set(figures)
    assert "auroc.kle_heat@lexical.greedy" in figures and "localization.hit_rate" not in figures
    assert figures["trap.context"]["better"] == "lower" and figures["trap.entailment"]["better"] == "higher"
    # the same operator on the same store: every figure identical
    assert (
        cli_main(
            ["check-operator", "lexical", "--store", str(store), "--baseline", str(path), "--no_progress"]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "OK: no tracked figure regressed" in out and "REGRESSED" not in out

    def tampered(**changes):
        b = json.loads(path.read_text())
        for key, delta in changes.items():
            b["figures"][key.replace("__", ".")]["value"] += delta
        p = tmp_path / "tampered.json"
        p.write_text(json.dumps(b))
        return p

    # context trap: lower is better; a baseline 0.1 lower means the current figure got worse by 0.1
    worse = tampered(trap__context=-0.1)
    assert (
        cli_main(
            ["check-operator", "lexical", "--store", str(store), "--baseline", str(worse), "--no_progress"]
        )
        == 1
    )
    out = capsys.readouterr().out
    assert "trap.context" in out and "REGRESSED" in out and "FAILED: 1 figure(s)" in out
    # within the tolerance: ok; a tighter tolerance fails it
    slight = tampered(trap__entailment=0.01)
    assert check_operator("lexical", slight, store=store, progress=False).ok
    report = check_operator("lexical", slight, store=store, tolerance=0.001, progress=False)
    assert not report.ok and [r.figure for r in report.regressions] == ["trap.entailment"]
    assert report.regressions[0].delta == pytest.approx(-0.01)
    # better by more than the tolerance: improved, still ok
    better = tampered(trap__ood_syntax=-0.2)
    report = check_operator("lexical", better, store=store, progress=False)
    assert report.ok and {r.figure: r.status for r in report.rows}["trap.ood_syntax"] == "improved"


def test_check_operator_missing_figures_other_store_and_bad_baselines(store, tmp_path, capsys):
    path = _baseline(tmp_path, store)
    b = json.loads(path.read_text())
    b["figures"]["localization.hit_rate"] = {"value": 0.5, "better": "higher"}  # lexical has no token weights
    missing = tmp_path / "missing.json"
    missing.write_text(json.dumps(b))
    report = check_operator("lexical", missing, store=store, progress=False)
    assert not report.ok and [(r.figure, r.status) for r in report.regressions] == [
        ("localization.hit_rate", "missing")
    ]
    other = write_store(tmp_path / "other", ROWS[:2] + [ROWS[2][:4] + (["Marlowe"], [0])])
    report = check_operator("lexical", path, store=other, progress=False)
    assert not report.ok and "another store" in report.problems[0]
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert cli_main(["check-operator", "lexical", "--store", str(store), "--baseline", str(bad)]) == 2
    assert "not an operator baseline" in capsys.readouterr().err
    for edit, field in (
        ({"value": "0.5"}, "figures.trap.ood_syntax.value: a finite number, or null"),
        (
            {"value": 0.5, "better": "up"},
            "figures.trap.ood_syntax.better: input should be 'higher' or 'lower'",
        ),
        ({"value": 0.5, "tolerance": -1}, "figures.trap.ood_syntax.tolerance"),
    ):
        damaged = json.loads(path.read_text())
        damaged["figures"]["trap.ood_syntax"] = edit
        bad.write_text(json.dumps(damaged))
        assert cli_main(["check-operator", "lexical", "--store", str(store), "--baseline", str(bad)]) == 2
        assert f"{bad}: field {field}" in capsys.readouterr().err
    assert (
        cli_main(
            ["check-operator", "lexical", "--store", str(store), "--baseline", str(tmp_path / "no.json")]
        )
        == 2
    )
    assert "record one with --write-baseline" in capsys.readouterr().err
    assert cli_main(["check-operator", "lexical", "--store", str(store)]) == 2
    with pytest.raises(ValueError, match="not valid with operator lexical"):
        check_operator("lexical", write_baseline=tmp_path / "x.json", store=store, estimators=["te_enc@enc"])


pytest_plugins = ["pytester"]


def test_pytest_plugin(store, tmp_path, pytester):
    path = _baseline(tmp_path, store)
    pytester.makeconftest('pytest_plugins = ["semuq_eval.diagnose.pytest_plugin"]')
    pytester.makepyfile(
        f"""
        def test_operator(semuq_check_operator):
            report = semuq_check_operator("lexical", baseline={str(path)!r}, store={str(store)!r})
            assert report.ok, report.summary()
        """
    )
    pytester.runpytest_inprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    new = tmp_path / "new.json"
    pytester.makepyfile(
        f"""
        def test_operator(semuq_check_operator):
            assert semuq_check_operator("lexical", baseline={str(new)!r}, store={str(store)!r}).ok
        """
    )
    pytester.runpytest_inprocess("--semuq-write-baseline").assert_outcomes(passed=1)
    assert json.loads(new.read_text())["format"] == "semuq-operator-baseline/1"


# ---------------------------------------------------------------------------------------------- freezing
def test_freeze_store_round_trip(store, tmp_path):
    dest = tmp_path / "frozen.jsonl.gz"
    frozen = freeze_store(store, dest, max_questions=2, source_name="hand-made")
    assert frozen["n_questions"] == 2 and frozen["source"] == "hand-made"
    record = read_record(dest)  # the one compact format: a run record that keeps its texts
    assert record["provenance"]["label_set"] == "run" and record["estimators"] == []
    a, b = load_questions(store)[:2], load_questions(dest)
    assert [(q.question, q.greedy, q.samples, q.sample_labels, q.greedy_label) for q in a] == [
        (q.question, q.greedy, q.samples, q.sample_labels, q.greedy_label) for q in b
    ]
    assert np.array_equal(a[0].greedy_offsets, b[0].greedy_offsets)
    assert set(record.questions[0]["texts"]) == {
        "question",
        "references",
        "greedy",
        "answers",
        "greedy_offsets",
    }
    freeze_store(store, tmp_path / "again.jsonl.gz", max_questions=2, source_name="hand-made")
    assert dest.read_bytes() == (tmp_path / "again.jsonl.gz").read_bytes()  # reproducible
    with pytest.raises(ValueError, match="per-sample verdicts"):
        freeze_store(write_store(tmp_path / "old", sample_labels=False), tmp_path / "f2.jsonl.gz")


def test_a_store_and_its_frozen_record_give_the_same_figures_and_accept_the_same_baseline(store, tmp_path):
    """The check on a frozen record measures what it measured on the store it was frozen from; a store frozen in
    the former format (a store folder with ``frozen`` provenance) converts to a record that a baseline recorded on
    the store still matches."""
    record = tmp_path / "frozen.jsonl.gz"
    freeze_store(store, record)
    on_store = check_operator("lexical", write_baseline=tmp_path / "s.json", store=store, progress=False)
    on_record = check_operator("lexical", write_baseline=tmp_path / "r.json", store=record, progress=False)
    assert on_store.figures == on_record.figures
    again = check_operator("lexical", tmp_path / "s.json", store=record, progress=False)
    assert not again.ok and "another store" in again.problems[0]  # a plain store: no alias
    former = tmp_path / "former"  # the former frozen format: a store folder whose manifest says it was frozen
    shutil.copytree(store, former)
    manifest = json.loads((former / "manifest.json").read_text())
    (former / "manifest.json").write_text(
        json.dumps({**manifest, "frozen": {"source": "a run", "label_set": "run"}})
    )
    check_operator("lexical", write_baseline=tmp_path / "f.json", store=former, progress=False)
    freeze_store(former, tmp_path / "converted.jsonl.gz")
    assert read_record(tmp_path / "converted.jsonl.gz")["provenance"]["source"] == "a run"
    converted = check_operator(
        "lexical", tmp_path / "f.json", store=tmp_path / "converted.jsonl.gz", progress=False
    )
    assert converted.ok and not converted.problems, converted.summary()


# ---------------------------------------------------------------------------------------------- real
@pytest.mark.real
def test_shipped_frozen_record_is_small_real_and_labelled():
    path = frozen_store_path()
    assert path.name.endswith(".jsonl.gz") and path.stat().st_size < 1_000_000
    qs = load_questions(path)
    assert len(qs) >= 200
    assert all(len(q.samples) == len(q.sample_labels) >= 10 for q in qs)
    assert sum(q.greedy_label == 1 for q in qs) >= 30 and sum(q.greedy_label == 0 for q in qs) >= 30
    assert sum(q.greedy_offsets is not None for q in qs) >= 200  # the generator's tokens, for localization
    # converted from the store shipped before: baselines recorded on it still match
    assert read_record(path)["provenance"]["former_store_fingerprint"] == (
        "14f26ebb361fc0f33fcf3cd511c5dcc6c79a9a14db1528ba72a806f59e750921"
    )


@pytest.mark.real
def test_check_operator_with_minilm_on_the_frozen_store(real_asset, tmp_path):
    model = str(real_asset("all-minilm-l6-v2"))
    baseline = tmp_path / "minilm.json"
    report = check_operator(model, write_baseline=baseline, max_questions=120, progress=False)
    figures = report.figures
    assert figures["localization.hit_rate"]["n"] >= 10
    assert 0.5 < figures["auroc.kle_heat@enc.greedy"]["value"] < 1.0
    # the same model again (on the baseline's 120 questions): nothing moves
    again = check_operator(model, baseline, progress=False)
    assert json.loads(baseline.read_text())["max_questions"] == 120
    assert again.ok and all(r.status == "ok" for r in again.rows)
    assert os.path.getsize(baseline) > 0


def test_an_operator_that_cannot_run_is_reported_and_the_others_run(store, tmp_path, capsys):
    result = diagnose(
        store,
        operators="cos_int,lexical",  # a frozen-like store keeps no hidden states
        bootstrap=50,
        progress=False,
    )
    assert "hidden states" in result["unavailable"]["cos_int"]
    assert "cos_int" not in result["traps"]["entailment"]["results"]
    assert result["traps"]["entailment"]["results"]["lexical"]["n_pairs"] == 2
    text = write_report(result, tmp_path / "r")["markdown"].read_text()
    assert "Operator `cos_int` is unavailable" in text
    code = cli_main(
        ["check-operator", "cos_int", "--store", str(store), "--write-baseline", str(tmp_path / "b.json")]
    )
    assert code == 2 and "cos_int is unavailable" in capsys.readouterr().err


def test_localization_on_encoder_tokens(questions, tiny_st_encoder):  # noqa: F811
    from semuq_eval.operators import get

    op = get("enc", model=str(tiny_st_encoder), progress=False)
    loc = localization(op, questions, unit="encoder", bootstrap=Bootstrap(50))
    assert loc.n_answers == 2
    # independently: the argmax of the encoder's own token norms, against the mention's characters
    hits, chances = [], []
    batch = op.token_norms([q.question for q in questions[:2]], [[q.greedy] for q in questions[:2]])
    for q, (norms,) in zip(questions[:2], batch, strict=True):
        mention = alias_spans(q.greedy, q.references)[0]
        inside = (norms.spans[:, 0] < mention.end) & (norms.spans[:, 1] > mention.start)
        hits.append(inside[int(np.argmax(norms.norms))])
        chances.append(inside.mean())
    assert loc.n_hits == sum(hits) and loc.chance_rate.mean == pytest.approx(np.mean(chances))


def test_cli_llm_rewrite_needs_a_server(store, tmp_path, capsys):
    code = cli_main(
        [
            "diagnose",
            str(store),
            "--operators",
            "lexical",
            "--rewrite",
            "llm",
            "--output",
            str(tmp_path / "out"),
        ]
    )
    assert code == 2 and "base_url" in capsys.readouterr().err


def test_clustering_cap_bounds_the_judged_pairs(questions):
    calls = []

    class CountingJudge:
        name = "counting"
        info = {"judge": "counting"}

        def batch(self, qs, answers, refs):
            calls.append(len(answers))
            return [False] * len(answers)

    groups = clustering_pairs(questions, judge=CountingJudge(), max_pairs_per_question=1)
    # one candidate per question and class: q0 incorrect + correct, q1 incorrect + correct, q2 incorrect
    assert calls == [2 * 5]
    assert len(groups["incorrect_different"].pairs) == 3 and not groups["correct_equivalent"].pairs


def test_check_operator_reads_unchanged_figures_back_from_its_cache(store, tmp_path, monkeypatch):
    """A second check of the same weights on the same store reads the figures back; other weights, another store
    or a damaged copy compute them."""
    from semuq_eval.diagnose import value_cache

    cache = tmp_path / "cache"
    path = tmp_path / "base.json"
    first = check_operator("lexical", write_baseline=path, store=store, progress=False, cache=cache)
    (kept,) = cache.glob("*.json")
    computed = []
    original = value_cache.compute_values
    monkeypatch.setattr(
        value_cache, "compute_values", lambda *a, **k: computed.append(a) or original(*a, **k)
    )
    again = check_operator("lexical", path, store=store, progress=False, cache=cache)
    assert computed == [] and again.ok and again.figures == first.figures
    assert {r.status for r in again.rows} == {"ok"}
    kept.write_text("{not json")  # a damaged copy: computed again and replaced
    assert check_operator("lexical", path, store=store, progress=False, cache=cache).ok and len(computed) == 1
    assert json.loads(kept.read_text())["figures"] == first.figures
    check_operator("lexical", path, store=store, progress=False, cache=False)
    assert len(computed) == 2 and len(list(cache.glob("*.json"))) == 1
    other = tmp_path / "other"
    shutil.copytree(store, other)
    (other / "scores.jsonl").write_text(
        (other / "scores.jsonl").read_text().replace('"greedy": 1', '"greedy": 0', 1)
    )
    check_operator("lexical", write_baseline=tmp_path / "b2.json", store=other, progress=False, cache=cache)
    assert len(computed) == 3 and len(list(cache.glob("*.json"))) == 2


def test_a_cache_that_cannot_be_written_costs_time_not_the_check(store, tmp_path, caplog):
    """--cache naming a file: the figures are computed, the check answers, one warning names the folder."""
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    path = tmp_path / "base.json"
    with caplog.at_level("WARNING", logger="semuq_eval.diagnose.value_cache"):
        report = check_operator("lexical", write_baseline=path, store=store, progress=False, cache=blocked)
    assert report.ok and path.is_file() and blocked.read_text() == "not a folder"
    (warning,) = [r.message for r in caplog.records if "not kept in the cache" in r.message]
    assert str(blocked) in warning
