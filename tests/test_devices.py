"""What runs on an accelerator: `semuq-hf` on CUDA (float32 against the CPU, and bfloat16 samples), the encoder and
NLI operators on CUDA against the CPU, and a semuq task end to end on CUDA, all on the tiny fixture models.

Every test here needs a CUDA GPU and skips without one, saying so: this project's CI machines have none.
`python -m bench.gpu_check` runs this file (marker ``device``) the day a machine with a GPU is lent.
``SEMUQ_TEST_DEVICE`` names the device under test (default ``cuda``; ``cpu`` checks the tests themselves on a
machine without a GPU: the CPU then stands on both sides of every comparison). The aggregators,
metrics and the scoring path work on NumPy arrays on the CPU whatever device generated the answers: no GPU
tensor reaches them, so there is nothing of theirs to run on a GPU.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from semuq_eval.operators import get
from tests.fixtures.tiny_encoders import (  # noqa: F401  (pytest fixtures)
    tiny_nli,
    tiny_st_encoder,
    tiny_wordpiece_dir,
)
from tests.fixtures.tiny_harness import breakdown_of, run_tasks
from tests.fixtures.tiny_lm import build_tiny_gpt2

DEVICE = os.environ.get("SEMUQ_TEST_DEVICE", "cuda")
pytestmark = [
    pytest.mark.device,
    pytest.mark.skipif(
        DEVICE == "cuda" and not torch.cuda.is_available(),
        reason="needs a CUDA GPU (python -m bench.gpu_check runs these)",
    ),
]

GREEDY = {"until": ["\n\n"], "do_sample": False, "max_gen_toks": 12}
SAMPLE = {
    "until": ["\n\n"],
    "do_sample": True,
    "temperature": 1.0,
    "top_p": 0.9,
    "top_k": 50,
    "max_gen_toks": 12,
}
PROMPTS = ["the cat sat on the", "a dog ran to the", "one two three"]
QUESTION = "Who wrote the book The Origin of Species?"
ANSWERS = [
    "Charles Darwin",
    "It was Charles Darwin.",
    "Alfred Wallace wrote it.",
    "Nobody knows, perhaps Darwin.",
]


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    return str(build_tiny_gpt2(tmp_path_factory.mktemp("tiny_gpt2")))


def _hf(gpt2_dir, device: str, dtype: str):
    from semuq_eval.models.hf import SemuqHFLM

    return SemuqHFLM(pretrained=gpt2_dir, device=device, dtype=dtype, batch_size=2, journal="off")


def _requests(gen_kwargs: dict, repeats: int = 1) -> list:
    from lm_eval.api.instance import Instance

    out = []
    for i, prompt in enumerate(PROMPTS):
        req = Instance("generate_until", {"q": prompt}, (prompt, dict(gen_kwargs)), i, ("t", i, repeats))
        out.extend([req] * repeats)
    return out


def test_semuq_hf_on_cuda_in_float32_gives_the_cpus_answers(gpt2_dir):
    on_cpu = _hf(gpt2_dir, "cpu", "float32").generate_until(_requests(GREEDY))
    on_gpu = _hf(gpt2_dir, DEVICE, "float32").generate_until(_requests(GREEDY))
    for c, g in zip(on_cpu, on_gpu, strict=True):
        assert str(c) == str(g) and np.array_equal(c.token_ids, g.token_ids)
        np.testing.assert_allclose(g.token_logprobs, c.token_logprobs, atol=1e-3)
        np.testing.assert_allclose(g.token_entropies, c.token_entropies, atol=1e-3)
        np.testing.assert_allclose(g.hidden, c.hidden, atol=1e-3, rtol=1e-3)
        assert isinstance(g.hidden, np.ndarray)  # copied off the GPU


def test_semuq_hf_samples_on_cuda_in_bfloat16(gpt2_dir):
    lm = _hf(gpt2_dir, DEVICE, "bfloat16")
    answers = lm.generate_until(_requests(SAMPLE, repeats=4))
    vocab = lm.model.config.vocab_size
    assert len(answers) == 4 * len(PROMPTS)
    for a in answers:
        t = len(a.token_ids)
        assert (
            a.token_logprobs.shape == (t,)
            and a.token_entropies.shape == (t,)
            and a.token_offsets.shape == (t, 2)
        )
        assert np.all(np.isfinite(a.token_logprobs)) and np.all(a.token_logprobs <= 1e-6)
        assert np.all(a.token_entropies >= -1e-4) and np.all(a.token_entropies <= np.log(vocab) + 1e-2)
        assert a.hidden.dtype == np.float32 and np.all(np.isfinite(a.hidden))


@pytest.mark.parametrize("name", ["cos_ext", "enc"])
def test_encoder_operators_on_cuda_match_the_cpu(name, tiny_st_encoder):  # noqa: F811
    def matrix(device: str, dtype: str) -> np.ndarray:
        op = get(name, model=tiny_st_encoder, device=device, dtype=dtype, progress=False)
        return op([QUESTION], [ANSWERS]).matrices[0]

    cpu = matrix("cpu", "float32")
    np.testing.assert_allclose(matrix(DEVICE, "float32"), cpu, atol=1e-4)
    np.testing.assert_allclose(matrix(DEVICE, "float16"), cpu, atol=2e-2)


def test_nli_on_cuda_matches_the_cpu(tiny_nli):  # noqa: F811
    folder = tiny_nli()

    def matrix(device: str) -> np.ndarray:
        return get("nli_soft", model=str(folder), device=device, dtype="float32", progress=False)(
            [QUESTION], [ANSWERS]
        ).matrices[0]

    np.testing.assert_allclose(matrix(DEVICE), matrix("cpu"), atol=1e-4)


def test_a_semuq_task_end_to_end_on_cuda_in_bfloat16(gpt2_dir, tmp_path):
    run_tasks(_hf(gpt2_dir, DEVICE, "bfloat16"), tmp_path, operators=["lexical", "cos_int"], bootstrap=20)
    b = breakdown_of(tmp_path)
    scored = b["results"]["greedy"]
    for name in ("msp", "perplexity", "te", "se@lexical", "cos@cos_int"):
        assert name in scored or name in b["unavailable"], name
    assert "cos@cos_int" in scored, b["unavailable"].get("cos@cos_int")
