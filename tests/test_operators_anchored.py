"""Greedy-anchored comparisons (issue 23): every text operator compares the greedy answer with each sample in
the same pass, and the harness hands them, by declaration, to the aggregators that read them."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from semuq_eval import aggregators as A
from semuq_eval.harness import Doc, score_doc, valid_estimators
from semuq_eval.harness.operator_runs import compute_operators, operator_spec
from semuq_eval.models.generation import Generation
from semuq_eval.operators import get
from semuq_eval.operators.sharing import compute_shared
from semuq_eval.signals import SIGNALS
from tests.fixtures.tiny_encoders import (  # noqa: F401  (pytest fixtures)
    tiny_nli,
    tiny_st_encoder,
    tiny_wordpiece_dir,
)

QUESTIONS = ["Who wrote the book The Origin of Species?", "What is the capital of France?"]
ANSWERS = [
    ["Charles Darwin", "It was Charles Darwin.", "charles   darwin ", "Alfred Wallace wrote it.", ""],
    ["Paris", "It is Paris.", "Madrid"],
]
GREEDY = ["It was Charles Darwin", "  paris "]  # new text; a duplicate of a sample after normalization


def test_lexical_anchored_equals_a_direct_computation():
    op = get("lexical", measure="jaccard")
    out = op(QUESTIONS, ANSWERS, anchors=GREEDY)
    plain = op(QUESTIONS, ANSWERS)
    for b, (group, anchor) in enumerate(zip(ANSWERS, GREEDY, strict=True)):
        words = [set(re.findall(r"\w+", a.casefold())) for a in group]
        mine = set(re.findall(r"\w+", anchor.casefold()))
        direct = [len(mine & w) / len(mine | w) if w else 0.0 for w in words]
        np.testing.assert_allclose(out.anchored[b], direct, atol=1e-12)
        np.testing.assert_array_equal(out.matrices[b], plain.matrices[b])  # S itself is unchanged
    # N more pairs at most, deduplicated: 3 distinct answers + a new anchor -> 3 more; "paris" is a duplicate
    assert out.cost.pairs_scored == plain.cost.pairs_scored + 3
    assert out.cost.duplicates_skipped == plain.cost.duplicates_skipped + 1


def test_empty_anchor_and_no_answers():
    out = get("lexical")(["q", "r"], [["a", ""], []], anchors=["", "x"])
    np.testing.assert_array_equal(out.anchored[0], [0.0, 1.0])  # empty: 1 with empty answers, 0 otherwise
    assert out.anchored[1].shape == (0,) and out.matrices[1].shape == (0, 0)


def test_encoders_one_more_forward_pass_and_dot_products(tiny_st_encoder):  # noqa: F811
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(tiny_st_encoder), device="cpu")
    op = get("cos_ext", model=tiny_st_encoder, progress=False)
    question, answers = QUESTIONS[1], ANSWERS[1]
    out = op([question], [answers], anchors=["The capital is Paris"])
    phi = model.encode([*answers, "The capital is Paris"], normalize_embeddings=True).astype(np.float64)
    np.testing.assert_allclose(out.anchored[0], phi[:-1] @ phi[-1], atol=1e-5)
    np.testing.assert_allclose(out.matrices[0], phi[:-1] @ phi[:-1].T, atol=1e-5)
    assert out.cost.forward_passes == len(answers) + 1
    duplicate = op([question], [answers], anchors=[GREEDY[1]])  # "paris" is a sample: no extra pass
    assert duplicate.cost.forward_passes == len(answers) and duplicate.anchored[0][0] == 1.0
    enc = get("enc", model=tiny_st_encoder, progress=False)
    anchored = enc([question], [answers], anchors=["The capital is Paris"])
    texts = [f"{question} [SEP] {a}" for a in [*answers, "The capital is Paris"]]
    phi = model.encode(texts, normalize_embeddings=True).astype(np.float64)
    np.testing.assert_allclose(anchored.anchored[0], phi[:-1] @ phi[-1], atol=1e-5)


def test_nli_shares_one_pass_with_the_anchors(tiny_nli):  # noqa: F811
    ops = [get(name, model=tiny_nli(), progress=False) for name in ("nli", "nli_soft")]
    out = compute_shared(ops, QUESTIONS, ANSWERS, anchors=GREEDY)
    plain = compute_shared(ops, QUESTIONS, ANSWERS)
    joined = compute_shared(ops, QUESTIONS, [[*g, a] for g, a in zip(ANSWERS, GREEDY, strict=True)])
    for o, p, j in zip(out, plain, joined, strict=True):
        for b in range(len(QUESTIONS)):
            np.testing.assert_allclose(o.matrices[b], p.matrices[b], atol=1e-6)
            np.testing.assert_allclose(o.anchored[b], j.matrices[b][-1, :-1].astype(float), atol=1e-6)
            assert o.anchored[b].dtype == np.float64
    # ordered pairs: 2 per unordered pair, 3 more unordered pairs for the new anchor, none for "paris"
    assert out[0].cost.forward_passes == plain[0].cost.forward_passes + 2 * 3
    assert out[1].cost.forward_passes == 0 and out[1].info["shared_pass"] == "nli"


def test_anchors_are_checked():
    with pytest.raises(ValueError, match="one str per question"):
        get("lexical")(QUESTIONS, ANSWERS, anchors=["only one"])
    with pytest.raises(TypeError, match="must be a str"):
        get("lexical")(QUESTIONS, ANSWERS, anchors=["a", None])
    from semuq_eval.operators.hidden import HiddenStateCosineOperator

    class Undeclared(HiddenStateCosineOperator):
        extras = ()

    with pytest.raises(ValueError, match="do not declare greedy_similarities"):
        Undeclared()(["q"], [["a", "b"]], hidden_states=[np.eye(2)], anchors=["a"])
    with pytest.raises(ValueError, match="compare an anchor by its hidden state"):
        get("cos_int")(["q"], [["a", "b"]], hidden_states=[np.eye(2)], anchors=["a"])
    with pytest.raises(ValueError, match="pass anchors too"):
        get("cos_int")(["q"], [["a", "b"]], hidden_states=[np.eye(2)], anchor_hidden_states=[np.ones(2)])


def test_declared_by_every_text_operator():
    assert SIGNALS["greedy_similarities"].origin == "pass"
    for name in ("nli", "nli_soft", "cos_ext", "enc", "lexical"):
        assert "greedy_similarities" in operator_spec(name).extras, name
    assert operator_spec("enc").extras == ("token_weights", "greedy_similarities", "token_similarity")
    assert operator_spec("cos_ext").extras == (
        "greedy_similarities",
        "token_similarity",
    )  # TokenSAR's relevance
    assert operator_spec("cos_int").extras == ("greedy_similarities",)  # by the greedy answer's hidden state


def test_estimators_follow_the_declaration_not_the_name():
    from semuq_eval.harness import OperatorSpec

    names = {
        e.name
        for e in valid_estimators(
            {"mine": OperatorSpec("graded", ("greedy_similarities",)), "cos_int": OperatorSpec("gram")}
        )
    }
    assert {
        "consistency@mine",
        "cocoa@mine",
        "semantic_density@mine",
        "sentence_sar@mine",
        "snne@mine",
    } <= names
    assert {"eigenscore@cos_int", "sentence_sar@cos_int", "snne@cos_int"} <= names
    assert "eigenscore@mine" not in names and "consistency@cos_int" not in names


def _doc(i: int, greedy: str, samples: list[str]) -> Doc:
    gens = [Generation(s, token_ids=[1] * (i + 1), seq_logprob=-0.5 * (k + 1)) for k, s in enumerate(samples)]
    return Doc(i, f"q{i}", ["a"], Generation(greedy, token_logprobs=[-0.5, -0.5], greedy=True), gens)


def test_the_harness_fills_greedy_similarities_and_scores_them():
    docs = [_doc(0, "a b", ["a b", "a c", "d"]), _doc(1, "x", []), _doc(2, "p q", ["p", "p q"])]
    runs = compute_operators(docs, ["lexical", "cos_int"], {"lexical": {"measure": "jaccard"}})
    assert (
        runs["lexical"].cost["pairs_scored"] == 3 + 1
    )  # doc 0: 3 pairs, no new anchor; doc 2: "p" vs greedy
    np.testing.assert_allclose(docs[0].extras["lexical"]["greedy_similarities"], [1.0, 1 / 3, 0.0])
    np.testing.assert_allclose(docs[2].extras["lexical"]["greedy_similarities"], [0.5, 1.0])
    assert "lexical" not in docs[1].extras and "cos_int" not in docs[0].extras
    est = valid_estimators(
        {name: operator_spec(name) for name in ("lexical", "cos_int")},
        ["consistency", "cocoa", "semantic_density", "sentence_sar", "snne", "eigenscore"],
    )
    scores, reasons = score_doc(docs[0], est, aggregator_options={"snne": {"temperature": 0.5}})
    sims = docs[0].extras["lexical"]["greedy_similarities"]
    assert scores["consistency@lexical"] == pytest.approx(A.consistency(sims))
    assert scores["cocoa@lexical"] == pytest.approx((1 - np.mean(sims)) * 1.0)
    lp = np.array([-0.5, -1.0, -1.5])
    assert scores["semantic_density@lexical"] == pytest.approx(
        A.semantic_density(sims, lp, [1, 1, 1], [-0.5, -0.5])
    )
    S = docs[0].matrices["lexical"]
    assert scores["sentence_sar@lexical"] == pytest.approx(A.sentence_sar(S, lp))
    assert scores["snne@lexical"] == pytest.approx(A.snne(S, temperature=0.5))
    assert math.isnan(scores["eigenscore@cos_int"]) and "hidden states" in reasons["eigenscore@cos_int"]
    # a black-box model: no log-probabilities, the estimators that need them are unavailable, never zero
    black = Doc(3, "q", ["a"], Generation("a"), [Generation("a"), Generation("b")])
    compute_operators([black], ["lexical"])
    scores, reasons = score_doc(black, est)
    assert scores["consistency@lexical"] == pytest.approx(0.5)
    assert math.isnan(scores["cocoa@lexical"]) and "black-box" in reasons["cocoa@lexical"]
    assert (
        math.isnan(scores["semantic_density@lexical"]) and "black-box" in reasons["semantic_density@lexical"]
    )
    # NaN sample log-probabilities: unavailable with the reason
    nan = _doc(4, "a", ["a", "b"])
    nan.samples[1] = Generation("b", token_ids=[1], seq_logprob=float("nan"))
    compute_operators([nan], ["lexical"])
    scores, reasons = score_doc(nan, est)
    assert math.isnan(scores["sentence_sar@lexical"]) and "NaN" in reasons["sentence_sar@lexical"]


def test_token_sar_reads_the_operators_token_similarity_computed_only_when_read(tiny_st_encoder, monkeypatch):  # noqa: F811
    from semuq_eval.harness import Settings, process_docs
    from semuq_eval.harness.operator_runs import get_operator
    from semuq_eval.judges import get as get_judge

    options = {"cos_ext": {"model": str(tiny_st_encoder), "progress": False}}
    lp = [-0.5, -1.0, -0.2]

    def docs() -> list[Doc]:
        samples = [Generation(a) for a in ANSWERS[0][:3]]
        white = Generation(
            "It was Darwin", token_logprobs=lp, token_offsets=[[0, 2], [2, 6], [6, 13]], greedy=True
        )
        no_offsets = Generation("It was Darwin", token_logprobs=lp, greedy=True)  # a server without offsets
        return [
            Doc(0, QUESTIONS[0], ["Darwin"], white, samples),
            Doc(1, QUESTIONS[0], ["Darwin"], no_offsets, samples),
        ]

    white, no_offsets = docs()
    compute_operators([white, no_offsets], ["cos_ext"], options, token_extras=["token_similarity"])
    sims = white.extras["cos_ext"]["token_similarity"]
    op = get_operator("cos_ext", options["cos_ext"])
    expected = op.token_similarity([white.question], [[white.greedy.text]], [[white.greedy.token_offsets]])[
        0
    ][0]
    np.testing.assert_allclose(sims, expected)
    est = valid_estimators({"cos_ext": operator_spec("cos_ext")}, ["token_sar"])
    scores, _ = score_doc(white, est)
    assert scores["token_sar@cos_ext"] == pytest.approx(A.token_sar(lp, sims))
    scores, reasons = score_doc(no_offsets, est)
    assert math.isnan(scores["token_sar@cos_ext"]) and "token offsets" in reasons["token_sar@cos_ext"]
    # a run that reads no token similarity never computes one; one that does, scores it
    monkeypatch.setattr(type(op), "token_similarity", lambda *a, **k: pytest.fail("computed but not read"))
    settings = Settings(n_samples=3, operators=("cos_ext",), operator_options=options, aggregators=("cos",))
    out = process_docs(docs(), settings, judge=get_judge("string"))
    assert [e.name for e in out.estimators] == ["cos@cos_ext"]
    monkeypatch.undo()
    settings = Settings(
        n_samples=3, operators=("cos_ext",), operator_options=options, aggregators=("token_sar",)
    )
    out = process_docs(docs(), settings, judge=get_judge("string"))
    assert out.items[0]["scores"]["token_sar@cos_ext"] == pytest.approx(A.token_sar(lp, sims))


def test_cos_int_compares_the_greedy_answer_by_its_hidden_state():
    rng = np.random.default_rng(0)
    h, g = rng.normal(size=(3, 4)), rng.normal(size=4)
    out = get("cos_int")(["q"], [["a", "b", "c"]], hidden_states=[h], anchors=["g"], anchor_hidden_states=[g])
    unit = h / np.linalg.norm(h, axis=1, keepdims=True)
    np.testing.assert_allclose(out.anchored[0], unit @ (g / np.linalg.norm(g)), atol=1e-12)
    np.testing.assert_allclose(out.matrices[0], unit @ unit.T, atol=1e-12)
    # in a run: the greedy answer's own hidden state when the model gave one; otherwise the extra is unavailable
    samples = [Generation(t, hidden=v) for t, v in zip(["a", "b", "c"], h, strict=True)]
    with_state = Doc(0, "q", ["a"], Generation("g", hidden=g, greedy=True), samples)
    without = Doc(1, "q", ["a"], Generation("g", greedy=True), samples)
    wrong_size = Doc(2, "q", ["a"], Generation("g", hidden=np.ones(3), greedy=True), samples)
    compute_operators([with_state, without, wrong_size], ["cos_int"])
    np.testing.assert_allclose(
        with_state.extras["cos_int"]["greedy_similarities"], out.anchored[0], atol=1e-12
    )
    est = valid_estimators({"cos_int": operator_spec("cos_int")}, ["consistency", "cos"])
    assert score_doc(with_state, est)[0]["consistency@cos_int"] == pytest.approx(
        A.consistency(out.anchored[0])
    )
    for doc in (without, wrong_size):
        np.testing.assert_allclose(doc.matrices["cos_int"], unit @ unit.T, atol=1e-12)  # S is unaffected
        scores, reasons = score_doc(doc, est)
        assert (
            math.isnan(scores["consistency@cos_int"])
            and "hidden state for the greedy" in reasons["consistency@cos_int"]
        )
