"""The paper's central claim, reproduced offline by the tool itself: does an operator trained on one LLM's own
labelled answers (Sec. 4, App. B-C) improve the aggregators of ANOTHER LLM on OTHER datasets (Tab. 1)?

Every step is one of the project's own commands, run as a library:

1. ``train-operator`` on the training LLM's NQ-Open samples (:func:`semuq_eval.training.trainer.train_operator`):
   the paper's recipe (``enc_trained``) and, with ``--ablations``, random negatives (``enc_trained_random``),
   positive pairs only (``enc_trained_pairs``), answer-only (``enc_trained_answer_only``) and the whole epoch
   budget without early stopping (``enc_trained_full_budget``: with a few held-out questions, early stopping
   follows noise);
2. ``rescore`` of every evaluation store with the operators side by side: the trained variants, the untrained
   backbone as ``enc``, ``cos_ext``, ``lexical``, ``cos_int`` (:func:`semuq_eval.harness.rescore.rescore`,
   named variants, ``store_output``): complete run stores under ``WORK/stores``;
3. ``export-record`` of each rescored store into ``REPORT/records/`` as soon as it is rescored (committed: the
   board rebuilds from them on a fresh clone) and ``leaderboard`` over those records with ``--compare
   enc_trained:enc,cos_ext,lexical,cos_int`` (and each ablation against ``enc`` and ``enc_trained``): AUROC / ECE /
   PRR / AUARC with CIs, the paired differences and the "improves in X of Y cells" counts;
4. ``diagnose`` before / after training (the untrained ``enc`` and the trained variants in one report): the
   four traps, wrong-answer clustering and token localization, per evaluation LLM;
5. ``README.md`` in the report folder: the figures that answer the question, with the correct / incorrect
   counts behind each, built from the files of steps 1-4 (nothing typed by hand).

Each step is skipped when its output exists (``--force`` redoes steps 2-5), so a killed run resumes; a killed
diagnosis resumes at the operator it was on (``WORK/diagnosis-checkpoint/<group>/``). The outputs
that outlive the machine are in the report folder: a committed record stands for its rescored store while the
variants' weights keep the sha256 in ``REPORT/weights.json`` (else everything after training is redone), and the
timings are kept in ``REPORT/timings.json``, so a run spread over sessions on new machines retrains the variants
(the same files and seed give the same weights) and rescores only the stores whose records are missing.

    .venv/bin/python -m experiments.reproduce \\
        --train /work/runs/smollm2-nqopen_train \\
        --eval '/work/runs/gemma-webquestions/semuq/*/*' '/work/runs/gemma-triviaqa/semuq/*/*' \\
        --secondary '/work/runs/smollm2-webquestions/semuq/*/*' \\
        --work /work/runs/reproduce --report leaderboards/reproduction

``--eval``: stores of the OTHER LLM (the paper's setting); ``--secondary``: stores of the training LLM on
other datasets (reported apart and labelled: the operator has seen this LLM's answers). The generation runs
behind the stores are ``semuq-eval run --model semuq-hf ... --metadata '{"profile": "offline", "n_samples": 10}'``
(see the report for the exact stores and their settings).
"""

from __future__ import annotations

import argparse
import glob
import logging
import math
import os
import platform
import re
import shlex
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from semuq_eval.diagnose.outputs import comparison_lines
from semuq_eval.jsonio import read_json, write_json

log = logging.getLogger("reproduce")

PAPER = "enc_trained"
"""The paper's recipe exactly (App. B-C): the variant every other one is compared with, and the main operator
unless ``--select`` picks another on the held-out validation questions."""
GUIDED = "@guided"
"""Stands for the ``--guided`` files in an ablation's options."""
ABLATIONS = {
    "random": ("enc_trained_random", {"negatives": "random"}),
    "none": ("enc_trained_pairs", {"negatives": "none"}),
    "answer_only": ("enc_trained_answer_only", {"question": False}),
    "full_budget": ("enc_trained_full_budget", {"early_stopping": False}),
    "guided": ("enc_trained_guided", {"guided": GUIDED}),
    "references": ("enc_trained_references", {"positives": "references"}),
    "both": ("enc_trained_both", {"positives": "both"}),
    "fact_swap": ("enc_trained_fact_swap", {"fact_swap": True}),
    "answer_pooling": ("enc_trained_answer_pooling", {"pooling": "answer"}),
    "guided_answer_pooling": ("enc_trained_guided_ap", {"guided": GUIDED, "pooling": "answer"}),
    "guided_answer_pooling_auroc": (
        "enc_trained_guided_ap_auroc",
        {"guided": GUIDED, "pooling": "answer", "select_on": "auroc"},
    ),
    "mpnet": ("enc_trained_mpnet", {"backbone": "offline:all-mpnet-base-v2"}),
    "mined": ("enc_trained_mined", {"guided": GUIDED, "positives": "both", "fact_swap": True}),
    "mined_answer_pooling": (
        "enc_trained_mined_ap",
        {"guided": GUIDED, "positives": "both", "fact_swap": True, "pooling": "answer"},
    ),
}
"""``--ablations`` name -> (operator variant, training options over the recipe's)."""

BOARD_HEADER = (
    "Built from the run records in ../records/ (see ../README.md). Tiny CPU LLMs: read the counts and the intervals "
    "before the point estimates."
)
"""The text atop the report's board; ``leaderboards/reproduction/recipe/report_board.sh``, which each report's
``recipe/board.sh`` calls, rebuilds the board with the same text and the comparisons of :func:`leaderboard`."""

BASES = ("enc", "cos_ext", "lexical", "cos_int")
"""What the trained operator is compared with: the untrained backbone first."""


def _unpack(archive: Path, work: Path) -> list[Path]:
    """The run store(s) of a committed archive (``eval_runs.sh``: ``<task>/<run_id>/...`` packed with tar -J),
    extracted once under ``WORK/runs/<archive name>``; members outside that folder are refused."""
    import tarfile

    target = work / "runs" / archive.name.removesuffix(".tar.xz")
    if not target.is_dir():
        tmp = target.with_name(target.name + ".tmp")
        with tarfile.open(archive, "r:xz") as tar:
            tar.extractall(
                tmp, filter="data"
            )  # the data filter refuses absolute paths, links out and devices
        tmp.replace(target)
    return sorted(p.parent for p in target.glob("*/*/manifest.json"))


def _stores(patterns: Sequence[str], work: Path) -> list[Path]:
    out: list[Path] = []
    for pattern in patterns:
        hits = []
        for match in sorted(glob.glob(pattern, recursive=True)):
            if match.endswith(".tar.xz"):
                hits += _unpack(Path(match), work)
            elif (Path(match) / "manifest.json").is_file():
                hits.append(Path(match))
        if not hits:
            raise SystemExit(f"reproduce: {pattern!r} matches no run store (a folder with manifest.json)")
        missing = [h for h in hits if not (h / "breakdown.json").is_file()]
        if missing:
            raise SystemExit(
                f"reproduce: unfinished run store(s) {[str(m) for m in missing]} (no breakdown.json)"
            )
        out.extend(h for h in hits if h not in out)
    return out


def _load() -> dict[str, float]:
    one, five, fifteen = os.getloadavg()
    return {"load_1min": round(one, 2), "load_5min": round(five, 2), "load_15min": round(fifteen, 2)}


def train(args, variants: Mapping[str, Mapping[str, Any]], timings: dict) -> dict[str, Path]:
    """Step 1: one trained operator folder per variant (kept when already trained)."""
    from semuq_eval.training.config import TrainingConfig
    from semuq_eval.training.trainer import train_operator

    folders = {}
    for name, overrides in variants.items():
        folder = Path(args.work) / "ops" / name
        folders[name] = folder
        if (folder / "semuq_training.json").is_file():
            log.info("train %s: kept %s", name, folder)
            continue
        log.info("train %s -> %s", name, folder)
        start, load = time.perf_counter(), _load()
        if overrides.get("guided") == GUIDED and not args.guided:
            raise SystemExit(f"reproduce: variant {name} needs --guided files")
        options = {k: (list(args.guided) if v == GUIDED else v) for k, v in overrides.items()}
        settings = {
            "backbone": args.backbone,
            "epochs": args.epochs,
            "seed": args.seed,
            "val_triplets": args.val_triplets,
            "validation": list(args.validation),
            "bf16": args.bf16,
            **options,
        }
        config = TrainingConfig(
            stores=[str(p) for p in args.train],
            output=str(folder),
            overwrite=True,
            command=["python", "-m", "experiments.reproduce", *sys.argv[1:]],
            **settings,
        )
        train_operator(config)
        timings[f"train {name}"] = {"seconds": round(time.perf_counter() - start, 1), "load_before": load}
    return folders


def same_weights(args, folders: Mapping[str, Path]) -> bool:
    """Record the sha256 of this run's variants' weights in ``REPORT/weights.json`` (committed beside the records);
    False when a variant there was trained before to other bytes, so its committed records and diagnosis are
    stale (another machine kind, another library version) and every step after training must be redone."""
    from semuq_eval.assets.cache import file_sha256

    path = Path(args.report) / "weights.json"
    before = read_json(path) if path.is_file() else {}
    now = {name: file_sha256(folder / "model.safetensors") for name, folder in folders.items()}
    changed = sorted(name for name in now if name in before and before[name] != now[name])
    if changed:
        log.warning(
            "retrained to other weights than the report's (%s): rescoring every store", ", ".join(changed)
        )
    write_json(path, now)
    return not changed


def untrained_bases(args, variants: Mapping[str, Mapping[str, Any]]) -> dict[str, tuple[str, str, str]]:
    """Each variant's untrained counterpart: ``variant -> (operator name, backbone, pooling)``. ``enc`` for the
    variants on ``--backbone`` with Eq. encoder's pooling, ``enc_<backbone>`` (e.g. ``enc_all_mpnet_base_v2``)
    for a variant on another backbone, and ``..._answer_pooling`` for an answer-pooled variant: the same
    untrained weights pooled the same way, so a difference is what training did, not what pooling did."""
    out = {}
    for name, overrides in variants.items():
        backbone = overrides.get("backbone", args.backbone)
        pooling = overrides.get("pooling", "all")
        short = re.sub(r"\W+", "_", backbone.removeprefix("offline:").split("/")[-1]).strip("_")
        base = "enc" if backbone == args.backbone else f"enc_{short}"
        out[name] = (base if pooling == "all" else f"{base}_{pooling}_pooling", backbone, pooling)
    return out


def operator_setup(
    backbone_path: str, folders: Mapping[str, Path], bases: Mapping[str, tuple[str, str, str]]
) -> tuple[list[str], dict[str, dict]]:
    """The operators of steps 2 and 4 and their options: the untrained backbone as ``enc`` (and ``cos_ext``),
    each trained folder as a named ``enc`` variant, and every other untrained counterpart (another backbone,
    with its ``cos_ext``; another pooling)."""
    from semuq_eval.training.config import resolve_backbone

    names = [*folders, *BASES]
    options = {name: {"operator": "enc", "model": str(folder)} for name, folder in folders.items()}
    options["enc"] = {"model": backbone_path}
    options["cos_ext"] = {"model": backbone_path}
    for base, backbone, pooling in sorted(set(bases.values())):
        if base == "enc":
            continue
        path = resolve_backbone(backbone)[1]
        names.append(base)
        options[base] = {
            "operator": "enc",
            "model": path,
            **({} if pooling == "all" else {"pooling": pooling}),
        }
        cos = "cos_ext" + base.removeprefix("enc").removesuffix(f"_{pooling}_pooling")
        if cos not in options:
            names.append(cos)
            options[cos] = {"operator": "cos_ext", "model": path}
    return names, options


def _timings_path(args) -> Path:
    """The steps' times and loads, kept in the report (committed) so a run spread over sessions reports them all."""
    return Path(args.report) / "timings.json"


def _record_path(args, store: Path) -> Path:
    """Where the report keeps the run record of a rescored store ``<task>/<run_id>``."""
    from semuq_eval.harness.record import RECORD_SUFFIX

    return Path(args.report) / "records" / f"{store.parent.name}.{store.name}{RECORD_SUFFIX}"


def _recorded(path: Path, names: Sequence[str]) -> bool:
    """Whether the report already holds this store's record with exactly the operators of this run: a session
    on another machine committed it (the variants retrain to the same weights from the same files and seed), so
    the store is not rescored again. A record that does not read is rescored, with a warning."""
    from semuq_eval.harness.record import read_record

    if not path.is_file():
        return False
    try:
        operators = read_record(path)["operators"]
    except ValueError as err:
        log.warning("rescoring again: %s", err)
        return False
    return set(names) == set(operators)


def _rescored(store: Path, names: Sequence[str]) -> bool:
    """Whether ``store`` is a finished rescoring with exactly the operators of this run (a WORK folder of a run
    with other variants is rescored, not reused)."""
    path = store / "breakdown.json"
    return path.is_file() and set(read_json(path).get("operators") or {}) == set(names)


def rescore_all(args, stores: Sequence[Path], names, options, timings: dict) -> list[Path]:
    """Step 2: every evaluation store rescored with the operators side by side, as a complete store, and its run
    record written into ``REPORT/records/`` at once (committed as it comes, a record outlives the machine). A
    store whose record is kept (:func:`_recorded`) or already rescored (:func:`_rescored`) is not rescored again,
    unless ``--force``."""
    from semuq_eval.harness.record import record_from_store, write_record
    from semuq_eval.harness.rescore import rescore

    targets = [Path(args.work) / "stores" / store.parent.name / store.name for store in stores]
    if len(set(targets)) < len(targets):
        raise SystemExit(
            "reproduce: two evaluation stores share a task and run id (<task>/<run_id>), so their rescored stores "
            "and run records would overwrite each other; give the runs different run ids"
        )
    for store, target in zip(stores, targets, strict=True):
        record = _record_path(args, target)
        if not args.force and _recorded(record, names):
            log.info("rescore %s: kept the record %s", store, record)
            continue
        if args.force or not _rescored(target, names):
            log.info("rescore %s -> %s", store, target)
            start, load = time.perf_counter(), _load()
            rescore(
                store,
                operators=names,
                operator_options=options,
                bootstrap=args.bootstrap,
                store_output=target,
                force=True,  # a half-written store of an interrupted run, or --force
            )
            timings[f"rescore {store.parent.name}/{store.name}"] = {
                "seconds": round(time.perf_counter() - start, 1),
                "load_before": load,
            }
            write_json(_timings_path(args), timings)
        record.parent.mkdir(parents=True, exist_ok=True)
        write_record(record, record_from_store(target))
    return targets


def leaderboard(args, stores: Sequence[Path], bases: Mapping[str, tuple[str, str, str]], main: str) -> dict:
    """Step 3: the leaderboard of this run's records (step 2 wrote them into ``REPORT/records/``; committed, the
    board rebuilds from them on a fresh clone), with the main trained operator's comparisons (each
    other variant against its untrained counterpart, the main operator and ``cos_ext``, the bar every variant must
    clear) and ``kle_heat@enc`` as the headline's reference."""
    from semuq_eval.harness.record import RECORD_SUFFIX
    from semuq_eval.leaderboard.build import build
    from semuq_eval.leaderboard.compute import LeaderboardConfig

    records = Path(args.report) / "records"
    mine = {_record_path(args, store) for store in stores}
    for stale in set(records.glob(f"*{RECORD_SUFFIX}")) - mine:  # the board is built from this run's records
        stale.unlink()
    compare = [(main, tuple(dict.fromkeys((bases[main][0], *BASES))))] + [
        (name, tuple(dict.fromkeys((base, main, "cos_ext"))))
        for name, (base, *_) in bases.items()
        if name != main
    ]
    output = Path(args.report) / "leaderboard"
    return build(
        [str(records / f"*{RECORD_SUFFIX}")],
        output,
        config=LeaderboardConfig(
            n_resamples=args.bootstrap, compare=tuple(compare), reference="kle_heat@enc", jobs=args.jobs
        ),
        title="Reproduction: a trained enc operator vs the untrained one, offline",
        header=BOARD_HEADER,
        command="python -m experiments.reproduce " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
        relative_to=output,
        force=True,
    )


def diagnose_all(
    args, groups: Mapping[str, Sequence[Path]], names, options, compare, timings: dict
) -> dict[str, dict]:
    """Step 4: traps, clustering and localization of every operator with a model, per group of stores, and
    the paired differences of ``compare`` (each trained variant minus its untrained counterpart)."""
    from semuq_eval.diagnose.diagnosis import diagnose
    from semuq_eval.diagnose.outputs import write_report

    results = {}
    wanted = [n for n in names if n not in ("cos_int",)]
    for group, stores in groups.items():
        if not stores:
            continue
        folder = Path(args.report) / "diagnosis" / group
        if (folder / "diagnosis.json").is_file() and not args.force:
            done = read_json(folder / "diagnosis.json")
            same = sorted(done.get("stores", [])) == sorted(str(s) for s in stores)
            if same and set(done.get("comparisons") or {}) == {f"{a} vs {b}" for a, b in compare}:
                results[group] = done
                continue
        log.info("diagnose %s: %d stores", group, len(stores))
        start, load = time.perf_counter(), _load()
        result = diagnose(
            [str(s) for s in stores],
            operators=wanted,
            operator_options={k: v for k, v in options.items() if k in wanted},
            max_questions=args.max_diagnose_questions,
            compare=compare,
            checkpoint=Path(args.work) / "diagnosis-checkpoint" / group,
        )
        write_report(result, folder)
        results[group] = result
        timings[f"diagnose {group}"] = {"seconds": round(time.perf_counter() - start, 1), "load_before": load}
    return results


# -- the report -----------------------------------------------------------------------------------------------


def _f(x: float | None, digits: int = 3) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _ci(cell: Mapping[str, Any] | None) -> str:
    if cell is None or cell.get("status") not in ("ok",):
        return "-" if cell is None else cell.get("status", "-")
    flag = "" if cell.get("reliable", True) else " !"
    return f"{_f(cell['value'])} [{_f(cell['ci_low'])}, {_f(cell['ci_high'])}]{flag}"


def _diff(row: Mapping[str, Any] | None) -> str:
    if row is None or row.get("status") != "ok":
        return "-"
    return f"{row['difference']:+.3f} [{_f(row['ci_low'])}, {_f(row['ci_high'])}]" + (
        " *" if row["significant"] else ""
    )


def training_section(folders: Mapping[str, Path]) -> list[str]:
    lines = ["## 1. Training", ""]
    lines += [
        "| operator | training LLM | data | questions kept / seen | triplets per epoch (train) | validation "
        "triplets | validation triplet accuracy per epoch (epoch 0 = the backbone) | kept epoch | optimizer steps "
        "behind the kept weights | options |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, folder in folders.items():
        rec = read_json(folder / "semuq_training.json")
        data, counts, hyper = rec["training_data"], rec["counts"], rec["hyperparameters"]
        val = rec.get("validation") or {}
        per_epoch = [val.get("before_training")] + [e.get("accuracy") for e in val.get("per_epoch") or []]
        accs = ", ".join(_f(a, 2) for a in per_epoch)
        options = f"negatives {hyper['negatives']}" + (
            "" if rec.get("question_conditioned", True) else ", answer-only"
        )
        options += "".join(
            f", {text}"
            for applies, text in (
                (hyper.get("positives", "samples") != "samples", f"positives {hyper.get('positives')}"),
                (hyper.get("guided"), "guided"),
                (hyper.get("fact_swap"), "fact swaps"),
                (hyper.get("pooling", "all") != "all", f"pooling {hyper.get('pooling')}"),
            )
            if applies
        )
        last = str(hyper.get("kept_epoch", "best")).startswith("last")
        kept = val.get("epochs_run") if last else val.get("best_epoch")
        if last:
            options += ", early stopping off"
        steps = (
            "n/a" if kept is None else kept * math.ceil(counts["triplets_per_epoch"] / hyper["batch_size"])
        )
        llms = ", ".join(Path(x).name for x in data["llms"])
        lines.append(
            f"| `{name}` | {llms} | {', '.join(data['datasets'])} | {counts['kept']} / "
            f"{counts['seen']} | {counts['triplets_per_epoch']} | {counts['val_triplets']} | {accs} | "
            f"{kept} | {steps} | {options} |"
        )
    lines += [
        "",
        "Kept: questions with at least 2 correct and 1 incorrect of the N sampled answers (App. C). The cards "
        "(`README.md`, `semuq_training.json` in each operator folder) give the hyperparameters, versions and seed.",
        "",
    ]
    return lines


def select_main(folders: Mapping[str, Path]) -> tuple[str, list[str]]:
    """The variant with the highest validation triplet accuracy at its kept epoch (ties: the earlier variant,
    the paper's recipe first), and the report lines that say so. Only meaningful when every variant was
    validated on the same held-out triplets (``--validation``)."""
    scored = []
    for name, folder in folders.items():
        val = read_json(folder / "semuq_training.json").get("validation") or {}
        last = val.get("best_epoch") is None
        kept = val.get("final_accuracy") if last else val.get("best_accuracy")
        scored.append((name, val.get("before_training"), kept))
    best = max(scored, key=lambda x: -1.0 if x[2] is None else x[2])[0]
    lines = [
        "## 1b. Selection of the main operator (held-out NQ-Open dev questions, never an evaluation set)",
        "",
        "Every variant is validated on the same triplets: App. C triplets of the natural samples of held-out "
        "NQ-Open dev questions of the training LLM (`--validation`), so their accuracies compare. The main operator "
        f"is the one with the highest accuracy at its kept epoch: **`{best}`**.",
        "",
        "| variant | validation triplet accuracy, backbone | at the kept epoch |",
        "|---|---|---|",
        *(f"| `{n}` | {_f(b)} | {_f(k)} |" for n, b, k in scored),
        "",
    ]
    return best, lines


def _verdict(value: int | None) -> bool | None:
    return None if value is None else bool(value)


def heldout_questions(files: Sequence[str]) -> tuple[list[Any], list[dict[str, Any]]]:
    """The held-out questions of the ``--validation`` training-data files as pipeline docs, with their stored
    verdicts as label records (greedy, majority of the samples, each sample): what a run of the training LLM on
    them would have stored. A question without its greedy answer (an older export) is left out."""
    from dataclasses import replace

    from semuq_eval.judges.strategies import majority_label
    from semuq_eval.training.data_files import read_training_file

    docs, labels = [], []
    for path in files:
        questions = read_training_file(path).questions
        missing = [q.doc_id for q in questions if q.greedy is None]
        if missing:
            log.warning(
                "%s: %d question(s) without a greedy answer left out (doc ids %s)",
                path,
                len(missing),
                missing[:10],
            )
        for q in questions:
            if q.greedy is None:
                continue
            docs.append(replace(q.doc, doc_id=len(docs)))  # unique over the files
            samples = [_verdict(v) for v in q.labels]
            labels.append(
                {
                    "greedy": _verdict(q.greedy_label),
                    "majority": majority_label(samples),
                    "samples": samples,
                    "n_missing_verdicts": sum(v is None for v in [q.greedy_label, *q.labels]),
                }
            )
    return docs, labels


def choose_by_auroc(
    scored: Mapping[str, float | None], candidates: Sequence[str], bases: Mapping[str, tuple[str, str, str]]
) -> tuple[str, str]:
    """``(best, main)``: the candidate with the highest held-out score (ties: the earlier candidate), and the main
    operator: ``best`` when it scores above both its untrained counterpart and the untrained ``enc`` (training
    helped, and it beats what ships untrained), else the paper's recipe.

    >>> choose_by_auroc({"a": 0.6, "b": 0.7, "enc": 0.65, "enc_ap": 0.72}, ["a", "b"],
    ...                 {"a": ("enc", "", "all"), "b": ("enc_ap", "", "answer")})
    ('b', 'enc_trained')
    """
    value = {k: (-1.0 if v is None else v) for k, v in scored.items()}
    best = max(candidates, key=lambda v: value[v])
    above = value[best] > value[bases[best][0]] and value[best] > value["enc"]
    return best, best if above else PAPER


def select_by_heldout_auroc(
    args, variants: Mapping[str, Mapping[str, Any]], names, options, bases, timings: dict
) -> tuple[str, list[str]]:
    """``--select auroc``: the question-conditioned variant with the highest mean greedy AUROC over the graph
    aggregators on the held-out questions (``--validation``; never an evaluation set); it is the main operator
    only if that mean is also above its untrained counterpart's, else the paper's recipe stays main. The
    breakdown is kept as ``heldout/breakdown.json`` in the report folder."""
    from semuq_eval.harness.breakdown import summarize
    from semuq_eval.harness.pipeline import process_docs
    from semuq_eval.harness.settings import Settings
    from semuq_eval.training.heldout import SELECTION_AGGREGATORS

    candidates = [v for v, o in variants.items() if o.get("question", True)]
    wanted = list(dict.fromkeys([*candidates, *(bases[v][0] for v in candidates), "cos_ext"]))
    path = Path(args.report) / "heldout" / "breakdown.json"
    if path.is_file() and not args.force and set(wanted) <= set(read_json(path)["operators"]):
        breakdown = read_json(path)
    else:
        docs, labels = heldout_questions(args.validation)
        n = min(len(d.samples) for d in docs)
        settings = Settings(
            n_samples=n,
            operators=tuple(wanted),
            operator_options={k: v for k, v in options.items() if k in wanted},
            bootstrap=args.bootstrap,
            seed=args.seed,
            store=False,
        )
        start, load = time.perf_counter(), _load()
        log.info("held-out AUROC: %d questions, operators %s", len(docs), wanted)
        out = process_docs(docs, settings, labels=labels)
        breakdown = summarize(
            out.items,
            settings,
            task="held-out NQ-Open dev (--validation)",
            operators=out.operator_runs,
            label_set="run",
            extra={"validation": list(args.validation)},
        )
        write_json(path, breakdown)
        timings["held-out AUROC"] = {"seconds": round(time.perf_counter() - start, 1), "load_before": load}
    greedy = breakdown["results"]["greedy"]
    counts = breakdown["labels"]["greedy"]

    def mean_auroc(op: str) -> float | None:
        values = [
            greedy[f"{agg}@{op}"]["auroc"]["value"]
            for agg in SELECTION_AGGREGATORS
            if f"{agg}@{op}" in greedy and greedy[f"{agg}@{op}"]["auroc"]["value"] is not None
        ]
        return sum(values) / len(values) if values else None

    scored = {op: mean_auroc(op) for op in wanted}
    best, main = choose_by_auroc(scored, candidates, bases)
    lines = [
        "## 1b. Selection of the main operator (held-out NQ-Open dev questions, never an evaluation set)",
        "",
        f"Rule (`--select auroc`): the mean greedy AUROC over the eight graph aggregators "
        f"({', '.join(SELECTION_AGGREGATORS)}) on the {breakdown['n_docs']} "
        f"held-out questions of the training LLM (`--validation`; {counts['n_correct']} correct / "
        f"{counts['n_incorrect']} incorrect greedy answers), among the question-conditioned variants; the best "
        "becomes the main operator only if it is above its own untrained counterpart and the untrained `enc`, else "
        "the paper's recipe "
        f"stays main. Selected: **`{best}`**; main operator: **`{main}`**.",
        "",
        "| operator | mean greedy AUROC, held-out |",
        "|---|---|",
        *(f"| `{op}` | {_f(scored[op])} |" for op in wanted),
        "",
        f"Few correct answers ({counts['n_correct']}): each AUROC here has a wide interval "
        "(`heldout/breakdown.json` keeps them with the counts).",
        "",
    ]
    return main, lines


def mean_auroc_section(document: Mapping[str, Any], operators: Sequence[str], role) -> list[str]:
    """Tab. 1's summary: each operator's mean AUROC over the reliable cells its aggregators share."""
    lines = ["## 2a. Mean AUROC per operator over the reliable cells", ""]
    lines += [
        "A cell is one aggregator on one evaluation run under one label strategy. Reliable: at least 20 answers of "
        "each class. Only the aggregators every operator below has are averaged (the graph, kernel and clustering "
        "ones), so the means compare.",
        "",
        "| evaluated on | labels | cells | " + " | ".join(f"`{o}`" for o in operators) + " |",
        "|---|---|---|" + "---|" * len(operators),
    ]
    by_key: dict[tuple, dict[str, float]] = {}
    for c in document["cells"]:
        if c["metric"] != "auroc" or c.get("status") != "ok" or not c.get("reliable", False):
            continue
        agg, _, op = c["estimator"].partition("@")
        if op in operators:
            by_key.setdefault((c["section"], c["llm"], c["task"], c["strategy"], agg), {})[op] = c["value"]
    for group in sorted(set(role.values())):
        for strategy in ("greedy", "majority"):
            full = [
                v
                for (sec, llm, task, strat, _), v in by_key.items()
                if strat == strategy and role.get((task, llm)) == group and len(v) == len(operators)
            ]
            if not full:
                continue
            means = [sum(v[o] for v in full) / len(full) for o in operators]
            lines.append(f"| {group} | {strategy} | {len(full)} | " + " | ".join(_f(m) for m in means) + " |")
    if not lines[-1].startswith("| ") or lines[-1].startswith("|---"):
        lines.append("| (no reliable cell) | | 0 |" + " |" * len(operators))
    lines.append("")
    return lines


def _indexes(document: Mapping[str, Any]) -> tuple[dict[tuple, dict], dict[tuple, dict]]:
    """The leaderboard's cells by (section, llm, strategy, estimator, metric), its comparison rows by (set,
    section, llm, strategy, estimator)."""
    cells = {
        (c["section"], c["llm"], c["strategy"], c["estimator"], c["metric"]): c for c in document["cells"]
    }
    rows = {
        (r["set"], r["section"], r["llm"], r["strategy"], r["estimator"]): r
        for r in document["comparisons"]["rows"]
    }
    return cells, rows


def _run_tables(document: Mapping[str, Any], main: str):
    """``(run, strategy, counts, aggregators)`` for every evaluation run and label strategy on which the trained
    operator was compared: one table each in sections 2 and 2b."""
    for run in document["runs"]:
        for strategy, counts in run["labels"].items():
            aggs = [
                r["estimator"].split("@")[0]
                for r in document["comparisons"]["rows"]
                if (r["set"], r["section"], r["llm"], r["strategy"])
                == (f"{main} vs enc", run["section"], run["llm"], strategy)
            ]
            if aggs:
                yield run, strategy, counts, aggs


def result_section(document: Mapping[str, Any], role: Mapping[tuple[str, str], str], main: str) -> list[str]:
    """Per evaluation run and label strategy: every aggregator of the trained operator against its bases."""
    cells, rows = _indexes(document)
    lines = ["## 2. AUROC of every aggregator: trained vs untrained `enc` and the other operators", ""]
    lines += [
        "AUROC [95% CI] (`!`: small sample, fewer than 20 answers of the minority class); the last columns are "
        "paired bootstrap differences trained minus base [95% CI] (`*`: the interval excludes 0). ECE of the "
        "same estimators: `leaderboard/leaderboard.csv` (the board's recipe writes it).",
        "",
    ]
    for run, strategy, counts, aggs in _run_tables(document, main):
        sid, llm = run["section"], run["llm"]
        lines += [
            f"### {llm} on {run['task']} ({role.get((run['task'], llm), 'evaluation')}), {strategy} labels: "
            f"{counts['n_correct']} correct / {counts['n_incorrect']} incorrect",
            "",
            "| aggregator | "
            + " | ".join(f"`{o}`" for o in (main, *BASES))
            + " | "
            + " | ".join(f"{main} − {b}" for b in BASES)
            + " |",
            "|---|" + "---|" * (2 * len(BASES) + 1),
        ]
        for agg in aggs:
            name = f"{agg}@{main}"
            auroc = [_ci(cells.get((sid, llm, strategy, f"{agg}@{o}", "auroc"))) for o in (main, *BASES)]
            diffs = [_diff(rows.get((f"{main} vs {b}", sid, llm, strategy, name))) for b in BASES]
            lines.append(f"| {agg} | " + " | ".join(auroc + diffs) + " |")
        lines.append("")
    return lines


def variants_section(
    document: Mapping[str, Any], bases: Mapping[str, tuple[str, str, str]], main: str
) -> list[str]:
    """Per evaluation run and label strategy: the AUROC of every trained variant beside the untrained ``enc``."""
    cells, rows = _indexes(document)
    ops = ["enc", *bases]
    lines = ["## 2b. The ablations: every trained variant against the untrained `enc`", ""]
    lines += [
        "AUROC [95% CI] and, below each variant, its paired difference from `enc` (`*`: the interval excludes 0).",
        "",
    ]
    for run, strategy, counts, aggs in _run_tables(document, main):
        sid, llm = run["section"], run["llm"]
        lines += [
            f"### {llm} on {run['task']}, {strategy} labels: {counts['n_correct']} correct / "
            f"{counts['n_incorrect']} incorrect",
            "",
            "| aggregator | " + " | ".join(f"`{o}`" for o in ops) + " |",
            "|---|" + "---|" * len(ops),
        ]
        for agg in aggs:
            out = [_ci(cells.get((sid, llm, strategy, f"{agg}@enc", "auroc")))]
            for v, (base, *_) in bases.items():
                a = _ci(cells.get((sid, llm, strategy, f"{agg}@{v}", "auroc")))
                d = _diff(rows.get((f"{v} vs {base}", sid, llm, strategy, f"{agg}@{v}")))
                d += "" if base == "enc" else f" (vs `{base}`)"
                out.append(f"{a}<br>{d}")
            lines.append(f"| {agg} | " + " | ".join(out) + " |")
        lines.append("")
    return lines


def wins_section(document: Mapping[str, Any], role: Mapping[tuple[str, str], str]) -> list[str]:
    """The "improves in X of Y cells" counts, apart for the other LLM and the training LLM."""
    lines = ["## 3. Cells where the trained operator wins", ""]
    lines += [
        "A cell is one aggregator on one evaluation run under one label strategy; cells without a defined AUROC "
        "(one class of labels) are left out. From the paired differences of `leaderboard/leaderboard.json` "
        "(the board's recipe writes it).",
        "",
        "| evaluated on | comparison | labels | higher | of cells | significantly higher | significantly lower | "
        "mean difference |",
        "|---|---|---|---|---|---|---|---|",
    ]
    sets = [name for name in document["comparisons"]["sets"] if " vs " in name]
    groups = sorted(set(role.values()))
    for group in groups:
        for name in sets:
            for strategy in ("greedy", "majority"):
                rows = [
                    r
                    for r in document["comparisons"]["rows"]
                    if r["set"] == name
                    and r["strategy"] == strategy
                    and r["status"] == "ok"
                    and role.get((r["task"], r["llm"])) == group
                ]
                if not rows:
                    continue
                mean = sum(r["difference"] for r in rows) / len(rows)
                lines.append(
                    f"| {group} | {name} | {strategy} | {sum(bool(r['improved']) for r in rows)} | {len(rows)} | "
                    f"{sum(bool(r['improved'] and r['significant']) for r in rows)} | "
                    f"{sum(bool(not r['improved'] and r['significant']) for r in rows)} | {mean:+.3f} |"
                )
    lines.append("")
    return lines


def criteria_section(
    document: Mapping[str, Any],
    diagnoses: Mapping[str, Mapping[str, Any]],
    bases: Mapping[str, tuple[str, str, str]],
    main: str,
) -> list[str]:
    """Issue 18's "what must show", measured from the leaderboard and the diagnoses (nothing typed by hand):
    over the reliable cells (at least 20 answers of each class), the main operator against its untrained
    counterparts (higher in at least two thirds, significantly in at least a third) and its mean AUROC against
    ``cos_ext``'s; the context trap (lower is better) and token localization (higher) with paired intervals."""
    cells, rows = _indexes(document)
    lines = [
        "## 0. What must show, and whether it does",
        "",
        "Reliable cells only: one aggregator on one evaluation run under one label strategy, with at least 20 "
        "correct and 20 incorrect answers; significant: the paired 95% bootstrap interval excludes 0.",
        "",
        "| criterion | target | measured | reached |",
        "|---|---|---|---|",
    ]

    def reliable(row: Mapping[str, Any]) -> bool:
        cell = cells.get((row["section"], row["llm"], row["strategy"], row["estimator"], "auroc")) or {}
        return row["status"] == "ok" and bool(cell.get("reliable"))

    for base in dict.fromkeys(("enc", bases[main][0])):
        kept = [r for r in rows.values() if r["set"] == f"{main} vs {base}" and reliable(r)]
        higher = sum(bool(r["improved"]) for r in kept)
        better = sum(bool(r["improved"] and r["significant"]) for r in kept)
        worse = sum(bool(not r["improved"] and r["significant"]) for r in kept)
        ok = bool(kept) and 3 * higher >= 2 * len(kept) and 3 * better >= len(kept)
        lines.append(
            f"| `{main}` beats the untrained `{base}` | higher in >= 2/3 of the cells, significantly in >= 1/3 | "
            f"higher in {higher} of {len(kept)}, significantly in {better} (significantly lower in {worse}) | "
            f"{'yes' if ok else 'no'} |"
        )
    pairs = []
    for (sid, llm, strategy, estimator, metric), cell in cells.items():
        agg, _, op = estimator.partition("@")
        other = cells.get((sid, llm, strategy, f"{agg}@cos_ext", metric))
        if op == main and metric == "auroc" and cell.get("status") == "ok" and cell.get("reliable") and other:
            if other.get("status") == "ok":
                pairs.append((cell["value"], other["value"]))
    if pairs:
        ours, theirs = (sum(x) / len(pairs) for x in zip(*pairs, strict=True))
        lines.append(
            f"| mean AUROC of `{main}` vs `cos_ext` | at least `cos_ext`'s | {_f(ours)} vs {_f(theirs)} over "
            f"{len(pairs)} cells | {'yes' if ours >= theirs else 'no'} |"
        )
    for group, result in diagnoses.items():
        for base in dict.fromkeys(("enc", bases[main][0])):
            row = (result.get("comparisons") or {}).get(f"{main} vs {base}") or {}
            for key, title, sign in (
                ("trap:context", "context trap (lower is better)", -1),
                ("localization", "token localization hit rate (higher is better)", 1),
            ):
                d = row.get(key) or {}
                if d.get("difference") is None:
                    continue
                n = d.get("n_pairs", d.get("n_answers"))
                ok = (d["ci_high"] < 0) if sign < 0 else (d["ci_low"] > 0)
                lines.append(
                    f"| {title}, `{main}` minus `{base}` ({group}) | the paper's direction, interval excluding 0 | "
                    f"{d['difference']:+.3f} [{_f(d['ci_low'])}, {_f(d['ci_high'])}] ({n} / {d['n_questions']} "
                    f"questions) | {'yes' if ok else 'no'} |"
                )
    lines.append("")
    return lines


def diagnosis_section(results: Mapping[str, Mapping[str, Any]], names: Sequence[str]) -> list[str]:
    lines = ["## 4. Traps, clustering and localization before / after training", ""]
    lines += [
        "`enc` is the untrained backbone (before), the `enc_trained*` columns are after. Mean similarity [95% CI] "
        "(pairs); `!`: fewer than 30 questions. Full reports, examples and plots: `diagnosis/<group>/`.",
        "",
    ]
    for group, result in results.items():
        ops = [n for n in names if n in result.get("operators", {}) or n in _trap_ops(result)]
        counts = result.get("counts", {})
        lines += [f"### {group}", "", f"Stores: {', '.join(f'`{s}`' for s in result.get('stores', []))}.", ""]
        if counts:
            lines += [f"Counts: `{counts}`", ""]
        lines += [
            "| trap | better | " + " | ".join(f"`{o}`" for o in ops) + " |",
            "|---|---|" + "---|" * len(ops),
        ]
        for trap in result["traps"].values():
            cells = []
            for o in ops:
                r = trap["results"].get(o) or {}
                if r.get("mean") is None:
                    cells.append("n/a (no pairs)" if not r.get("n_pairs") else "n/a")
                else:
                    flag = " !" if r.get("small_sample") else ""
                    cells.append(
                        f"{_f(r['mean'])} [{_f(r['ci_low'])}, {_f(r['ci_high'])}] ({r['n_pairs']}){flag}"
                    )
            lines.append(f"| {trap['title']} | {trap['better']} | " + " | ".join(cells) + " |")
        loc = result.get("localization", {})
        lines += ["", "Token localization (App. A.4): top-weight token inside the reference span.", ""]
        lines += ["| operator | hit rate [95% CI] | uniform chance | answers |", "|---|---|---|---|"]
        for o in ops:
            r = loc.get(o) or {}
            if "hit_rate" not in r:
                continue
            hit, chance = r["hit_rate"], r["chance_rate"]
            lines.append(
                f"| `{o}` | {_f(hit.get('mean'))} [{_f(hit.get('ci_low'))}, {_f(hit.get('ci_high'))}] | "
                f"{_f(chance.get('mean'))} | {r['n_answers']} |"
            )
        lines += comparison_lines(
            result,
            heading="Paired differences, trained minus untrained (and the main operator minus `cos_ext`):",
        )
        lines.append("")
    return lines


def _trap_ops(result: Mapping[str, Any]) -> set[str]:
    return {o for trap in result.get("traps", {}).values() for o in trap.get("results", {})}


def counted(document: Mapping[str, Any], aggregators: Sequence[str]) -> dict[str, Any]:
    """The leaderboard document as the report counts it: only the cells and comparison rows of ``aggregators``
    (all when empty). A plan that fixes its cells (e.g. the ten aggregators of Tab. 1) is read on exactly those,
    while the leaderboard files keep every estimator."""
    if not aggregators:
        return dict(document)
    keep = set(aggregators)
    rows = [r for r in document["comparisons"]["rows"] if r["estimator"].partition("@")[0] in keep]
    return {
        **document,
        "cells": [c for c in document["cells"] if c["estimator"].partition("@")[0] in keep],
        "comparisons": {**document["comparisons"], "rows": rows},
    }


def write_readme(args, folders, bases, document, diagnoses, names, role, timings, main, selection) -> Path:
    lines = [
        "# Reproduction: does an operator trained on one LLM's answers help another LLM's uncertainty?",
        "",
        "The paper's claim (Sec. 4, Tab. 1): an operator trained with a contrastive objective on a generating "
        "LLM's own correct / incorrect samples improves every aggregator, also for other LLMs and datasets. "
        "Here, offline, with the tiny CPU LLMs this machine has. Made by `experiments/reproduce.py`; every number "
        "below comes from the files in this folder.",
        "",
        "```",
        "python -m experiments.reproduce " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
        "```",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; backbone "
        f"`{args.backbone}`; {args.bootstrap} bootstrap resamples; seed {args.seed}; up to {args.val_triplets} "
        "validation triplets per held-out question.",
        "",
    ]
    if args.aggregators:
        lines += [
            f"Counted (sections 0-3): the aggregators {', '.join(f'`{a}`' for a in args.aggregators)}; the "
            "leaderboard in `leaderboard/` also has every other estimator.",
            "",
        ]
    lines += criteria_section(document, diagnoses, bases, main)
    lines += training_section(folders)
    lines += selection
    lines += mean_auroc_section(document, [main, *(n for n in names if n != main)], role)
    lines += result_section(document, role, main)
    lines += variants_section(document, bases, main)
    lines += wins_section(document, role)
    lines += diagnosis_section(diagnoses, names)
    lines += ["## 5. Time and load", "", "| step | seconds | load (1 / 5 / 15 min) before |", "|---|---|---|"]
    for step, t in timings.items():
        load = t["load_before"]
        lines.append(
            f"| {step} | {t['seconds']} | {load['load_1min']} / {load['load_5min']} / {load['load_15min']} |"
        )
    lines.append("")
    path = Path(args.report) / "README.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--train",
        nargs="+",
        required=True,
        help="training run stores, training-data files (.jsonl.gz) or folders / globs, NQ-Open",
    )
    p.add_argument(
        "--eval",
        nargs="*",
        default=[],
        help="evaluation stores of the OTHER LLM (folders, globs, or the .tar.xz archives eval_runs.sh commits; "
        "the paper's setting)",
    )
    p.add_argument(
        "--secondary",
        nargs="*",
        default=[],
        help="stores (or archives) of the training LLM on other datasets",
    )
    p.add_argument("--work", required=True, help="folder for the trained operators and rescored stores")
    p.add_argument("--report", required=True, help="folder of the committed report")
    p.add_argument("--backbone", default="offline:all-minilm-l6-v2")
    p.add_argument(
        "--guided",
        nargs="*",
        default=[],
        help="reference-guided training stores or files (the guided variants)",
    )
    p.add_argument(
        "--validation",
        nargs="*",
        default=[],
        help="held-out training-distribution stores or files: every variant selects its epoch on their App. C "
        "triplets (the same for all), which makes --select fair",
    )
    p.add_argument(
        "--select",
        nargs="?",
        const="triplets",
        choices=("triplets", "auroc"),
        help="choose the main operator on the held-out questions (needs --validation): 'triplets' (the "
        "default when given bare) by validation triplet accuracy, 'auroc' by mean greedy AUROC over the graph "
        "aggregators",
    )
    p.add_argument(
        "--main",
        help="the main operator fixed in advance (a pre-registered plan names it; one of the trained variants): "
        "no selection is made, so --select and --validation's selection step are skipped",
    )
    p.add_argument(
        "--ablations", default="random,none,answer_only,full_budget", help="comma-separated; '' for none"
    )
    p.add_argument(
        "--aggregators",
        type=lambda text: [a.strip() for a in text.split(",") if a.strip()],
        default=[],
        help="comma-separated: the aggregators the report's counts and means are read on (default: all); the "
        "leaderboard keeps every estimator",
    )
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--bf16", action="store_true", help="train in bfloat16 mixed precision (recorded)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--val_triplets",
        type=int,
        default=10,
        help="validation triplets per held-out question (10: with ~10 held-out questions, one each makes "
        "early stopping a coin toss)",
    )
    p.add_argument("--bootstrap", type=int, default=1000)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--max_diagnose_questions", type=int, default=None)
    p.add_argument("--force", action="store_true", help="redo the rescoring, leaderboard and diagnosis")
    p.add_argument(
        "--train_only",
        action="store_true",
        help="train the variants (step 1) and stop; a later run reuses them",
    )
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    from semuq_eval.training.config import resolve_backbone

    if args.select and args.main:
        p.error("--main fixes the main operator in advance: --select would choose another; give one of them")
    if args.select and not args.validation:
        p.error("--select compares the variants on the same held-out triplets: give --validation")
    from semuq_eval.aggregators import names as aggregator_names

    strange = sorted(set(args.aggregators) - set(aggregator_names()))
    if strange:
        p.error(f"--aggregators: unknown {strange}; known: {aggregator_names()}")
    ablations = [a.strip() for a in args.ablations.split(",") if a.strip()]
    unknown = [a for a in ablations if a not in ABLATIONS]
    if unknown:
        p.error(f"--ablations: unknown {unknown}; known: {sorted(ABLATIONS)}")
    variants = {PAPER: {}, **{ABLATIONS[a][0]: ABLATIONS[a][1] for a in ablations}}
    eval_stores, secondary = _stores(args.eval, Path(args.work)), _stores(args.secondary, Path(args.work))
    work, report = Path(args.work), Path(args.report)
    work.mkdir(parents=True, exist_ok=True)
    report.mkdir(parents=True, exist_ok=True)
    timings_path = _timings_path(args)
    timings = read_json(timings_path) if timings_path.is_file() else {}

    folders = train(args, variants, timings)
    write_json(timings_path, timings)
    if not same_weights(args, folders):
        args.force = True
    if args.train_only:
        print(f"reproduce: trained {len(folders)} variant(s) under {work / 'ops'}")
        return 0
    bases = untrained_bases(args, variants)
    names, options = operator_setup(resolve_backbone(args.backbone)[1], folders, bases)
    if args.main:
        if args.main not in folders:
            p.error(f"--main {args.main!r} is not a trained variant; trained: {sorted(folders)}")
        main, selection = (
            args.main,
            [
                "## 1b. The main operator, fixed in advance",
                "",
                f"`--main {args.main}`: named by a plan written before the evaluation answers existed; no selection "
                "was made on any data here.",
                "",
            ],
        )
    elif args.select == "auroc":
        main, selection = select_by_heldout_auroc(args, variants, names, options, bases, timings)
        write_json(timings_path, timings)
    else:
        main, selection = select_main(folders) if args.select else (PAPER, [])
    rescored = rescore_all(args, [*eval_stores, *secondary], names, options, timings)
    write_json(timings_path, timings)
    role = {
        (target.parent.name, target.name): "other LLM, other dataset"
        if source in eval_stores
        else "SAME LLM as training, other dataset"
        for source, target in zip([*eval_stores, *secondary], rescored, strict=True)
    }
    document = leaderboard(args, rescored, bases, main)
    compare = [(v, base) for v, (base, *_) in bases.items()] + [(main, "cos_ext")]
    diagnoses = diagnose_all(
        args, {"other-llm": eval_stores, "training-llm": secondary}, names, options, compare, timings
    )
    write_json(timings_path, timings)
    path = write_readme(
        args,
        folders,
        bases,
        counted(document, args.aggregators),
        diagnoses,
        names,
        role,
        timings,
        main,
        selection,
    )
    print(f"reproduce: report -> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
