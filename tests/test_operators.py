"""Operators: the shared contract (shapes, symmetry, diagonal, dedup, batching, bad input), NLI,
lexical and cos_int. Models are tiny random-weights ones built in fixtures, never downloaded."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from semuq_eval.operators import get, names, normalize_answer, registry
from semuq_eval.operators.nli import RULES
from tests.fixtures.tiny_encoders import (  # noqa: F401  (pytest fixtures)
    LABELS,
    tiny_nli,
    tiny_st_encoder,
    tiny_wordpiece_dir,
)

ROOT = Path(__file__).resolve().parents[1]

QUESTIONS = [
    "Who wrote the book The Origin of Species?",
    "What is the capital of France?",
    "Who played the Joker?",
]
ANSWERS = [
    [
        "Charles Darwin",
        "It was Charles Darwin.",
        "charles   darwin ",
        "Alfred Wallace wrote it.",
        "",
        "Charles Darwin",
    ],
    ["Paris", "It is Paris.", "Madrid", "  ", "I am not sure, maybe Berlin.", "Rome is in Italy."],
    ["Heath Ledger"],
]
TEXT_OPERATORS = ["nli", "nli_soft", "cos_ext", "enc", "lexical"]
KINDS = {
    "nli": "equivalence",
    "nli_soft": "graded",
    "cos_ext": "gram",
    "cos_int": "gram",
    "enc": "gram",
    "lexical": "graded",
}


@pytest.fixture(scope="module")
def make(tiny_nli, tiny_st_encoder):  # noqa: F811
    """name, **options -> an operator on the tiny models (progress bars off)."""

    def build(name: str, **options):
        if name in ("nli", "nli_soft"):
            return get(name, model=options.pop("model", tiny_nli()), progress=False, **options)
        if name in ("cos_ext", "enc"):
            return get(name, model=tiny_st_encoder, progress=False, **options)
        return get(name, **options)

    return build


def hidden_for(answers: list[list[str]], dim: int = 8) -> list[np.ndarray]:
    """Deterministic fake hidden states, one row per answer (identical text -> identical row)."""
    out = []
    for group in answers:
        rows = [np.random.default_rng(sum(map(ord, a)) + 1).normal(size=dim) for a in group]
        out.append(np.array(rows).reshape(len(group), dim))
    return out


# ---------------------------------------------------------------- registry


@pytest.mark.subprocess
def test_importing_the_package_loads_no_model_library():
    code = (
        "import sys, semuq_eval.operators as o; o.names(); "
        "print(*[m in sys.modules for m in ('torch', 'transformers', 'sentence_transformers')])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.split() == ["False", "False", "False"]


def test_registry_names_and_kinds():
    assert names() == sorted(KINDS)
    for name, kind in KINDS.items():
        cls = registry.get(name)
        assert (registry.name_of(cls), cls.kind) == (name, kind)
        assert "name" not in vars(cls)  # named once, by its registration
    with pytest.raises(KeyError, match="Unknown operator 'nope'"):
        get("nope")


def test_get_validates_options():
    assert get("lexical", measure="jaccard").measure == "jaccard"
    with pytest.raises(ValueError, match="unknown NLI rule"):
        get("nli", rule="majority")
    with pytest.raises(ValueError, match="unknown lexical measure"):
        get("lexical", measure="bleu")
    with pytest.raises(TypeError):
        get("lexical", colour="red")
    # model-backed operators (shared ModelTextOperator options): lazy, so nothing is loaded here
    assert get("nli", model="some/nli", device="cpu").dtype == "float32"
    with pytest.raises(ValueError, match="max_length must be at least 8"):
        get("nli", max_length=4)
    with pytest.raises(ValueError, match="max_length must be at least 4"):
        get("cos_ext", max_length=2)
    with pytest.raises(ValueError, match="pass tokenizer="):
        get("nli_soft", model=object())
    # one declaration of the model options: each family's batch size, an unknown option refused by name
    assert [get(n, model="some/m").batch_size for n in ("nli", "nli_soft", "cos_ext", "enc")] == [
        64,
        64,
        32,
        32,
    ]
    assert get("enc", model="some/m", batch_size=5, progress=False).batch_size == 5
    for name in ("nli", "enc"):
        with pytest.raises(TypeError, match="colour"):
            get(name, model="some/m", colour="red")


def test_auto_dtype_keeps_t5_out_of_float16(make):
    from semuq_eval.operators.loading import auto_dtype, resolve_dtype

    assert resolve_dtype("auto", "cpu") == "float32" and resolve_dtype("auto", "cuda") == "auto"
    assert auto_dtype("deberta-v2", "cuda") == "float16"
    for t5 in ("t5", "mt5", "umt5"):  # sentence-t5 overflows in float16
        assert auto_dtype(t5, "cuda", bf16_supported=True) == "bfloat16"
        assert auto_dtype(t5, "cuda", bf16_supported=False) == "float32"
    assert auto_dtype("t5", "cpu") == "float32"
    op = make("enc")
    op(["q"], [["a", "b"]])
    assert op.info["dtype"] == "float32"  # the dtype the loaded model computes in


# ---------------------------------------------------------------- the shared contract


@pytest.mark.parametrize("name", TEXT_OPERATORS)
def test_matrix_contract(make, name):
    op = make(name)
    out = op(QUESTIONS, ANSWERS)
    assert len(out.matrices) == len(QUESTIONS)
    for S, group in zip(out.matrices, ANSWERS, strict=True):
        n = len(group)
        assert S.shape == (n, n)
        assert S.dtype == (bool if op.kind == "equivalence" else np.float64)
        assert np.array_equal(S, S.T)
        assert np.all(np.diag(S) == 1)
        values = S.astype(float)
        assert np.all(np.isfinite(values))
        low = -1.0 if op.kind == "gram" else 0.0
        assert values.min() >= low and values.max() <= 1.0
        if op.kind == "gram":
            assert np.linalg.eigvalsh(values).min() > -1e-9
        keys = [normalize_answer(a) for a in group]
        for i in range(n):
            for j in range(n):
                if keys[i] == keys[j]:  # duplicates (and two empty answers) are equivalent
                    assert values[i, j] == 1.0
                elif keys[i] == "" or keys[j] == "":  # an empty answer agrees with nothing else
                    assert values[i, j] == 0.0
    assert out.info["operator"] == name and out.info["kind"] == KINDS[name]
    assert out.cost.duplicates_skipped == 2  # "charles   darwin " and the second "Charles Darwin"
    assert out.cost.pairs_scored == 3 + 10 + 0  # 3 and 5 distinct non-empty answers, then N = 1
    assert out.cost.wall_time_s > 0


@pytest.mark.parametrize("name", TEXT_OPERATORS)
def test_dedup_gives_the_matrix_of_no_dedup(make, name):
    fast, slow = make(name), make(name, dedup=False)
    a, b = fast(QUESTIONS, ANSWERS), slow(QUESTIONS, ANSWERS)
    for Sa, Sb, group in zip(a.matrices, b.matrices, ANSWERS, strict=True):
        keys = np.array([normalize_answer(x) for x in group])
        compared = keys[:, None] != keys[None, :]
        if name in ("nli", "nli_soft"):  # a cross-encoder may not call an answer equivalent to itself
            np.testing.assert_allclose(Sa[compared].astype(float), Sb[compared].astype(float), atol=1e-6)
        else:
            np.testing.assert_allclose(Sa, Sb, atol=1e-6)
    assert b.cost.duplicates_skipped == 0
    assert b.cost.pairs_scored > a.cost.pairs_scored
    if name != "lexical":
        assert b.cost.forward_passes > a.cost.forward_passes > 0


@pytest.mark.parametrize("name", TEXT_OPERATORS)
def test_batching_over_questions_gives_the_matrices_of_one_at_a_time(make, name):
    op = make(name, batch_size=3) if name != "lexical" else make(name)
    together = op(QUESTIONS, ANSWERS)
    alone = [op([q], [group]) for q, group in zip(QUESTIONS, ANSWERS, strict=True)]
    for S, single in zip(together.matrices, alone, strict=True):
        np.testing.assert_allclose(S.astype(float), single.matrices[0].astype(float), atol=1e-5)
    assert together.cost.forward_passes == sum(s.cost.forward_passes for s in alone)


@pytest.mark.parametrize("name", TEXT_OPERATORS)
def test_degenerate_questions_get_defined_values(make, name):
    op = make(name)
    out = op(["q1", "q2", "q3", "q4"], [["Paris"], [], ["", "   ", "\n"], ["Paris", "Paris", "PARIS"]])
    one, none, empties, same = (S.astype(float) for S in out.matrices)
    assert one.tolist() == [[1.0]]
    assert none.shape == (0, 0)
    assert np.all(empties == 1.0) and np.all(same == 1.0)
    assert out.cost.pairs_scored == 0 and out.cost.forward_passes == 0


def test_bad_input_names_the_question(make):
    op = make("lexical")
    with pytest.raises(TypeError, match=r"question 1 \('q2'\): answer 1 must be a str, got NoneType"):
        op(["q1", "q2"], [["a"], ["b", None]])
    with pytest.raises(TypeError, match=r"question 0 .*answers must be a sequence of str, got str"):
        op(["q1"], ["Paris"])
    with pytest.raises(TypeError, match="question 0 .*question must be a str"):
        op([7], [["a"]])
    with pytest.raises(TypeError, match="questions must be a sequence"):
        op("q1", [["a"]])
    with pytest.raises(ValueError, match="2 questions but 1 answer lists"):
        op(["q1", "q2"], [["a"]])


# ---------------------------------------------------------------- NLI


def test_nli_reads_the_label_order_from_id2label(make, tiny_nli):  # noqa: F811
    flipped = ("contradiction", "neutral", "entailment")
    for name in ("nli", "nli_soft"):
        ref = make(name)(QUESTIONS, ANSWERS)
        other = make(name, model=tiny_nli(flipped))(QUESTIONS, ANSWERS)
        assert other.info["id2label"] == dict(enumerate(flipped))
        for S, T in zip(ref.matrices, other.matrices, strict=True):
            np.testing.assert_allclose(S.astype(float), T.astype(float), atol=1e-6)


def test_nli_rules_differ_and_nest(make):
    by_rule = {rule: make("nli", rule=rule)(QUESTIONS, ANSWERS) for rule in RULES}
    for rule, out in by_rule.items():
        assert out.info["rule"] == rule
    strict = np.concatenate([S.ravel() for S in by_rule["bidirectional_entailment"].matrices])
    either = np.concatenate([S.ravel() for S in by_rule["either_entailment"].matrices])
    lenient = np.concatenate([S.ravel() for S in by_rule["no_contradiction"].matrices])
    # entailment both ways implies entailment one way, and no contradiction
    assert np.all(either >= strict) and np.all(lenient >= strict)
    # the rules matter: the tiny model predicts varied labels
    assert len({strict.tobytes(), either.tobytes(), lenient.tobytes()}) == 3


def test_nli_question_conditioning_and_cost(make):
    op = make("nli")
    out = op(QUESTIONS[:2], ANSWERS[:2])
    assert out.cost.forward_passes == 2 * out.cost.pairs_scored == 3 * 2 + 5 * 4
    no_q = make("nli_soft", condition_on_question=False)(QUESTIONS[:2], ANSWERS[:2])
    with_q = make("nli_soft")(QUESTIONS[:2], ANSWERS[:2])
    assert no_q.info["question_conditioned"] is False
    assert not np.allclose(no_q.matrices[1], with_q.matrices[1])


def test_nli_and_nli_soft_share_one_cross_encoder_pass(make):
    from semuq_eval.operators.sharing import compute_shared, share_groups

    hard, soft, other = make("nli"), make("nli_soft"), make("nli_soft", condition_on_question=False)
    assert hard.share_key() == soft.share_key() != other.share_key()
    assert [len(g) for g in share_groups([hard, soft, other])] == [2, 1]
    shared_hard, shared_soft = compute_shared([hard, soft], QUESTIONS, ANSWERS)
    alone_hard, alone_soft = hard(QUESTIONS, ANSWERS), soft(QUESTIONS, ANSWERS)
    for shared, alone in ((shared_hard, alone_hard), (shared_soft, alone_soft)):
        for a, b in zip(shared.matrices, alone.matrices, strict=True):
            np.testing.assert_array_equal(a, b)
    # the N(N-1) pairs ran once: nli_soft derived its matrices from nli's pass
    assert shared_hard.cost.forward_passes == alone_hard.cost.forward_passes > 0
    assert shared_soft.cost.forward_passes == 0
    assert shared_soft.info["shared_pass"] == "nli"
    with pytest.raises(ValueError, match="do not share a pass"):
        compute_shared([hard, other], QUESTIONS, ANSWERS)


def test_nli_needs_entailment_and_contradiction_labels(make, tiny_nli, tmp_path):  # noqa: F811
    folder = tmp_path / "generic"
    shutil.copytree(tiny_nli(), folder)
    config = json.loads((folder / "config.json").read_text())
    config["id2label"] = {str(i): f"LABEL_{i}" for i in range(3)}
    config["label2id"] = {f"LABEL_{i}": i for i in range(3)}
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="cannot find one 'entailment' label"):
        make("nli", model=folder)(["q"], [["a", "b"]])


def test_nli_truncates_long_pairs_with_one_warning(make):
    op = make("nli_soft", max_length=16)
    long = "Charles Darwin wrote it and published it in 1859 " * 3
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = op(QUESTIONS[:1], [["Charles Darwin", long, long + "indeed"]])
    messages = [str(w.message) for w in caught if "truncated" in str(w.message)]
    assert len(messages) == 1 and "6 premise-hypothesis pairs" in messages[0]  # every pair has a long side
    assert out.info["max_length"] == 16 and np.all(np.isfinite(out.matrices[0]))


# ---------------------------------------------------------------- lexical


def test_lexical_values():
    answers = [["The capital is Paris.", "paris", "Madrid", "東京 is Tokyo", "東京"]]
    S = get("lexical")(["q"], answers).matrices[0]
    assert S[0, 1] == pytest.approx(0.4)  # LCS 1 of 4 and 1 words: P = 1/4, R = 1, F = 0.4
    assert S[0, 2] == 0.0 and S[3, 4] == pytest.approx(0.5)  # non-Latin words count
    J = get("lexical", measure="jaccard")(["q"], answers).matrices[0]
    assert J[0, 1] == pytest.approx(1 / 4) and J[3, 4] == pytest.approx(1 / 3)


# ---------------------------------------------------------------- cos_int


def test_cos_int_is_the_cosine_of_the_given_hidden_states():
    op = get("cos_int")
    hidden = hidden_for(ANSWERS)
    out = op(QUESTIONS, ANSWERS, hidden_states=hidden)
    for S, h in zip(out.matrices, hidden, strict=True):
        unit = h / np.linalg.norm(h, axis=1, keepdims=True)
        np.testing.assert_allclose(S, unit @ unit.T, atol=1e-12)
        assert np.all(np.diag(S) == 1.0) and np.array_equal(S, S.T)
        assert np.linalg.eigvalsh(S).min() > -1e-9
    assert out.cost.forward_passes == 0 and out.cost.duplicates_skipped == 0
    relabelled = [[f"other {i}" for i in range(len(g))] for g in ANSWERS]
    for S, T in zip(out.matrices, op(QUESTIONS, relabelled, hidden_states=hidden).matrices, strict=True):
        assert np.array_equal(S, T)  # the text is not read


def test_cos_int_bad_hidden_states():
    op = get("cos_int")
    with pytest.raises(ValueError, match="needs hidden_states"):
        op(["q"], [["a", "b"]])
    with pytest.raises(ValueError, match=r"question 0 .*shape \(2, d\)"):
        op(["q"], [["a", "b"]], hidden_states=[np.ones((3, 4))])
    with pytest.raises(ValueError, match=r"question 1 .*rows \[1\] are zero"):
        op(
            ["q", "r"],
            [["a"], ["b", "c"]],
            hidden_states=[np.ones((1, 2)), np.array([[1.0, 0.0], [0.0, 0.0]])],
        )
    with pytest.raises(ValueError, match="2 questions but 1 hidden-state arrays"):
        op(["q", "r"], [["a"], ["b"]], hidden_states=[np.ones((1, 2))])


def test_nli_accepts_a_loaded_model(make, tiny_nli):  # noqa: F811
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(tiny_nli())
    with pytest.raises(ValueError, match="pass tokenizer="):
        get("nli", model=model)
    loaded = get("nli_soft", model=model, tokenizer=tiny_nli(), progress=False)(QUESTIONS, ANSWERS)
    for S, T in zip(loaded.matrices, make("nli_soft")(QUESTIONS, ANSWERS).matrices, strict=True):
        np.testing.assert_allclose(S, T, atol=1e-6)


def test_a_local_encoder_reports_the_revision_of_its_weights(tiny_st_encoder, tmp_path):  # noqa: F811
    """Two runs of `enc` on the same folder path with other weights (a retrained `enc-trained`) are told apart:
    the reported revision is the sha256 of the folder's weights."""
    import shutil

    folder = tmp_path / "enc"
    shutil.copytree(tiny_st_encoder, folder)
    before = get("enc", model=folder, progress=False)
    revision = before.info["revision"]
    assert revision.startswith("local-") and len(revision) == len("local-") + 16
    weights = folder / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1  # the same size, other weights
    weights.write_bytes(bytes(data))
    after = get("enc", model=folder, progress=False)
    assert after.info["revision"] not in (None, revision)
