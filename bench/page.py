"""Benchmark of a leaderboard page in headless Chromium: when its headline shows, when its tables are ready.

    .venv/bin/python bench/page.py BOARD [BOARD ...] --loads 5

Each BOARD is a leaderboard folder (``index.html``, and ``cells.js`` beside it when the page has one), e.g.
the output of ``bench/leaderboard.py`` (10 LLMs x 7 tasks x 60 estimators). Chromium (headless, 1400 x 1000,
``tests/fixtures/chromium.py``) opens each page once to warm the file cache, then ``--loads`` times, and prints
the medians, in ms from the navigation's start, of:

- ``headline``: the first frame once the greedy headline table is whole in the document (the rule paragraph
  after it has been parsed): requestAnimationFrame, then a task (the usual after-paint probe);
- ``FCP``: the first contentful paint; ``DOMContentLoaded`` and ``load`` (the navigation's events);
- ``ready``: the page's tables rendered (``document.body.dataset.ready``).

It prints the sizes of the board's files and the machine load (``os.getloadavg``) before and after; on a shared
machine run it under ``nice``, and the figures include the waits for a core.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: tests.fixtures.chromium

PROBE = r"""
window.__semuq = {};
new MutationObserver((_, observer) => {
  const t = window.__semuq;
  if (t.headline == null && document.querySelector("#headline + .rule")) {
    t.headline = -1;
    requestAnimationFrame(() => setTimeout(() => { t.headline = performance.now(); }));
  }
  if (t.ready == null && document.body && document.body.dataset.ready === "1") {
    t.ready = performance.now();
    observer.disconnect();
  }
}).observe(document, {subtree: true, childList: true, attributes: true, attributeFilter: ["data-ready"]});
"""

FIGURES = """(() => {
  const n = performance.getEntriesByType("navigation")[0], p = performance.getEntriesByName("first-contentful-paint")[0];
  return {headline: window.__semuq.headline, FCP: p ? p.startTime : null, DOMContentLoaded: n.domContentLoadedEventEnd,
          load: n.loadEventEnd, ready: window.__semuq.ready};
})()"""


def measure(page, index: Path, timeout: float = 120.0) -> dict[str, float]:
    """One load of ``index``: the figures of the module docstring (ms)."""
    page.call("Page.navigate", url="about:blank")
    page.call("Page.navigate", url=index.as_uri())
    deadline = time.time() + timeout
    done = "window.__semuq && window.__semuq.headline > 0 && window.__semuq.ready > 0"
    while not (page.js(done) and page.js("performance.getEntriesByType('navigation')[0].loadEventEnd > 0")):
        if time.time() > deadline:
            raise RuntimeError(f"{index} did not become ready in {timeout} s; errors: {page.errors()}")
        time.sleep(0.05)
    return page.js(FIGURES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("boards", nargs="+", type=Path, help="leaderboard folders (each with index.html)")
    parser.add_argument("--loads", type=int, default=5)
    args = parser.parse_args()

    from tests.fixtures.chromium import launch

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as profile, launch(Path(profile)) as page:
        page.call("Page.addScriptToEvaluateOnNewDocument", source=PROBE)
        for board in args.boards:
            index = board / "index.html"
            sizes = ", ".join(
                f"{name} {(board / name).stat().st_size / 1e6:.2f} MB"
                for name in ("index.html", "cells.js", "leaderboard.json")
                if (board / name).is_file()
            )
            measure(page, index)  # warm-up
            runs = [measure(page, index) for _ in range(args.loads)]
            medians = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            print(f"{board}: {sizes}")
            print(
                f"  median of {args.loads} loads (ms): "
                + ", ".join(f"{k} {v:.0f}" for k, v in medians.items())
                + f"; headline range {min(r['headline'] for r in runs):.0f}-{max(r['headline'] for r in runs):.0f}"
            )
            if page.errors():
                print(f"  console errors: {page.errors()}")
    load_after = os.getloadavg()
    print(
        f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} ({os.cpu_count()} cores); "
        f"Chromium ran at the niceness of this process ({os.nice(0)})"
    )


if __name__ == "__main__":
    main()
