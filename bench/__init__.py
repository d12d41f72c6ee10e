"""Benchmarks: each measures one cost, both sides in one run, medians; run from the repository as
``python -m bench.<name>`` (e.g. ``python -m bench.aggregators``). Figures go in ``docs/speed.md`` with the machine
and the load they came from."""
