"""index.html in a real headless Chromium: loads from file://, sorts, filters, no console errors, a screenshot.

Chromium (Debian's ``chromium``; ``.ci/setup`` installs it) is driven over the DevTools protocol with a
minimal standard-library WebSocket client (no Selenium). Without Chromium the test is skipped with the
reason, except under ``SEMUQ_REQUIRE_ASSETS=1`` (CI), where it fails.
"""

from __future__ import annotations

import base64
import json
import math
import os
import shutil
import socket
import struct
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from semuq_eval.leaderboard.build import build
from semuq_eval.leaderboard.compute import LeaderboardConfig
from semuq_eval.leaderboard.schema import read_document
from tests.fixtures.leaderboard_stores import STORES, different_question_sets

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
    "--remote-allow-origins=*",
    "--window-size=1400,1000",
]


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None


CHROMIUM = _chromium()
REQUIRED = os.environ.get("SEMUQ_REQUIRE_ASSETS") == "1"


class _WebSocket:
    """Just enough RFC 6455 for the DevTools protocol: client text frames (masked), server frames read whole."""

    def __init__(self, url: str, timeout: float = 30.0) -> None:
        assert url.startswith("ws://")
        host_port, _, path = url[5:].partition("/")
        host, _, port = host_port.partition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (
                f"GET /{path} HTTP/1.1\r\nHost: {host_port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        response = b""
        while b"\r\n\r\n" not in response:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("DevTools closed the connection during the handshake")
            response += chunk
        if b" 101 " not in response.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"DevTools refused the WebSocket: {response[:200]!r}")
        self.buffer = response.split(b"\r\n\r\n", 1)[1]

    def _read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("DevTools closed the connection")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def send(self, text: str) -> None:
        payload = text.encode()
        header = bytes([0x81])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 1 << 16:
            header += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def recv(self) -> str:
        message = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            data = self._read(n)
            opcode = b0 & 0x0F
            if opcode == 0x8:
                raise ConnectionError("DevTools closed the WebSocket")
            if opcode in (0x9, 0xA):  # ping / pong: not sent by DevTools in practice
                continue
            message += data
            if b0 & 0x80:
                return message.decode()


class _Page:
    """One DevTools page session: commands, and every console / exception / log event seen."""

    def __init__(self, ws: _WebSocket) -> None:
        self.ws, self.next_id, self.events = ws, 0, []

    def call(self, method: str, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def js(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def errors(self) -> list[str]:
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown":
                out.append(json.dumps(p.get("exceptionDetails", {}))[:300])
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
                out.append(f"console.{p['type']}: {json.dumps(p.get('args'))[:300]}")
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
                out.append(f"log: {p['entry'].get('text')} {p['entry'].get('url', '')}")
        return out


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
    profile = tmp_path_factory.mktemp("chromium-profile")
    proc = subprocess.Popen(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.time() + 60
        while not (port_file.is_file() and port_file.read_text().strip()):
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"chromium did not start (exit code {proc.poll()})")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
        url = next(t["webSocketDebuggerUrl"] for t in targets if t.get("type") == "page")
        page = _Page(_WebSocket(url))
        for domain in ("Page", "Runtime", "Log"):
            page.call(f"{domain}.enable")
        yield page
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _load(page: _Page, path: Path) -> None:
    page.call("Page.navigate", url=path.as_uri())
    deadline = time.time() + 30
    while (
        page.js("document.readyState") != "complete"
        or page.js("document.body && document.body.dataset.ready") != "1"
    ):
        if time.time() > deadline:
            raise AssertionError(f"the page did not become ready; errors: {page.errors()}")
        time.sleep(0.1)


def _choose(page: _Page, element: str, value: str, event: str = "change") -> None:
    """Set a filter control and fire its event, as a user would."""
    page.js(
        f"(() => {{ const e = document.getElementById({element!r}); e.value = {value!r}; "
        f"e.dispatchEvent(new Event({event!r})); }})()"
    )


@pytest.mark.chromium
def test_page_in_headless_chromium(browser, page_dir, tmp_path):
    page = browser
    index = page_dir / "index.html"
    assert "http://" not in index.read_text().split("<body>", 1)[1] and "https://" not in index.read_text()
    _load(page, index)
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
    _load(page, page_dir / "index.html")
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
    _load(page, out / "index.html")

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
    from semuq_eval.leaderboard.html import write_html

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
    assert "<img" not in index.read_text(encoding="utf-8").split("<body>", 1)[1]  # built without plots
    page = browser
    _load(page, index)
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
