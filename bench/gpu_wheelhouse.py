"""Gather the wheels `python -m bench.gpu_check` installs on a GPU machine that has no network, into ``.whl/``.

Run it here, where PyPI answers, from the repository with the test venv: ``.venv/bin/python -m bench.gpu_wheelhouse``.
The GPU machine's image already holds PyTorch, transformers, accelerate, sentence-transformers, scikit-learn, scipy,
pandas, pyarrow, matplotlib, pytest and hypothesis (the device tool's KINDS.md lists its packages); what semuq-eval
needs beyond them is :data:`CARRIED`, at the versions this venv's tests pass with, as wheels for the image's Python
(3.12, manylinux x86_64). A package published as a source archive only is built into a wheel here (they are pure
Python). ``.whl/`` is ignored by git and travels to the GPU machine as a carried path (64 MiB at most, with the
working tree's 50): lm-eval's wheel is slimmed to fit, without the 8 MB of its own task definitions (the check runs
semuq-eval's tasks only, with ``include_defaults=False``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

__all__ = ["CARRIED", "main"]

CARRIED = (
    "lm-eval", "datasets", "evaluate", "mapie", "pydantic", "pydantic-core", "annotated-types", "typing-inspection",
    "gguf", "rouge-score", "nltk", "dill", "multiprocess", "more-itertools", "pytablewriter", "dataproperty",
    "mbstrdecoder", "pathvalidate", "tabledata", "tcolorpy", "typepy", "chardet", "sqlitedict", "word2number",
    "pytz", "tenacity", "defusedxml",
)  # fmt: skip
"""What semuq-eval and its tests need that the GPU image lacks (the image's package list against this venv's)."""
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64")
LIMIT_MB = 40
"""The wheels' share of the 64 MiB that travels (the working tree takes the rest)."""


def _installed(name: str) -> str | None:
    try:
        return version(name)
    except Exception:
        return None


def _download(pin: str, out: Path) -> bool:
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d", str(out)]
    cmd += ["--python-version", "3.12", "--implementation", "cp"]
    for platform in PLATFORMS:
        cmd += ["--platform", platform]
    return subprocess.run([*cmd, pin], capture_output=True, text=True).returncode == 0


def slim_lm_eval(wheel: Path) -> None:
    """Rewrite lm-eval's wheel without its task folders (``lm_eval/tasks/<task>/``; the package's modules stay)."""

    def dropped(name: str) -> bool:
        parts = name.split("/")
        return len(parts) > 3 and parts[:2] == ["lm_eval", "tasks"]

    slim = wheel.with_suffix(".slim")
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(slim, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            if dropped(item.filename):
                continue
            data = src.read(item)
            if item.filename.endswith(".dist-info/RECORD"):
                rows = data.decode().splitlines()
                data = ("\n".join(r for r in rows if not dropped(r.split(",")[0])) + "\n").encode()
            dst.writestr(item, data)
    slim.replace(wheel)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.gpu_wheelhouse", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--out", default=".whl", help="the folder of wheels (default .whl, ignored by git)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(exist_ok=True)
    missing = [name for name in CARRIED if _installed(name) is None]
    if missing:
        print(
            f"error: not installed in this venv (run bash .ci/setup first): {', '.join(missing)}",
            file=sys.stderr,
        )
        return 2
    for name in CARRIED:
        pin = f"{name}=={_installed(name)}"
        if not _download(pin, out):  # published as a source archive only: build its (pure Python) wheel here
            built = subprocess.run(
                [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), pin],
                capture_output=True,
            )
            if built.returncode != 0:
                print(f"error: no wheel for {pin}: {built.stderr.decode()[-500:]}", file=sys.stderr)
                return 1
    for wheel in out.glob("lm_eval-*.whl"):
        slim_lm_eval(wheel)
    total = sum(p.stat().st_size for p in out.glob("*.whl")) / 2**20
    print(f"{len(list(out.glob('*.whl')))} wheels in {out}/, {total:.1f} MiB")
    if total > LIMIT_MB:
        print(f"error: over the {LIMIT_MB} MiB the wheels may take of what travels", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
