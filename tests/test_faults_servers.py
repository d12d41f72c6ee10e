"""Faults of servers and of the verdict cache: a flaky OpenAI-compatible server on loopback (trickling bytes, HTTP 429
with Retry-After, refusing connections, empty replies) and damaged, full or read-only verdict caches.

What must hold: a request ends within its ``timeout`` whatever the server does; ``Retry-After`` is honoured; a judge
whose every request failed exits non-zero in one line (``--allow-unknown`` accepts it); an empty or unreadable reply
is never cached; an invalid cache row is never copied into labels; a read-only cache is used read-only; a cache
that cannot be written never costs the judge its labels.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from semuq_eval.judges.cache import JudgeCache
from semuq_eval.judges.openai import OpenAIJudge
from semuq_eval.openai_client import RequestFailed, ServerClient
from tests.fixtures.stub_openai import completion

pytestmark = pytest.mark.faults

TRICKLE_GAP = 0.2
"""Seconds between two bytes of a trickling server."""


class FlakyServer:
    """An OpenAI-compatible server on 127.0.0.1 misbehaving as ``mode`` says (settable between requests).

    Modes: ``good`` (yes for an answer naming Paris, else no), ``trickle`` (a good reply, one byte every
    :data:`TRICKLE_GAP` s), ``trickle_headers`` (the status line and headers too), ``busy`` (HTTP 429 with
    ``Retry-After: 1`` once, then good), ``empty_body`` (200 and no body), ``no_choices``, ``empty_text`` and
    ``chatty`` (a reply that is neither yes nor no). ``requests`` counts the requests received.
    """

    def __init__(self, mode: str = "good") -> None:
        self.mode = mode
        self.requests = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with server.lock:
                    server.requests += 1
                try:
                    server.answer(self, body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up: its deadline passed

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def answer(self, handler: BaseHTTPRequestHandler, body: dict) -> None:
        mode = self.mode
        if mode == "busy":
            self.mode = "good"
            self.send(handler, 429, b'{"error": "slow down"}', {"Retry-After": "1"})
            return
        prompt = body["messages"][-1]["content"]
        verdict = "yes" if "Paris" in prompt.rsplit("<answer>", 1)[1] else "no"
        payload = {
            "empty_body": b"",
            "no_choices": b'{"choices": []}',
            "empty_text": json.dumps(completion(body, "")).encode(),
            "chatty": json.dumps(completion(body, "As an AI, I cannot say")).encode(),
        }.get(mode, json.dumps(completion(body, verdict, 0.9 if verdict == "yes" else 0.1)).encode())
        if mode == "trickle_headers":
            head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(payload)}\r\n\r\n".encode()
            self.trickle(handler, head + payload)
        elif mode == "trickle":
            self.send(handler, 200, b"", {"Content-Length": str(len(payload))})
            self.trickle(handler, payload)
        else:
            self.send(handler, 200, payload, {})

    @staticmethod
    def send(handler: BaseHTTPRequestHandler, status: int, payload: bytes, headers: dict) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        for key, value in {"Content-Length": str(len(payload)), **headers}.items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(payload)

    @staticmethod
    def trickle(handler: BaseHTTPRequestHandler, data: bytes) -> None:
        for i in range(len(data)):
            handler.wfile.write(data[i : i + 1])
            handler.wfile.flush()
            time.sleep(TRICKLE_GAP)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def flaky():
    """Starts flaky servers (``flaky(mode)``) and closes them after the test."""
    servers: list[FlakyServer] = []

    def start(mode: str = "good") -> FlakyServer:
        servers.append(FlakyServer(mode))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def closed_port() -> int:
    """A loopback port nothing listens on (connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def judge(base_url: str, cache=None, **options) -> OpenAIJudge:
    options = {"max_retries": 0, "backoff": 0.01, "progress": False, **options}
    return OpenAIJudge(base_url, "m", cache=cache, **options)


# ---------------------------------------------------------------------------------------------- deadlines
@pytest.mark.parametrize("mode", ["trickle", "trickle_headers"])
def test_a_trickling_server_holds_a_request_no_longer_than_its_timeout(flaky, mode):
    server = flaky(mode)
    timeout = 1.0
    start = time.monotonic()
    verdicts = judge(server.base_url, timeout=timeout, concurrency=2).batch(
        ["q", "q"], ["Paris", "Lyon"], [["Paris"]] * 2
    )
    elapsed = time.monotonic() - start
    assert elapsed < timeout + 1.5, f"two requests in parallel took {elapsed:.1f} s with timeout={timeout}"
    assert all(v.label is None and "no complete reply within timeout=1 s" in v.error for v in verdicts)


def test_the_deadline_covers_the_retries_one_by_one_not_per_read(flaky):
    server = flaky("trickle")
    client = ServerClient(server.base_url, "m", timeout=0.5, max_retries=1, backoff=0.01)
    start = time.monotonic()
    with pytest.raises(RequestFailed, match="timeout=0.5 s"):
        client.send({"messages": [{"role": "user", "content": "<answer>x</answer>"}]}, lambda r: r)
    assert time.monotonic() - start < 2 * 0.5 + 1.0
    assert server.requests == 2 and client.failed == 1 and client.unreachable == 0


def test_http_429_with_retry_after_waits_that_long_then_succeeds(flaky):
    server = flaky("busy")
    start = time.monotonic()
    # a backoff of 5 s (2.5-7.5 s with jitter) would show if Retry-After: 1 were ignored
    (verdict,) = judge(server.base_url, max_retries=1, backoff=5.0).batch(["q"], ["Paris"], [["Paris"]])
    elapsed = time.monotonic() - start
    assert verdict.label is True and server.requests == 2
    assert 0.9 <= elapsed < 2.4, elapsed


def test_refused_connections_are_counted_with_their_reason():
    client = ServerClient(f"http://127.0.0.1:{closed_port()}/v1", "m", max_retries=1, backoff=0.01)
    for _ in range(3):
        with pytest.raises(RequestFailed) as failure:
            client.send({}, lambda r: r)
        assert failure.value.unreachable
    assert client.failed == 3 and client.unreachable == 3
    assert "Connection refused" in client.first_failure and "after 1 retries" in client.first_failure


# ---------------------------------------------------------------------------------------------- the judge command
@pytest.fixture(scope="module")
def judged_store(tmp_path_factory):
    """A finished run store of the tiny QA set (copied by :func:`store`)."""
    from tests.fixtures.tiny_harness import CannedLM, run_tasks

    root = tmp_path_factory.mktemp("run")
    run_tasks(CannedLM(white_box=True), root)
    return root / "out" / "semuq" / "semuq_triviaqa_dpr"


@pytest.fixture
def store(judged_store, tmp_path):
    return Path(shutil.copytree(judged_store, tmp_path / "store"))


def _command_lines(capsys) -> str:
    """The command's own stderr lines (``semuq-eval ...: ``), without the log records and progress bars that
    logging set up by an earlier run in this process would add."""
    lines = capsys.readouterr().err.replace("\r", "\n").splitlines()
    return "\n".join(line for line in lines if line.startswith("semuq-eval "))


def run_judge(store: Path, base_url: str, *extra: str, cache: str = "none") -> int:
    from semuq_eval.commands import main

    options = f"base_url={base_url},model=m,cache={cache},max_retries=0,backoff=0,progress=false"
    return main(["judge", str(store), "--judge", "openai", "--judge_args", options, "--name", "j", *extra])


def test_a_judge_whose_every_request_is_refused_exits_1_in_one_line(store, capsys):
    down = f"http://127.0.0.1:{closed_port()}/v1"
    assert run_judge(store, down) == 1
    err = _command_lines(capsys)
    assert "\n" not in err and err.startswith("semuq-eval judge: all ") and "Connection refused" in err
    assert "--allow-unknown" in err
    assert run_judge(store, down, "--force", "--allow-unknown") == 0
    err = _command_lines(capsys)
    assert "\n" not in err and "(--allow-unknown)" in err


def test_a_judge_with_some_failed_requests_says_how_many_and_why(store, flaky, tmp_path, capsys):
    cache = str(tmp_path / "c.sqlite")
    good = flaky("good")
    judge(good.base_url, cache=cache).batch(
        ["What is the capital of France?"], ["Paris"], [["Paris"]]
    )  # one verdict in the cache
    assert run_judge(store, f"http://127.0.0.1:{closed_port()}/v1", cache=cache) == 0
    err = _command_lines(capsys)
    assert "\n" not in err and " judge requests failed (first: request failed: " in err
    assert "Connection refused" in err


def test_a_corrupt_cache_file_ends_the_judge_command_in_one_line_naming_it(store, flaky, tmp_path, capsys):
    cache = tmp_path / "c.sqlite"
    cache.write_bytes(b"not a database" * 100)
    with pytest.raises(SystemExit) as exited:
        run_judge(store, flaky("good").base_url, cache=str(cache))
    err = _command_lines(capsys)
    assert exited.value.code == 2 and "\n" not in err and str(cache) in err and "cache=none" in err


# ---------------------------------------------------------------------------------------------- what is cached
@pytest.mark.parametrize("mode", ["empty_body", "no_choices", "empty_text", "chatty"])
def test_an_empty_or_unreadable_reply_is_not_cached_and_a_good_server_is_asked_later(flaky, tmp_path, mode):
    cache = tmp_path / "c.sqlite"
    (bad,) = judge(flaky(mode).base_url, cache=cache).batch(["q"], ["Paris"], [["Paris"]])
    assert bad.label is None and bad.error
    assert len(JudgeCache(cache)) == 0
    good = flaky("good")
    (healed,) = judge(good.base_url, cache=cache).batch(["q"], ["Paris"], [["Paris"]])
    assert healed.label is True and good.requests == 1
    assert len(JudgeCache(cache)) == 1


def test_invalid_cache_rows_are_asked_again_never_copied_into_labels(flaky, tmp_path, caplog):
    cache = tmp_path / "c.sqlite"
    server = flaky("good")
    answers, refs = ["Paris", "Lyon", "Paris, France"], [["Paris"]] * 3
    assert [v.label for v in judge(server.base_url, cache=cache).batch(["q"] * 3, answers, refs)] == [
        True,
        False,
        True,
    ]
    with sqlite3.connect(cache) as db:
        keys = [k for (k,) in db.execute("SELECT key FROM verdicts ORDER BY key")]
        db.execute("UPDATE verdicts SET label = 7 WHERE key = ?", (keys[0],))
        db.execute("UPDATE verdicts SET p_correct = 'abc' WHERE key = ?", (keys[1],))
    assert set(JudgeCache(cache).get(keys)) == {keys[2]}
    caplog.clear()
    again = judge(server.base_url, cache=cache).batch(["q"] * 3, answers, refs)
    assert [v.label for v in again] == [True, False, True]
    assert all(v.p_correct is None or 0 <= v.p_correct <= 1 for v in again)
    assert server.requests == 3 + 2  # the two damaged rows were asked again
    warnings = [r.getMessage() for r in caplog.records if "invalid row" in r.getMessage()]
    assert len(warnings) == 1 and str(cache) in warnings[0]
    assert set(JudgeCache(cache).get(keys)) == set(keys)  # and replaced by valid ones


def test_a_cache_that_cannot_be_written_costs_no_label(flaky, tmp_path, caplog):
    cache_path = tmp_path / "c.sqlite"
    server = flaky("good")
    j = judge(server.base_url, cache=cache_path)
    j.batch(["q"], ["Paris"], [["Paris"]])
    pages = j.cache._db.execute("PRAGMA page_count").fetchone()[0]
    j.cache._db.execute(f"PRAGMA max_page_count = {pages}")  # the file can grow no more: "disk is full"
    answers = [f"Lyon {i}" for i in range(200)]  # 200 rows need more pages than the file has
    verdicts = j.batch(["q"] * 200, answers, [["Paris"]] * 200)
    assert [v.label for v in verdicts] == [False] * 200
    assert "full" in j.cache.write_error
    warnings = [r.getMessage() for r in caplog.records if "cannot be written" in r.getMessage()]
    assert len(warnings) == 1 and str(cache_path) in warnings[0]
    assert len(JudgeCache(cache_path)) == 1


READ_ONLY_SCRIPT = """
import json, logging, sys
logging.basicConfig(level=logging.WARNING, format="%(message)s")
from semuq_eval.judges.openai import OpenAIJudge
judge = OpenAIJudge(sys.argv[1], "m", cache=sys.argv[2], max_retries=0, progress=False)
verdicts = judge.batch(["q"] * 3, ["Paris", "Lyon", "Rome"], [["Paris"]] * 3)
print(json.dumps([v.label for v in verdicts]))
"""


def read_only_command(folder: Path) -> list[str] | None:
    """A command prefix under which ``folder`` is read-only (a read-only bind mount in a user namespace as root,
    file permissions otherwise), or None where the machine allows neither."""
    if os.geteuid() != 0:
        for path in [*folder.iterdir(), folder]:
            path.chmod(0o555 if path.is_dir() else 0o444)
        return []
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    mount = f"mount --bind {folder} {folder} && mount -o remount,bind,ro {folder}"
    probe = subprocess.run([unshare, "-r", "-m", "sh", "-c", mount], capture_output=True)
    if probe.returncode != 0:
        return None
    return [unshare, "-r", "-m", "sh", "-c", f'{mount} && exec "$0" "$@"']


@pytest.mark.subprocess
def test_a_read_only_cache_is_used_read_only(flaky, tmp_path):
    folder = tmp_path / "cache"
    cache = folder / "c.sqlite"
    server = flaky("good")
    judge(server.base_url, cache=cache).batch(["q"] * 2, ["Paris", "Lyon"], [["Paris"]] * 2)
    JudgeCache(cache).close()  # a clean close: no -wal / -shm beside it, as a copied or mounted cache is
    prefix = read_only_command(folder)
    if prefix is None:
        pytest.skip("no read-only mount or file permissions here (root without user namespaces)")
    try:
        done = subprocess.run(
            [*prefix, sys.executable, "-c", READ_ONLY_SCRIPT, server.base_url, str(cache)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=Path(__file__).resolve().parents[1],
        )
    finally:
        for path in [folder, *folder.iterdir()]:
            path.chmod(0o755 if path.is_dir() else 0o644)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [True, False, False]
    assert server.requests == 2 + 1  # the cached verdicts were served, only "Rome" was asked
    assert "is read-only: its verdicts are used, new ones are not stored" in done.stderr
    assert str(cache) in done.stderr and "Traceback" not in done.stderr
    assert len(JudgeCache(cache)) == 2  # nothing was stored
