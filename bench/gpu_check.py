"""The prepared GPU check: run as is, from the repository root, on a machine with one CUDA GPU whose Python already has
torch, transformers, accelerate and sentence-transformers (the device tool's image) and no network. Under 8 minutes.

    here, once (PyPI answers):   .venv/bin/python -m bench.gpu_wheelhouse      # .whl/: what the image lacks
    there:                       python3 -m bench.gpu_check                    # carry .whl; logs to $OUT or ./gpu-check

1. installs the carried wheels (:data:`bench.gpu_wheelhouse.CARRIED`: lm-eval, datasets, evaluate, mapie, pydantic,
   gguf, rouge-score, ...) into ``/tmp/site``, no dependency resolved, nothing fetched;
2. runs the tests that touch devices and dtypes on CUDA (tests/test_devices.py, marker ``device``: `semuq-hf` on CUDA
   in float32 against the CPU and in bfloat16, the encoder and NLI operators on CUDA against the CPU, a semuq task end
   to end on CUDA) and, as a check of the install, the CPU tests of `semuq-hf` and the encoder operators;
3. a ``bench/generation.py`` smoke run on CUDA (the tiny fixture model: no real weights travel) against the GPU's
   matmul peak.

vLLM is not part of it: its CUDA wheel (hundreds of MB) cannot travel; docs/serving.md says what ran where. Each step's
output is a file in the log folder and ``summary.txt`` holds one line per step; the exit status is 0 only when every
step passed. ``python -m bench.gpu_check --device cpu --no-install`` runs the same steps on a machine without a GPU,
from the test venv (a check of the script itself: the CPU then stands on both sides of every comparison).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["main"]

ROOT = Path(__file__).resolve().parents[1]
START = time.monotonic()
SITE = "/tmp/site"
TINY = "/tmp/semuq-tiny-gpt2"
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA"]


def _steps(device: str) -> tuple[tuple[str, list[str], int], ...]:
    """(name, command, seconds allowed) of each step after the install."""
    return (
    ("device tests", [*PYTEST, "-m", "device", "tests/test_devices.py"], 300),
    ("cpu tests of the same code", [*PYTEST, "-x", "tests/test_models_hf.py", "tests/test_operators_encoder.py"], 150),
    ("tiny model", [sys.executable, "-c", f"from tests.fixtures.tiny_lm import build_tiny_gpt2; build_tiny_gpt2('{TINY}')"], 60),
    ("bench smoke run", [
        sys.executable, "-m", "bench.generation", "--model", TINY, "--device", device, "--configs",
        "semuq-hf-fp32,semuq-hf-bf16,hf", "--questions", "4", "--n", "4", "--repeats", "1", "--hf-batch-sizes", "5",
        "--matmul-max-size", "8192",
    ], 120),
    )  # fmt: skip


def _run(name: str, cmd: list[str], timeout: int, log: Path, env: dict[str, str]) -> bool:
    out = log / (name.replace(" ", "-") + ".log")
    try:
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        text, ok = done.stdout + done.stderr, done.returncode == 0
    except subprocess.TimeoutExpired as err:
        text, ok = f"{err.stdout or ''}{err.stderr or ''}\ntimed out after {timeout} s", False
    out.write_text(text, encoding="utf-8")
    last = next((line for line in reversed(text.splitlines()) if line.strip()), "")
    _say(log, f"{name}: {'ok' if ok else 'FAILED'} ({last[:200]})")
    return ok


def _install(folder: Path, log: Path, env: dict[str, str]) -> bool:
    """The carried wheels into :data:`SITE`, no dependency resolved, nothing fetched."""
    wheels = sorted(str(p) for p in folder.glob("*.whl"))
    if not wheels:
        _say(log, f"FAILED: no wheels in {folder}/ (run python -m bench.gpu_wheelhouse here and carry them)")
        return False
    install = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile"]
    install += ["--no-cache-dir", "--upgrade", "--target", SITE, *wheels]
    return _run(f"install of {len(wheels)} wheels", install, 120, log, env)


def _say(log: Path, line: str) -> None:
    line = f"[gpu_check {time.monotonic() - START:.0f} s] {line}"
    print(line, flush=True)
    with open(log / "summary.txt", "a", encoding="utf-8") as fh:
        fh.write(line + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu_check", description=__doc__.split("\n")[0])
    parser.add_argument("--log", default=os.environ.get("OUT") or "gpu-check", help="the log folder")
    parser.add_argument(
        "--wheels", default=".whl", help="the carried wheels (python -m bench.gpu_wheelhouse)"
    )
    parser.add_argument(
        "--device", default="cuda", help="the device under test (cpu: a check of this script)"
    )
    parser.add_argument(
        "--no-install", action="store_true", help="use the installed packages, not the wheels"
    )
    args = parser.parse_args(argv)
    log = Path(args.log)
    log.mkdir(parents=True, exist_ok=True)
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        _say(log, f"FAILED: no CUDA GPU visible to torch {torch.__version__}")
        return 1
    name = torch.cuda.get_device_name(0) if args.device == "cuda" else args.device
    _say(log, f"python {sys.version.split()[0]}, torch {torch.__version__}, {name}")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([SITE, str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env.update(
        HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false"
    )
    env["SEMUQ_TEST_DEVICE"] = args.device
    if not args.no_install and not _install(ROOT / args.wheels, log, env):
        return 1
    results = [_run(step, cmd, timeout, log, env) for step, cmd, timeout in _steps(args.device)]
    _say(log, f"done: {sum(results)} of {len(results)} steps passed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
