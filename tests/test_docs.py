"""The README is a front door and every link in the documentation resolves (CONTRIBUTING, "Where documentation
and figures go")."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]


def _prose(page: Path) -> str:
    """The page without its fenced code blocks (a link inside one is an example, not a link)."""
    return re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of the page's headings: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+\s+(.*)$", _prose(page), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page):
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", _prose(page)):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path) if path else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{target}: no such heading")
    assert not broken, broken


def test_the_readme_is_a_front_door():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, "figures and details go to docs/ (CONTRIBUTING.md)"
    text = "\n".join(lines)
    assert len(text.split()) < 1200, "a newcomer reads the README in five minutes: details go to docs/"
    assert "bash .ci/demo" in text and "bash .ci/test" in text
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert f"(docs/{page.name})" in text, f"the README does not link docs/{page.name}"


def test_the_option_tables_are_the_models_own():
    """Options are declared once: the docs' table of a command's options is generated from its model."""
    from semuq_eval.commands.assets import AssetsOptions
    from semuq_eval.commands.check_operator import CheckCommandOptions
    from semuq_eval.commands.demo import DemoOptions
    from semuq_eval.commands.rescore import RescoreCommandOptions
    from semuq_eval.decisions.options import ApplyOptions, CalibrateOptions, CombineOptions, ThresholdOptions
    from semuq_eval.diagnose.check import CheckOptions
    from semuq_eval.diagnose.diagnosis import DiagnoseCommandOptions, DiagnoseOptions
    from semuq_eval.harness.relabel import JudgeOptions
    from semuq_eval.harness.rescore import RescoreOptions
    from semuq_eval.judges.validation import ValidationOptions
    from semuq_eval.leaderboard.build import BuildOptions, LeaderboardOptions
    from semuq_eval.options import options_table
    from semuq_eval.training.config import TrainingConfig
    from semuq_eval.training.data_files import ExportOptions, StatsOptions

    models = [
        (RescoreOptions, "running.md"),
        (RescoreCommandOptions, "running.md"),
        (AssetsOptions, "offline.md"),
        (DemoOptions, "demo.md"),
        (CheckCommandOptions, "check-operator.md"),
        (CheckOptions, "check-operator.md"),
        (DiagnoseOptions, "diagnose.md"),
        (DiagnoseCommandOptions, "diagnose.md"),
        (LeaderboardOptions, "leaderboard.md"),
        (BuildOptions, "leaderboard.md"),
        (TrainingConfig, "training.md"),
        (JudgeOptions, "judges.md"),
        (ValidationOptions, "judges.md"),
        (ExportOptions, "training-data.md"),
        (StatsOptions, "training-data.md"),
    ]
    models += [
        (m, "decisions.md") for m in (CalibrateOptions, ApplyOptions, ThresholdOptions, CombineOptions)
    ]
    for model, page in models:
        assert options_table(model) in (ROOT / "docs" / page).read_text(encoding="utf-8"), page


def test_the_judges_table_is_the_committed_verdicts():
    """docs/judges.md's table of the judges on the validation set's test half is what the verdicts give."""
    from semuq_eval.judges.validation import markdown_table

    table = markdown_table(ROOT / "leaderboards" / "validation", half="test")
    assert table in (ROOT / "docs" / "judges.md").read_text(encoding="utf-8")
