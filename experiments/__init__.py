"""Experiments: runs that answer a question with the tool's own commands and write a report, run from the
repository as ``python -m experiments.<name>``: ``reproduce`` (the paper's claim, offline; docs/reproduction.md),
``offline_accuracy`` (which offline LLM and question set give a demo with both classes; docs/demo.md),
``polygraph_crosscheck`` (the new estimators against their public implementations; docs/api.md)."""
