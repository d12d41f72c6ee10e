"""Maintainer tools, run from the repository as ``python -m tools.<name>``: ``compare_breakdowns`` (did a change
keep a run's numbers?) and ``freeze_store`` (builds the run store ``check-operator`` ships with)."""
