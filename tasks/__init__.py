"""lm-eval task YAMLs of semuq-eval; shipped in the wheel as semuq_eval.tasks (see `semuq-eval tasks-dir`)."""
