"""The dtype `semuq-hf` generates in on a CPU when none is given: chosen by what the CPU computes natively.

bfloat16 where the CPU has ``avx512_bf16`` or ``amx_bf16`` (native there, and the faster), float32 elsewhere (torch
emulates bfloat16 on AVX2-only CPUs, slower than float32; docs/speed.md). Token log-probabilities and entropies are
computed in float32 either way (:mod:`semuq_eval.models.recorder`). A ``dtype`` model argument (``auto``: the
checkpoint's own) wins."""

from __future__ import annotations

from pathlib import Path

__all__ = ["NATIVE_BF16_FLAGS", "cpu_flags", "cpu_generation_dtype", "native_bf16"]

NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")
"""The /proc/cpuinfo flags of native bfloat16 arithmetic."""


def cpu_flags(cpuinfo: str | Path = "/proc/cpuinfo") -> set[str]:
    """The CPU's feature flags (empty when ``cpuinfo`` cannot be read, e.g. not Linux)."""
    try:
        text = Path(cpuinfo).read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return set(value.split())
    return set()


def native_bf16(flags: set[str] | None = None) -> list[str]:
    """The native bfloat16 flags among ``flags`` (default: this CPU's).

    Examples
    --------
    >>> native_bf16({"avx2", "fma"}), native_bf16({"avx2", "avx512_bf16"})
    ([], ['avx512_bf16'])
    """
    flags = cpu_flags() if flags is None else flags
    return [flag for flag in NATIVE_BF16_FLAGS if flag in flags]


def cpu_generation_dtype(flags: set[str] | None = None) -> str:
    """``"bfloat16"`` on a CPU with native bfloat16, else ``"float32"`` (module docstring).

    Examples
    --------
    >>> cpu_generation_dtype({"avx2"}), cpu_generation_dtype({"amx_bf16"})
    ('float32', 'bfloat16')
    """
    return "bfloat16" if native_bf16(flags) else "float32"
