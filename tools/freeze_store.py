"""Build the frozen run record that ``semuq-eval check-operator`` ships with, from a real run store.

    .venv/bin/python -m tools.freeze_store /work/runs/smollm2-webquestions/semuq/semuq_webquestions/smollm2-135m-instruct

writes ``semuq_eval/diagnose/data/smollm2-webquestions.jsonl.gz`` (a run record that keeps its texts: questions,
references, answer texts, the greedy answer's token offsets, the run's labels with every sample's verdict; no hidden states, log-probs or token ids:
see :func:`semuq_eval.diagnose.freeze.freeze_store`). The same source gives the same bytes.
``--limit`` keeps the first questions; ``--dest`` writes elsewhere.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from semuq_eval.diagnose.check_values import FROZEN_STORE
from semuq_eval.diagnose.freeze import freeze_store
from semuq_eval.harness.record import record_fingerprint

DEFAULT_DEST = (
    Path(__file__).resolve().parents[1] / "semuq_eval" / "diagnose" / "data" / f"{FROZEN_STORE}.jsonl.gz"
)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", help="a finished run store with per-sample labels")
    p.add_argument("--dest", default=str(DEFAULT_DEST))
    p.add_argument("--limit", type=int, default=None, help="keep the first questions only")
    p.add_argument("--labels", default="run", help="label set to freeze (default: the run's own)")
    p.add_argument("--name", default=None, help="how the provenance names the source (default: its path)")
    args = p.parse_args()
    frozen = freeze_store(
        args.source, args.dest, max_questions=args.limit, labels=args.labels, source_name=args.name
    )
    dest = Path(args.dest)
    print(json.dumps(frozen, indent=1))
    print(f"{dest}: {dest.stat().st_size / 1e6:.2f} MB, fingerprint {record_fingerprint(dest)[:16]}")


if __name__ == "__main__":
    main()
