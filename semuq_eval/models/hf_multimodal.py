"""`semuq-hf-multimodal`: lm-eval's HFMultimodalLM with semuq-hf's `generate_until` (N samples per call).

As `semuq-hf` (`semuq_eval.models.hf`), with requests grouped by (context, gen_kwargs, the identity of their image
objects). `generate` would expand image tensors for `num_return_sequences` row-wise, which misaligns Llava-like pixel
tensors (one row per *image*), so it never gets them: with a shared prefill (default for Llava) the prefill consumes
the images; otherwise the processor builds inputs for the k copies of each prompt and its images and `generate` runs
with `num_return_sequences=1`. Text post-processing is hf-multimodal's (no thinking-token handling)."""

from __future__ import annotations

from typing import Any

from lm_eval.models.hf_vlms import HFMultimodalLM
from lm_eval.models.utils import resize_image

from semuq_eval.models.hf import SemuqGenerateMixin
from semuq_eval.models.planning import PromptGroup

__all__ = ["SemuqHFMultimodalLM"]

#: architectures whose shared prefill was checked against teacher forcing (others: expanded inputs)
SHARED_PREFILL_MODEL_TYPES = frozenset({"llava"})


class SemuqHFMultimodalLM(SemuqGenerateMixin, HFMultimodalLM):
    """lm-eval `hf-multimodal` model returning `Generation`s (registered as `semuq-hf-multimodal`).

    Takes every HFMultimodalLM argument, plus `return_hidden`, `compact_rows`, `journal` (as in `semuq-hf`) and
    `share_prefill` (default: on for `SHARED_PREFILL_MODEL_TYPES`, off otherwise; True forces it)."""

    _semuq_expand_with_generate = False
    _semuq_name = "semuq-hf-multimodal"  # no reflexive follow-ups: their prompts would need the image

    def _semuq_resolve_share_prefill(self, value: Any) -> bool:
        if value is None or (isinstance(value, str) and value.strip().lower() in ("", "auto")):
            return getattr(self.config, "model_type", None) in SHARED_PREFILL_MODEL_TYPES
        return super()._semuq_resolve_share_prefill(value)

    def _semuq_encode(
        self, batch: list[PromptGroup], left_truncate_len: int, repeat: int = 1
    ) -> dict[str, Any]:
        if batch[0].aux is None:  # text-only requests, as HFMultimodalLM falls back to HFLM
            return super()._semuq_encode(batch, left_truncate_len, repeat)
        contexts = [g.context for g in batch for _ in range(repeat)]
        visuals = [
            [
                resize_image(img, self.image_width, self.image_height, self.image_max_side)
                for img in g.aux["visual"]
            ]
            for g in batch
            for _ in range(repeat)
        ]
        encoding = self.tok_batch_multimodal_encode(
            contexts, visuals, left_truncate_len=left_truncate_len, truncation=self.truncation
        )
        return dict(encoding)

    def _semuq_share_ok(self, inputs: dict[str, Any]) -> bool:
        # the shared prefill leaves the last prompt token to `generate`: it must not be an image token
        ids = {getattr(self, "image_token_id", None)}
        ids |= {getattr(self.config, k, None) for k in ("image_token_id", "image_token_index")}
        last = inputs["input_ids"][:, -1]
        return not any(bool((last == i).any()) for i in ids if isinstance(i, int))

    def _semuq_postprocess(self, full: str, until: list[str]) -> tuple[str, int]:
        # hf-multimodal's generate_until: cut at every stop sequence, nothing else
        s = full
        for term in until:
            if len(term) > 0:
                s = s.split(term)[0]
        return s, 0
