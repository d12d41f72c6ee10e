"""llama.cpp's OpenAI-compatible server (``python -m llama_cpp.server``) on a free loopback port.

Shared code, not a script: the generation benchmark (``python -m bench.generation``) and the real-server tests
(tests/fixtures/llama_server.py) start their server here. The GGUF is the one `semuq-eval assets` keeps in the
SmolLM2 folder; `.ci/setup` installs llama-cpp-python's server.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ALIAS = "smollm2"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gguf_in(folder: Path) -> Path:
    """The GGUF file a model folder keeps (the SmolLM2 asset keeps the one it was converted from)."""
    gguf = next(Path(folder).glob("*.gguf"), None)
    if gguf is None:
        raise FileNotFoundError(f"{folder} keeps no GGUF: run `semuq-eval assets` again (asset revision 2)")
    return gguf


class LlamaServer:
    """One llama.cpp server process on a free loopback port, serving ``gguf`` as model ``alias``.

    ``threads``: ggml threads for decoding and for the prompt; the default 1 suits a loaded machine, where
    ggml's threads stall waiting for each other at every step.
    """

    def __init__(self, gguf: Path, log: Path, threads: int = 1, alias: str = ALIAS) -> None:
        self.port = free_port()
        self.log = log
        self.url = f"http://127.0.0.1:{self.port}/v1"
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1"]
        cmd += ["--port", str(self.port), "--n_ctx", "2048", "--model_alias", alias]
        cmd += ["--n_threads", str(threads), "--n_threads_batch", str(threads)]
        with open(log, "w") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        try:
            self._wait()
        except BaseException:
            self.stop()
            raise

    def _wait(self) -> None:
        for _ in range(240):
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama.cpp server exited: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(self.url + "/models", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        raise RuntimeError(f"llama.cpp server did not start in 120 s: {self.log.read_text()[-2000:]}")

    def kill(self) -> None:
        """Kill the server at once (SIGKILL), as a crash would."""
        self.proc.kill()
        self.proc.wait(timeout=20)

    def stop(self) -> None:
        if self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.kill()
