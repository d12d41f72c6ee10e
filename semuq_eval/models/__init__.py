"""lm-eval models of semuq-eval, registered lazily (importing this package does not import torch).

- `semuq-hf` (`semuq_eval.models.hf:SemuqHFLM`) and `semuq-hf-multimodal` (`hf_multimodal:SemuqHFMultimodalLM`):
  lm-eval's HFLM / HFMultimodalLM serving a request's N repeats with one `generate` call.
- `semuq-api` (`semuq_eval.models.api:SemuqAPILM`): any OpenAI-compatible server (no torch).
- `semuq-llamacpp` (`semuq_eval.models.llamacpp:SemuqLlamaCppLM`): a GGUF served by llama.cpp inside the process.
- `semuq-vllm` (`semuq_eval.models.vllm_engine:SemuqVLLM`): lm-eval's ``vllm`` model, N samples per request.

They return `Generation`s (the text with its white-box signals); any other lm-eval model returns plain strings,
which `as_generation` turns into text-only Generations."""

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
