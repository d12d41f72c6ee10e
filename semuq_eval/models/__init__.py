"""lm-eval models of semuq-eval, registered lazily (importing this package does not import torch).

- `semuq-hf` -> `semuq_eval.models.hf:SemuqHFLM`: lm-eval's HFLM whose `generate_until` serves the N repeats of
  a request with one `generate` call and returns `Generation`s (text + token log-probs, token entropies,
  token offsets and the last hidden state).
- `semuq-hf-multimodal` -> `semuq_eval.models.hf_multimodal:SemuqHFMultimodalLM`: the same for image+text tasks.
- `semuq-api` -> `semuq_eval.models.api:SemuqAPILM`: any OpenAI-compatible server (vLLM, SGLang, TGI, llama.cpp,
  OpenAI): the N samples of a question in one request, token log-probabilities and token entropies estimated
  from the top-k the server returns (no torch).
- `semuq-llamacpp` -> `semuq_eval.models.llamacpp:SemuqLlamaCppLM`: a GGUF served by llama.cpp (the prebuilt
  ``xllamacpp`` wheel) inside the process, read through `semuq-api`; the N samples decode as one batch.
- `semuq-vllm` -> `semuq_eval.models.vllm_engine:SemuqVLLM`: lm-eval's ``vllm`` model (vLLM in this process) whose
  `generate_until` asks for a question's N samples in one request (``n=N``) and returns `Generation`s with token ids,
  log-probabilities and top-k entropy estimates (hidden states on request).

Any other lm-eval model returns plain strings; `as_generation` turns them into text-only Generations.
"""

from __future__ import annotations

from semuq_eval.models.generation import Generation, as_generation

__all__ = ["MODELS", "Generation", "as_generation", "register_models"]

MODELS = {
    "semuq-hf": "semuq_eval.models.hf:SemuqHFLM",
    "semuq-hf-multimodal": "semuq_eval.models.hf_multimodal:SemuqHFMultimodalLM",
    "semuq-api": "semuq_eval.models.api:SemuqAPILM",
    "semuq-llamacpp": "semuq_eval.models.llamacpp:SemuqLlamaCppLM",
    "semuq-vllm": "semuq_eval.models.vllm_engine:SemuqVLLM",
}


def register_models() -> None:
    """Register semuq-eval's models in lm-eval's model registry (idempotent, no torch import)."""
    # lm-eval fills its registry with the built-in models only when it is empty at the first lookup
    # (`api.registry.get_model`); register them first so that adding ours does not hide `hf`, `vllm`, ...
    import lm_eval.models  # noqa: F401
    from lm_eval.api.registry import model_registry

    for name, target in MODELS.items():
        if name not in model_registry:  # already registered (maybe materialized): keep it
            model_registry.register(name, target=target)


register_models()
