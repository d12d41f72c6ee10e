"""Imports run down: the import graph of semuq_eval, read with ``ast`` (nothing is imported), has no upward edge
and no cycle between packages.

The layers, lowest first (a unit is a subpackage or top-level module of ``semuq_eval``; it may import its own
layer and the layers below):

0. base: ``semuq_eval`` (the version), ``registry`` (the one registry shape), ``jsonio``, ``cell_text``,
   ``distributed``, ``context``, ``logs``, ``openai_client`` and ``openai_replies`` (the transport to OpenAI-compatible servers and the reading of their replies, shared by
   a judge and a model), ``local_models`` (a local model folder's revision), ``task_files`` (the shipped task YAMLs), ``scratch`` (scratch folders a later run can clean), ``writes`` (where a command may write), ``durable`` (how every file is written: whole or not at all, one writer at a time), ``journal`` (the one resume mechanism), ``signals`` (what an estimator reads besides its matrix), ``assets`` (the asset cache and its builders; the trained operator's training is
   passed in) and ``data`` (QA sets, read from the assets);
1. the math: ``aggregators``, ``metrics``, ``decisions`` (calibrators, thresholds, combinations of scores);
2. ``operators`` (their matrix kinds come from ``aggregators``; the trained operator's record is
   ``operators.training_record``);
3. ``judges`` (they load models as the operators do) and ``models`` (lm-eval models and generation records);
4. ``harness``: the pipeline, a run's store, report, rescore and relabelling, the lm-eval task;
5. what uses the core: ``training`` (which mines hard negatives with ``diagnose``), ``diagnose``,
   ``leaderboard``, the lm-eval start-up plugin (``_lm_eval_hook`` and ``_lm_eval_plugin``, one unit), the
   build hook and the task package ``semuq_eval.tasks`` (``tasks/`` in the repository);
6. ``commands``, and every ``__main__`` module wherever it lives: the entry points, which nothing imports.

Every import counts: module level, inside functions (lazy imports), under ``TYPE_CHECKING``, and the lazy
``"semuq_eval.x:obj"`` targets of the registries and the command table. Two units of one layer may import each
other only one way: an import cycle between units fails.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "semuq_eval"

LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    (
        "base",
        frozenset(
            {
                "semuq_eval",
                "registry",
                "jsonio",
                "options",
                "cell_text",
                "distributed",
                "context",
                "logs",
                "openai_client",
                "openai_replies",
                "local_models",
                "task_files",
                "scratch",
                "writes",
                "durable",
                "journal",
                "signals",
                "assets",
                "data",
            }
        ),
    ),
    ("math", frozenset({"aggregators", "metrics", "decisions"})),
    ("operators", frozenset({"operators"})),
    ("judges and models", frozenset({"judges", "models"})),
    ("harness", frozenset({"harness"})),
    (
        "uses the core",
        frozenset({"training", "diagnose", "leaderboard", "lm-eval plugin", "_build_hook", "tasks"}),
    ),
    ("commands", frozenset({"commands", "__main__"})),
)
"""(layer name, units), lowest first (module docstring)."""

GROUPS = {"_lm_eval_hook": "lm-eval plugin", "_lm_eval_plugin": "lm-eval plugin"}
"""Top-level modules that form one unit."""

RANK = {unit: rank for rank, (_, units) in enumerate(LAYERS) for unit in units}

_LAZY_TARGET = re.compile(rf"{PACKAGE}(?:\.\w+)+(?=:\w+$)")


class Edge(NamedTuple):
    importer: str  # module
    imported: str  # module (or package)
    line: int

    def __str__(self) -> str:
        return f"{self.importer} (line {self.line}) imports {self.imported}"


def modules(repo: Path = REPO) -> dict[str, Path]:
    """Every module of the package, ``name -> file``: ``semuq_eval/`` and ``tasks/`` (``semuq_eval.tasks``)."""
    out: dict[str, Path] = {}
    for root, prefix in ((repo / PACKAGE, PACKAGE), (repo / "tasks", f"{PACKAGE}.tasks")):
        for folder, dirs, files in os.walk(root):  # symlinks are not followed
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__pycache__")))
            rel = Path(folder).relative_to(root).parts
            if rel and not (Path(folder) / "__init__.py").is_file():
                dirs[:] = []  # a data folder, not a package
                continue
            for name in sorted(f for f in files if f.endswith(".py")):
                parts = [*prefix.split("."), *rel] + ([] if name == "__init__.py" else [name[:-3]])
                out[".".join(parts)] = Path(folder) / name
    return out


def imports(module: str, source: str, is_package: bool, known: set[str]) -> Iterator[Edge]:
    """The intra-package imports of one module: every ``import`` / ``from ... import`` anywhere in it, relative
    ones resolved, ``from pkg import submodule`` read as the submodule, and lazy ``"module:object"`` targets."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    yield Edge(module, alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] != PACKAGE:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                yield Edge(module, sub if sub in known else target, node.lineno)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = _LAZY_TARGET.match(node.value)
            if match:
                yield Edge(module, match.group(0), node.lineno)


def unit(module: str) -> str:
    """The unit a module belongs to: ``__main__`` for any ``__main__`` module, else its top-level name."""
    parts = module.split(".")
    if parts[-1] == "__main__":
        return "__main__"
    top = parts[1] if len(parts) > 1 else PACKAGE
    return GROUPS.get(top, top)


def graph(repo: Path = REPO) -> list[Edge]:
    """Every intra-package import edge of the repository's package."""
    found = modules(repo)
    known = set(found)
    edges: dict[Edge, None] = {}  # ordered, each import once (``from x import a, b`` is one edge)
    for name, path in found.items():
        source = path.read_text(encoding="utf-8")
        edges.update(dict.fromkeys(imports(name, source, path.name == "__init__.py", known)))
    return list(edges)


def upward(edges: list[Edge]) -> list[str]:
    """One message per import of a higher layer (or of a unit no layer names)."""
    problems = []
    for edge in edges:
        a, b = unit(edge.importer), unit(edge.imported)
        if a == b:
            continue
        missing = [u for u in (a, b) if u not in RANK]
        if missing:
            problems.append(f"{edge}: no layer for {', '.join(missing)} (add it to LAYERS)")
        elif RANK[b] > RANK[a]:
            problems.append(f"{edge}: upward, {LAYERS[RANK[a]][0]} ({a}) -> {LAYERS[RANK[b]][0]} ({b})")
    return problems


def cycles(edges: list[Edge], unit_of: Callable[[str], str] = unit) -> list[str]:
    """One message per cycle of units (a strongly connected component), naming the imports that close it."""
    between: dict[str, dict[str, Edge]] = {}
    for edge in edges:
        a, b = unit_of(edge.importer), unit_of(edge.imported)
        if a != b:
            between.setdefault(a, {}).setdefault(b, edge)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in between.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(between):
        if v not in index:
            visit(v)
    return [
        f"import cycle between {', '.join(c)}: "
        + "; ".join(str(e) for a in c for b, e in sorted(between.get(a, {}).items()) if b in c)
        for c in components
    ]


def test_no_upward_import():
    problems = upward(graph())
    assert not problems, "imports must run down (tests/test_import_graph.py):\n" + "\n".join(problems)


def test_no_import_cycle_between_packages():
    problems = cycles(graph())
    assert not problems, "\n".join(problems)


def test_the_leaderboard_package_has_no_import_circle():
    """Compute and pages are layers: no module of the leaderboard package imports one that imports it back
    (type-only imports included: the types live in leaderboard/board.py)."""
    inside = [
        e
        for e in graph()
        if e.importer.startswith("semuq_eval.leaderboard") and e.imported.startswith("semuq_eval.leaderboard")
    ]
    problems = cycles(inside, unit_of=lambda module: module)
    assert not problems, "\n".join(problems)


def test_the_walk_sees_every_kind_of_import(tmp_path):
    pkg = tmp_path / PACKAGE
    for folder in (pkg / "harness", pkg / "commands", pkg / "jsonio_data", tmp_path / "tasks"):
        folder.mkdir(parents=True)
    for init in (pkg, pkg / "harness", pkg / "commands", tmp_path / "tasks"):
        (init / "__init__.py").write_text("")
    (pkg / "jsonio_data" / "x.py").write_text("import semuq_eval.commands\n")  # not a package: not walked
    (pkg / "jsonio.py").write_text("def f():\n    from semuq_eval.harness import task\n")
    (pkg / "harness" / "task.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..commands import run\n"
        'TARGETS = {"x": "semuq_eval.commands.run:main"}\n'
    )
    (pkg / "harness" / "pipeline.py").write_text("from . import task\n")
    (pkg / "commands" / "run.py").write_text("import semuq_eval.harness.task\n")
    (pkg / "commands" / "__main__.py").write_text("from semuq_eval.commands.run import main\n")
    (tmp_path / "tasks" / "utils.py").write_text("from semuq_eval.harness.task import SemuqTask\n")
    edges = graph(tmp_path)
    assert sorted(edges) == sorted(
        [
            Edge("semuq_eval.jsonio", "semuq_eval.harness.task", 2),
            Edge("semuq_eval.harness.task", "semuq_eval.commands.run", 3),
            Edge("semuq_eval.harness.task", "semuq_eval.commands.run", 4),
            Edge("semuq_eval.harness.pipeline", "semuq_eval.harness.task", 1),
            Edge("semuq_eval.commands.run", "semuq_eval.harness.task", 1),
            Edge("semuq_eval.commands.__main__", "semuq_eval.commands.run", 1),
            Edge("semuq_eval.tasks.utils", "semuq_eval.harness.task", 1),
        ]
    )
    assert upward(edges) == [
        "semuq_eval.jsonio (line 2) imports semuq_eval.harness.task: upward, base (jsonio) -> harness (harness)",
        "semuq_eval.harness.task (line 3) imports semuq_eval.commands.run: upward, harness (harness) -> "
        "commands (commands)",
        "semuq_eval.harness.task (line 4) imports semuq_eval.commands.run: upward, harness (harness) -> "
        "commands (commands)",
    ]
    assert cycles(edges) == [
        "import cycle between commands, harness: "
        "semuq_eval.commands.run (line 1) imports semuq_eval.harness.task; "
        "semuq_eval.harness.task (line 3) imports semuq_eval.commands.run"
    ]


def test_every_unit_of_the_package_has_a_layer():
    units = {unit(name) for name in modules()}
    assert units - set(RANK) == set(), "add the new package to LAYERS in tests/test_import_graph.py"
    assert set(RANK) - units - {"__main__"} == set(), "a layer names a unit that no longer exists"
