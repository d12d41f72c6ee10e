"""index.html in a real headless Chromium: loads from file://, sorts, filters, no console errors, a screenshot.

Chromium (Debian's ``chromium``; ``.ci/setup`` installs it) is driven over the DevTools protocol
(``tests/fixtures/chromium.py``). Without Chromium the test is skipped with the reason, except under
``SEMUQ_REQUIRE_ASSETS=1`` (CI), where it fails.
"""

from __future__ import annotations

import base64
import math
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from semuq_eval.leaderboard.build import build
from semuq_eval.leaderboard.compute import LeaderboardConfig, compute
from semuq_eval.leaderboard.html import CELLS_JS, write_html
from semuq_eval.leaderboard.runs import Run
from semuq_eval.leaderboard.schema import read_document
from semuq_eval.leaderboard.sections import group_sections
from semuq_eval.leaderboard.write import to_document
from tests.fixtures.chromium import CHROMIUM, Page, launch, load
from tests.fixtures.leaderboard_stores import STORES, different_question_sets

REQUIRED = os.environ.get("SEMUQ_REQUIRE_ASSETS") == "1"


@pytest.fixture(scope="module")
def page_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("page")
    build(
        [str(STORES / "*" / "semuq" / "*" / "*")], out, config=LeaderboardConfig(n_resamples=100), plots=True
    )
    return out


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if CHROMIUM is None:
        if REQUIRED:
            pytest.fail(
                "chromium is not installed (SEMUQ_REQUIRE_ASSETS=1): apt-get install -y chromium chromium-driver"
            )
        pytest.skip(
            "chromium is not installed (apt-get install -y chromium chromium-driver); page test skipped"
        )
    with launch(tmp_path_factory.mktemp("chromium-profile")) as page:
        yield page


def _choose(page: Page, element: str, value: str, event: str = "change") -> None:
    """Set a filter control and fire its event, as a user would."""
    page.js(
        f"(() => {{ const e = document.getElementById({element!r}); e.value = {value!r}; "
        f"e.dispatchEvent(new Event({event!r})); }})()"
    )


@pytest.mark.chromium
def test_page_in_headless_chromium(browser, page_dir, tmp_path):
    page = browser
    index = page_dir / "index.html"
    assert "http://" not in index.read_text().split("<body", 1)[1] and "https://" not in index.read_text()
    load(page, index)
    assert page.js("location.protocol") == "file:"
    n_rows = page.js("document.querySelectorAll('#cells tbody tr').length")
    assert n_rows > 0
    # the default filters: AUROC, greedy labels
    shown = page.js(
        "[...document.querySelectorAll('#cells tbody tr')].map(r => [r.cells[4].textContent, r.cells[5].textContent])"
    )
    assert {tuple(x) for x in shown} == {("greedy", "auroc")}

    def values(flagged: bool = False) -> list[float]:
        """The shown values of the reliable cells, or of the small-sample ones (`!`)."""
        texts = page.js("[...document.querySelectorAll('#cells tbody tr')].map(r => r.cells[6].textContent)")
        return [float(t.split()[0]) for t in texts if t and t[0].isdigit() and t.endswith("!") == flagged]

    texts = page.js("[...document.querySelectorAll('#cells tbody tr')].map(r => r.cells[6].textContent)")
    flags = [t.endswith("!") for t in texts if t and t[0].isdigit()]
    assert any(flags) and not all(flags) and flags == sorted(flags)  # reliable cells first, `!` after
    v = values()  # initially: best value first
    assert len(v) > 5 and v == sorted(v, reverse=True) and v[0] > v[-1]
    assert values(flagged=True) == sorted(values(flagged=True), reverse=True)
    assert page.js("document.querySelector('#cells th[data-key=value]').className") == "desc"
    page.js("document.querySelector('#cells th[data-key=value]').click()")
    v = values()
    assert v == sorted(v) and v[0] < v[-1]
    assert page.js("document.querySelector('#cells th[data-key=value]').className") == "asc"
    page.js("document.querySelector('#cells th[data-key=value]').click()")
    assert values() == sorted(values(), reverse=True)
    page.js("document.querySelector('#cells th[data-key=estimator]').click()")
    rows = page.js(
        "[...document.querySelectorAll('#cells tbody tr')].map(r => [r.cells[2].textContent, r.cells[6].textContent])"
    )
    reliable = [bool(v) and v[0].isdigit() and not v.endswith("!") for _, v in rows]
    assert reliable == sorted(reliable, reverse=True)  # then the `!` cells and those without a value
    for group in (True, False):
        names = [name for (name, _), r in zip(rows, reliable, strict=True) if r == group]
        assert names and names == sorted(names)

    # filter: one LLM, then an estimator substring
    def choose(element: str, value: str, event: str = "change") -> None:
        _choose(page, element, value, event)

    choose("f-llm", "llm-beta")
    llms = page.js("[...document.querySelectorAll('#cells tbody tr')].map(r => r.cells[1].textContent)")
    assert llms and set(llms) == {"llm-beta"}
    choose("f-estimator", "@enc", "input")
    names = page.js("[...document.querySelectorAll('#cells tbody tr')].map(r => r.cells[2].textContent)")
    assert names and all("@enc" in n for n in names)
    assert page.js("document.getElementById('count').textContent").startswith(
        f"Showing {len(names)} of {len(names)}"
    )
    choose("f-metric", "ece")
    assert set(
        page.js("[...document.querySelectorAll('#cells tbody tr')].map(r => r.cells[5].textContent)")
    ) == {"ece"}
    # heatmap, deltas, ranks rendered; the plots load from relative file:// paths
    choose("f-metric", "auroc")
    assert page.js("document.querySelectorAll('#heatmap td').length") > 3
    assert page.js("document.querySelectorAll('#deltas td.num').length") > 0
    assert page.js("document.querySelectorAll('#ranks tbody tr').length") > 0
    images = page.js("[...document.images].map(i => [i.complete, i.naturalWidth])")
    assert images and all(ok and width > 0 for ok, width in images)
    shot = page.call("Page.captureScreenshot", format="png")
    png = base64.b64decode(shot["data"])
    (tmp_path / "leaderboard.png").write_bytes(png)
    print(f"screenshot: {tmp_path / 'leaderboard.png'}")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    assert page.errors() == []


@pytest.mark.chromium
def test_headline_is_in_the_first_screen_sorted_with_cis_flags_and_pictures(browser, page_dir, tmp_path):
    """The reader's answer first: the headline table lies wholly within the first screen (1400 x 1000), above
    the page's prose, rows sorted by the reference estimator's mean AUROC, every cell with its CI and counts,
    the small-sample cells marked; the headline's pictures load; no console error."""
    page = browser
    load(page, page_dir / "index.html")
    page.js("window.scrollTo(0, 0)")
    box = page.js(
        "(() => { const r = document.getElementById('headline').getBoundingClientRect(); "
        "return [r.top, r.bottom, r.height, window.innerHeight]; })()"
    )
    top, bottom, height, screen = box
    assert 0 <= top < bottom <= screen and height > 40
    # before the prose: the header, the section list and the cells table all come after it
    order = page.js(
        "['headline', 'filters', 'cells'].map(id => document.getElementById(id).getBoundingClientRect().top)"
    )
    assert order == sorted(order)
    sections = page.js(
        "[...document.querySelectorAll('h2')].find(h => h.textContent === 'Sections').offsetTop"
    )
    assert sections > bottom
    doc = read_document(page_dir / "leaderboard.json")
    rows = page.js(
        "[...document.querySelectorAll('#headline tbody tr')].map(r => [...r.cells].map(c => "
        "[c.textContent, c.dataset.value || null, c.classList.contains('flagged')]))"
    )
    assert (
        [r[0][0] for r in rows]
        == [r["llm"] for r in doc["headline"]["greedy"]["rows"]]
        == ["llm-alpha", "llm-beta"]
    )
    means = [float(r[-1][1]) for r in rows]
    assert means == sorted(means, reverse=True)
    header = page.js("[...document.querySelectorAll('#headline thead th')].map(th => th.textContent)")
    assert header == ["LLM", *doc["headline"]["greedy"]["columns"], "mean"]
    for shown, row in zip(rows, doc["headline"]["greedy"]["rows"], strict=True):
        for (text, value, flagged), column in zip(
            shown[1:], [*doc["headline"]["greedy"]["columns"], "mean"], strict=True
        ):
            cell = row["mean"] if column == "mean" else row["cells"][column]
            assert text.startswith(f"{cell['value']:.3f} [{cell['ci_low']:.3f}, {cell['ci_high']:.3f}]")
            assert (
                f"({cell['n_correct']}/{cell['n_incorrect']})" in text and "acc " in text and "rank " in text
            )
            assert flagged == (not cell["reliable"]) == (" ! " in text)
            assert math.isclose(float(value), cell["value"], abs_tol=1e-6)
    assert any(flagged for row in rows for _, _, flagged in row[1:])  # the fixture has a small-sample cell
    # beside it, the same table under majority-vote labels, in its own order
    majority = page.js(
        "[...document.querySelectorAll('#headline-majority tbody tr')].map(r => [...r.cells].map(c => c.textContent))"
    )
    assert [r[0] for r in majority] == [r["llm"] for r in doc["headline"]["majority"]["rows"]]
    cell = doc["headline"]["majority"]["rows"][0]["mean"]
    assert majority[0][-1].startswith(f"{cell['value']:.3f} [{cell['ci_low']:.3f}, {cell['ci_high']:.3f}]")
    assert "kle_heat@enc" in page.js("document.querySelector('.rule').textContent")
    assert page.js("document.querySelectorAll('#best tbody tr, #best-majority tbody tr').length") == 4
    pictures = page.js(
        "[...document.querySelectorAll('#headline-plots img')].map(i => [i.getAttribute('src'), i.complete, i.naturalWidth])"
    )
    names = sorted(Path(src).name for src, _, _ in pictures)
    assert names == [
        "headline_forest.png",
        "rejection_semuq_toy_a.png",
        "rejection_semuq_toy_b.png",
        "reliability_semuq_toy_a.png",
        "reliability_semuq_toy_b.png",
    ]
    assert all(ok and width > 0 for _, ok, width in pictures)
    shot = page.call("Page.captureScreenshot", format="png")  # the first screen
    png = base64.b64decode(shot["data"])
    (tmp_path / "first_screen.png").write_bytes(png)
    print(f"screenshot: {tmp_path / 'first_screen.png'}")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    assert page.errors() == []


@pytest.mark.chromium
def test_common_section_counts_in_the_heatmap_only_when_chosen(browser, tmp_path):
    """--common-questions also: the #common section repeats its task's questions, so the page's heatmap and
    delta counts leave it out unless it is the section chosen."""
    stores = different_question_sets(tmp_path)  # beta: the first 40 questions
    out = tmp_path / "page"
    build(stores, out, common_questions="also", config=LeaderboardConfig(n_resamples=50), plots=False)
    page = browser
    load(page, out / "index.html")

    def n_cells() -> int:
        titles = page.js("[...document.querySelectorAll('#heatmap td')].map(td => td.title)")
        return sum(int(t.split()[0]) for t in titles if t)

    everything = n_cells()
    chosen = {}
    for section in ("semuq_toy_a#1", "semuq_toy_a#2", "semuq_toy_a#common"):
        _choose(page, "f-section", section)
        chosen[section] = n_cells()
    assert chosen["semuq_toy_a#common"] > 0
    assert everything == chosen["semuq_toy_a#1"] + chosen["semuq_toy_a#2"]
    assert "but the #common ones" in page.js("document.getElementById('delta-summary').textContent")
    assert page.errors() == []


HOSTILE = '<img src=x onerror="window.__pwned = (window.__pwned || 0) + 1">'


@pytest.mark.chromium
def test_hostile_values_in_a_board_run_no_script_and_the_rows_still_show(browser, page_dir, tmp_path):
    """Script in every string the page shows (names, notes, counts that should be numbers, a task that would
    close the data element or open a comment): the page escapes it all, runs no injected handler and renders."""
    doc = read_document(page_dir / "leaderboard.json")
    for i, cell in enumerate(doc["cells"]):
        cell["llm"] = f"{cell['llm']} {HOSTILE}"
        cell["note"] = HOSTILE
        if i % 3 == 0:
            cell["n_correct"], cell["n_incorrect"] = HOSTILE, HOSTILE
        if i % 5 == 0:
            cell["section"] = "x </script><!--<script>" + HOSTILE
    for section in doc["sections"]:
        section["n_samples"] = HOSTILE
        section["notes"] = [HOSTILE]
    for summary in doc["comparisons"]["summary"]:
        summary["n_improved"] = HOSTILE
        summary["set"] = HOSTILE
    for row in doc["comparisons"]["rows"]:
        row["note"], row["estimator"] = HOSTILE, HOSTILE
    for rank in doc["ranks"]["llms"]:
        rank["rank"], rank["llm"] = HOSTILE, HOSTILE
    for headline in doc["headline"].values():
        headline["reference"], headline["rule"], headline["strategy"] = HOSTILE, HOSTILE, HOSTILE
        for rows in (headline["rows"], headline["best"]):
            for row in rows:
                row["llm"] = HOSTILE
                for cell in row["cells"].values():
                    cell["note"], cell["n_correct"], cell["rank"] = HOSTILE, HOSTILE, HOSTILE
                row["cells"][HOSTILE] = next(iter(row["cells"].values()))
        headline["columns"].append(HOSTILE)
        for row in headline["best"]:
            for cell in row["cells"].values():
                cell["estimator"] = HOSTILE
    index = write_html(doc, tmp_path / "index.html", title=HOSTILE, header=HOSTILE)
    assert "<img" not in index.read_text(encoding="utf-8").split("<body", 1)[1]  # built without plots
    page = browser
    load(page, index)
    page.js("document.querySelector('#cells th[data-key=llm]').click()")
    _choose(page, "f-metric", "")
    time.sleep(0.5)  # an injected image would fail to load and fire its handler by now
    assert page.js("window.__pwned === undefined")
    assert page.js("document.querySelectorAll('#cells tbody tr').length") > 0
    assert page.js("document.querySelectorAll('img').length") == 0
    shown = page.js("[...document.querySelectorAll('#cells tbody tr')].map(r => r.cells[1].textContent)")
    assert all(HOSTILE in s for s in shown)  # shown as text, whole
    heads = page.js("[...document.querySelectorAll('#headline tbody td.llm')].map(td => td.textContent)")
    assert heads and all(h == HOSTILE for h in heads)
    assert HOSTILE in page.js("document.querySelector('#headline thead').textContent")
    assert page.errors() == []


# -- a page that stays light as the board grows ----------------------------------------------------------

BENCHMARK_CELLS = (
    33_600  # bench/leaderboard.py: 10 LLMs x 7 tasks x 60 estimators x 2 label strategies x 4 metrics
)
PAGE_BUDGET = 2_000_000  # bytes of index.html for the benchmark board (docs/leaderboard.md)
TABLE_BUDGET = 64  # bytes per cell of cells.js, all the page's tables included (the benchmark board: 57.3)


def _synthetic_page(out: Path, n_estimators: int) -> dict:
    """A board of 3 LLMs x 2 tasks x ``n_estimators`` estimators (80 questions, the benchmark's 4 metrics), its
    page written to ``out``; returns its document."""
    rng = np.random.default_rng(0)
    names = [f"agg{i}@op{i % 6}" for i in range(n_estimators - 1)] + ["kle_heat@enc"]
    runs = []
    for task in ("semuq_t1", "semuq_t2"):
        y = rng.integers(0, 2, 80).astype(float)
        for llm in ("llm-a", "llm-b", "llm-c"):
            bd = {"format": "semuq-breakdown/1", "task": task, "n_samples": 5, "n_docs": 80, "results": {},
                  "labels": {}, "settings": {"min_minority": 20}}  # fmt: skip
            scores = {n: rng.normal(size=80) + rng.uniform(0, 2) * (1 - y) for n in names}
            runs.append(Run(path=Path(llm), task=task, llm=llm, breakdown=bd, settings=bd["settings"],
                            doc_ids=np.arange(80), scores=scores, labels={"greedy": y, "majority": 1 - y}))  # fmt: skip
    config = LeaderboardConfig(n_resamples=20, metrics=("auroc", "ece", "prr", "auarc"))
    document = to_document(compute(group_sections(runs), config), created="2026-01-01T00:00:00+00:00")
    out.mkdir()
    write_html(document, out / "index.html")
    return document


@pytest.mark.slow
def test_the_page_stays_light_as_the_board_grows(tmp_path):
    """index.html holds the headline and what grows with runs, not with cells: six times the estimators leave
    it the same size, and it stays within the benchmark's 2 MB budget scaled to its cells; the tables go to
    cells.js, within a fixed number of bytes per cell."""
    small = _synthetic_page(tmp_path / "small", 10)
    large = _synthetic_page(tmp_path / "large", 60)
    page = {n: (tmp_path / n / "index.html").stat().st_size for n in ("small", "large")}
    n_cells = len(large["cells"])
    assert n_cells == 3 * 2 * 60 * 2 * 4 == 6 * len(small["cells"])
    assert page["large"] <= PAGE_BUDGET * n_cells / BENCHMARK_CELLS
    assert page["large"] - page["small"] < 0.02 * page["small"]  # the best-estimator names differ, no more
    assert (tmp_path / "large" / CELLS_JS).stat().st_size <= TABLE_BUDGET * n_cells


def _open_until(page: Page, index: Path, text: str) -> None:
    """Open ``index`` afresh (its events only) and wait until the tables' place says ``text``."""
    page.events.clear()
    page.call("Page.navigate", url=index.as_uri())
    deadline = time.time() + 30
    while text not in page.js("(document.getElementById('count') || {}).textContent || ''"):
        assert time.time() < deadline, page.errors()
        time.sleep(0.05)


@pytest.mark.chromium
def test_the_tables_load_from_cells_js_after_the_headline(browser, page_dir, tmp_path):
    """The page asks for cells.js once it has loaded and renders every table from it, no console error; without
    cells.js (or with one from another build) the headline still shows and the page says what is missing."""
    page = browser
    load(page, page_dir / "index.html")
    assert page.js("document.head.querySelector('script').getAttribute('src')") == CELLS_JS  # added at load
    n_cells = page.js("document.getElementById('count').textContent")
    assert (
        n_cells.startswith("Showing ") and page.js("document.querySelectorAll('#cells tbody tr').length") > 0
    )
    assert page.errors() == []

    alone = tmp_path / "alone"  # the page and its plots, without cells.js
    shutil.copytree(page_dir / "plots", alone / "plots")
    shutil.copy(page_dir / "index.html", alone / "index.html")
    _open_until(page, alone / "index.html", "could not be loaded")
    assert page.js("document.querySelectorAll('#headline tbody tr').length") == 2
    assert page.js("document.querySelectorAll('#cells tbody tr').length") == 0
    assert len(page.errors()) == 1 and "cells.js" in page.errors()[0]  # the failed load, nothing else

    (alone / CELLS_JS).write_text(
        (page_dir / CELLS_JS).read_text().replace('"created":"', '"created":"earlier ', 1), encoding="utf-8"
    )
    _open_until(page, alone / "index.html", "another build")
    assert page.js("document.querySelectorAll('#cells tbody tr').length") == 0 and page.errors() == []


@pytest.mark.chromium
def test_a_cell_without_a_figure_says_why(browser, page_dir, tmp_path):
    """An undefined AUROC shows its reason where the figure would be, as the CSV and the Markdown say it."""
    document = read_document(page_dir / "leaderboard.json")
    cell = next(c for c in document["cells"] if c["metric"] == "auroc" and c["status"] == "ok")
    note = "undefined: one class only (0 correct / 100 incorrect)"
    cell.update(
        value=None, ci_low=None, ci_high=None, status="undefined", note=note, n_correct=0, n_incorrect=100
    )
    out = tmp_path / "index.html"
    write_html(document, out)
    page = browser
    load(page, out)
    _choose(page, "f-llm", cell["llm"])
    values = page.js(
        "[...document.querySelectorAll('#cells tbody tr td:nth-child(7)')].map(td => td.textContent)"
    )
    assert "one class only (0 correct / 100 incorrect)" in values and "undefined" not in values
    assert page.errors() == []
