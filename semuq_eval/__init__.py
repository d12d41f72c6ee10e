"""semuq-eval: semantic uncertainty quantification for LLMs, as an lm-evaluation-harness plugin."""

__version__ = "0.1.0"
