"""The report of ../PLAN-trained-on-qwen.md, generated from committed files: Q0 from Qwen's natural training data
(questions kept by App. C's rule in natural 0-2499, beside SmolLM2's), both LLMs' training sets as the recipe counts
them (guided answers added, questions trained on, held-out questions), Q1-Q3 from both LLMs' test records rescored
with the operator trained on Qwen's answers (``enc_qwen``), the shipped ``enc`` and their untrained answer-pooled base
(``enc_untrained``), each comparison by the plan's counting rule: "higher in X of Y reliable cells, Z significantly
higher, W significantly lower; mean AUROC a vs b, difference d [95% CI]", then which outcome of the plan it is.

    .venv/bin/python leaderboards/reproduction/transfer/recipe/report_trained_on_qwen.py \\
        --qwen 'leaderboards/reproduction/transfer/trained-on-qwen/records/*.qwen2.5-coder-1.5b-instruct.jsonl.gz' \\
        --smollm2 'leaderboards/reproduction/transfer/trained-on-qwen/records/*.smollm2-135m-instruct.jsonl.gz' \\
        --training-data leaderboards/reproduction/transfer/training_data \\
        [--weights SHA256] [--shipped-weights SHA256]

The cells are `experiments/operator_cells.py`'s (the ten aggregators x greedy and majority labels, reliable with at
least 20 answers of each class, the leaderboard's paired bootstrap). ``--trained``, ``--shipped`` and ``--base``
name the three operators in the records (the defaults are the names `score_trained_on_qwen.sh` gives them).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))  # the repository, for experiments/
from experiments.operator_cells import (  # noqa: E402
    RULES,
    cells,
    check_operators,
    class_counts,
    load,
    row,
    summary,
    verdict,
)
from semuq_eval.training.stores import LabelledQuestion  # noqa: E402

LLMS = {"Qwen": "Qwen2.5-Coder-1.5B-Instruct", "SmolLM2": "SmolLM2-135M-Instruct"}
"""The two LLMs, as the table names them (each row pools its three test sets)."""

REFERENCE_DATA = Path(__file__).resolve().parents[4] / "semuq_eval/assets/training_data/nqopen-dev-smollm2"
"""SmolLM2's training data, the shipped operator's: the reference of Q0 and of the training-set table."""


def chunk_names(kind: str, first: int, last: int) -> list[str]:
    """The 250-question chunk files of ``kind`` (natural, guided) covering questions ``first`` to ``last - 1``."""
    return [f"{kind}-{start:05d}-{start + 250:05d}.jsonl.gz" for start in range(first, last, 250)]


def read_chunks(folder: Path, names: Sequence[str]) -> list[LabelledQuestion]:
    """The labelled questions of ``names`` in ``folder``; every chunk must be there."""
    from semuq_eval.training.data_files import read_training_file

    missing = [name for name in names if not (folder / name).is_file()]
    if missing:
        kind = missing[0].split("-")[0]
        raise ValueError(f"{folder} lacks {len(missing)} {kind} chunk(s), the first {missing[0]}")
    return [q for name in names for q in read_training_file(folder / name).questions]


def training_set(folder: Path) -> dict[str, int]:
    """What the recipe trains and selects on in ``folder``, counted as training counts it (``mine`` then App. C's
    rule, :func:`semuq_eval.training.prepare.prepare_data`'s steps): ``natural_kept`` and ``seen`` (App. C on the
    natural answers to 0-2499 alone, Q0), ``trained`` (questions kept once the correct guided answers join their
    natural question as positives: one triplet each per epoch), the guided answers added and left out, and
    ``validation_kept`` (the held-out natural 2500-2999 that keeps the epoch)."""
    from semuq_eval.training.mining import mine
    from semuq_eval.training.triplets import filter_questions

    natural = read_chunks(folder, chunk_names("natural", 0, 2500))
    guided = read_chunks(folder, chunk_names("guided", 0, 2500))
    validation = read_chunks(folder, chunk_names("natural", 2500, 3000))
    _, alone = filter_questions(natural)
    mined, added = mine(natural, guided)
    _, trained = filter_questions(mined)
    return {
        "natural_kept": alone["kept"],
        "seen": alone["seen"],
        "trained": trained["kept"],
        "guided_answers": sum(len(q.answers) for q in guided),
        "guided_added": added["added_guided"],
        "guided_incorrect": added["guided_incorrect"],
        "guided_echo": added["guided_echo"],
        "validation_kept": filter_questions(validation)[1]["kept"],
    }


def training_table(sets: dict[str, dict[str, int]]) -> str:
    """The two training sets side by side (markdown)."""
    lines = [
        "| training LLM | natural 0-2499 kept (App. C) | guided answers: added as positives / incorrect / echo "
        "of the prompt, of | questions trained on (triplets per epoch) | held-out 2500-2999 kept |",
        "|---|---|---|---|---|",
    ]
    for llm, c in sets.items():
        lines.append(
            f"| {llm} | {c['natural_kept']} / {c['seen']} | {c['guided_added']} / {c['guided_incorrect']} / "
            f"{c['guided_echo']}, of {c['guided_answers']} | {c['trained']} | {c['validation_kept']} |"
        )
    return "\n".join(lines)


def outcome(q1: str, q2: str) -> str:
    """The plan's reading of Q1 and Q2 together."""
    if "no reliable cell" in (q1, q2):
        return "Q1 or Q2 has no reliable cell: the plan's reading cannot be made."
    if q1 != "held":
        return (
            "Q1 not held: training on the LLM under evaluation brings nothing beyond the shipped operator, which "
            "stays the one to use."
        )
    if q2 == "held":
        return (
            "Q1 and Q2 held: the training LLM matters; an operator is best trained on the LLM it will judge."
        )
    return (
        "Q1 held and Q2 not: the more accurate LLM makes the better operator; train on the most accurate LLM you "
        "can run."
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qwen", required=True, help="glob of Qwen's rescored test records")
    parser.add_argument("--smollm2", required=True, help="glob of SmolLM2's rescored test records")
    parser.add_argument("--training-data", type=Path, required=True, help="Qwen's training-data folder (Q0)")
    parser.add_argument("--trained", default="enc_qwen", help="the operator trained on Qwen's answers")
    parser.add_argument("--shipped", default="enc", help="the shipped operator")
    parser.add_argument("--base", default="enc_untrained", help="their untrained answer-pooled base")
    parser.add_argument("--weights", help="sha256 of enc_qwen's model.safetensors")
    parser.add_argument(
        "--shipped-weights",
        help="sha256 of the shipped operator's model.safetensors (its float32 training differs by CPU)",
    )
    args = parser.parse_args(argv)
    try:
        runs = {"Qwen": load(args.qwen), "SmolLM2": load(args.smollm2)}
        for records in runs.values():
            check_operators(records, [args.trained, args.shipped, args.base])
        sets = {"Qwen": training_set(args.training_data), "SmolLM2": training_set(REFERENCE_DATA)}
    except (OSError, ValueError) as err:
        print(f"report_trained_on_qwen.py: {err}", file=sys.stderr)
        return 2
    print("# The other direction: an operator trained on Qwen's answers\n")
    print(
        "Generated by `recipe/report_trained_on_qwen.py` from committed files (the plan: ../PLAN-trained-on-qwen.md)."
    )
    if args.weights:
        print(f"`{args.trained}`: model.safetensors sha256 `{args.weights}`.")
    if args.shipped_weights:
        print(f"`{args.shipped}`: model.safetensors sha256 `{args.shipped_weights}`.")
    qwen, reference = sets["Qwen"], sets["SmolLM2"]["natural_kept"]
    kept, seen = qwen["natural_kept"], qwen["seen"]
    q0 = "held" if kept > 2 * reference else "not held"
    print(
        f"\n**Q0 (data)**: Qwen's natural answers to NQ-Open dev 0-2499 keep **{kept} of {seen}** questions by App. C's "
        f"rule (at least 2 correct and 1 incorrect sampled answers); SmolLM2's keep {reference}. Holds if more than "
        f"{2 * reference}: **{q0}**."
    )
    print(
        "\nThe training sets (counted as the recipe counts them; a guided answer joins its natural question as a "
        "positive when it is correct, new, and does not repeat the guiding prompt):\n"
    )
    print(training_table(sets))
    print("\nCounts per run and label strategy (correct / incorrect answers):\n")
    for records in runs.values():
        for record in records:
            print(f"- {record['llm']}, {record['task']}: {class_counts(record)}")
    print(
        "\n| prediction | comparison (holds if) | LLM | reliable cells | cells | mean AUROC | mean difference [95% CI] | verdict |"
    )
    print("|---|---|---|---|---|---|---|---|")
    plan = (  # the prediction, the LLM, the other operator, its rule
        ("Q1", "Qwen", args.shipped, "above-most"),
        ("Q2", "SmolLM2", args.shipped, "not-above"),
        ("Q3", "Qwen", args.base, "above"),
        ("Q3", "SmolLM2", args.base, "above"),
    )
    verdicts: dict[str, list[str]] = {}
    for label, llm, other, rule in plan:
        s = summary([c for r in runs[llm] for c in cells(r, args.trained, other)])
        verdicts.setdefault(label, []).append(verdict(s, rule))
        print(
            f"| {label} | `{args.trained}` vs `{other}` ({RULES[rule]}) | {LLMS[llm]} ({len(runs[llm])} test sets) | {row(s)} | "
            f"{verdicts[label][-1]} |"
        )
    q3 = "held" if all(v == "held" for v in verdicts["Q3"]) else "not held"
    print(f"\nQ3 (above its base on both LLMs): **{q3}**.\n\n{outcome(verdicts['Q1'][0], verdicts['Q2'][0])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
