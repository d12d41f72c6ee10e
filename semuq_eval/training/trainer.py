"""The paper's training recipe for the ``enc`` operator (Sec. 4, App. B-C), on sentence-transformers' trainer.

App. B's ``TripletLoss`` on cosine distance (Eq. triplet_loss), AdamW with linear warm-up and decay, early stopping
on ``TripletEvaluator`` accuracy, all in :class:`~sentence_transformers.SentenceTransformerTrainer`. Triplets are
resampled every epoch (App. C): a ``set_transform`` returns each question's triplet of the CURRENT epoch
(:class:`~semuq_eval.training.triplets.TripletSampler`), and a callback advances the epoch, so optimizer, scheduler
and shuffling stay the trainer's. Every epoch's state is saved for resuming (:mod:`~semuq_eval.training.checkpoints`);
``enc`` formats every text itself, so training and evaluation inputs cannot drift apart.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from semuq_eval.durable import unfinished, write_fault
from semuq_eval.training.card import package_versions, write_card
from semuq_eval.training.checkpoints import EpochCheckpoints, fingerprint
from semuq_eval.training.config import TrainingConfig, _on_cpu, check_bf16, resolve_backbone
from semuq_eval.training.prepare import TrainingData, prepare_data
from semuq_eval.training.stores import labelled_questions
from semuq_eval.training.triplets import TripletSampler, validation_triplets

__all__ = ["train_operator"]

log = logging.getLogger(__name__)

METRIC = "dev_cosine_accuracy"
HELDOUT_METRIC = "heldout_mean_auroc"


def _new_output(path: Path, overwrite: bool) -> None:
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        if not overwrite:
            raise FileExistsError(f"{path} exists and is not empty; choose another --output or pass --force")
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    path.mkdir(parents=True, exist_ok=True)


class _EpochRows:
    """The ``set_transform`` of the training dataset: row indices -> the current epoch's triplet columns.

    ``in_epoch`` is True while the trainer runs an epoch; reads outside epochs (model card statistics) see epoch 0."""

    def __init__(self, sampler: TripletSampler) -> None:
        self.sampler = sampler
        self.epoch = 0
        self.in_epoch = False

    def __call__(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        drawn = self.sampler.draw(self.epoch)
        rows = [self.sampler.row(drawn[i]) for i in batch["row"]]
        return {col: [r[col] for r in rows] for col in self.sampler.columns}


def _callbacks(rows: _EpochRows, checkpoints: EpochCheckpoints, stop_after_epoch: int | None):
    from transformers import TrainerCallback

    class ResampleTriplets(TrainerCallback):
        """Draws the epoch's triplets before each epoch (App. C), times the epoch's training steps and ends
        training after epoch ``stop_after_epoch`` when it is set. The epoch is the trainer's own count, so a
        resumed training draws the triplets the uninterrupted one would."""

        started = 0.0

        def on_epoch_begin(self, args, state, control, **kwargs):
            rows.epoch, rows.in_epoch = round(state.epoch or 0), True
            rows.sampler.draw(rows.epoch)
            self.started = time.perf_counter()

        def on_epoch_end(self, args, state, control, **kwargs):
            checkpoints.save_timing(rows.epoch + 1, time.perf_counter() - self.started)
            rows.in_epoch = False
            if rows.epoch + 1 == stop_after_epoch:
                control.should_training_stop = True

    return ResampleTriplets()


def _history(log_history: list[dict[str, Any]], timings: list[dict[str, float]]) -> list[dict[str, Any]]:
    """One entry per finished epoch: its validation accuracy (and held-out AUROC when scored), mean training
    loss and training time."""
    per: dict[int, dict[str, Any]] = {}
    for entry in log_history:
        if entry.get("epoch") is None:
            continue
        e = round(float(entry["epoch"]))
        if f"eval_{METRIC}" in entry:
            per.setdefault(e, {"epoch": e})["accuracy"] = float(entry[f"eval_{METRIC}"])
            if f"eval_{HELDOUT_METRIC}" in entry:
                per[e]["heldout_auroc"] = float(entry[f"eval_{HELDOUT_METRIC}"])
        elif "loss" in entry:
            per.setdefault(e, {"epoch": e})["train_loss"] = float(entry["loss"])
    for t in timings:
        per.setdefault(int(t["epoch"]), {"epoch": int(t["epoch"])})["train_seconds"] = t["train_seconds"]
    return [per[e] for e in sorted(per)]


def train_operator(config: TrainingConfig, data: TrainingData | None = None) -> dict[str, Any]:
    """Train an ``enc`` operator with the paper's recipe and save it to ``config.output``.

    ``data`` is already prepared data (:func:`prepare_data`), else read from ``config.stores``. Returns the
    training record written to ``<output>/semuq_training.json`` (:mod:`semuq_eval.training.card`).

    Examples
    --------
    >>> record = train_operator(TrainingConfig(stores=["out/"], output="ops/enc-smollm2",
    ...                                        backbone="offline:all-minilm-l6-v2"))  # doctest: +SKIP
    >>> record["validation"]["best_accuracy"]  # doctest: +SKIP
    0.81
    """
    check_bf16(config)
    data = data or prepare_data(config)
    output = Path(config.output).expanduser()
    _new_output(output, config.overwrite)

    import transformers

    from semuq_eval.operators.encoder import pooling_mode
    from semuq_eval.operators.pooling import use_mean_pooling

    backbone_name, backbone_path = resolve_backbone(config.backbone)
    transformers.set_seed(config.seed)
    model, max_length, separator, format_fn = _backbone(config, backbone_path)
    sampler = TripletSampler(data.train, seed=config.seed, format_fn=format_fn, negatives=config.negatives)
    triplets, heldout, evaluator = _evaluators(config, data, format_fn, separator)
    scores_before = evaluator(model)
    n_val = len(triplets.anchors)
    _log_before(scores_before, n_val, heldout)
    loss, loss_name = _loss(model, config)
    checkpoints = EpochCheckpoints(output, fingerprint(config, data))
    resume_from = checkpoints.open()
    trainer = _trainer(config, model, loss, (triplets, evaluator), _EpochRows(sampler), checkpoints)
    started = time.perf_counter()
    _train(trainer, resume_from, checkpoints.folder.parent)
    train_seconds = time.perf_counter() - started
    model = trainer.model
    scores_final = evaluator(model)
    per_epoch = _history(trainer.state.log_history, checkpoints.timings())
    pooling_used = pooling_mode(model)
    use_mean_pooling(model)  # the folder keeps the standard module; the card records the variant
    # a replay's kept epoch: its held-out AUROC is scored after training
    if config.stop_after_epoch is not None and heldout is not None and per_epoch:
        per_epoch[-1]["heldout_auroc"] = float(scores_final[HELDOUT_METRIC])
    record = {
        "operator": "enc",
        "output": str(output),
        "question_conditioned": bool(config.question),
        "separator": separator if config.question else None,
        "pooling": pooling_used,
        "backbone": {"name": backbone_name, "path": backbone_path, "revision": _revision(model)},
        "training_data": _training_data(data, config.labels),
        "counts": dict(data.counts, triplets_per_epoch=len(data.train), val_triplets=n_val),
        "hyperparameters": _hyperparameters(config, loss_name, max_length, trainer.args),
        "deviations_from_paper": _deviations(config),
        "validation": _validation_record(config, per_epoch, heldout, (scores_before, scores_final)),
        "timing": _timing(per_epoch, train_seconds, len(data.train), model, resume_from),
        **_provenance(config),
    }
    _save(output, model, checkpoints, record)
    return record


def _modes(config: TrainingConfig) -> tuple[bool, bool]:
    """``(replay, select)``: a replay of a selection made before; every epoch scored to keep the best."""
    replay = config.stop_after_epoch is not None
    return replay, config.early_stopping and not replay


def _trainer(
    config: TrainingConfig,
    model: Any,
    loss: Any,
    evaluators: tuple[Any, Any],
    rows: _EpochRows,
    checkpoints: EpochCheckpoints,
) -> Any:
    """The sentence-transformers trainer of the recipe: early stopping on the selection metric unless a replay,
    the epoch rows and checkpoints as callbacks. ``evaluators``: (the validation triplets, the full evaluator)."""
    import datasets
    import transformers
    from sentence_transformers import SentenceTransformerTrainer

    replay, select = _modes(config)
    triplets, evaluator = evaluators
    train_dataset = datasets.Dataset.from_dict({"row": list(range(len(rows.sampler.questions)))})
    train_dataset.set_transform(rows)
    early = [transformers.EarlyStoppingCallback(early_stopping_patience=config.patience)] if select else []
    return SentenceTransformerTrainer(
        model=model,
        args=_training_arguments(config, checkpoints.folder),
        train_dataset=train_dataset,
        loss=loss,
        # a replay scores the validation triplets after every epoch as the selection did: the trainer's
        # evaluation loop draws from torch's generator (its dataloader's base seed), which sets the next
        # epoch's dropout; only the costly held-out AUROC is left for after training
        evaluator=triplets if replay else evaluator,
        callbacks=[*early, _callbacks(rows, checkpoints, config.stop_after_epoch)],
    )


def _train(trainer: Any, resume_from: str | None, folder: Path) -> None:
    """Run the trainer; a write it failed (torch reports a full disk as "iostream error") is named as one."""
    try:
        trainer.train(resume_from_checkpoint=resume_from)
    except BaseException as err:
        log.error("training stopped; run the same training again to resume after the last saved epoch")
        fault = write_fault(folder) if isinstance(err, (RuntimeError, OSError)) else None
        if fault is not None:
            raise fault from err
        raise


def _save(output: Path, model: Any, checkpoints: EpochCheckpoints, record: dict[str, Any]) -> None:
    """The trained model, then its card, the last file: a kill in between leaves the folder marked unfinished."""
    output.mkdir(parents=True, exist_ok=True)
    with unfinished(output):
        model.save(str(output), create_model_card=False)
        checkpoints.remove()
        write_card(output, record)


def _provenance(config: TrainingConfig) -> dict[str, Any]:
    """Where the operator comes from: the seed, the options, the command, the versions, the time."""
    return {
        "seed": config.seed,
        "config": config.model_dump(exclude={"command"}),
        "command": list(config.command),
        "versions": package_versions(),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "environment": {"HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE")},
    }


def _hyperparameters(config: TrainingConfig, loss_name: str, max_length: Any, args: Any) -> dict[str, Any]:
    """The record's hyperparameters: the options as the trainer applied them (``args``: its training arguments)."""
    replay, select = _modes(config)
    return {
        "negatives": config.negatives,
        "loss": loss_name,
        "margin": config.margin if config.negatives != "none" else None,
        "learning_rate": config.lr,
        "schedule": "linear warm-up then linear decay (over the whole epoch budget)",
        "warmup_ratio": config.warmup_ratio,
        "batch_size": config.batch_size,
        "max_epochs": config.epochs,
        "early_stopping_patience": config.patience if select else None,
        "kept_epoch": f"epoch {config.stop_after_epoch} of the budget, replayed: trained no further, the "
        "held-out AUROC scored only after training (a selection made before)"
        if replay
        else "best validation epoch"
        if config.early_stopping
        else "last epoch (early stopping off)",
        "early_stopping_metric": f"validation triplet accuracy ({METRIC})"
        if config.select_on != "auroc"
        else f"held-out mean greedy AUROC of the selection rule's eight graph aggregators ({HELDOUT_METRIC})",
        "select_on": config.select_on,
        "val_fraction": None if config.validation else config.val_fraction,
        "validation": "held-out stores (App. C triplets of their natural samples)"
        if config.validation
        else "val_fraction of the kept questions, split by question",
        "val_triplets_per_question": int(config.val_triplets),
        "max_length": max_length,
        "optimizer": str(getattr(args.optim, "value", args.optim)),
        "weight_decay": args.weight_decay,
        "triplets_per_question_per_epoch": 1,
        "positives": config.positives,
        "guided": bool(config.guided),
        "fact_swap": config.fact_swap,
        "pooling": config.pooling,
        "precision": "bf16 mixed" if config.bf16 else "fp32",
    }


def _deviations(config: TrainingConfig) -> list[str]:
    """What this training does differently from the paper's recipe (App. B), one sentence each."""
    last_kept = not config.early_stopping and config.stop_after_epoch is None
    answer_pooled, on_auroc = config.pooling != "all", config.select_on == "auroc"
    deviations = {  # sentence: whether it applies
        f"positives={config.positives}: the dataset's references (raw and in a sentence template) are "
        "positives, with wrong answers rendered the same way as negatives": config.positives != "samples",
        "guided: correct reference-guided answers of the same LLM are positives": bool(config.guided),
        "fact_swap: correct answers with their fact swapped are negatives, wrong answers with the reference "
        "swapped in are positives": config.fact_swap,
        "pooling=answer: mean over the answer's tokens only (Eq. encoder: all tokens)": answer_pooled,
        "no early stopping: the whole epoch budget, last epoch kept": last_kept,
        "select_on=auroc: the epoch is selected on the held-out questions' mean greedy AUROC over the eight "
        "graph aggregators of the selection rule (App. B: validation triplet accuracy)": on_auroc,
        "bf16: bfloat16 mixed-precision training (this machine's CPU time; weights float32)": config.bf16,
    }
    return [text for text, applies in deviations.items() if applies]


def _training_data(data: TrainingData, labels: str) -> dict[str, Any]:
    """Where the training data came from: its stores (LLMs, tasks, datasets), label set and validation stores."""
    stores = [s.provenance for s in data.stores]
    return {
        "stores": stores,
        "llms": sorted({p["llm"] for p in stores if p.get("llm")}),
        "tasks": sorted({p["task"] for p in stores if p.get("task")}),
        "datasets": sorted({f"{p['dataset']} ({p['split']})" for p in stores if p.get("dataset")}),
        "label_set": labels,
        "validation_stores": [s.provenance for s in data.validation_stores],
    }


def _training_arguments(config: TrainingConfig, checkpoints: Path) -> Any:
    """The trainer's arguments: App. B's schedule, every epoch's state saved (to resume) and, with ``select``, the
    best by ``metric`` kept."""
    from sentence_transformers import SentenceTransformerTrainingArguments

    _, select = _modes(config)
    metric = HELDOUT_METRIC if config.select_on == "auroc" else METRIC
    return SentenceTransformerTrainingArguments(
        output_dir=str(checkpoints),
        num_train_epochs=config.epochs,
        **dict.fromkeys(("per_device_train_batch_size", "per_device_eval_batch_size"), config.batch_size),
        learning_rate=config.lr,
        lr_scheduler_type="linear",
        warmup_steps=float(config.warmup_ratio),
        **dict.fromkeys(("eval_strategy", "save_strategy", "logging_strategy"), "epoch"),
        load_best_model_at_end=select,
        metric_for_best_model=f"eval_{metric}" if select else None,
        greater_is_better=True if select else None,
        save_total_limit=1,  # with the best kept as well: the last epoch's state resumes a killed run
        restore_callback_states_from_checkpoint=True,  # the early-stopping counter
        seed=config.seed,
        data_seed=config.seed,
        report_to="none",
        disable_tqdm=not config.progress,
        dataloader_num_workers=0,
        use_cpu=_on_cpu(config),
        bf16=bool(config.bf16),
    )


def _validation_record(
    config: TrainingConfig, per_epoch: list[dict[str, Any]], heldout: Any, scores: tuple[Mapping, Mapping]
) -> dict[str, Any]:
    """The record's validation: triplet accuracy before, per epoch and kept, the held-out AUROC when it selected.
    ``scores``: the evaluator's before and after training."""
    scores_before, scores_final = scores
    best = _best_epoch(per_epoch, heldout is not None, float(scores_before[METRIC]))
    n_epochs = len([e for e in per_epoch if "train_seconds" in e])
    return {
        "metric": "triplet accuracy: share of validation triplets with cos(anchor, positive) > "
        "cos(anchor, negative); up to val_triplets_per_question distinct hard-negative triplets per "
        "validation question, drawn once",
        "before_training": float(scores_before[METRIC]),
        "per_epoch": per_epoch,
        "best_epoch": best["epoch"] if best else None,
        "best_accuracy": best["accuracy"] if best else None,
        "final_accuracy": float(scores_final[METRIC]),
        **(
            {
                "heldout_auroc": {
                    "metric": f"mean greedy AUROC over {', '.join(e.aggregator for e in heldout.estimators)} of "
                    "the operator on every held-out question with a greedy verdict",
                    **heldout.counts,
                    "before_training": float(scores_before[HELDOUT_METRIC]),
                    "best": best.get("heldout_auroc") if best else None,
                    "final": float(scores_final[HELDOUT_METRIC]),
                }
            }
            if heldout is not None
            else {}
        ),
        "epochs_run": n_epochs,
        "stopped_early": config.stop_after_epoch is None and n_epochs < config.epochs,
        "stopped_after_epoch": config.stop_after_epoch,
    }


def _evaluators(
    config: TrainingConfig, data: TrainingData, format_fn: Any, separator: str
) -> tuple[Any, Any, Any]:
    """``(triplets, held-out, evaluator)``: the validation triplets' accuracy (App. B), the held-out AUROC when
    ``select_on`` is ``auroc`` (else None), and the evaluator that scores both."""
    from sentence_transformers.sentence_transformer.evaluation import SequentialEvaluator, TripletEvaluator

    triplets = TripletEvaluator(
        *validation_triplets(
            data.val, seed=config.seed, format_fn=format_fn, per_question=config.val_triplets
        ),
        main_similarity_function="cosine",
        name="dev",
        batch_size=config.batch_size,
        write_csv=False,
    )
    if config.select_on != "auroc":
        return triplets, None, triplets
    from semuq_eval.training.heldout import HeldoutAUROCEvaluator

    heldout = HeldoutAUROCEvaluator(
        labelled_questions(data.validation_stores),
        condition_on_question=config.question,
        separator=separator,
        batch_size=config.batch_size,
    )
    return triplets, heldout, SequentialEvaluator([triplets, heldout])


def _loss(model: Any, config: TrainingConfig) -> tuple[Any, str]:
    """The loss and how the record names it: App. B's cosine triplet loss, or a cosine loss without negatives."""
    from sentence_transformers.sentence_transformer.losses import (
        CosineSimilarityLoss,
        TripletDistanceMetric,
        TripletLoss,
    )

    if config.negatives == "none":
        return CosineSimilarityLoss(model), "CosineSimilarityLoss(target 1.0, MSE)"
    loss = TripletLoss(model, distance_metric=TripletDistanceMetric.COSINE, triplet_margin=config.margin)
    return loss, f"TripletLoss(distance=COSINE, margin={config.margin})"


def _revision(model: Any) -> str | None:
    """The backbone's commit hash as transformers read it (None for a local folder without one)."""
    first = model[0]
    return getattr(first.auto_model.config, "_commit_hash", None) if hasattr(first, "auto_model") else None


def _timing(
    per_epoch: list[dict[str, Any]], train_seconds: float, n_train: int, model: Any, resume_from: str | None
) -> dict[str, Any]:
    """The training's time: in all (this run's, when it resumed), per epoch, examples per second, on what device
    and how many threads, and the checkpoint a resumed run started from."""
    import torch

    epoch_seconds = [e["train_seconds"] for e in per_epoch if "train_seconds" in e]
    return {
        "train_seconds": train_seconds,
        "resumed_from": Path(resume_from).name if resume_from else None,
        "epoch_train_seconds": epoch_seconds,
        "examples_per_second": (n_train * len(epoch_seconds) / sum(epoch_seconds)) if epoch_seconds else None,
        "device": str(model.device),
        "torch_threads": torch.get_num_threads(),
    }


def _backbone(config: TrainingConfig, path: str) -> tuple[Any, int | None, str, Callable[[str, str], str]]:
    """``(model, max length, separator, format)``: the backbone loaded as ``enc`` loads it (with ``pooling`` answer,
    the answer-pooled copy that trains) and how ``enc`` writes a question and an answer as one input."""
    from sentence_transformers import SentenceTransformer

    from semuq_eval.operators.encoder import EncoderOperator

    model = SentenceTransformer(path, device=config.device)
    if config.max_length:
        model.max_seq_length = int(config.max_length)
    op = EncoderOperator(model, condition_on_question=config.question, pooling=config.pooling, progress=False)
    model, max_length, separator = op._load()

    def format_fn(question: str, answer: str) -> str:
        return op._input(question, answer)[0]

    return model, max_length, separator, format_fn


def _best_epoch(per_epoch: list[dict[str, Any]], heldout: bool, before: float) -> dict[str, Any] | None:
    """The kept epoch: the best held-out AUROC (or triplet accuracy without it); ties keep the earlier epoch, as
    the trainer does. Warns when the best triplet accuracy is below the untrained backbone's."""
    key = "heldout_auroc" if heldout else "accuracy"
    scored = [e for e in per_epoch if key in e]
    best = max(scored, key=lambda e: e[key]) if scored else None
    if not heldout and best is not None and best["accuracy"] < before:
        log.warning(
            "the best epoch's validation triplet accuracy (%.3f) is below the untrained backbone's (%.3f)",
            best["accuracy"],
            before,
        )
    return best


def _log_before(scores: Mapping[str, Any], n_triplets: int, heldout: Any) -> None:
    """The untrained backbone's validation figures, in the log."""
    log.info("validation triplet accuracy before training: %.3f (%d triplets)", scores[METRIC], n_triplets)
    if heldout is not None:
        log.info(
            "held-out mean AUROC before training: %.3f (%d questions, %d correct)",
            scores[HELDOUT_METRIC],
            heldout.counts["n"],
            heldout.counts["n_correct"],
        )
