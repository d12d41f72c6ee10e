"""The repository's layout: script folders (``bench/``, ``experiments/``, ``tools/``), each script a module
run as ``python -m <folder>.<name>`` whose docstring says so, with a ``main``."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HELPERS = {"bench.timing"}  # shared code, not a script
SCRIPTS = sorted(
    f"{folder}.{path.stem}"
    for folder in ("bench", "experiments", "tools")
    for path in (ROOT / folder).glob("*.py")
    if path.stem != "__init__" and f"{folder}.{path.stem}" not in HELPERS
)


def test_every_script_folder_has_scripts():
    assert {name.split(".")[0] for name in SCRIPTS} == {"bench", "experiments", "tools"}
    assert not list(ROOT.glob("bench/*.sh")) and not list(ROOT.glob("*.py"))


@pytest.mark.parametrize("name", SCRIPTS)
def test_script_is_a_module_with_main_and_says_how_to_run_it(name):
    module = importlib.import_module(name)  # importing runs nothing: the work is in main()
    assert callable(getattr(module, "main", None)), f"{name} has no main()"
    assert f"python -m {name}" in (module.__doc__ or ""), (
        f"{name}'s docstring does not say `python -m {name}`"
    )


def _layout_rows() -> dict[str, str]:
    """docs/layout.md's rows: ``semuq_eval/<package>/`` -> the text that describes it (continuation lines too)."""
    text = (ROOT / "docs" / "layout.md").read_text()
    block = text.split("```", 2)[1]
    rows: dict[str, str] = {}
    current = None
    for line in block.splitlines():
        if line.startswith("semuq_eval/"):
            current, _, rest = line.partition(" ")
            rows[current] = rest
        elif line.startswith(" ") and current:
            rows[current] += " " + line.strip()
        else:
            current = None
    return rows


def test_docs_layout_names_every_package_and_module_of_the_tree():
    """Every subpackage of semuq_eval has its row in docs/layout.md and every module its name in that row (the
    top-level modules in the semuq_eval/ row); every row names a folder that exists."""
    rows = _layout_rows()
    package = ROOT / "semuq_eval"
    folders = {f"semuq_eval/{p.name}/" for p in package.iterdir() if (p / "__init__.py").is_file()}
    assert set(rows) - {"semuq_eval/"} == folders, "docs/layout.md's rows vs the packages"
    missing = []
    for folder in sorted(folders):
        for module in sorted((ROOT / folder).glob("*.py")):
            if module.stem not in ("__init__", "__main__") and not re.search(
                rf"\b{module.stem}\b", rows[folder]
            ):
                missing.append(f"{folder}{module.name}")
    top = [m for m in package.glob("*.py") if not m.stem.startswith("_")]
    missing += [f"semuq_eval/{m.name}" for m in top if m.name not in rows["semuq_eval/"]]
    assert not missing, f"modules docs/layout.md does not name: {missing}"


#: the run store's own files: only :mod:`semuq_eval.harness.store` names them
STORE_FILES = {"manifest.json", "scores.jsonl", "breakdown.json"}
STORE_PREFIXES = ("generations.rank", "hidden.rank")


def store_file_names(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of every string in ``source`` that names a run-store file: a literal equal to one, or an
    f-string that starts with one's prefix. Docstrings and longer messages that mention a file do not count."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and ast.get_docstring(node, clean=False) is not None
    }
    found, pieces = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            pieces.update(id(v) for v in node.values)
            head = node.values[0] if node.values else None
            if isinstance(head, ast.Constant) and str(head.value).startswith(STORE_PREFIXES):
                found.append((node.lineno, str(head.value)))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings | pieces
        ):
            if node.value in STORE_FILES or node.value.startswith(STORE_PREFIXES):
                found.append((node.lineno, node.value))
    return sorted(found)


def test_store_file_names_finds_literals_and_paths_but_not_messages():
    source = (
        '"""Reads scores.jsonl."""\n'
        'a = root / "scores.jsonl"\n'
        'b = root.glob("generations.rank*.jsonl")\n'
        'c = f"hidden.rank{r}.npz"\n'
        'd = f"{root}: scores.jsonl is missing"\n'
    )
    assert store_file_names(source) == [
        (2, "scores.jsonl"),
        (3, "generations.rank*.jsonl"),
        (4, "hidden.rank"),
    ]


def test_only_the_store_module_names_the_run_store_files():
    """One module reads and writes a run store (:func:`semuq_eval.harness.store.open_store`, ``RunStore``); every
    other module goes through it, so the layout has one description and one set of checks."""
    package = ROOT / "semuq_eval"
    offenders = {
        str(path.relative_to(ROOT)): names
        for path in sorted(package.rglob("*.py"))
        if path != package / "harness" / "store.py"
        and (names := store_file_names(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


MAX_FUNCTION_LINES = 101


def test_no_function_of_the_package_is_longer_than_the_limit():
    """Long functions are cut into named steps (docstrings count: a function's reader reads them too)."""
    long = {}
    for path in sorted((ROOT / "semuq_eval").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines >= MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(ROOT)}:{node.name}"] = lines
    assert long == {}


MAX_PARAMETERS = 8


def test_no_function_of_the_package_takes_more_than_eight_parameters():
    """A function of many options takes an options model (:mod:`semuq_eval.options`) instead of a long list of
    keywords; a record of many fields declares them once (a dataclass, a ``TypedDict`` of ``**fields``). Counted:
    every named parameter but ``self`` / ``cls``."""
    wide = {}
    for path in sorted((ROOT / "semuq_eval").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
                names = [n for n in names if n not in ("self", "cls")]
                if len(names) > MAX_PARAMETERS:
                    wide[f"{path.relative_to(ROOT)}:{node.lineno}:{node.name}"] = len(names)
    assert wide == {}


def test_no_module_reads_the_command_line_outside_the_commands():
    """The commands parse the command line; everything else is given its values (lm-eval's parsed ``--output_path``
    reaches the run context through :func:`semuq_eval.context.lm_eval_cli`, not through ``sys.argv``)."""
    readers = []
    for path in sorted((ROOT / "semuq_eval").rglob("*.py")):
        if path.parent.name == "commands":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "argv"
                and getattr(node.value, "id", "") == "sys"
            ):
                readers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if (
                isinstance(node, ast.ImportFrom)
                and node.module == "sys"
                and any(a.name == "argv" for a in node.names)
            ):
                readers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert readers == []


def test_every_flag_of_the_package_comes_from_an_options_model():
    """Options are declared once: no module but :mod:`semuq_eval.options` adds an argument to a parser, so every
    command's flags, positionals, checks and docs' tables come from its pydantic model."""
    callers = []
    for path in sorted((ROOT / "semuq_eval").rglob("*.py")):
        if path.name == "options.py" and path.parent.name == "semuq_eval":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "add_argument":
                callers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert callers == []


def _classes_with_fields(*wanted: str) -> dict[str, set[str]]:
    """``{"module.py:Class": fields}`` of the package's classes that declare every field of ``wanted``."""
    found = {}
    for path in sorted((ROOT / "semuq_eval").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                fields = {
                    n.target.id
                    for n in node.body
                    if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
                }
                if set(wanted) <= fields:
                    found[f"{path.relative_to(ROOT / 'semuq_eval')}:{node.name}"] = fields
    return found


def test_one_class_holds_a_question_and_its_answers():
    """:class:`~semuq_eval.harness.doc.Doc` is the one per-question type; training and diagnosis read it through
    thin views (a ``doc`` field and its labels, no second constructor); the rest are file-line schemas."""
    holders = {**_classes_with_fields("question", "samples"), **_classes_with_fields("question", "answers")}
    assert {k for k in holders if not k.startswith("harness/schemas.py:")} == {"harness/doc.py:Doc"}
    views = _classes_with_fields("doc")
    assert set(views) == {"training/stores.py:LabelledQuestion", "diagnose/questions.py:DiagnosticQuestion"}
    for name, fields in views.items():
        assert not fields & {"question", "samples", "answers", "references"}, name
    for path in ("training/stores.py", "diagnose/questions.py"):
        tree = ast.parse((ROOT / "semuq_eval" / path).read_text(encoding="utf-8"))
        constructors = [
            f.name
            for c in ast.walk(tree)
            if isinstance(c, ast.ClassDef) and f"{path}:{c.name}" in views
            for f in c.body
            if isinstance(f, ast.FunctionDef)
            and any(
                isinstance(d, ast.Name) and d.id in ("classmethod", "staticmethod") for d in f.decorator_list
            )
        ]
        assert constructors == [], (path, constructors)


def test_one_module_writes_the_compact_record_format():
    """Run records and training data are one format (:mod:`semuq_eval.harness.record`): one module writes gzip JSON
    lines, and besides it only the converter of the former training-data format reads them."""
    package = ROOT / "semuq_eval"

    def callers(name: str) -> set[str]:
        return {
            str(p.relative_to(package))
            for p in sorted(package.rglob("*.py"))
            if p.name != "jsonio.py" and re.search(rf"\b{name}\(", p.read_text(encoding="utf-8"))
        }

    assert callers("write_jsonl_gz") == {"harness/record.py"}
    assert callers("read_jsonl_gz") == {"harness/record.py", "training/data_files.py"}


def test_one_resume_mechanism_serves_generation_training_and_diagnosis():
    """Every long job resumes through :mod:`semuq_eval.journal`: it alone appends to a file, and the generation
    journal, the training's epoch checkpoints and the diagnosis's checkpoints are built on it."""
    package = ROOT / "semuq_eval"
    appenders = {
        str(p.relative_to(package))
        for p in sorted(package.rglob("*.py"))
        if p.name != "jsonio.py" and re.search(r"\bappend_jsonl\(", p.read_text(encoding="utf-8"))
    }
    assert appenders == {"journal.py"}
    for module in ("models/journal.py", "training/checkpoints.py", "diagnose/checkpoint.py"):
        text = (package / module).read_text(encoding="utf-8")
        assert "from semuq_eval.journal import Journal" in text, module
        assert "replace_file" not in text and "np.savez" not in text, module  # no second way to keep progress
