"""Plugin settings of a semuq task, read from the task's ``metadata`` (YAML) and ``--metadata '{...}'``.

lm-eval rejects unknown task-config keys, so every semuq setting lives under ``metadata``;
``--metadata`` on the command line is merged over the YAML's (shallow merge).

=====================  ===========================================  =========================================
key                    default                                      meaning
=====================  ===========================================  =========================================
n_samples              20                                           N sampled answers per question (App. E.2)
operators              nli, nli_soft, cos_ext, cos_int, enc,        operators to run (registry names)
                       lexical
operator_options       {}                                           ``{operator: {kwarg: value}}`` passed to
                                                                    ``semuq_eval.operators.get``
aggregators            null (all registered)                        aggregator names to score
aggregator_options     {}                                           ``{aggregator: {kwarg: value}}``
tau                    0.5                                          equivalence rule S_ij > tau for graded or
                                                                    Gram matrices (hard NLI is boolean)
label_mode             contains                                     string judge: contains | em | f1
f1_threshold           0.5                                          for label_mode f1
question_field         question                                     doc field holding the bare question
bootstrap              1000                                         bootstrap resamples for the CIs
seed                   0                                            bootstrap seed
ece_bins               10                                           ECE bins
output_dir             $SEMUQ_OUTPUT_DIR, else lm-eval's            where the full breakdown and the run store
                       ``--output_path`` read from the command      are written (see semuq_eval.harness.store)
                       line, else nothing is written
store                  true                                         write the run store
store_hidden           true                                         keep hidden vectors in the store (.npz)
table_estimators       []                                           extra estimators shown in lm-eval's table
                                                                    (``auroc_greedy:<est>``)
=====================  ===========================================  =========================================
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from semuq_eval.paths import default_output_dir

__all__ = ["DEFAULT_OPERATORS", "Settings"]

DEFAULT_OPERATORS = ("nli", "nli_soft", "cos_ext", "cos_int", "enc", "lexical")


@dataclass
class Settings:
    n_samples: int = 20
    operators: tuple[str, ...] = DEFAULT_OPERATORS
    operator_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    aggregators: tuple[str, ...] | None = None
    aggregator_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    tau: float = 0.5
    label_mode: str = "contains"
    f1_threshold: float = 0.5
    question_field: str = "question"
    bootstrap: int = 1000
    seed: int = 0
    ece_bins: int = 10
    output_dir: str | None = None
    store: bool = True
    store_hidden: bool = True
    table_estimators: tuple[str, ...] = ()

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any] | None) -> Settings:
        """Settings from a task's metadata; unrelated keys (version, data_dir, ...) are ignored."""
        metadata = dict(metadata or {})
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in metadata.items() if k in known}
        for key in ("operators", "aggregators", "table_estimators"):
            if isinstance(kwargs.get(key), str):
                kwargs[key] = [s.strip() for s in kwargs[key].split(",") if s.strip()]
            if kwargs.get(key) is not None:
                kwargs[key] = tuple(kwargs[key])
        s = cls(**kwargs)
        s.n_samples = int(s.n_samples)
        if s.n_samples < 1:
            raise ValueError(f"metadata n_samples must be >= 1, got {s.n_samples}")
        s.tau, s.f1_threshold = float(s.tau), float(s.f1_threshold)
        s.bootstrap, s.seed, s.ece_bins = int(s.bootstrap), int(s.seed), int(s.ece_bins)
        return s

    def resolved_output_dir(self) -> str | None:
        """metadata ``output_dir`` > ``$SEMUQ_OUTPUT_DIR`` > lm-eval's ``--output_path`` > None."""
        return default_output_dir(self.output_dir)

    def as_dict(self) -> dict[str, Any]:
        return {
            f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v) for f in fields(self)
        }
