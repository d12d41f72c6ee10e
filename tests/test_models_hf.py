"""semuq-hf / semuq-hf-multimodal: grouping, white-box signals checked against teacher forcing, Generation I/O.

Everything runs on tiny random models built in `tests/fixtures/tiny_lm.py` (no download).
"""

from __future__ import annotations

import copy
import json
import pickle
import subprocess
import sys
from contextlib import contextmanager

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from lm_eval.api.instance import Instance  # noqa: E402

from semuq_eval.models import Generation, as_generation  # noqa: E402
from tests.fixtures.tiny_lm import build_tiny_gpt2, build_tiny_llava  # noqa: E402

PROMPTS = [
    "The capital of France is",
    "Question: what is the largest planet? Answer:",
    "Numbers: 1 2 3",
]
SAMPLE = {
    "until": ["\n\n"],
    "do_sample": True,
    "temperature": 1.0,
    "top_p": 0.9,
    "top_k": 50,
    "max_gen_toks": 12,
}
GREEDY = {"until": ["\n\n"], "do_sample": False, "max_gen_toks": 12}


def inst(ctx, gen_kwargs, doc_id=0, idx=0, repeats=1, visual=None):
    args = (ctx, dict(gen_kwargs)) if visual is None else (ctx, dict(gen_kwargs), {"visual": visual})
    return Instance("generate_until", {"q": ctx}, args, idx, ("t", doc_id, repeats))


def repeated(*pairs):
    """evaluator.py: each Instance added `repeats` times (the same object)."""
    out = []
    for req, k in pairs:
        out.extend([req] * k)
    return out


# ----------------------------------------------------------------------------------------------------------
# fixtures
# ----------------------------------------------------------------------------------------------------------
@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny models gain nothing from threads, and on a busy machine extra threads stall each other."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def gpt2_dir(tmp_path_factory):
    return str(build_tiny_gpt2(tmp_path_factory.mktemp("tiny_gpt2")))


@pytest.fixture(scope="session")
def lm(gpt2_dir):
    """float32 whatever the CPU: these tests compare with float32 teacher forcing and stock HFLM (on a CPU with native
    bfloat16 semuq-hf would otherwise generate in bfloat16; that choice has its own test, below)."""
    from semuq_eval.models.hf import SemuqHFLM

    return SemuqHFLM(pretrained=gpt2_dir, device="cpu", dtype="float32", batch_size=2)


@pytest.fixture(scope="session")
def stock(gpt2_dir):
    from lm_eval.models.huggingface import HFLM

    return HFLM(pretrained=gpt2_dir, device="cpu", dtype="float32", batch_size=2)


@contextmanager
def attrs(obj, **values):
    old = {k: getattr(obj, k) for k in values}
    for k, v in values.items():
        setattr(obj, k, v)
    try:
        yield obj
    finally:
        for k, v in old.items():
            setattr(obj, k, v)


@contextmanager
def spy_generate(model):
    calls = []
    original = model.generate

    def wrapper(*args, **kwargs):
        out = original(*args, **kwargs)
        seqs = out if torch.is_tensor(out) else out.sequences
        calls.append({"rows": seqs.shape[0], "kwargs": kwargs})
        return out

    model.generate = wrapper
    try:
        yield calls
    finally:
        del model.generate


def teacher_forced(lm, context: str, gen: Generation):
    """Log-probs, entropies and final-norm states of prompt + answer in one unpadded forward pass."""
    prompt = lm.tok_encode(context)
    ids = torch.tensor([prompt + gen.token_ids.tolist()])
    with torch.no_grad():
        logits = lm.model(ids).logits[0].float()
        hidden = lm.model.transformer(ids).last_hidden_state[0]  # GPT-2: after ln_f
    logp = torch.log_softmax(logits, -1)
    P, T = len(prompt), len(gen.token_ids)
    steps = logp[P - 1 : P - 1 + T]
    lp = steps.gather(1, torch.tensor(gen.token_ids)[:, None]).squeeze(1).numpy()
    ent = (-(steps.exp() * steps).sum(-1)).numpy()
    h = hidden[P + T - 1].numpy()  # last answer token (last prompt token when the answer is empty)
    return lp, ent, h


def check_against_teacher(lm, context, gen, atol=1e-4):
    lp, ent, h = teacher_forced(lm, context, gen)
    np.testing.assert_allclose(gen.token_logprobs, lp, atol=atol)
    np.testing.assert_allclose(gen.token_entropies, ent, atol=atol)
    np.testing.assert_allclose(gen.hidden, h, atol=atol)
    assert gen.seq_logprob == pytest.approx(float(np.sum(gen.token_logprobs, dtype=np.float64)), abs=1e-9)


def check_offsets(lm, gen):
    """Spans tile the text in order; each span ends with the token's own decoded piece when it is whole."""
    text = str(gen)
    offs = gen.token_offsets
    assert offs.shape == (len(gen.token_ids), 2)
    if len(offs):
        assert offs[0, 0] == 0 and offs[-1, 1] == len(text)
        assert (offs[1:, 0] == offs[:-1, 1]).all()
        assert (offs[:, 1] >= offs[:, 0]).all()
    assert "".join(text[s:e] for s, e in offs.tolist()) == text
    for tok, (s, e) in zip(gen.token_ids.tolist(), offs.tolist(), strict=True):
        piece = lm.tokenizer.decode([tok], skip_special_tokens=True)
        if piece and "\ufffd" not in piece and e < len(text):
            # a whole token: its span is its text, possibly preceded by the bytes of an earlier split character
            assert text[s:e].endswith(piece), (tok, piece, text[s:e])


# ----------------------------------------------------------------------------------------------------------
# registration
# ----------------------------------------------------------------------------------------------------------
@pytest.mark.subprocess
def test_registration_is_lazy_and_keeps_builtin_models():
    code = (
        "import sys, semuq_eval.models as m\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
        "from lm_eval.api.registry import model_registry\n"
        "assert 'semuq-hf' in model_registry.keys() and 'semuq-hf-multimodal' in model_registry.keys()\n"
        "assert model_registry.origin('semuq-hf') is None, 'materialized'\n"  # a lazy target has no origin yet
        "assert 'semuq_eval.models.hf' not in sys.modules, 'semuq_eval.models.hf imported'\n"
        "m.register_models()\n"  # idempotent
        "from lm_eval.api.registry import get_model\n"
        "assert get_model('hf').__name__ == 'HFLM'\n"
        "assert get_model('semuq-hf').__name__ == 'SemuqHFLM'\n"
        "m.register_models()\n"  # still fine once materialized
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]


# ----------------------------------------------------------------------------------------------------------
# grouping and order
# ----------------------------------------------------------------------------------------------------------
def test_one_generate_call_per_group_and_request_order(lm):
    n = 5
    greedy = [inst(p, GREEDY, doc_id=i, idx=0) for i, p in enumerate(PROMPTS)]
    sampled = [inst(p, SAMPLE, doc_id=i, idx=1, repeats=n) for i, p in enumerate(PROMPTS)]
    requests = repeated(*[(g, 1) for g in greedy], *[(s, n) for s in sampled])
    rng = np.random.default_rng(0)
    requests = [requests[i] for i in rng.permutation(len(requests))]  # any order must come back aligned
    torch.manual_seed(0)
    with attrs(lm, batch_size_per_gpu=1), spy_generate(lm.model) as calls:
        out = lm.generate_until(requests)
    # one call per sampled (prompt, gen_kwargs) group; the greedy prompts (1 row each) share one call
    assert sorted(c["rows"] for c in calls) == [len(PROMPTS)] + [n] * len(PROMPTS)
    assert len(out) == len(requests)
    assert all(isinstance(g, Generation) for g in out)
    for req, gen in zip(requests, out, strict=True):
        assert gen.greedy == (req.args[1]["do_sample"] is False)
        check_against_teacher(lm, req.args[0], gen)  # the answer belongs to its own request's context
    for s in sampled:
        gens = [g for r, g in zip(requests, out, strict=True) if r is s]
        assert len(gens) == n
        assert len({id(g) for g in gens}) == n  # n distinct samples
    for g in greedy:
        assert sum(r is g for r in requests) == 1


def test_batching_across_prompts_and_greedy_copies(lm):
    # batch_size=2 prompts per call; a greedy request repeated 3 times is generated once
    g = inst(PROMPTS[0], GREEDY)
    s = [inst(p, SAMPLE, doc_id=i, idx=1, repeats=4) for i, p in enumerate(PROMPTS)]
    requests = repeated((g, 3), *[(x, 4) for x in s])
    torch.manual_seed(1)
    with spy_generate(lm.model) as calls:
        out = lm.generate_until(requests)
    rows = sorted(c["rows"] for c in calls)
    assert rows == [1, 4, 8]  # greedy once; sampled prompts 2 + 1 per call, 4 rows each
    assert out[0] is out[1] is out[2] and out[0].greedy
    assert len(out) == 3 + 12


def test_equal_requests_from_distinct_instances_are_merged(lm):
    a = inst(PROMPTS[1], SAMPLE, doc_id=0, idx=1, repeats=3)
    b = inst(PROMPTS[1], SAMPLE, doc_id=7, idx=1, repeats=3)  # same question in another doc
    with spy_generate(lm.model) as calls:
        out = lm.generate_until(repeated((a, 3), (b, 3)))
    assert [c["rows"] for c in calls] == [6]
    assert len(out) == 6


def test_greedy_text_equals_stock_hflm(lm, stock):
    kwargs = [
        GREEDY,
        {"until": ["e"], "do_sample": False, "max_gen_toks": 20},
        {"do_sample": False, "max_new_tokens": 9},
    ]
    requests = [inst(p, k, doc_id=i) for i, p in enumerate(PROMPTS) for k in kwargs]
    ours = lm.generate_until(requests)
    theirs = stock.generate_until(requests)
    assert [str(g) for g in ours] == theirs
    assert all(type(t) is str for t in theirs)


# ----------------------------------------------------------------------------------------------------------
# white-box signals
# ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("share_prefill", [True, False])
def test_signals_match_teacher_forcing(lm, share_prefill):
    # max_gen_toks small and no stop string: most rows end at the budget (the look-ahead step's case)
    kw = dict(SAMPLE, max_gen_toks=6, until=[])
    requests = repeated(*[(inst(p, kw, doc_id=i, repeats=4), 4) for i, p in enumerate(PROMPTS)])
    torch.manual_seed(2)
    with attrs(lm, share_prefill=share_prefill):
        out = lm.generate_until(requests)
    for req, gen in zip(requests, out, strict=True):
        assert 0 < len(gen.token_ids) <= 6
        assert gen.token_logprobs.dtype == np.float32 and gen.token_entropies.dtype == np.float32
        assert gen.hidden.shape == (lm.model.config.n_embd,) and gen.hidden.dtype == np.float32
        assert (gen.token_logprobs <= 0).all() and (gen.token_entropies >= 0).all()
        check_against_teacher(lm, req.args[0], gen)
        check_offsets(lm, gen)


def test_finished_rows_are_compacted_without_changing_results(lm):
    # frequent stop strings: most rows finish early and are dropped from the batch
    kw = dict(SAMPLE, until=["e", "a", "o"], max_gen_toks=20)
    requests = repeated(*[(inst(p, kw, doc_id=i, repeats=8), 8) for i, p in enumerate(PROMPTS[:2])])
    results, stats = {}, {}
    for compact in (True, False):
        torch.manual_seed(5)
        with attrs(lm, compact_rows=compact):
            results[compact] = lm.generate_until(requests)
        stats[compact] = dict(lm._semuq_last_stats)
    assert stats[True]["compacted_row_steps"] > 0 and stats[False]["compacted_row_steps"] == 0
    assert stats[True]["shared_prefill"]
    for req, a, b in zip(requests, results[True], results[False], strict=True):
        assert str(a) == str(b)
        np.testing.assert_array_equal(a.token_ids, b.token_ids)
        np.testing.assert_allclose(a.token_logprobs, b.token_logprobs, atol=1e-5)
        np.testing.assert_allclose(a.hidden, b.hidden, atol=1e-5)
        check_against_teacher(lm, req.args[0], a)
        check_offsets(lm, a)


def test_the_cache_goes_under_the_keyword_the_installed_transformers_takes(lm):
    """transformers 5.x renamed ``past_key_values`` to ``cache`` (the old name warns, and is then removed): the shared
    prefill, the decoding steps and the row compaction hand the cache over under the name the model takes, so a
    sampled group generates without a deprecation warning."""
    import warnings

    from semuq_eval.models.kv_cache import cache_keyword, passed_cache

    kw = dict(SAMPLE, until=["e", "a", "o"], max_gen_toks=8)
    requests = repeated((inst(PROMPTS[0], kw, repeats=4), 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        out = lm.generate_until(requests)
    assert len(out) == 4 and lm._semuq_last_stats["shared_prefill"]
    assert cache_keyword(lm.model) in ("cache", "past_key_values")

    class Base:
        def forward(self, input_ids, cache=None): ...

    class Wrapped:  # a PEFT model: its forward takes **kwargs, its base model names the keyword
        def forward(self, *args, **kwargs): ...

        def get_base_model(self):
            return Base()

    assert cache_keyword(Wrapped()) == "cache" and cache_keyword(Base()) == "cache"
    assert passed_cache({"past_key_values": 1}) == 1 and passed_cache({"cache": 2, "past_key_values": 1}) == 2
    assert passed_cache({"input_ids": 0, "cache": None}) is None


def test_stop_sequence_truncates_all_arrays(lm):
    ctx = PROMPTS[0]
    full = lm.generate_until([inst(ctx, {"until": [], "do_sample": False, "max_gen_toks": 30})])[0]
    text = str(full)
    # a stop string starting inside a token (so the token is partly kept) and occurring first there
    cuts = []
    for (s, e), tok in zip(full.token_offsets.tolist(), full.token_ids.tolist(), strict=True):
        piece = lm.tokenizer.decode([tok])
        if e - s >= 2 and s >= 3 and "\ufffd" not in piece:
            cuts.append(s + 1)
    cut = next(c for c in cuts if text.find(text[c : c + 3]) == c)
    stop = text[cut : cut + 3]
    out = lm.generate_until([inst(ctx, {"until": [stop], "do_sample": False, "max_gen_toks": 30})])[0]
    assert str(out) == text.split(stop)[0] == text[:cut]
    T = len(out.token_ids)
    assert 0 < T < len(full.token_ids)
    assert len(out.token_logprobs) == len(out.token_entropies) == len(out.token_offsets) == T
    np.testing.assert_array_equal(out.token_ids, full.token_ids[:T])
    np.testing.assert_allclose(out.token_logprobs, full.token_logprobs[:T], atol=1e-5)
    # the last kept token is the one the stop string starts in; its span is clipped to the text
    last_s, last_e = full.token_offsets[T - 1]
    assert last_s < cut < last_e and out.token_offsets[-1].tolist() == [last_s, cut]
    check_against_teacher(lm, ctx, out)
    check_offsets(lm, out)


def test_empty_answer(lm):
    ctx = PROMPTS[2]
    first = lm.generate_until([inst(ctx, GREEDY)])[0]
    stop = str(first)[:1]
    out = lm.generate_until([inst(ctx, {"until": [stop], "do_sample": False, "max_gen_toks": 8})])[0]
    assert str(out) == ""
    assert len(out.token_ids) == 0 and out.token_offsets.shape == (0, 2)
    assert out.seq_logprob == 0.0
    _, _, h = teacher_forced(lm, ctx, out)  # state at the last prompt token
    np.testing.assert_allclose(out.hidden, h, atol=1e-4)


@pytest.mark.parametrize("source", ["final_norm_output", "output_hidden_states"])
def test_hidden_state_fallbacks(lm, monkeypatch, source):
    import semuq_eval.models.recorder as recorder

    if source == "final_norm_output":  # no LM head module: hook on transformer.ln_f
        monkeypatch.setattr(lm.model, "get_output_embeddings", lambda: None)
    else:  # neither found: generate(output_hidden_states=True)
        monkeypatch.setattr(recorder, "find_final_hidden_module", lambda model: (None, "none"))
    req = inst(PROMPTS[1], dict(SAMPLE, until=["a"]), repeats=3)
    torch.manual_seed(4)
    out = lm.generate_until(repeated((req, 3)))
    assert lm._semuq_last_stats["hidden_source"] == source
    for gen in out:
        check_against_teacher(lm, req.args[0], gen)


def test_return_hidden_off(lm):
    with attrs(lm, return_hidden=False):
        out = lm.generate_until([inst(PROMPTS[0], GREEDY)])[0]
    assert out.hidden is None and out.token_logprobs is not None


def test_chat_template_context(lm):
    ctx = lm.apply_chat_template([{"role": "user", "content": "Who wrote Hamlet?"}])
    assert ctx.endswith("assistant:")
    req = inst(ctx, SAMPLE, repeats=3)
    out = lm.generate_until(repeated((req, 3)))
    for gen in out:
        check_against_teacher(lm, ctx, gen)


# ----------------------------------------------------------------------------------------------------------
# token <-> character alignment helpers
# ----------------------------------------------------------------------------------------------------------
def test_token_char_ends_on_multibyte_text(lm):
    from semuq_eval.models.token_spans import kept_token_range, token_char_ends

    tok = lm.tokenizer
    text = "Caf\u00e9 \u4e2d\u6587 \U0001f600 ok"
    ids = tok.encode(text, add_special_tokens=False)
    full = tok.decode(ids)
    assert full == text

    def dec(x):
        return tok.decode(x, skip_special_tokens=True)

    def bdec(x):
        return tok.batch_decode(x, skip_special_tokens=True)

    for ends in (
        token_char_ends(dec, bdec, ids, full),
        token_char_ends(dec, bdec, ids, full + "x"),  # mismatch -> exact prefix method
    ):
        assert len(ends) == len(ids) and ends == sorted(ends) and ends[-1] == len(full)
        begins = [0, *ends[:-1]]
        assert "".join(full[b:e] for b, e in zip(begins, ends, strict=True)) == full
    # the emoji is 4 bytes: several byte-level tokens, only the completing one has a non-empty span
    ends = token_char_ends(dec, bdec, ids, full)
    emoji_at = full.index("\U0001f600")
    owners = [t for t, (b, e) in enumerate(zip([0, *ends[:-1]], ends, strict=True)) if b <= emoji_at < e]
    assert len(owners) == 1
    # kept range of full[a:b]
    lo, hi = kept_token_range(ends, 0, len(full), set(), ids)
    assert (lo, hi) == (0, len(ids))
    lo, hi = kept_token_range(ends, 0, 0, set(), ids)
    assert lo == hi


# ----------------------------------------------------------------------------------------------------------
# Generation
# ----------------------------------------------------------------------------------------------------------
def make_gen():
    return Generation(
        "Paris, France",
        token_ids=[5, 6, 7],
        token_logprobs=[-0.1, -0.2, -0.3],
        token_entropies=[1.0, 0.5, 0.25],
        token_offsets=[[0, 5], [5, 6], [6, 13]],
        hidden=np.arange(4, dtype=np.float32),
        greedy=True,
    )


def assert_same(a: Generation, b: Generation):
    assert type(b) is Generation and str(a) == str(b) and a == b
    for name in ("token_ids", "token_logprobs", "token_entropies", "token_offsets", "hidden"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None and y is None) or (np.array_equal(x, y) and x.dtype == y.dtype)
    assert a.seq_logprob == b.seq_logprob and a.greedy == b.greedy


def test_generation_is_a_str_with_fields():
    g = make_gen()
    assert isinstance(g, str) and g == "Paris, France" and g.text == "Paris, France" and type(g.text) is str
    assert g.seq_logprob == pytest.approx(-0.6)
    assert [g.text[s:e] for s, e in g.token_offsets.tolist()] == ["Paris", ",", " France"]
    assert g.token_logprobs is not None
    assert g.token_entropies is not None and g.hidden is not None and len(g.token_ids) == 3
    assert g.token_ids.dtype == np.int64 and g.token_offsets.dtype == np.int64
    assert g.lower() == "paris, france"  # str methods give plain str
    with pytest.raises(ValueError, match="different lengths"):
        Generation("x", token_ids=[1, 2], token_logprobs=[-1.0])


def test_generation_pickle_and_copy_roundtrip():
    g = make_gen()
    for proto in range(2, pickle.HIGHEST_PROTOCOL + 1):
        assert_same(g, pickle.loads(pickle.dumps(g, protocol=proto)))
    assert_same(g, copy.copy(g))
    d = copy.deepcopy(g)
    assert_same(g, d)
    assert d.hidden is not g.hidden  # a deep copy owns its arrays
    assert_same(as_generation("x"), pickle.loads(pickle.dumps(as_generation("x"))))


def test_generation_record_roundtrip_is_json():
    g = make_gen()
    rec = json.loads(json.dumps(g.to_record(), allow_nan=False))
    back = Generation.from_record(rec)
    assert_same(g, back)
    assert Generation.from_record(g.to_record(include_hidden=False)).hidden is None
    empty = Generation(
        "", token_ids=[], token_logprobs=[], token_entropies=[], token_offsets=[], hidden=[1.0]
    )
    back = Generation.from_record(json.loads(json.dumps(empty.to_record())))
    assert back.token_offsets.shape == (0, 2) and back.seq_logprob == 0.0
    plain = Generation.from_record(json.loads(json.dumps(as_generation("hi").to_record())))
    assert plain.token_logprobs is None and plain == "hi"


def test_as_generation_plain_text_has_no_white_box_fields():
    g = as_generation("Rome")
    assert isinstance(g, Generation) and g == "Rome"
    assert g.token_logprobs is None and g.token_entropies is None and g.hidden is None
    assert g.token_ids is None and g.token_offsets is None and g.seq_logprob is None
    assert as_generation("Rome", greedy=True).greedy
    h = make_gen()
    assert as_generation(h) is h
    assert not as_generation(h, greedy=False).greedy and h.greedy
    with pytest.raises(TypeError):
        as_generation(None)


# ----------------------------------------------------------------------------------------------------------
# multimodal
# ----------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def vlm(tmp_path_factory):
    from semuq_eval.models.hf_multimodal import SemuqHFMultimodalLM

    path = build_tiny_llava(tmp_path_factory.mktemp("tiny_llava"))
    return SemuqHFMultimodalLM(pretrained=str(path), device="cpu", dtype="float32", batch_size=2)


def images():
    from PIL import Image

    rng = np.random.default_rng(0)
    return [Image.fromarray(rng.integers(0, 255, (40, 48, 3), dtype=np.uint8)) for _ in range(3)]


def vlm_teacher_forced(vlm, context, visual, gen):
    enc = vlm.tok_batch_multimodal_encode([context], [visual])
    ids = torch.cat([enc["input_ids"], torch.tensor([gen.token_ids.tolist()], dtype=torch.long)], 1)
    extra = {k: v for k, v in enc.items() if k not in ("input_ids", "attention_mask")}
    with torch.no_grad():
        out = vlm.model(input_ids=ids, **extra)
        base = vlm.model.model(input_ids=ids, **extra)  # last_hidden_state: after the final norm
    logp = torch.log_softmax(out.logits[0].float(), -1)
    P, T = enc["input_ids"].shape[1], len(gen.token_ids)
    steps = logp[P - 1 : P - 1 + T]
    lp = steps.gather(1, torch.tensor(gen.token_ids)[:, None]).squeeze(1).numpy()
    ent = (-(steps.exp() * steps).sum(-1)).numpy()
    h = base.last_hidden_state[0, P + T - 1]
    return lp, ent, h.numpy()


@pytest.mark.parametrize("share_prefill", [True, False])
def test_multimodal_samples_align_with_their_images(vlm, share_prefill):
    imgs = images()
    n = 3
    kw = dict(SAMPLE, max_gen_toks=5, until=[])
    reqs = [
        inst(f"<image> Question {i}: what is shown?", kw, doc_id=i, repeats=n, visual=[imgs[i]])
        for i in range(2)
    ]
    # two images in one prompt: image rows must follow their prompt's rows (stock hf-multimodal misaligns them)
    reqs.append(inst("<image> and <image>: which?", kw, doc_id=2, repeats=n, visual=[imgs[2], imgs[0]]))
    greedy = inst("<image> Describe.", dict(GREEDY, max_gen_toks=5), doc_id=9, visual=[imgs[0]])
    requests = repeated((greedy, 1), *[(r, n) for r in reqs])
    torch.manual_seed(3)
    with attrs(vlm, share_prefill=share_prefill), spy_generate(vlm.model) as calls:
        out = vlm.generate_until(requests)
    assert sorted(c["rows"] for c in calls) == [1, n, 2 * n]  # greedy; 2 + 1 prompts of n rows
    assert len(out) == len(requests) and all(isinstance(g, Generation) for g in out)
    for req, gen in zip(requests, out, strict=True):
        lp, ent, h = vlm_teacher_forced(vlm, req.args[0], req.args[2]["visual"], gen)
        np.testing.assert_allclose(gen.token_logprobs, lp, atol=1e-4)
        np.testing.assert_allclose(gen.token_entropies, ent, atol=1e-4)
        np.testing.assert_allclose(gen.hidden, h, atol=1e-4)


def test_multimodal_same_text_different_images_not_merged(vlm):
    imgs = images()
    a = inst("<image> What?", SAMPLE, doc_id=0, repeats=2, visual=[imgs[0]])
    b = inst("<image> What?", SAMPLE, doc_id=1, repeats=2, visual=[imgs[1]])
    with spy_generate(vlm.model) as calls:
        out = vlm.generate_until(repeated((a, 2), (b, 2)))
    assert [c["rows"] for c in calls] == [4] and len(out) == 4
    for req, gen in zip(repeated((a, 2), (b, 2)), out, strict=True):
        lp, _, _ = vlm_teacher_forced(vlm, req.args[0], req.args[2]["visual"], gen)
        np.testing.assert_allclose(gen.token_logprobs, lp, atol=1e-4)


# ----------------------------------------------------------------------------------------------------------
# resume: the generation journal
# ----------------------------------------------------------------------------------------------------------
def journal_requests(n=4):
    reqs = []
    for i, p in enumerate(PROMPTS):
        reqs += [inst(p, GREEDY, doc_id=i, idx=0)] + [inst(p, SAMPLE, doc_id=i, idx=1, repeats=n)] * n
    return reqs


@contextmanager
def count_generated(lm, fail_after=None):
    """Record the prompts of every generated batch; raise (a "kill") once `fail_after` batches are done."""
    prompts = []
    original = lm._semuq_generate_batch

    def wrapper(batch, eos):
        if fail_after is not None and len(prompts) >= fail_after:
            raise KeyboardInterrupt("killed")
        out = original(batch, eos)
        prompts.append([(g.context, g.greedy) for g in batch])
        return out

    lm._semuq_generate_batch = wrapper
    try:
        yield prompts
    finally:
        del lm._semuq_generate_batch


def same_generation(a: Generation, b: Generation):
    assert str(a) == str(b) and a.greedy == b.greedy
    for name in ("token_ids", "token_logprobs", "token_entropies", "token_offsets", "hidden"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def test_killed_run_resumes_from_the_journal(gpt2_dir, tmp_path):
    from semuq_eval.models.hf import SemuqHFLM

    requests = journal_requests()
    first = SemuqHFLM(
        pretrained=gpt2_dir, device="cpu", dtype="float32", batch_size=1, journal=str(tmp_path / "j")
    )
    torch.manual_seed(7)
    # batch_size=1, N=4: one greedy call for the 3 prompts, then one sampled call per prompt
    with count_generated(first, fail_after=2) as done, pytest.raises(KeyboardInterrupt):
        first.generate_until(requests)
    assert len(done) == 2
    assert len((tmp_path / "j" / "rank0.jsonl").read_text().splitlines()) == 4  # 3 greedy + 1 sampled

    again = SemuqHFLM(
        pretrained=gpt2_dir, device="cpu", dtype="float32", batch_size=1, journal=str(tmp_path / "j")
    )
    torch.manual_seed(7)
    with count_generated(again) as redone:
        out = again.generate_until(requests)
    generated = {(ctx, greedy) for batch in done + redone for ctx, greedy in batch}
    assert len(redone) == 2 and not {p for b in done for p in b} & {p for b in redone for p in b}
    assert generated == {(p, g) for p in PROMPTS for g in (True, False)}
    assert len(out) == len(requests) and all(isinstance(g, Generation) for g in out)

    # a third run generates nothing and returns exactly the journaled answers, hidden states included
    third = SemuqHFLM(
        pretrained=gpt2_dir, device="cpu", dtype="float32", batch_size=1, journal=str(tmp_path / "j")
    )
    torch.manual_seed(7)
    with count_generated(third) as none:
        out3 = third.generate_until(requests)
    assert none == []
    for a, b in zip(out, out3, strict=True):
        same_generation(a, b)
    assert out3[0].hidden is not None and out3[0].greedy and not out3[1].greedy
    check_against_teacher(third, PROMPTS[0], out3[1])  # restored signals are the model's


def test_journal_key_changes_with_seed_decoding_and_sample_count(gpt2_dir, tmp_path):
    from semuq_eval.models.hf import SemuqHFLM

    lm_ = SemuqHFLM(
        pretrained=gpt2_dir, device="cpu", dtype="float32", batch_size=2, journal=str(tmp_path / "j")
    )
    torch.manual_seed(1)
    lm_.generate_until(journal_requests(n=2))
    variants = {
        "other seed": (lambda: torch.manual_seed(2), journal_requests(n=2)),
        "other N": (lambda: torch.manual_seed(1), journal_requests(n=3)),
        "other decoding": (
            lambda: torch.manual_seed(1),
            [inst(p, dict(SAMPLE, top_p=0.5), doc_id=i, repeats=2) for i, p in enumerate(PROMPTS)] * 2,
        ),
    }
    for name, (seed, reqs) in variants.items():
        seed()
        with count_generated(lm_) as batches:
            lm_.generate_until(reqs)
        assert batches, f"{name}: answers were wrongly restored"
    torch.manual_seed(1)
    with count_generated(lm_) as batches:
        lm_.generate_until(journal_requests(n=2))
    assert batches == []


def test_torn_journal_line_is_skipped_and_regenerated(gpt2_dir, tmp_path, caplog):
    from semuq_eval.models.hf import SemuqHFLM

    path = tmp_path / "j" / "rank0.jsonl"
    lm_ = SemuqHFLM(
        pretrained=gpt2_dir, device="cpu", dtype="float32", batch_size=4, journal=str(tmp_path / "j")
    )
    torch.manual_seed(1)
    lm_.generate_until(journal_requests(n=2))
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][: len(lines[-1]) // 2])  # killed mid-write
    again = SemuqHFLM(
        pretrained=gpt2_dir, device="cpu", dtype="float32", batch_size=4, journal=str(tmp_path / "j")
    )
    torch.manual_seed(1)
    with caplog.at_level("WARNING"), count_generated(again) as batches:
        again.generate_until(journal_requests(n=2))
    assert "unreadable journal line" in caplog.text
    assert sum(len(b) for b in batches) == 1


def test_journal_location_and_off_switch(gpt2_dir, tmp_path, monkeypatch):
    from semuq_eval.models.hf import SemuqHFLM

    monkeypatch.setenv("SEMUQ_OUTPUT_DIR", str(tmp_path / "out"))
    lm_ = SemuqHFLM(pretrained=gpt2_dir, device="cpu", dtype="float32", batch_size=4)
    lm_.generate_until(journal_requests(n=2))
    files = list((tmp_path / "out" / "semuq" / "_journal").glob("*/rank0.jsonl"))
    assert len(files) == 1 and len(files[0].read_text().splitlines()) == 2 * len(PROMPTS)

    off = SemuqHFLM(pretrained=gpt2_dir, device="cpu", dtype="float32", batch_size=4, journal="off")
    monkeypatch.setenv("SEMUQ_OUTPUT_DIR", str(tmp_path / "out2"))
    with count_generated(off) as batches:
        off.generate_until(journal_requests(n=2))
    assert batches and not (tmp_path / "out2").exists()


def test_multimodal_journal_keys_on_image_content(vlm, tmp_path):
    imgs = images()
    kw = dict(SAMPLE, max_gen_toks=4)
    reqs = repeated((inst("<image> What?", kw, doc_id=0, repeats=2, visual=[imgs[0]]), 2))
    with attrs(vlm, journal=str(tmp_path / "j"), _semuq_journal_obj=None):
        vlm.generate_until(reqs)
        copy_of_image = [imgs[0].copy()]  # same pixels, another object: restored
        with count_generated(vlm) as batches:
            vlm.generate_until(
                repeated((inst("<image> What?", kw, doc_id=0, repeats=2, visual=copy_of_image), 2))
            )
        assert batches == []
        with count_generated(vlm) as batches:
            vlm.generate_until(
                repeated((inst("<image> What?", kw, doc_id=0, repeats=2, visual=[imgs[1]]), 2))
            )
        assert len(batches) == 1


def test_the_models_generation_config_cannot_change_the_decoding(lm, gpt2_dir):
    """A generation_config.json with a repetition penalty, n-gram blocking, min-p and a minimum length (as some
    hub models ship) leaves semuq-hf's answers unchanged: the task's decoding is passed in full."""
    import copy

    requests = [inst(PROMPTS[0], GREEDY, idx=0)] + [inst(PROMPTS[0], SAMPLE, idx=1, repeats=4)] * 4
    torch.manual_seed(3)
    plain = lm.generate_until(requests)
    hostile = copy.deepcopy(lm.model.generation_config)
    hostile.repetition_penalty, hostile.no_repeat_ngram_size = 5.0, 1
    hostile.min_p, hostile.min_new_tokens, hostile.top_p = 0.5, 10, 0.1
    with attrs(lm.model, generation_config=hostile):
        torch.manual_seed(3)
        again = lm.generate_until(requests)
        with spy_generate(lm.model) as calls:
            lm.generate_until(requests[:1])
    assert [g.text for g in again] == [g.text for g in plain]
    np.testing.assert_allclose(again[1].token_logprobs, plain[1].token_logprobs)
    kwargs = calls[0]["kwargs"]
    assert (
        kwargs["repetition_penalty"] == 1.0
        and kwargs["no_repeat_ngram_size"] == 0
        and kwargs["num_beams"] == 1
    )


@pytest.mark.parametrize(
    ("flags", "expected"), [({"avx2"}, torch.float32), ({"avx2", "amx_bf16"}, torch.bfloat16)]
)
def test_without_a_dtype_semuq_hf_generates_in_what_the_cpu_computes_natively(
    tmp_path, monkeypatch, flags, expected
):
    """A bfloat16 checkpoint loaded with no dtype on a CPU: float32 unless the CPU has native bfloat16 (measured
    0.70x as fast emulated, docs/speed.md); a dtype given, `auto` included, wins; the choice is recorded."""
    from transformers import AutoModelForCausalLM

    from semuq_eval.models import cpu_dtype
    from semuq_eval.models.hf import SemuqHFLM

    folder = build_tiny_gpt2(tmp_path / "src")
    AutoModelForCausalLM.from_pretrained(folder).to(torch.bfloat16).save_pretrained(tmp_path / "bf16")
    for name in (
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "vocab.json",
        "merges.txt",
    ):
        if (folder / name).exists():
            (tmp_path / "bf16" / name).write_bytes((folder / name).read_bytes())
    monkeypatch.setattr(cpu_dtype, "cpu_flags", lambda cpuinfo="/proc/cpuinfo": set(flags))
    chosen = SemuqHFLM(pretrained=str(tmp_path / "bf16"), device="cpu", batch_size=1)
    assert chosen.model.dtype == expected
    assert chosen._semuq_model_identity()["dtype"] == str(expected)
    kept = SemuqHFLM(pretrained=str(tmp_path / "bf16"), device="cpu", batch_size=1, dtype="auto")
    assert kept.model.dtype == torch.bfloat16  # the checkpoint's own, as asked
