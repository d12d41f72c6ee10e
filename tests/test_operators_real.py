"""cos_ext and enc on the real all-MiniLM-L6-v2 (prepared by `semuq-eval assets`), and the token-weight
alignment between two real, different tokenizers (MiniLM's WordPiece and a self-made byte-level BPE)."""

from __future__ import annotations

import numpy as np
import pytest

from semuq_eval.operators import get
from semuq_eval.operators.encoder import format_input
from tests.fixtures.tiny_encoders import tiny_bpe_tokenizer  # noqa: F401  (pytest fixture)

pytestmark = pytest.mark.real

QUESTION = "Who wrote the book The Origin of Species?"
ANSWERS = [
    "Charles Darwin",
    "It was Charles Darwin.",
    "The Origin of Species was written by Charles Darwin, who published it in 1859.",
    "Alfred Wallace wrote it.",
    "Nobody knows.",
    "charles darwin",
]


@pytest.fixture(scope="module")
def minilm(real_asset):
    return real_asset("all-minilm-l6-v2")


@pytest.fixture(scope="module")
def minilm_st(minilm):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(minilm), device="cpu")


def gram(model, texts):
    phi = model.encode(texts, normalize_embeddings=True).astype(np.float64)
    return phi @ phi.T


def test_cos_ext_minilm(minilm, minilm_st):
    out = get("cos_ext", model=minilm, progress=False)([QUESTION], [ANSWERS])
    S = out.matrices[0]
    np.testing.assert_allclose(S, gram(minilm_st, ANSWERS), atol=1e-5)
    assert np.linalg.eigvalsh(S).min() > -1e-9
    assert S[0, 1] > S[0, 3] > S[0, 4]  # paraphrase > other name > non-answer
    assert out.cost.forward_passes == 5 and out.cost.duplicates_skipped == 1  # MiniLM is uncased


def test_enc_minilm_with_the_question(minilm, minilm_st):
    op = get("enc", model=minilm, progress=False)
    out = op([QUESTION], [ANSWERS])
    texts = [format_input(QUESTION, a, "[SEP]")[0] for a in ANSWERS]
    np.testing.assert_allclose(out.matrices[0], gram(minilm_st, texts), atol=1e-5)
    assert np.linalg.eigvalsh(out.matrices[0]).min() > -1e-9
    answer_only = get("enc", model=minilm, condition_on_question=False, progress=False)([QUESTION], [ANSWERS])
    assert not np.allclose(answer_only.matrices[0], out.matrices[0], atol=1e-2)
    assert out.info["question_conditioned"] and out.info["separator"] == "[SEP]"


def test_token_weights_minilm_to_bpe(minilm, tiny_bpe_tokenizer):  # noqa: F811
    import torch
    from transformers import AutoModel, AutoTokenizer

    op = get("enc", model=minilm, progress=False)
    answers = ANSWERS[:5]
    offsets = [
        np.array(tiny_bpe_tokenizer(a, return_offsets_mapping=True)["offset_mapping"]) for a in answers
    ]
    weights = op.token_weights([QUESTION], [answers], [offsets])[0]
    tokenizer = AutoTokenizer.from_pretrained(minilm)
    bert = AutoModel.from_pretrained(minilm).eval()
    for answer, w, spans in zip(answers, weights, offsets, strict=True):
        assert w.shape == (len(spans),) and np.all(w >= 0) and w.sum() == pytest.approx(1.0)
        # independent reference: MiniLM run directly, its answer tokens' norms spread evenly over their characters
        text, start = format_input(QUESTION, answer, "[SEP]")
        enc = tokenizer(text, return_offsets_mapping=True, return_tensors="pt")
        char_spans = enc.pop("offset_mapping")[0].numpy()
        with torch.no_grad():
            norms = bert(**enc).last_hidden_state[0].norm(dim=-1).numpy()
        density = np.zeros(len(answer))
        for (s, e), n in zip(char_spans, norms, strict=True):
            if s >= start:
                density[s - start : e - start] += n / (e - s)
        expected = np.array([density[s:e].sum() for s, e in spans])
        np.testing.assert_allclose(w, expected / expected.sum(), rtol=1e-4, atol=1e-7)
        # spaces carry no encoder token: a BPE token that is only a space gets nothing
        assert all(w[k] == 0 for k, (s, e) in enumerate(spans) if answer[s:e].isspace())
