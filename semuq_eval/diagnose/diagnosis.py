"""``diagnose``: the four traps, wrong-answer clustering and token localization of any set of operators.

One call builds every pair set once from the questions (:mod:`~semuq_eval.diagnose.traps`,
:mod:`~semuq_eval.diagnose.clustering`), then for each operator scores all pairs in one batched call
(:func:`~semuq_eval.diagnose.scoring.score_pairs`) and, when the operator yields token weights, measures
token localization (:mod:`~semuq_eval.diagnose.localization`). The result is one JSON-safe dict (format
``semuq-diagnose/1``) that :mod:`~semuq_eval.diagnose.outputs` turns into Markdown and a plot. ``compare``
asks for paired differences between operators (a trained operator minus its untrained backbone): the same pairs
and answers scored by both, questions resampled together (:func:`paired_comparisons`).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np

from semuq_eval.diagnose.checkpoint import Outcome, fingerprint, keep, resume
from semuq_eval.diagnose.clustering import CLUSTER_GROUPS, clustering_pairs
from semuq_eval.diagnose.localization import localization
from semuq_eval.diagnose.questions import DiagnosticQuestion, load_questions
from semuq_eval.diagnose.rewrite import FactRewriter
from semuq_eval.diagnose.scoring import (
    OperatorUnavailable,
    difference_with_ci,
    mean_with_ci,
    score_diagnostics,
)
from semuq_eval.diagnose.traps import TRAPS, PairSet, build_traps
from semuq_eval.judges import Judge
from semuq_eval.metrics import Bootstrap

__all__ = ["DIAGNOSE_FORMAT", "build_pair_sets", "diagnose", "paired_comparisons", "resolve_operators"]

log = logging.getLogger(__name__)

DIAGNOSE_FORMAT = "semuq-diagnose/1"


def resolve_operators(
    operators: Sequence[str] | str,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    progress: bool | None = None,
) -> dict[str, Any]:
    """The named operators built with their options (``{name: operator}``, cached per process as the
    pipeline's), checking the names first; ``progress`` switches the progress bars of those that have them.

    Raises
    ------
    ValueError
        An unknown operator name, options for an operator not asked for, or no operator at all.
    """
    from semuq_eval import operators as registry
    from semuq_eval.harness.operator_runs import get_operator

    if isinstance(operators, str):
        operators = [s.strip() for s in operators.split(",") if s.strip()]
    names = list(dict.fromkeys(operators))
    if not names:
        raise ValueError("no operator given; e.g. --operators enc,cos_ext,lexical")
    options = dict(options or {})
    unknown = [
        n for n in names if n not in registry.names() and registry.VARIANT_KEY not in (options.get(n) or {})
    ]
    if unknown:
        raise ValueError(
            f"unknown operator(s) {unknown}; known: {registry.names()} (or a named variant: "
            f'operator_options {{"<name>": {{"{registry.VARIANT_KEY}": "enc", "model": ...}}}})'
        )
    stray = sorted(set(options) - set(names))
    if stray:
        raise ValueError(f"operator_options for {stray}, which are not among the operators {names}")
    for name, opts in options.items():
        if not isinstance(opts, Mapping):
            raise ValueError(f"operator_options[{name!r}] must be a mapping, got {opts!r}")
    built = {name: get_operator(name, dict(options.get(name) or {})) for name in names}
    for op in built.values():
        if progress is not None and hasattr(op, "progress"):
            op.progress = bool(progress)
    return built


def build_pair_sets(
    questions: Sequence[DiagnosticQuestion],
    *,
    rewriter: FactRewriter | None = None,
    equivalence_judge: Judge | None = None,
    max_pairs_per_question: int | None = None,
) -> tuple[dict[str, PairSet], dict[str, PairSet]]:
    """``(traps, clustering)``: every pair set of a diagnosis, built once for all operators."""
    traps = build_traps(questions, rewriter=rewriter)
    groups = clustering_pairs(
        questions, judge=equivalence_judge, max_pairs_per_question=max_pairs_per_question
    )
    return traps, groups


def _examples(pair_set: PairSet, sims: np.ndarray | None, k: int = 2) -> list[dict[str, Any]]:
    out = []
    for i, p in enumerate(pair_set.pairs[:k]):
        row = {
            "question": p.question,
            "a": p.a,
            "b": p.b,
            **{k2: v for k2, v in p.meta.items() if k2 != "samples"},
        }
        if sims is not None and np.isfinite(sims[i]):
            row["similarity"] = float(sims[i])
        out.append(row)
    return out


def diagnose(
    stores: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
    operators: Sequence[str] | str = ("enc", "cos_ext", "lexical"),
    *,
    operator_options: Mapping[str, Mapping[str, Any]] | None = None,
    questions: Sequence[DiagnosticQuestion] | None = None,
    labels: str = "run",
    judge: Judge | None = None,
    rewriter: FactRewriter | None = None,
    equivalence_judge: Judge | None = None,
    max_questions: int | None = None,
    max_pairs_per_question: int | None = None,
    token_unit: str = "generator",
    bootstrap: Bootstrap | None = None,
    min_pairs: int = 30,
    progress: bool = True,
    docs_out: dict[str, list[Any]] | None = None,
    docs_extras: Collection[str] | None = None,
    compare: Sequence[tuple[str, str]] = (),
    checkpoint: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """Diagnose operators on run stores (module docstring); returns the JSON-safe result.

    Parameters
    ----------
    stores : path-like or sequence of path-like, optional
        Run stores to read (or give ``questions``).
    operators : sequence of str or str
        Operator names (``"enc,cos_ext,lexical"`` works too).
    operator_options : mapping, optional
        ``{name: {option: value}}``, e.g. ``{"enc": {"model": "/path/to/encoder"}}``.
    questions : sequence of DiagnosticQuestion, optional
        Already loaded questions (:func:`~semuq_eval.diagnose.questions.load_questions`).
    labels, judge, max_questions
        Which labels to read, or a judge to label the answers now; see :func:`load_questions`.
    rewriter : FactRewriter, optional
        The context trap's rewrite route (default: offline substitution of a wrong sampled answer).
    equivalence_judge : Judge, optional
        Decides wrong-answer equivalence (default: the ``string`` judge, ``contains``).
    max_pairs_per_question : int, optional
        Cap on clustering pairs per question and group.
    token_unit : {"generator", "encoder"}
        Tokens of the localization (:mod:`~semuq_eval.diagnose.localization`).
    bootstrap : Bootstrap, optional
        Resamples of the intervals (default 1000, seed 0, 95%).
    min_pairs : int
        Fewer pairs (or answers) than this flag a figure as a small sample.
    progress : bool
        Progress bars (operators, encoders).
    docs_out : dict, optional
        Filled with ``{operator: docs}``: the pipeline docs holding each operator's sample matrices (what
        ``check-operator`` scores estimators on without a second pass).
    docs_extras : collection of str
        The token extras those docs carry (default every one: they may feed any estimator); the diagnosis
        itself reads none, so without ``docs_out`` none is computed.
    compare : sequence of (str, str)
        Operator pairs ``(a, b)``, both among ``operators``: ``a`` minus ``b`` on every trap, the clustering
        groups and localization, paired (:func:`paired_comparisons`).
    checkpoint : path-like, optional
        A folder that keeps each operator's outcome as soon as it is measured; a rerun on the same questions,
        weights and settings reads it back instead of scoring again, so a killed diagnosis resumes at the
        operator it was on (:mod:`~semuq_eval.diagnose.checkpoint`). Not combined with ``docs_out``.

    Returns
    -------
    dict
        ``{"format", "created", "stores", "labels", "counts", "operators", "unavailable", "traps",
        "clustering", "localization", "comparisons", "settings", "timing"}``; an operator that cannot run (its model does
        not load, no hidden states for ``cos_int``) is listed in ``unavailable`` with the reason and has no
        figures, while the others run.

    Raises
    ------
    ValueError
        Unknown operators, a comparison of an operator not diagnosed, no questions, or no correct answer at all
        (every trap would be empty).

    Examples
    --------
    >>> from semuq_eval.diagnose.check_figures import frozen_store_path
    >>> result = diagnose(frozen_store_path(), "lexical", max_questions=40, progress=False)
    >>> sorted(result["traps"]) == sorted(["context", "autoregressive", "entailment", "ood_syntax"])
    True
    """
    from tqdm.auto import tqdm

    start = time.perf_counter()
    bootstrap = bootstrap or Bootstrap()
    built = resolve_operators(operators, operator_options, progress=progress)
    _check_request(built, compare, checkpoint, docs_out)
    if questions is None:
        questions = load_questions(_given(stores), labels=labels, judge=judge, max_questions=max_questions)
    questions = list(questions)
    counts = _label_counts(questions)
    t0 = time.perf_counter()
    traps, groups = build_pair_sets(
        questions,
        rewriter=rewriter,
        equivalence_judge=equivalence_judge,
        max_pairs_per_question=max_pairs_per_question,
    )
    timing: dict[str, Any] = {"pairs_s": time.perf_counter() - t0}
    run = _Diagnosis.empty(questions, traps, groups, bootstrap, min_pairs, token_unit)
    resumed: list[str] = []
    for name, op in tqdm(built.items(), desc="diagnose operators", disable=not progress):
        options = (operator_options or {}).get(name)
        outcome, from_checkpoint = run.outcome(name, op, options, checkpoint, docs_out, docs_extras)
        if from_checkpoint:
            resumed.append(name)
        if outcome is not None:
            run.add(name, outcome)
            timing[f"{name}_s"] = outcome.seconds
    if resumed:
        timing["resumed_from_checkpoint"] = resumed
    timing["total_s"] = time.perf_counter() - start
    paths = [str(s) for s in ([stores] if isinstance(stores, (str, os.PathLike)) else stores or [])]
    labelled = "judged now: " + str(getattr(judge, "info", judge)) if judge is not None else labels
    return run.result(paths, labelled, counts, compare, max_pairs_per_question, timing)


def _given(
    stores: str | os.PathLike | Sequence[str | os.PathLike] | None,
) -> str | os.PathLike | Sequence[str | os.PathLike]:
    """The run stores to read, refused when neither they nor the questions were given."""
    if stores is None:
        raise ValueError("give run stores or questions")
    return stores


def _check_request(
    built: Mapping[str, Any],
    compare: Sequence[tuple[str, str]],
    checkpoint: str | os.PathLike | None,
    docs_out: dict[str, list[Any]] | None,
) -> None:
    """Refuse a comparison of an operator not diagnosed, and a checkpoint beside ``docs_out``."""
    if checkpoint is not None and docs_out is not None:
        raise ValueError("diagnose: docs_out needs every operator scored now; give no checkpoint with it")
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
class _Diagnosis:
    """One diagnosis as it runs: the questions and their pair sets, then the figures, operator by operator."""

    questions: Sequence[DiagnosticQuestion]
    trap_sets: Mapping[str, PairSet]
    group_sets: Mapping[str, PairSet]
    bootstrap: Bootstrap
    min_pairs: int
    token_unit: str
    traps: dict[str, Any]
    groups: dict[str, Any]
    infos: dict[str, Any] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    localization: dict[str, Any] = field(default_factory=dict)
    sims: dict[str, Mapping[str, np.ndarray]] = field(default_factory=dict)
    located: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def empty(
        cls,
        questions: Sequence[DiagnosticQuestion],
        traps: Mapping[str, PairSet],
        groups: Mapping[str, PairSet],
        bootstrap: Bootstrap,
        min_pairs: int,
        token_unit: str,
    ) -> _Diagnosis:
        """Each trap's and clustering group's counts, with no operator's results yet."""
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
        return cls(questions, traps, groups, bootstrap, min_pairs, token_unit, out_traps, out_groups)

    @property
    def pair_sets(self) -> dict[str, Sequence[Any]]:
        """Every pair set by its key (``trap:<name>``, ``cluster:<group>``)."""
        return {
            **{f"trap:{k}": v.pairs for k, v in self.trap_sets.items()},
            **{f"cluster:{k}": v.pairs for k, v in self.group_sets.items()},
        }

    def outcome(
        self,
        name: str,
        op: Any,
        options: Mapping[str, Any] | None,
        checkpoint: str | os.PathLike | None,
        docs_out: dict[str, list[Any]] | None,
        docs_extras: Collection[str] | None,
    ) -> tuple[Outcome | None, bool]:
        """``(outcome, read from the checkpoint)`` of operator ``name``; no outcome when it cannot run (then it
        is listed as unavailable with the reason, once; the other operators run)."""
        settings = {
            "token_unit": self.token_unit,
            "min_pairs": self.min_pairs,
            "bootstrap": [self.bootstrap.n_resamples, self.bootstrap.seed, self.bootstrap.confidence_level],
        }
        pair_sets = self.pair_sets
        key = (
            fingerprint(name, _unloaded_info(name, options), options, self.questions, pair_sets, settings)
            if checkpoint
            else None
        )
        outcome = resume(checkpoint, name, key) if checkpoint else None
        if outcome is not None:
            log.info("diagnose: %s read back from its checkpoint in %s", name, checkpoint)
            return outcome, True
        t0 = time.perf_counter()
        extras = docs_extras if docs_out is not None else ()
        try:
            sims, unavailable, docs = score_diagnostics(
                name, options, self.questions, pair_sets, token_extras=extras
            )
        except Exception as err:  # an operator that cannot run is reported once; the others run
            why = str(err) if isinstance(err, OperatorUnavailable) else f"{type(err).__name__}: {err}"
            log.warning("diagnose: operator %s is unavailable: %s", name, why)
            self.infos[name] = {"operator": name, "unavailable": why}
            self.unavailable[name] = why
            self.localization[name] = {"unavailable": why}
            return None, False
        if docs_out is not None:
            docs_out[name] = docs
        loc = None
        if "token_weights" in getattr(op, "extras", ()):
            loc = localization(
                op, self.questions, unit=self.token_unit, bootstrap=self.bootstrap, min_answers=self.min_pairs
            )
        outcome = Outcome(sims, unavailable, dict(op.info), time.perf_counter() - t0, loc)
        if key is not None:
            keep(checkpoint, name, key, outcome)
        return outcome, False

    def result(
        self,
        stores: list[str],
        labels: str,
        counts: Mapping[str, int],
        compare: Sequence[tuple[str, str]],
        max_pairs_per_question: int | None,
        timing: Mapping[str, Any],
    ) -> dict[str, Any]:
        """The diagnosis as :func:`diagnose` returns it, with the operators' paired comparisons."""
        bootstrap = self.bootstrap
        return {
            "format": DIAGNOSE_FORMAT,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "stores": stores,
            "labels": labels,
            "counts": dict(counts),
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
                "max_pairs_per_question": max_pairs_per_question,
                "ci": "percentile bootstrap over questions (a question's pairs resampled together)",
            },
            "timing": dict(timing),
        }

    def add(self, name: str, outcome: Outcome) -> None:
        """Operator ``name``'s mean similarity per trap and group (with CIs), the groups' gap and its localization."""
        bootstrap, min_pairs = self.bootstrap, self.min_pairs
        self.infos[name] = outcome.info
        self.sims[name] = sims = outcome.sims
        for trap, ps in self.trap_sets.items():
            s = sims[f"trap:{trap}"]
            stat = mean_with_ci(s, [p.uid for p in ps.pairs], bootstrap=bootstrap, min_pairs=min_pairs)
            self.traps[trap]["results"][name] = {**stat.as_dict(), "n_unavailable": int(np.isnan(s).sum())}
            if outcome.unavailable and np.isnan(s).any():
                self.traps[trap]["results"][name]["unavailable"] = outcome.unavailable
            self.traps[trap].setdefault("examples", {})[name] = _examples(ps, s)
        for group, ps in self.group_sets.items():
            s = sims[f"cluster:{group}"]
            stat = mean_with_ci(s, [p.uid for p in ps.pairs], bootstrap=bootstrap, min_pairs=min_pairs)
            self.groups[group]["results"][name] = {**stat.as_dict(), "n_unavailable": int(np.isnan(s).sum())}
        inc, cor = self.group_sets["incorrect_equivalent"], self.group_sets["correct_equivalent"]
        self.groups["gap"]["results"][name] = difference_with_ci(
            sims["cluster:incorrect_equivalent"],
            [p.uid for p in inc.pairs],
            sims["cluster:correct_equivalent"],
            [p.uid for p in cor.pairs],
            bootstrap=bootstrap,
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


def paired_comparisons(
    compare: Sequence[tuple[str, str]],
    pair_sets: Mapping[str, Sequence[Any]],
    scored: Mapping[str, Mapping[str, np.ndarray]],
    located: Mapping[str, Any],
    *,
    bootstrap: Bootstrap,
) -> dict[str, dict[str, Any]]:
    """``a`` minus ``b`` for each pair of ``compare``: the mean similarity of every pair set (``trap:<name>``,
    ``cluster:<group>``) over the pairs both operators scored, and the localization hit rate over the answers
    both localized; a percentile bootstrap over questions, both operators' values resampled with the same draw.

    ``pair_sets`` maps a set's key to its pairs, ``scored`` an operator to its similarities per set (as
    :func:`~semuq_eval.diagnose.scoring.score_diagnostics` returns them), ``located`` an operator to its
    :class:`~semuq_eval.diagnose.localization.Localization`. An operator that did not run gives an entry with
    ``unavailable``.

    Examples
    --------
    >>> from types import SimpleNamespace as P
    >>> pairs = {"trap:context": [P(uid="q1"), P(uid="q1"), P(uid="q2")]}
    >>> sims = {"a": {"trap:context": np.array([0.5, 0.6, 0.4])}, "b": {"trap:context": np.array([0.7, 0.8, 0.6])}}
    >>> out = paired_comparisons([("a", "b")], pairs, sims, {}, bootstrap=Bootstrap(100))
    >>> row = out["a vs b"]["trap:context"]
    >>> round(row["difference"], 3), row["n_pairs"], row["ci_high"] < 0
    (-0.2, 3, True)
    """
    out: dict[str, dict[str, Any]] = {}
    for a, b in compare:
        key = f"{a} vs {b}"
        if a not in scored or b not in scored:
            out[key] = {"unavailable": f"{a if a not in scored else b} did not run"}
            continue
        row: dict[str, Any] = {}
        for name, pairs in pair_sets.items():
            sa, sb = (
                np.asarray(scored[a][name], dtype=np.float64),
                np.asarray(scored[b][name], dtype=np.float64),
            )
            both = np.isfinite(sa) & np.isfinite(sb)
            uids = [str(p.uid) for p, keep in zip(pairs, both, strict=True) if keep]
            d = difference_with_ci(sa[both], uids, sb[both], uids, bootstrap=bootstrap)
            row[name] = {**d, "n_pairs": int(both.sum()), "n_questions": len(set(uids))}
        if a in located and b in located:
            # one localized answer per question (its greedy answer); an answer without tokens is left out by both
            hits_b = dict(zip(located[b].uids, located[b].hits, strict=True))
            common = [(u, h) for u, h in zip(located[a].uids, located[a].hits, strict=True) if u in hits_b]
            uids = [u for u, _ in common]
            d = difference_with_ci(
                [h for _, h in common], uids, [hits_b[u] for u in uids], uids, bootstrap=bootstrap
            )
            row["localization"] = {**d, "n_answers": len(common), "n_questions": len(set(uids))}
        out[key] = row
    return out
