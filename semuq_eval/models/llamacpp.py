"""`semuq-llamacpp`: a GGUF model served by llama.cpp inside this process, read through `semuq-api`.

llama.cpp's server (the prebuilt ``xllamacpp`` wheel) runs on a free loopback port with ``slots`` parallel slots, so
a question's samples and greedy answer decode as one continuous batch; everything else is `semuq-api`'s
(docs/serving.md). ``gguf``: a prepared asset's name, a ``.gguf`` file or a folder holding one::

    lm_eval --model semuq-llamacpp --model_args gguf=qwen2.5-coder-1.5b-instruct,endpoint=chat \\
        --apply_chat_template --tasks semuq_triviaqa_dpr --output_path out/

``python -m semuq_eval.models.llamacpp GGUF`` serves the model on loopback until stopped (the tests' real server)."""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from semuq_eval.models.api import SemuqAPILM
from semuq_eval.models.vllm_cpu import _installed
from semuq_eval.options import Options, add_options, option, parse_options

__all__ = ["LlamaCppServer", "SemuqLlamaCppLM", "find_gguf"]

log = logging.getLogger(__name__)

DEFAULT_SLOTS = 11
"""N = 10 samples and the greedy answer of one question decode together."""
DEFAULT_CTX_PER_SLOT = 1024


def find_gguf(spec: str | os.PathLike) -> Path:
    """The GGUF file that ``spec`` names: a file, a folder holding one, or a prepared asset's name.

    FileNotFoundError when nothing matches; the message says how to prepare the asset."""
    path = Path(spec)
    if path.is_file():
        return path
    if not path.exists() and os.sep not in str(spec):
        from semuq_eval.assets import ASSETS, locate

        if str(spec) in ASSETS:
            path = locate(str(spec))
    if path.is_dir():
        if found := sorted(path.glob("*.gguf")):
            return found[0]
        raise FileNotFoundError(f"semuq-llamacpp: {path} holds no .gguf file")
    raise FileNotFoundError(
        f"semuq-llamacpp: gguf={spec!r} is neither a .gguf file, a folder holding one, nor an asset name "
        "(`semuq-eval assets --list`)"
    )


def gguf_sha256(path: Path) -> str:
    """The file's sha256, read from its asset's manifest when it has one (no second pass over the file)."""
    manifest = path.parent / ".semuq-asset.json"
    if manifest.is_file():
        try:
            gguf = json.loads(manifest.read_text(encoding="utf-8")).get("gguf") or {}
            if gguf.get("file") == path.name and isinstance(gguf.get("sha256"), str):
                return gguf["sha256"]
        except (OSError, ValueError):
            pass
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


class LlamaCppServer:
    """llama.cpp's OpenAI-compatible server (xllamacpp) in this process, on loopback.

    ``threads``: for decoding and the prompt (default: every core this process may use); ``slots``: requests decoded
    together; ``ctx_per_slot``: context tokens of each slot (prompt + answer); ``port``: 0 for a free port."""

    def __init__(
        self,
        gguf: Path,
        *,
        threads: int | None = None,
        slots: int = DEFAULT_SLOTS,
        ctx_per_slot: int = DEFAULT_CTX_PER_SLOT,
        port: int = 0,
    ) -> None:
        try:
            import xllamacpp
        except ImportError as err:
            raise ImportError(
                "semuq-llamacpp needs llama.cpp's prebuilt wheel: pip install xllamacpp (or the project's "
                "[llamacpp] extra)"
            ) from err
        self.threads = int(threads) if threads else len(os.sched_getaffinity(0))
        self.slots = int(slots)
        if self.threads < 1 or self.slots < 1 or int(ctx_per_slot) < 64:
            raise ValueError(
                f"semuq-llamacpp: threads and slots must be >= 1 and ctx_per_slot >= 64, got threads="
                f"{threads}, slots={slots}, ctx_per_slot={ctx_per_slot}"
            )
        params = xllamacpp.CommonParams()
        params.model.path = str(gguf)
        params.n_parallel = self.slots
        params.n_ctx = int(ctx_per_slot) * self.slots
        params.cpuparams.n_threads = self.threads
        params.cpuparams_batch.n_threads = self.threads
        params.port = int(port)
        params.verbosity = 0
        self.version = getattr(xllamacpp, "__version__", None) or _installed("xllamacpp")
        self._server = xllamacpp.Server(params)
        self.address = self._server.listening_address
        self.url = self.address + "/v1"

    def stop(self) -> None:
        """Stop the server (its threads end with the object)."""
        self._server = None


class SemuqLlamaCppLM(SemuqAPILM):
    """lm-eval model ``semuq-llamacpp`` (module docstring).

    ``gguf``: an asset name, a ``.gguf`` file or a folder holding one; ``threads``, ``slots``, ``ctx_per_slot``:
    :class:`LlamaCppServer`'s (``concurrency`` defaults to ``slots``); ``**kwargs``: `semuq-api`'s arguments but
    ``model`` and ``base_url``, which name the server started here."""

    def __init__(
        self,
        gguf: str | None = None,
        threads: int | None = None,
        slots: int = DEFAULT_SLOTS,
        ctx_per_slot: int = DEFAULT_CTX_PER_SLOT,
        **kwargs: Any,
    ) -> None:
        if taken := sorted({"model", "base_url"} & set(kwargs)):
            raise ValueError(
                f"semuq-llamacpp: {taken} name the server it starts itself; give gguf=... instead"
            )
        if not gguf:
            raise ValueError("semuq-llamacpp needs gguf=ASSET_OR_FILE in --model_args")
        path = find_gguf(str(gguf))
        sha256 = gguf_sha256(path)
        kwargs.setdefault("concurrency", slots)
        self.server = LlamaCppServer(path, threads=threads, slots=slots, ctx_per_slot=ctx_per_slot)
        name = str(gguf) if Path(path).parent.name == str(gguf) else path.stem
        super().__init__(model=name, base_url=self.server.url, **kwargs)
        self.gguf = {"file": path.name, "sha256": sha256}

    def _start(self, groups) -> None:
        first = self.capabilities is None
        super()._start(groups)
        if first and self.source is not None:
            self.source["model"] = "semuq-llamacpp"
            self.source["llama_cpp"] = {
                "gguf": self.gguf,
                "xllamacpp": self.server.version,
                "threads": self.server.threads,
                "slots": self.server.slots,
            }

    def _identity(self) -> dict[str, Any]:
        return {**super()._identity(), "gguf_sha256": self.gguf["sha256"]}


class ServeOptions(Options):
    """The options of ``python -m semuq_eval.models.llamacpp``."""

    gguf: str = option(..., "an asset name, a .gguf file or a folder holding one", flag="gguf")
    port: int = option(0, "the loopback port (0: a free one)", ge=0, le=65535)
    threads: int | None = option(None, "CPU threads (default: llama.cpp's choice)", ge=1)
    slots: int = option(DEFAULT_SLOTS, "parallel request slots", ge=1)
    ctx_per_slot: int = option(DEFAULT_CTX_PER_SLOT, "context tokens per slot", ge=1)


def main(argv: list[str] | None = None) -> int:
    """Serve a GGUF on loopback until SIGTERM / SIGINT; print the /v1 URL once it listens."""
    parser = argparse.ArgumentParser(prog="python -m semuq_eval.models.llamacpp", description=main.__doc__)
    add_options(parser, ServeOptions)
    try:
        args = parse_options(ServeOptions, parser.parse_args(argv))
        server = LlamaCppServer(
            find_gguf(args.gguf),
            threads=args.threads,
            slots=args.slots,
            ctx_per_slot=args.ctx_per_slot,
            port=args.port,
        )
    except (OSError, ValueError, ImportError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    print(server.url, flush=True)
    done.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
