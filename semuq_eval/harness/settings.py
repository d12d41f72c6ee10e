"""Plugin settings of a semuq task, read from the task's ``metadata`` (YAML) and ``--metadata '{...}'``.

lm-eval rejects unknown task-config keys, so every semuq setting lives under ``metadata``;
``--metadata`` on the command line is merged over the YAML's (shallow merge).

=====================  ===========================================  =========================================
key                    default                                      meaning
=====================  ===========================================  =========================================
profile                none                                         ``offline``: operators with a local model
                                                                    (:mod:`semuq_eval.harness.profiles`)
n_samples              20                                           N sampled answers per question (App. E.2)
operators              nli, nli_soft, cos_ext, cos_int, enc,        operators to run (registry names, or
                       lexical                                      named variants: see operator_options)
operator_options       {}                                           ``{operator: {kwarg: value}}`` passed to
                                                                    ``semuq_eval.operators.get``; a variant's
                                                                    own name gets ``{"operator": "enc", ...}``
aggregators            null (all registered)                        aggregator names to score
aggregator_options     {}                                           ``{aggregator: {kwarg: value}}``
tau                    0.5                                          equivalence rule S_ij > tau for graded or
                                                                    Gram matrices (hard NLI is boolean)
judge                  string                                       the judge that labels answers (registry
                                                                    name, :mod:`semuq_eval.judges`)
judge_options          {}                                           its options, e.g. ``{"mode": "em"}``
label_mode             (shorthand)                                  ``judge_options.mode`` of the string judge:
                                                                    contains | em | f1
f1_threshold           (shorthand)                                  ``judge_options.f1_threshold``
question_field         question                                     doc field holding the bare question
bootstrap              1000                                         bootstrap resamples for the CIs
seed                   0                                            bootstrap seed
ece_bins               10                                           ECE bins
ece_refit              once                                         ECE interval: calibrator fitted once, or
                                                                    refitted in every resample (per_resample)
min_minority           20                                           figures whose minority label class is
                                                                    smaller are flagged unreliable
output_dir             $SEMUQ_OUTPUT_DIR, else lm-eval's            where the full breakdown and the run store
                       ``--output_path``, else nothing is written   are written (:mod:`semuq_eval.context`)
run_id                 the model's slug (``pretrained``)            the run's folder under semuq/<task>/
store                  true                                         write the run store
store_hidden           true                                         keep hidden vectors in the store (.npz)
table_estimators       []                                           extra estimators shown in lm-eval's table
                                                                    (``auroc_greedy:<est>``)
=====================  ===========================================  =========================================
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["DEFAULT_OPERATORS", "Settings"]

DEFAULT_OPERATORS = ("nli", "nli_soft", "cos_ext", "cos_int", "enc", "lexical")


STRING_JUDGE_SHORTHANDS = {"label_mode": "mode", "f1_threshold": "f1_threshold"}
"""Metadata keys kept from before judges were a registry: options of the ``string`` judge."""


@dataclass
class Settings:
    """The plugin settings of a run (module docstring); :meth:`from_metadata` validates them."""

    profile: str | None = None
    n_samples: int = 20
    operators: tuple[str, ...] = DEFAULT_OPERATORS
    operator_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    aggregators: tuple[str, ...] | None = None
    aggregator_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    tau: float = 0.5
    judge: str = "string"
    judge_options: dict[str, Any] = field(default_factory=dict)
    question_field: str = "question"
    bootstrap: int = 1000
    seed: int = 0
    ece_bins: int = 10
    ece_refit: str = "once"
    min_minority: int = 20
    output_dir: str | None = None
    run_id: str | None = None
    store: bool = True
    store_hidden: bool = True
    table_estimators: tuple[str, ...] = ()

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any] | None, *, expand_profile: bool = True) -> Settings:
        """Settings from a task's metadata; unrelated keys (version, data_dir, ...) are ignored.

        ``expand_profile=False`` reads stored settings, whose profile was expanded when the run started.

        Raises
        ------
        ValueError
            Naming the key, for a value out of range or a name no registry knows.
        """
        from semuq_eval.harness.profiles import apply_profile

        metadata = apply_profile(metadata or {}) if expand_profile else dict(metadata or {})
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in metadata.items() if k in known}
        for key in ("operators", "aggregators", "table_estimators"):
            if isinstance(kwargs.get(key), str):
                kwargs[key] = [s.strip() for s in kwargs[key].split(",") if s.strip()]
            if kwargs.get(key) is not None:
                kwargs[key] = tuple(kwargs[key])
        shorthand = {new: metadata[old] for old, new in STRING_JUDGE_SHORTHANDS.items() if old in metadata}
        if shorthand:
            if kwargs.get("judge", "string") != "string":
                raise ValueError(
                    f"metadata {sorted(STRING_JUDGE_SHORTHANDS)} are options of the string judge only"
                )
            kwargs["judge_options"] = {**shorthand, **dict(kwargs.get("judge_options") or {})}
        settings = cls(**kwargs)
        settings.validate()
        return settings

    def validate(self) -> None:
        """Check types, ranges and registry names; normalize numbers. Raises ValueError naming the key."""
        from semuq_eval import aggregators, judges, operators

        try:
            self.n_samples, self.bootstrap = int(self.n_samples), int(self.bootstrap)
            self.seed, self.ece_bins = int(self.seed), int(self.ece_bins)
            self.min_minority = int(self.min_minority)
            self.tau = float(self.tau)
        except (TypeError, ValueError) as err:
            raise ValueError(f"metadata: a numeric setting is not a number ({err})") from None
        for key, value, low in (
            ("n_samples", self.n_samples, 1),
            ("bootstrap", self.bootstrap, 0),
            ("ece_bins", self.ece_bins, 1),
            ("min_minority", self.min_minority, 1),
        ):
            if value < low:
                raise ValueError(f"metadata {key} must be >= {low}, got {value}")
        if self.ece_refit not in ("once", "per_resample"):
            raise ValueError(f"metadata ece_refit must be 'once' or 'per_resample', got {self.ece_refit!r}")
        if not math.isfinite(self.tau):
            raise ValueError(f"metadata tau must be a finite number, got {self.tau}")
        checks = (
            ("aggregators", self.aggregators or (), aggregators.names()),
            ("operator_options", tuple(self.operator_options), self.operators),
            ("aggregator_options", tuple(self.aggregator_options), aggregators.names()),
            ("judge", (self.judge,), judges.names()),
        )
        for key, given, known in checks:
            unknown = [x for x in given if x not in known]
            if unknown:
                raise ValueError(f"metadata {key}: unknown name(s) {unknown}; known: {sorted(known)}")
        if len(set(self.operators)) != len(self.operators):
            raise ValueError(f"metadata operators: names repeated in {list(self.operators)}")
        for key in ("operator_options", "aggregator_options", "judge_options"):
            value = getattr(self, key)
            if not isinstance(value, Mapping) or (
                key != "judge_options" and not all(isinstance(v, Mapping) for v in value.values())
            ):
                raise ValueError(
                    f"metadata {key} must be a mapping{' of mappings' if key != 'judge_options' else ''}, got {value!r}"
                )
        for name in self.operators:  # registered, or a named variant of a registered operator
            try:
                operators.resolve(name, self.operator_options.get(name))
            except ValueError as err:
                raise ValueError(f"metadata operators: {err}") from None

    def make_judge(self):
        """The judge these settings name, built with ``judge_options``."""
        from semuq_eval.judges import get_judge

        return get_judge(self.judge, **self.judge_options)

    def as_dict(self) -> dict[str, Any]:
        """The settings as JSON-safe data (tuples become lists), as stored in manifests and breakdowns."""
        return {
            f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v) for f in fields(self)
        }
