"""``diagnose``: the four traps, wrong-answer clustering and token localization of any set of operators.

:meth:`Diagnosis.prepare` builds every pair set once; :meth:`Diagnosis.measure` scores one operator on all of them
in one batched call plus token localization when it yields token weights, and hands back the pipeline docs it scored
(``check-operator`` scores estimators on them); :meth:`Diagnosis.result` is one JSON-safe dict (format
``semuq-diagnose/1``). :func:`diagnose` takes those steps for many operators, with paired differences (``compare``).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

import numpy as np
from pydantic import field_validator

from semuq_eval.diagnose.checkpoint import Outcome, fingerprint, keep, resume
from semuq_eval.diagnose.localization import localization
from semuq_eval.diagnose.questions import DiagnosticQuestion, load_questions
from semuq_eval.diagnose.resolve import resolve_operators
from semuq_eval.diagnose.rewrite import FactRewriter
from semuq_eval.diagnose.scoring import (
    OperatorUnavailable,
    difference_with_ci,
    mean_with_ci,
    paired_comparisons,
    score_diagnostics,
)
from semuq_eval.diagnose.traps import TRAPS, PairSet, build_traps
from semuq_eval.diagnose.wrong_clusters import CLUSTER_GROUPS, clustering_pairs
from semuq_eval.judges import Judge
from semuq_eval.metrics import Bootstrap
from semuq_eval.metrics.bootstrap import MAX_RESAMPLES
from semuq_eval.options import Options, option

__all__ = [
    "DIAGNOSE_FORMAT",
    "DiagnoseCommandOptions",
    "DiagnoseOptions",
    "Diagnosis",
    "build_pair_sets",
    "diagnose",
]

log = logging.getLogger(__name__)

DIAGNOSE_FORMAT = "semuq-diagnose/1"


def build_pair_sets(
    questions: Sequence[DiagnosticQuestion],
    *,
    rewriter: FactRewriter | None = None,
    equivalence_judge: Judge | None = None,
    max_pairs_per_question: int | None = None,
) -> tuple[dict[str, PairSet], dict[str, PairSet]]:
    """``(traps, clustering)``: every pair set of a diagnosis, built once for all operators."""
    traps = build_traps(questions, rewriter=rewriter)
    return traps, clustering_pairs(
        questions, judge=equivalence_judge, max_pairs_per_question=max_pairs_per_question
    )


def _examples(pair_set: PairSet, sims: np.ndarray, k: int = 2) -> list[dict[str, Any]]:
    """The first ``k`` pairs of a set as the report shows them, with their similarity where it is defined."""
    return [
        {
            "question": p.question,
            "a": p.a,
            "b": p.b,
            **{key: v for key, v in p.meta.items() if key != "samples"},
            **({"similarity": float(sims[i])} if np.isfinite(sims[i]) else {}),
        }
        for i, p in enumerate(pair_set.pairs[:k])
    ]


class DiagnoseOptions(Options):
    """What ``diagnose`` measures and how (``semuq-eval diagnose``'s flags, docs/diagnose.md's table)."""

    operators: list[str] = option(["enc", "cos_ext", "lexical"], "comma-separated operators", parse="csv")
    operator_options: dict[str, Any] | None = option(
        None,
        'JSON {operator: {option: value}}, e.g. {"enc": {"model": "/path"}}',
        parse="json",
        of="operator name -> options",
    )
    labels: str = option("run", "label set to read (default: the run's own labels)")
    max_questions: int | None = option(None, "first questions of each store only", ge=1)
    max_pairs_per_question: int | None = option(
        None, "clustering: judge at most this many pairs per question and class", ge=1
    )
    token_unit: Literal["generator", "encoder"] = option(
        "generator", "tokens of the localization: generator or encoder"
    )
    bootstrap: int = option(1000, "bootstrap resamples", ge=1, le=MAX_RESAMPLES)
    seed: int = option(0, "the bootstrap's seed", ge=0)
    min_pairs: int = option(30, "fewer pairs (or answers) flag a figure as a small sample", ge=1)
    compare: list[tuple[str, str]] = option(
        [],
        "paired differences A:B (A minus B) of two diagnosed operators, e.g. enc:enc_untrained",
        parse="many",
    )
    progress: bool = option(True, "no progress bars", flag="--no_progress")

    @field_validator("operators", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        """``"enc,lexical"`` as well as ``["enc", "lexical"]``."""
        return [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else value

    @field_validator("compare", mode="before")
    @classmethod
    def _pairs(cls, value: Any) -> Any:
        """``"A:B"`` texts (the flag's) as ``(A, B)`` pairs."""
        return [_pair(v) if isinstance(v, str) else v for v in value or []]


class DiagnoseCommandOptions(Options):
    """``semuq-eval diagnose``'s own flags: where it writes, and the judges and rewrite route it builds for
    :func:`diagnose` (its table in docs/diagnose.md)."""

    stores: list[str] = option(
        ..., "run store folders (<output_path>/semuq/<task>/<run_id>)", flag="stores", parse="many"
    )
    output: str = option("diagnosis", "output folder")
    force: bool = option(False, "write into an --output folder that holds other files than a diagnosis")
    judge: str | None = option(None, "label every answer now with this judge instead (e.g. string)")
    judge_options: dict | None = option(None, "JSON options of --judge", parse="json")
    rewrite: Literal["offline", "llm"] = option("offline", "context-trap rewrite route")
    rewrite_options: dict | None = option(
        None,
        'JSON: offline {"max_words", "max_short_words", "context_slack"}; '
        'llm {"base_url", "model", "endpoint", "api_key_env", "max_tokens", "concurrency"}',
        parse="json",
    )
    equivalence_judge: str | None = option(
        None, "judge deciding wrong-answer equivalence (default: string, contains); e.g. openai"
    )
    equivalence_judge_options: dict | None = option(None, "JSON options of --equivalence_judge", parse="json")


def _pair(spec: str) -> tuple[str, str]:
    a, sep, b = spec.partition(":")
    if not (sep and a and b):
        raise ValueError(f"{spec!r}: give two diagnosed operators as A:B, e.g. enc:enc_untrained")
    return a, b


def diagnose(
    stores: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
    options: DiagnoseOptions | None = None,
    *,
    questions: Sequence[DiagnosticQuestion] | None = None,
    judge: Judge | None = None,
    rewriter: FactRewriter | None = None,
    equivalence_judge: Judge | None = None,
    checkpoint: str | os.PathLike | None = None,
    **given: Any,
) -> dict[str, Any]:
    """Diagnose operators on run stores (module docstring); returns the JSON-safe result.

    ``stores`` are the run stores to read, unless loaded ``questions`` are given. ``options`` (or ``**given``:
    ``diagnose(store, operators="lexical")``) say what is measured (:class:`DiagnoseOptions`). ``judge`` labels the
    answers now instead of reading ``labels``; ``rewriter`` is the context trap's rewrite route (default: offline);
    ``equivalence_judge`` decides wrong-answer equivalence (default: ``string``, ``contains``); ``checkpoint`` is a
    folder keeping each operator's outcome, so a rerun resumes (:mod:`~semuq_eval.diagnose.checkpoint`).

    An operator that cannot run (its model does not load, no hidden states for ``cos_int``) is listed in
    ``unavailable`` with the reason. Raises ValueError for unknown operators, a comparison of an operator not
    diagnosed, no questions, or no correct answer at all.

    Examples
    --------
    >>> from semuq_eval.diagnose.check_values import frozen_store_path
    >>> result = diagnose(frozen_store_path(), operators="lexical", max_questions=40, progress=False)
    >>> sorted(result["traps"]) == sorted(["context", "autoregressive", "entailment", "ood_syntax"])
    True
    """
    from tqdm.auto import tqdm

    o = options if options is not None else DiagnoseOptions(**given)
    if options is not None and given:
        raise TypeError("give diagnose() its options or keywords, not both")
    start = time.perf_counter()
    built = resolve_operators(o.operators, o.operator_options, progress=o.progress)
    _check_compare(built, o.compare)
    if questions is None:
        if stores is None:
            raise ValueError("give run stores or questions")
        questions = load_questions(stores, labels=o.labels, judge=judge, max_questions=o.max_questions)
    run = Diagnosis.prepare(
        questions,
        rewriter=rewriter,
        equivalence_judge=equivalence_judge,
        max_pairs_per_question=o.max_pairs_per_question,
        bootstrap=Bootstrap(o.bootstrap, seed=o.seed),
        min_pairs=o.min_pairs,
        token_unit=o.token_unit,
    )
    for name, op in tqdm(built.items(), desc="diagnose operators", disable=not o.progress):
        run.measure(name, op, (o.operator_options or {}).get(name), checkpoint=checkpoint)
    run.timing["total_s"] = time.perf_counter() - start
    paths = [str(s) for s in ([stores] if isinstance(stores, (str, os.PathLike)) else stores or [])]
    labelled = "judged now: " + str(getattr(judge, "info", judge)) if judge is not None else o.labels
    return run.result(paths, labelled, o.compare)


def _check_compare(built: Mapping[str, Any], compare: Sequence[tuple[str, str]]) -> None:
    """Refuse a comparison of an operator not diagnosed."""
    missing = sorted({n for pair in compare for n in pair} - set(built))
    if missing:
        raise ValueError(
            f"diagnose: compare names operator(s) {missing} that are not diagnosed ({sorted(built)})"
        )


def _label_counts(questions: Sequence[DiagnosticQuestion]) -> dict[str, int]:
    """Correct and incorrect greedy and sampled answers; ValueError when there is no question or no correct answer."""
    if not questions:
        raise ValueError("no questions to diagnose")
    counts = {
        "questions": len(questions),
        "greedy_correct": sum(q.greedy_label == 1 for q in questions),
        "greedy_incorrect": sum(q.greedy_label == 0 for q in questions),
        "samples_correct": sum(q.sample_labels.count(1) for q in questions),
        "samples_incorrect": sum(q.sample_labels.count(0) for q in questions),
    }
    if counts["greedy_correct"] == 0 and counts["samples_correct"] == 0:
        raise ValueError(
            f"none of the {len(questions)} questions has a correct answer (greedy or sampled): every trap "
            "needs correct answers; check the labels (--labels / --judge) or use more questions"
        )
    return counts


@dataclass
class Diagnosis:
    """One diagnosis as it runs: the questions and their pair sets, then the figures, operator by operator."""

    questions: Sequence[DiagnosticQuestion]
    trap_sets: Mapping[str, PairSet]
    group_sets: Mapping[str, PairSet]
    bootstrap: Bootstrap
    min_pairs: int
    token_unit: str
    max_pairs_per_question: int | None
    counts: dict[str, int]
    traps: dict[str, Any]
    groups: dict[str, Any]
    timing: dict[str, Any] = field(default_factory=dict)
    infos: dict[str, Any] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    localization: dict[str, Any] = field(default_factory=dict)
    sims: dict[str, Mapping[str, np.ndarray]] = field(default_factory=dict)
    located: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def prepare(
        cls,
        questions: Sequence[DiagnosticQuestion],
        *,
        rewriter: FactRewriter | None = None,
        equivalence_judge: Judge | None = None,
        max_pairs_per_question: int | None = None,
        bootstrap: Bootstrap | None = None,
        min_pairs: int = 30,
        token_unit: str = "generator",
    ) -> Diagnosis:
        """Every pair set of the questions (:func:`build_pair_sets`, arguments as :func:`diagnose`'s) with each
        trap's and clustering group's counts, no results yet; ValueError without questions or correct answers."""
        questions = list(questions)
        counts = _label_counts(questions)
        t0 = time.perf_counter()
        traps, groups = build_pair_sets(
            questions,
            rewriter=rewriter,
            equivalence_judge=equivalence_judge,
            max_pairs_per_question=max_pairs_per_question,
        )
        timing = {"pairs_s": time.perf_counter() - t0}
        out_traps = {
            name: {
                **TRAPS[name],
                "n_eligible": ps.n_questions,
                "n_pairs": len(ps.pairs),
                "skipped": ps.skipped,
                "info": ps.info,
                "results": {},
            }
            for name, ps in traps.items()
        }
        out_groups: dict[str, Any] = {
            name: {
                "pair": CLUSTER_GROUPS[name],
                "n_pairs": len(ps.pairs),
                "n_questions": ps.n_questions,
                "skipped": ps.skipped,
                "results": {},
            }
            for name, ps in groups.items()
        }
        out_groups["gap"] = {"pair": "incorrect_equivalent - correct_equivalent", "results": {}}
        out_groups["equivalence"] = next(iter(groups.values())).info.get("equivalence")
        return cls(
            questions=questions,
            trap_sets=traps,
            group_sets=groups,
            bootstrap=bootstrap or Bootstrap(),
            min_pairs=min_pairs,
            token_unit=token_unit,
            max_pairs_per_question=max_pairs_per_question,
            counts=counts,
            traps=out_traps,
            groups=out_groups,
            timing=timing,
        )

    @property
    def pair_sets(self) -> dict[str, Sequence[Any]]:
        """Every pair set by its key (``trap:<name>``, ``cluster:<group>``)."""
        return {
            **{f"trap:{k}": v.pairs for k, v in self.trap_sets.items()},
            **{f"cluster:{k}": v.pairs for k, v in self.group_sets.items()},
        }

    def measure(
        self,
        name: str,
        op: Any,
        options: Mapping[str, Any] | None = None,
        *,
        checkpoint: str | os.PathLike | None = None,
        token_extras: Collection[str] = (),
    ) -> list[Any] | None:
        """Score operator ``name`` (built as ``op`` from ``options``) on every pair set, add its figures, and
        return the pipeline docs it scored, with the token extras ``token_extras``. None when it cannot run (it is
        then listed as unavailable, once) or its outcome is read back from ``checkpoint`` (see :func:`diagnose`)."""
        if checkpoint is not None and token_extras:
            raise ValueError(
                "diagnose: token extras need the operator scored now; give no checkpoint with them"
            )
        key = self._checkpoint_key(name, options) if checkpoint is not None else None
        outcome = resume(checkpoint, name, key) if key is not None else None
        docs = None
        if outcome is not None:
            log.info("diagnose: %s read back from its checkpoint in %s", name, checkpoint)
            self.timing.setdefault("resumed_from_checkpoint", []).append(name)
        else:
            outcome, docs = self._score(name, op, options, token_extras)
            if outcome is not None and key is not None:
                keep(checkpoint, name, key, outcome)
        if outcome is not None:
            self._add(name, outcome)
            self.timing[f"{name}_s"] = outcome.seconds
        return docs

    def _checkpoint_key(self, name: str, options: Mapping[str, Any] | None) -> str:
        """The fingerprint operator ``name``'s outcome is kept under (:mod:`~semuq_eval.diagnose.checkpoint`)."""
        settings = {
            "token_unit": self.token_unit,
            "min_pairs": self.min_pairs,
            "bootstrap": [self.bootstrap.n_resamples, self.bootstrap.seed, self.bootstrap.confidence_level],
        }
        return fingerprint(
            name, _unloaded_info(name, options), options, self.questions, self.pair_sets, settings
        )

    def _score(
        self, name: str, op: Any, options: Mapping[str, Any] | None, token_extras: Collection[str]
    ) -> tuple[Outcome | None, list[Any] | None]:
        """``(outcome, docs)`` of operator ``name`` scored now; ``(None, None)`` when it cannot run."""
        t0 = time.perf_counter()
        try:
            sims, unavailable, docs = score_diagnostics(
                name, options, self.questions, self.pair_sets, token_extras=token_extras
            )
        except Exception as err:  # an operator that cannot run is reported once; the others run
            why = str(err) if isinstance(err, OperatorUnavailable) else f"{type(err).__name__}: {err}"
            log.warning("diagnose: operator %s is unavailable: %s", name, why)
            self.infos[name] = {"operator": name, "unavailable": why}
            self.unavailable[name] = why
            self.localization[name] = {"unavailable": why}
            return None, None
        loc = None
        if "token_weights" in getattr(op, "extras", ()):
            loc = localization(
                op, self.questions, unit=self.token_unit, bootstrap=self.bootstrap, min_answers=self.min_pairs
            )
        return Outcome(sims, unavailable, dict(op.info), time.perf_counter() - t0, loc), docs

    def result(
        self, stores: list[str], labels: str, compare: Sequence[tuple[str, str]] = ()
    ) -> dict[str, Any]:
        """The diagnosis as :func:`diagnose` returns it, with the operators' paired comparisons."""
        bootstrap = self.bootstrap
        return {
            "format": DIAGNOSE_FORMAT,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "stores": stores,
            "labels": labels,
            "counts": dict(self.counts),
            "operators": self.infos,
            "unavailable": self.unavailable,
            "traps": self.traps,
            "clustering": self.groups,
            "localization": self.localization,
            "comparisons": paired_comparisons(
                compare, self.pair_sets, self.sims, self.located, bootstrap=bootstrap
            ),
            "settings": {
                "bootstrap": {
                    "n_resamples": bootstrap.n_resamples,
                    "seed": bootstrap.seed,
                    "level": bootstrap.confidence_level,
                },
                "min_pairs": self.min_pairs,
                "token_unit": self.token_unit,
                "max_pairs_per_question": self.max_pairs_per_question,
                "ci": "percentile bootstrap over questions (a question's pairs resampled together)",
            },
            "timing": dict(self.timing),
        }

    def _add(self, name: str, outcome: Outcome) -> None:
        """Operator ``name``'s mean similarity per trap and group (with CIs), the groups' gap and its localization."""
        self.infos[name] = outcome.info
        self.sims[name] = sims = outcome.sims
        uids = {key: [p.uid for p in pairs] for key, pairs in self.pair_sets.items()}

        def stat(key: str) -> dict[str, Any]:
            s = sims[key]
            mean = mean_with_ci(s, uids[key], bootstrap=self.bootstrap, min_pairs=self.min_pairs)
            return {**mean.as_dict(), "n_unavailable": int(np.isnan(s).sum())}

        for trap, ps in self.trap_sets.items():
            s = sims[f"trap:{trap}"]
            row = self.traps[trap]["results"][name] = stat(f"trap:{trap}")
            if outcome.unavailable and np.isnan(s).any():
                row["unavailable"] = outcome.unavailable
            self.traps[trap].setdefault("examples", {})[name] = _examples(ps, s)
        for group in self.group_sets:
            self.groups[group]["results"][name] = stat(f"cluster:{group}")
        inc, cor = "cluster:incorrect_equivalent", "cluster:correct_equivalent"
        self.groups["gap"]["results"][name] = difference_with_ci(
            sims[inc], uids[inc], sims[cor], uids[cor], bootstrap=self.bootstrap
        )
        if outcome.located is not None:
            self.localization[name] = outcome.located.as_dict()
            self.located[name] = outcome.located
        else:
            self.localization[name] = {"unavailable": f"{name} yields no token weights (only enc does)"}


def _unloaded_info(name: str, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """Operator ``name``'s identity as a new, unloaded instance gives it: an instance whose model already loaded in
    this process reports more (its separator, pooling, maximum length), which would change a checkpoint's key."""
    from semuq_eval import operators

    base, kwargs = operators.resolve(name, dict(options or {}))
    return dict(operators.get(base, **kwargs).info)
