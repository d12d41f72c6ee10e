"""Sentence-encoder operators (cos_ext, enc) and the token-weight alignment of Eq. te_enc, on a
tiny random-weights sentence-transformers folder built in a fixture."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semuq_eval.operators import get
from semuq_eval.operators.encoder import format_input
from semuq_eval.operators.token_weights import align_weights
from tests.fixtures.tiny_encoders import (  # noqa: F401  (pytest fixtures)
    tiny_bpe_tokenizer,
    tiny_st_encoder,
    tiny_wordpiece_dir,
)

QUESTION = "Who wrote the book The Origin of Species?"
ANSWERS = [
    "Charles Darwin",
    "It was Charles Darwin.",
    "Alfred Wallace wrote it.",
    "Nobody knows, perhaps Darwin.",
]


@pytest.fixture(scope="module")
def st_model(tiny_st_encoder):  # noqa: F811
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(tiny_st_encoder), device="cpu")


def reference_gram(model, texts: list[str]) -> np.ndarray:
    phi = model.encode(texts, normalize_embeddings=True, convert_to_numpy=True).astype(np.float64)
    return phi @ phi.T


def char_density_weights(answer: str, enc_spans: np.ndarray, enc_norms: np.ndarray, gen_spans: np.ndarray):
    """Reference for the alignment rule when the generating spans tile the answer (no overlap): each
    encoder token spreads its norm evenly over its characters; a generating span sums its characters."""
    density = np.zeros(len(answer))
    for (s, e), n in zip(enc_spans, enc_norms, strict=True):
        density[s:e] += n / (e - s)
    mass = np.array([density[s:e].sum() for s, e in gen_spans])
    return mass / mass.sum()


def test_cos_ext_is_the_gram_matrix_of_the_encoder_on_answers_alone(tiny_st_encoder, st_model):  # noqa: F811
    out = get("cos_ext", model=tiny_st_encoder, progress=False)([QUESTION], [ANSWERS])
    np.testing.assert_allclose(out.matrices[0], reference_gram(st_model, ANSWERS), atol=1e-5)
    assert out.info["question_conditioned"] is False and out.info["pooling"] == "mean"
    assert out.cost.forward_passes == len(ANSWERS)


def test_enc_encodes_question_sep_answer(tiny_st_encoder, st_model):  # noqa: F811
    op = get("enc", model=tiny_st_encoder, progress=False)
    out = op([QUESTION, "What is the capital of France?"], [ANSWERS, ["Paris", "It is Paris.", "Madrid"]])
    texts = [f"{QUESTION} [SEP] {a}" for a in ANSWERS]
    np.testing.assert_allclose(out.matrices[0], reference_gram(st_model, texts), atol=1e-5)
    assert out.info["separator"] == "[SEP]" and out.info["question_conditioned"] is True
    assert out.info["max_length"] == 64
    assert out.cost.forward_passes == len(ANSWERS) + 3  # N passes per question, not N^2
    answer_only = get("enc", model=tiny_st_encoder, condition_on_question=False, progress=False)
    cos_ext = get("cos_ext", model=tiny_st_encoder, progress=False)
    S_answer_only = answer_only([QUESTION], [ANSWERS]).matrices[0]
    np.testing.assert_allclose(S_answer_only, cos_ext([QUESTION], [ANSWERS]).matrices[0], atol=1e-12)
    assert not np.allclose(S_answer_only, out.matrices[0], atol=1e-3)  # the question matters
    custom = get("enc", model=tiny_st_encoder, separator="|", progress=False)
    np.testing.assert_allclose(
        custom([QUESTION], [ANSWERS]).matrices[0],
        reference_gram(st_model, [f"{QUESTION} | {a}" for a in ANSWERS]),
        atol=1e-5,
    )


def test_format_input():
    assert format_input("Q?", "A.", "[SEP]") == ("Q? [SEP] A.", 9)
    assert format_input(None, "A.", "[SEP]") == ("A.", 0)


def test_encoders_truncate_long_answers_with_one_warning(tiny_st_encoder):  # noqa: F811
    op = get("enc", model=tiny_st_encoder, max_length=20, progress=False)
    long = "Charles Darwin wrote it and published it in 1859. " * 2
    with pytest.warns(UserWarning, match=r"enc: 2 of 3 inputs are longer than max_length=20") as caught:
        out = op([QUESTION], [["Darwin", long, long + "Yes."]])
    assert len([w for w in caught if "truncated" in str(w.message)]) == 1
    assert np.all(np.isfinite(out.matrices[0]))


def test_token_norms_are_the_answer_tokens_last_hidden_state_norms(tiny_st_encoder):  # noqa: F811
    import torch
    from transformers import AutoModel, AutoTokenizer

    op = get("enc", model=tiny_st_encoder, progress=False)
    norms = op.token_norms([QUESTION], [ANSWERS])[0]
    tokenizer = AutoTokenizer.from_pretrained(tiny_st_encoder)
    bert = AutoModel.from_pretrained(tiny_st_encoder).eval()
    for answer, got in zip(ANSWERS, norms, strict=True):
        text, start = format_input(QUESTION, answer, "[SEP]")
        enc = tokenizer(text, return_offsets_mapping=True, return_tensors="pt")
        offsets = enc.pop("offset_mapping")[0].numpy()
        with torch.no_grad():
            h = bert(**enc).last_hidden_state[0]
        answer_tokens = offsets[:, 0] >= start  # after the separator; [CLS]/[SEP] have (0, 0)
        np.testing.assert_array_equal(got.spans, offsets[answer_tokens] - start)
        np.testing.assert_allclose(got.norms, h.norm(dim=-1).numpy()[answer_tokens], rtol=1e-5)
        assert got.spans.min() >= 0 and got.spans.max() <= len(answer)


def test_token_weights_land_on_the_generating_tokens(tiny_st_encoder, tiny_bpe_tokenizer):  # noqa: F811
    op = get("enc", model=tiny_st_encoder, progress=False)
    answers = [*ANSWERS, "", "Résumé 東京"]
    offsets = [
        np.array(tiny_bpe_tokenizer(a, return_offsets_mapping=True)["offset_mapping"]) for a in answers
    ]
    weights = op.token_weights([QUESTION], [answers], [offsets])[0]
    norms = op.token_norms([QUESTION], [answers])[0]
    for answer, w, spans, enc in zip(answers, weights, offsets, norms, strict=True):
        assert w.shape == (len(spans),) and np.all(w >= 0)
        if not answer:
            assert w.size == 0
            continue
        assert w.sum() == pytest.approx(1.0)
        # byte-level tokens of one multi-byte character share its span: they split its weight evenly
        unique, group = np.unique(spans, axis=0, return_inverse=True)
        group = group.reshape(-1)
        for g in range(len(unique)):
            assert np.ptp(w[group == g]) < 1e-12
        per_span = np.bincount(group, weights=w)
        np.testing.assert_allclose(
            per_span, char_density_weights(answer, enc.spans, enc.norms, unique), atol=1e-12
        )
    # A generating token list with an end-of-sequence token (empty span) gives it weight 0;
    # an empty answer with generated tokens gets uniform weights (TE_Enc falls back to TE).
    eos = np.array([[0, 14], [14, 14]])
    w_eos, w_empty = op.token_weights(
        [QUESTION], [["Charles Darwin", " "]], [[eos, np.array([[0, 0], [0, 1]])]]
    )[0]
    assert w_eos.tolist() == [1.0, 0.0] and w_empty.tolist() == [0.5, 0.5]


def test_token_weights_reuse_the_forward_pass_that_built_S(tiny_st_encoder, monkeypatch):  # noqa: F811
    op = get("enc", model=tiny_st_encoder, progress=False)
    op([QUESTION], [ANSWERS])
    model = op._load()[0]

    def no_second_pass(*args, **kwargs):
        raise AssertionError("a second forward pass was run")

    monkeypatch.setattr(model, "forward", no_second_pass)
    offsets = [np.array([[0, len(a)]]) for a in ANSWERS]
    weights = op.token_weights([QUESTION], [ANSWERS], [offsets])[0]
    assert [w.tolist() for w in weights] == [[1.0]] * len(ANSWERS)


def test_token_weights_bad_offsets_name_the_question(tiny_st_encoder):  # noqa: F811
    op = get("enc", model=tiny_st_encoder, progress=False)
    with pytest.raises(ValueError, match=r"question 0 .*answer 1: answer_token_offsets reach past the end"):
        op.token_weights([QUESTION], [["Darwin", "Paris"]], [[np.array([[0, 6]]), np.array([[0, 9]])]])
    with pytest.raises(ValueError, match=r"question 0 .*2 answers but 1 offset arrays"):
        op.token_weights([QUESTION], [["Darwin", "Paris"]], [[np.array([[0, 6]])]])
    with pytest.raises(ValueError, match=r"\(n, 2\) integer array"):
        op.token_weights([QUESTION], [["Darwin"]], [[np.array([0.0, 6.0])]])


def test_align_weights_by_hand():
    # encoder tokens "Paris"(0,5) norm 1, "is"(6,8) norm 3; generating tokens "Par", "is", " is"
    w = align_weights(np.array([[0, 5], [6, 8]]), np.array([1.0, 3.0]), np.array([[0, 3], [3, 5], [5, 8]]))
    np.testing.assert_allclose(w, [0.6 / 4, 0.4 / 4, 3 / 4])
    # a generating token straddling two encoder tokens collects from both
    w = align_weights(np.array([[0, 2], [2, 4]]), np.array([2.0, 2.0]), np.array([[0, 1], [1, 3], [3, 4]]))
    np.testing.assert_allclose(w, [0.25, 0.5, 0.25])
    # an encoder token only partly covered by generating tokens gives its whole norm to the covered part
    w = align_weights(np.array([[0, 4], [4, 6]]), np.array([2.0, 1.0]), np.array([[0, 2], [4, 6]]))
    np.testing.assert_allclose(w, [2 / 3, 1 / 3])
    no_source = align_weights(np.zeros((0, 2), int), np.zeros(0), np.array([[0, 1], [1, 3]]))
    assert no_source.tolist() == [0.5, 0.5]
    assert align_weights(np.array([[0, 1]]), np.array([1.0]), np.zeros((0, 2), int)).size == 0


@settings(max_examples=60, deadline=None)
@given(
    cuts=st.lists(st.integers(1, 40), min_size=1, max_size=12, unique=True),
    target_cuts=st.lists(st.integers(1, 40), min_size=1, max_size=12, unique=True),
    # no subnormals: the character-density reference below divides a value by its span's length, which underflows
    # 5e-324 to 0 while align_weights keeps it (hypothesis found that case on 2026-11-27)
    values=st.lists(st.floats(0.0, 10.0, allow_subnormal=False), min_size=14, max_size=14),
)
def test_align_weights_conserves_mass(cuts, target_cuts, values):
    def tiling(points):
        bounds = [0, *sorted(set(points))]
        return np.array(list(zip(bounds[:-1], bounds[1:], strict=True)))

    end = max(cuts + target_cuts)  # both tokenizations cover the same text
    src, tgt = tiling([*cuts, end]), tiling([*target_cuts, end])
    vals = np.array(values[: len(src)])
    w = align_weights(src, vals, tgt)
    assert w.shape == (len(tgt),) and np.all(w >= 0) and w.sum() == pytest.approx(1.0)
    density = np.zeros(end)
    for (s, e), v in zip(src, vals, strict=True):
        density[s:e] += v / (e - s)
    ref = np.array([density[s:e].sum() for s, e in tgt])  # the character-density reference
    if ref.sum() > 0:
        np.testing.assert_allclose(w, ref / ref.sum(), atol=1e-9)
    else:  # no value reaches any target token: uniform
        np.testing.assert_allclose(w, 1 / len(tgt))


def test_enc_accepts_a_loaded_sentence_transformer(tiny_st_encoder, st_model):  # noqa: F811
    loaded = get("enc", model=st_model, progress=False)([QUESTION], [ANSWERS])
    by_path = get("enc", model=tiny_st_encoder, progress=False)([QUESTION], [ANSWERS])
    np.testing.assert_allclose(loaded.matrices[0], by_path.matrices[0], atol=1e-6)
    assert loaded.info["pooling"] == "mean" and loaded.info["separator"] == "[SEP]"


@pytest.mark.parametrize("name", ["enc", "cos_ext"])
def test_token_similarity_compares_the_answer_with_each_token_cut_out(name, tiny_st_encoder, st_model):  # noqa: F811
    op = get(name, model=tiny_st_encoder, progress=False)
    answer = "It was Charles Darwin."
    spans = np.array([[0, 2], [2, 6], [6, 14], [14, 21], [21, 22], [22, 22]])  # the last: end of sequence
    got = op.token_similarity([QUESTION], [[answer]], [[spans]])[0][0]
    question = QUESTION if name == "enc" else None
    texts = [answer] + [answer[:s] + answer[e:] for s, e in spans[:-1]]
    phi = st_model.encode(
        [format_input(question, t, "[SEP]")[0] for t in texts],
        normalize_embeddings=True,
        convert_to_numpy=True,
    ).astype(np.float64)
    np.testing.assert_allclose(got[:-1], phi[1:] @ phi[0], atol=1e-6)
    assert got[-1] == pytest.approx(1.0)  # cutting nothing keeps everything: relevance 0
    # a one-token answer cut to nothing keeps none of it; a blank answer has nothing to lose; no tokens: empty
    one, blank, none = op.token_similarity(
        [QUESTION],
        [["Darwin", "  ", "Darwin"]],
        [[np.array([[0, 6]]), np.array([[0, 1], [1, 2]]), np.zeros((0, 2))]],
    )[0]
    assert one.tolist() == [0.0] and blank.tolist() == [1.0, 1.0] and none.shape == (0,)
    with pytest.raises(ValueError, match=r"question 0 .*answer 0: answer_token_offsets reach past the end"):
        op.token_similarity([QUESTION], [["Darwin"]], [[np.array([[0, 9]])]])
