"""Write the compact form of a fine-tuned encoder (semuq_eval/assets/delta.py) and measure how close it stays.

    .venv/bin/python -m tools.encode_operator ~/.cache/semuq-eval/models/enc-trained --out /tmp/enc-compact
    .venv/bin/python -m tools.encode_operator TRAINED --base BASE --bits 4 --out FOLDER --texts 600

The weights' difference from the base (default: the all-minilm-l6-v2 asset) is written with ``--bits`` per value and
one scale per row, beside the folder's other files. Then the folder is rebuilt from it and both encoders embed held-out
texts of the training distribution (the answers of NQ-Open dev questions 2500-2999 in the committed training data,
question-conditioned as ``enc`` writes them): printed are the size, the largest weight error, the lowest cosine of a
text's two embeddings and the largest difference of a similarity S_ij. No evaluation data is read.
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
from pathlib import Path

import numpy as np


def heldout_texts(n: int) -> list[str]:
    """``question [SEP] answer`` of the first ``n`` sampled answers of the held-out NQ-Open dev questions."""
    from semuq_eval.assets.trained import TRAINING_DATA

    texts = []
    for path in sorted((TRAINING_DATA / "nqopen-dev-smollm2").glob("natural-02[5-9]*.jsonl.gz")):
        for line in gzip.open(path, "rt", encoding="utf-8"):
            record = json.loads(line)
            for answer in record.get("answers") or []:
                text = answer if isinstance(answer, str) else (answer or {}).get("text", "")
                if record.get("question") and text:
                    texts.append(f"{record['question']} [SEP] {text}")
            if len(texts) >= n:
                return texts[:n]
    return texts


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trained", help="the fine-tuned sentence-encoder folder")
    p.add_argument(
        "--base", default=None, help="the folder it was fine-tuned from (default: the all-minilm-l6-v2 asset)"
    )
    p.add_argument("--out", required=True, help="where to write the compact folder")
    p.add_argument("--bits", type=int, default=4, help="bits per weight difference (2-8; default 4)")
    p.add_argument(
        "--texts", type=int, default=600, help="held-out texts to embed for the check (default 600)"
    )
    args = p.parse_args()
    from safetensors.torch import load_file
    from sentence_transformers import SentenceTransformer

    from semuq_eval.assets import locate
    from semuq_eval.assets.cache import file_sha256
    from semuq_eval.assets.delta import DELTA_FILE, build_from_compact, write_compact

    trained, base = Path(args.trained), Path(args.base or locate("all-minilm-l6-v2"))
    meta = {"base": base.name, "trained_sha256": file_sha256(trained / "model.safetensors")}
    out = write_compact(trained, base, args.out, bits=args.bits, metadata=meta)
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(
        f"{out}: {size / 1e6:.2f} MB ({(out / DELTA_FILE).stat().st_size / 1e6:.2f} MB of weights), bits {args.bits}"
    )
    with tempfile.TemporaryDirectory() as scratch:
        rebuilt = Path(scratch) / "rebuilt"
        build_from_compact(out, base, rebuilt)
        a, b = load_file(str(trained / "model.safetensors")), load_file(str(rebuilt / "model.safetensors"))
        print(f"largest weight error: {max(float((a[k] - b[k]).abs().max()) for k in a):.2e}")
        texts = heldout_texts(args.texts)
        full = SentenceTransformer(str(trained), device="cpu").encode(texts, normalize_embeddings=True)
        compact = SentenceTransformer(str(rebuilt), device="cpu").encode(texts, normalize_embeddings=True)
    cosines = (full * compact).sum(axis=1)
    gap = np.abs(full @ full.T - compact @ compact.T).max()
    print(
        f"{len(texts)} held-out texts: lowest cosine {cosines.min():.6f}, largest |S_ij difference| {gap:.4f}"
    )


if __name__ == "__main__":
    main()
