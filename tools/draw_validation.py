"""Draw the judge validation set by the seeded rule of leaderboards/validation/PROTOCOL.md.

``python -m tools.draw_validation STORE... --output leaderboards/validation`` reads run stores (folders, each
``.../semuq/<task>/<llm>``, or ``.tar.xz`` archives of them), draws 720 items in equal strata of (LLM, set, kind),
splits them into dev / test halves by question and writes ``items.jsonl`` (every field), ``sheet.md`` (what the
annotator reads: question, references, answer, under an opaque id, in a seeded shuffled order) and ``draw.json``
(the stores read, with the sha256 of each archive, and the counts). Nothing is drawn twice: an existing
``items.jsonl`` is refused.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from semuq_eval.durable import replace_file
from semuq_eval.harness.store import open_store
from semuq_eval.jsonio import write_json, write_jsonl

TOTAL = 720
SHUFFLE_SEED = 57
KINDS = ("greedy", "sampled")


def stratum_rng(llm: str, task_set: str, kind: str) -> random.Random:
    """The stratum's generator: seeded by the first 16 hex digits of ``sha256("semuq-validation/1:<llm>:<set>:<kind>")``.

    Examples
    --------
    >>> stratum_rng("a", "b", "greedy").random() == stratum_rng("a", "b", "greedy").random()
    True
    """
    digest = hashlib.sha256(f"semuq-validation/1:{llm}:{task_set}:{kind}".encode()).hexdigest()
    return random.Random(int(digest[:16], 16))


def half(task_set: str, doc_id: int) -> str:
    """``dev`` or ``test``: the parity of the first 8 hex digits of ``sha256("semuq-validation-split/1:<set>:<doc>")``.

    Examples
    --------
    >>> half("webquestions", 800) in ("dev", "test")
    True
    """
    digest = hashlib.sha256(f"semuq-validation-split/1:{task_set}:{doc_id}".encode()).hexdigest()
    return "dev" if int(digest[:8], 16) % 2 == 0 else "test"


def draw_stratum(docs: Sequence[Any], llm: str, task_set: str, kind: str, k: int) -> list[dict[str, Any]]:
    """The stratum's ``k`` items (PROTOCOL.md): greedy answers by doc id, sampled answers by (doc id, index)."""
    by_id = {d.doc_id: d for d in docs}
    rng = stratum_rng(llm, task_set, kind)
    if kind == "greedy":
        picks = [(doc_id, None) for doc_id in rng.sample(sorted(by_id), k)]
    else:
        pairs = [(d, i) for d in sorted(by_id) for i in range(len(by_id[d].samples))]
        picks = rng.sample(pairs, k)
    items = []
    for doc_id, index in picks:
        doc = by_id[doc_id]
        answer = doc.greedy if index is None else doc.samples[index]
        items.append(
            {
                "llm": llm,
                "set": task_set,
                "doc_id": int(doc_id),
                "kind": kind,
                "sample": index,
                "half": half(task_set, doc_id),
                "question": doc.question,
                "references": list(doc.references),
                "answer": str(answer.text),
            }
        )
    return items


def _stores(paths: Sequence[str], scratch: Path) -> list[tuple[Path, str | None]]:
    """Every store folder named (archives unpacked into ``scratch``), with the sha256 of its archive."""
    found = []
    for number, given in enumerate(paths):
        path = Path(given)
        if path.is_dir():
            found.append((path, None))
            continue
        target = scratch / str(number)
        with tarfile.open(path, "r:xz") as archive:
            archive.extractall(target, filter="data")
        manifests = sorted(target.glob("*/*/manifest.json"))
        if len(manifests) != 1:
            raise ValueError(
                f"{path}: expected one run store (<task>/<llm>/manifest.json), found {len(manifests)}"
            )
        found.append((manifests[0].parent, hashlib.sha256(path.read_bytes()).hexdigest()))
    return found


def draw(
    paths: Sequence[str], scratch: Path, total: int = TOTAL
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The ``total`` items, in equal strata, of the stores ``paths``, shuffled and numbered, and the draw's record."""
    stores = _stores(paths, scratch)
    runs = []
    for folder, sha in stores:
        task, llm = folder.parent.name, folder.name
        runs.append(
            (llm, task.removeprefix("semuq_"), open_store(folder).docs(hidden=False), sha, str(folder))
        )
    keys = [(llm, task_set) for llm, task_set, *_ in runs]
    if len(set(keys)) != len(keys):
        raise ValueError("two stores of the same LLM and set; give each once")
    k = total // (len(runs) * len(KINDS))
    items = [
        item
        for llm, task_set, docs, *_ in runs
        for kind in KINDS
        for item in draw_stratum(docs, llm, task_set, kind, k)
    ]
    random.Random(SHUFFLE_SEED).shuffle(items)
    for rank, item in enumerate(items):
        item["id"] = rank
    record = {
        "format": "semuq-validation-draw/1",
        "protocol": "leaderboards/validation/PROTOCOL.md",
        "per_stratum": k,
        "n_items": len(items),
        "n_dev": sum(item["half"] == "dev" for item in items),
        "stores": [
            {"llm": llm, "set": s, "archive_sha256": sha, "n_questions": len(docs)}
            for llm, s, docs, sha, _ in runs
        ],
    }
    return items, record


def sheet(items: Sequence[dict[str, Any]]) -> str:
    """The annotation sheet: for each item its id, the question, the references and the answer, nothing else."""
    lines = [
        "# Annotation sheet (leaderboards/validation/PROTOCOL.md: the rules; write annotations.jsonl)",
        "",
    ]
    for item in items:
        refs = " | ".join(item["references"])
        answer = " ".join(item["answer"].split()) or "(empty)"
        lines += [
            f"## {item['id']}",
            f"- question: {item['question']}",
            f"- references: {refs}",
            f"- answer: {answer}",
            "",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stores", nargs="+", help="run store folders or .tar.xz archives of them")
    parser.add_argument(
        "--output", required=True, help="the folder to write items.jsonl, sheet.md, draw.json"
    )
    parser.add_argument("--total", type=int, default=TOTAL, help="items in all (the protocol's: 720)")
    args = parser.parse_args(argv)
    output = Path(args.output)
    if (output / "items.jsonl").exists():
        print(f"draw_validation: {output / 'items.jsonl'} exists; the set is drawn once", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as scratch:
        items, record = draw(args.stores, Path(scratch), args.total)
    write_jsonl(output / "items.jsonl", items)
    replace_file(output / "sheet.md", sheet(items))
    write_json(output / "draw.json", record)
    print(f"{len(items)} items ({record['n_dev']} dev), {record['per_stratum']} per stratum -> {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
