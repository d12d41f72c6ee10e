"""Pin a committed board's machine-readable files by digest instead of committing them.

    .venv/bin/python -m tools.board_digest leaderboards/reproduction/confirmation/leaderboard --write

A committed board keeps what a reader opens in the repository (``leaderboard.md``, ``headline.csv``, the page and the
plots); its ``leaderboard.json`` and ``leaderboard.csv`` (several MB each) are rebuilt from the committed run records
by the board's recipe. ``digest.json`` beside them holds the sha256 of each file's normal form: the JSON without its
build date, the versions it was built with (``generator``: Python, numpy, scipy, ...) and record paths, every float to
9 significant digits; the CSV with its full-precision numbers to 9
significant digits. The same records give the same digests on any CPU: a sum's last bits depend on the vector
instructions (an AVX-512 machine differs from an AVX2 one in the 16th digit of some ECEs), which the normal form drops.
``tests/test_leaderboard.py`` rebuilds every committed board and compares the digests. Without ``--write`` the digests
are printed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from pathlib import Path

DIGESTED = ("leaderboard.json", "leaderboard.csv")
DIGEST_FILE = "digest.json"


def number(value: float) -> str:
    """A float to 9 significant digits, and below 1e-12 to 0."""
    return "0" if abs(value) < 1e-12 else f"{value:.9g}"


def rounded(value):
    """``value`` with every float as :func:`number` writes it."""
    if isinstance(value, float):
        return float(number(value))
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v) for v in value]
    return value


def normal_document(path: Path) -> dict:
    """``leaderboard.json`` without its build date and build environment, each record's path reduced to its file name,
    rounded."""
    document = json.loads(path.read_text(encoding="utf-8"))
    document["created"] = None
    document["generator"] = None
    for run in document["runs"]:
        run["path"] = Path(run["path"]).name
    return rounded(document)


def bare_text(text: str) -> str:
    """A board's text without the build date, the command that built it (the recipe's, or the experiment's that made
    the records), record paths and the output folder, its full-precision numbers to 9 significant digits."""
    text = re.sub(r"-?\d+\.\d{10,}(?:e-?\d+)?", lambda m: number(float(m.group())), text)
    text = re.sub(r"\d{4}-\d{2}-\d{2}T[\d:+.]+", "DATE", text)
    text = re.sub(
        r"by `(semuq-eval leaderboard|python -m experiments\.reproduce) [^`]*`", "by `COMMAND`", text
    )
    text = re.sub(r"[^`,\s]*/([^/`,\s]+\.jsonl\.gz)", r"\1", text)
    return re.sub(r"--output \S+", "--output OUT", text).replace(" --no-plots", "")


def digests(board: Path) -> dict[str, str]:
    """The sha256 of the normal form of each of ``board``'s digested files."""
    document = json.dumps(normal_document(board / "leaderboard.json"), sort_keys=True, ensure_ascii=False)
    table = bare_text((board / "leaderboard.csv").read_text(encoding="utf-8"))
    texts = dict(zip(DIGESTED, (document, table), strict=True))
    return {name: hashlib.sha256(text.encode()).hexdigest() for name, text in texts.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tools.board_digest", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "boards", nargs="+", type=Path, help="board folders, each holding leaderboard.json and .csv"
    )
    parser.add_argument("--write", action="store_true", help=f"write each board's {DIGEST_FILE}")
    args = parser.parse_args(argv)
    for board in args.boards:
        found = digests(board)
        if args.write:
            (board / DIGEST_FILE).write_text(
                json.dumps(found, indent=1, sort_keys=True) + "\n", encoding="utf-8"
            )
        print(board, json.dumps(found, sort_keys=True))


if __name__ == "__main__":
    main()
