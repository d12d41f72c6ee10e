"""Post-hoc cost of building S: the bi-encoder ``enc`` against the NLI cross-encoder ``nli``.

For every question (N = 20 distinct answers) both operators build S the way the harness runs them
(deduplicated, batched, sorted by length); the two are timed side by side in one run, question by
question, after a warm-up call that loads everything. Two settings:

(a) the same small backbone: a MiniLM-L6-sized BERT as a bi-encoder (mean pooling) and as a
    3-label cross-encoder;
(b) the paper's architectures: sentence-t5-large (T5-large encoder + mean pooling + Dense 1024->768)
    for ``enc`` and deberta-v2-xlarge(-mnli) for ``nli``.

Weights are random (the cost of a forward pass does not depend on them), built from configs in
code; nothing is downloaded. Tokens come from the real all-MiniLM-L6-v2 WordPiece tokenizer when
`semuq-eval assets` has prepared it, else from a word-level tokenizer built here. The paper reports
1.11 s vs 0.03 s per question (37x) on a GPU.

    .venv/bin/python -m bench.operators               # (a) 5 questions, (b) 3 questions
    .venv/bin/python -m bench.operators --quick       # (a) 3 questions, (b) 1 question
    .venv/bin/python -m bench.operators --threads 1   # on a machine other processes are using

Each question is also run with its greedy answer as an anchor (the greedy-anchored comparisons of issue 23, in the
same pass): the bench prints what they add, in forward passes and wall time, against the target of one forward pass
for ``enc`` and 2/(N-1) of the pairwise cost for ``nli`` (N more unordered pairs over N(N-1)/2). ``enc``'s
``token_similarity`` (TokenSAR's relevance: the greedy answer with each of its T tokens cut out, T + 1 encoder
inputs, whitespace words standing in for the generating model's tokens) is timed against S too.

On 2 CPU cores one deberta-v2-xlarge question (380 pairs) takes five minutes or more. Wall-clock medians
are the headline; process CPU time is printed too: CPU time near wall time with 2 threads means other
processes held a core, which slows the many small matrix products of ``enc`` more than the large ones
of ``nli`` (then use --threads 1).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from semuq_eval.operators import get

N_ANSWERS = 20
SPECS = [
    (
        "Who wrote the book The Origin of Species?",
        "The Origin of Species was written by",
        [
            "Charles Darwin",
            "Alfred Russel Wallace",
            "Thomas Huxley",
            "Gregor Mendel",
            "Jean-Baptiste Lamarck",
        ],
    ),
    (
        "What is the capital city of Australia?",
        "The capital city of Australia is",
        ["Canberra", "Sydney", "Melbourne", "Perth", "Brisbane"],
    ),
    (
        "Who played the Joker in The Dark Knight?",
        "The Joker in The Dark Knight was played by",
        ["Heath Ledger", "Jack Nicholson", "Joaquin Phoenix", "Jared Leto", "Mark Hamill"],
    ),
    (
        "Which element has the chemical symbol Fe?",
        "The chemical symbol Fe stands for",
        ["iron", "lead", "fluorine", "tin", "silver"],
    ),
    (
        "In which year did the Berlin Wall fall?",
        "The Berlin Wall fell in",
        ["1989", "1991", "1987", "1961", "1990"],
    ),
    (
        "Who painted the ceiling of the Sistine Chapel?",
        "The ceiling of the Sistine Chapel was painted by",
        ["Michelangelo", "Raphael", "Leonardo da Vinci", "Botticelli", "Caravaggio"],
    ),
]
TEMPLATES = [
    "{e}",
    "It is {e}.",
    "I think the answer is {e}, but I am not completely sure about it.",
    "{fact} {e}, according to most historical sources and reference works.",
]
WARMUP = ("What is the largest planet in the Solar System?", ["Jupiter", "It is Saturn.", "Neptune", "Earth"])


def questions(k: int) -> list[tuple[str, list[str]]]:
    """k questions, each with N_ANSWERS distinct answers of mixed length (entity, short, long)."""
    out = []
    for question, fact, entities in (SPECS * (k // len(SPECS) + 1))[:k]:
        answers = [t.format(e=e, fact=fact) for e in entities for t in TEMPLATES]
        assert len(set(answers)) == N_ANSWERS
        out.append((question, answers))
    return out


def load_tokenizer():
    """The real MiniLM WordPiece tokenizer if prepared, else a word-level WordPiece built here."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    try:
        from semuq_eval.assets import locate

        return AutoTokenizer.from_pretrained(locate("all-minilm-l6-v2")), "all-MiniLM-L6-v2 WordPiece (real)"
    except (ImportError, FileNotFoundError):
        pass
    import re

    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    texts = [q for q, _ in questions(len(SPECS))] + [
        a for _, answers in questions(len(SPECS)) for a in answers
    ]
    words = sorted({w for t in texts for w in re.findall(r"\w+|[^\w\s]", t.lower())})
    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *words])}
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)],
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        model_max_length=512,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
    )
    return fast, "word-level WordPiece built from the bench text"


def sentence_encoder(backbone, tokenizer, folder: Path, dense_to: int | None = None):
    """A sentence-transformers model: ``backbone`` (saved to ``folder``) + mean pooling (+ Dense)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Dense, Normalize, Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    backbone.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    dim = backbone.config.hidden_size if hasattr(backbone.config, "hidden_size") else backbone.config.d_model
    modules = [Transformer(str(folder)), Pooling(dim, "mean")]
    if dense_to:
        modules.append(Dense(dim, dense_to, bias=False, activation_function=torch.nn.Identity()))
    return SentenceTransformer(modules=[*modules, Normalize()], device="cpu").eval()


def small_models(tokenizer, folder: Path):
    """(a) MiniLM-L6-sized BERT as bi-encoder and as 3-label cross-encoder."""
    from transformers import BertConfig, BertForSequenceClassification, BertModel

    kwargs = dict(
        vocab_size=max(30522, len(tokenizer)),
        hidden_size=384,
        num_hidden_layers=6,
        num_attention_heads=12,
        intermediate_size=1536,
        max_position_embeddings=512,
    )
    encoder = sentence_encoder(BertModel(BertConfig(**kwargs)), tokenizer, folder)
    labels = {0: "entailment", 1: "neutral", 2: "contradiction"}
    cross = BertForSequenceClassification(BertConfig(**kwargs, num_labels=3, id2label=labels)).eval()
    return encoder, cross, "MiniLM-L6 arch (22M) bi-encoder", "MiniLM-L6 arch cross-encoder"


def paper_models(tokenizer, folder: Path):
    """(b) sentence-t5-large and deberta-v2-xlarge-mnli architectures (configs of the hub models)."""
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification, T5Config, T5EncoderModel

    t5 = T5Config(
        vocab_size=32128,
        d_model=1024,
        d_kv=64,
        d_ff=4096,
        num_layers=24,
        num_heads=16,
        feed_forward_proj="relu",
        relative_attention_num_buckets=32,
    )
    encoder = sentence_encoder(T5EncoderModel(t5), tokenizer, folder, dense_to=768)
    deberta = DebertaV2Config(
        vocab_size=128100,
        hidden_size=1536,
        num_hidden_layers=24,
        num_attention_heads=24,
        intermediate_size=6144,
        max_position_embeddings=512,
        relative_attention=True,
        position_buckets=256,
        norm_rel_ebd="layer_norm",
        share_att_key=True,
        pos_att_type=["p2c", "c2p"],
        conv_kernel_size=3,
        conv_act="gelu",
        layer_norm_eps=1e-7,
        max_relative_positions=-1,
        position_biased_input=False,
        type_vocab_size=0,
        num_labels=3,
        id2label={0: "contradiction", 1: "neutral", 2: "entailment"},
    )
    cross = DebertaV2ForSequenceClassification(deberta).eval()
    return encoder, cross, "sentence-t5-large arch (335M)", "deberta-v2-xlarge arch (885M)"


def timed(op, question: str, answers: list[str], anchor: str | None = None):
    """One call (with ``anchor``: also the greedy-anchored comparisons): the operator's output and the process
    CPU seconds it used (all threads)."""
    cpu = time.process_time()
    out = op([question], [answers], anchors=None if anchor is None else [anchor])
    return out, time.process_time() - cpu


def greedy_answer(answers: list[str]) -> str:
    """A greedy answer that is none of the samples: the first entity in a template of its own."""
    return f"The answer is {answers[0]}."


def word_spans(text: str) -> np.ndarray:
    """Character spans of the whitespace-separated words, each with its leading space (as BPE tokens carry it)."""
    return np.array([[m.start(), m.end()] for m in re.finditer(r"\s*\S+", text)], dtype=np.int64)


def run_setting(label: str, build, tokenizer, n_questions: int, batch_size: int) -> dict:
    print(f"\n[{label}] building random-weights models ...", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        encoder, cross, enc_name, nli_name = build(tokenizer, Path(tmp))
        enc = get("enc", model=encoder, progress=False)
        nli = get("nli", model=cross, tokenizer=tokenizer, batch_size=batch_size, progress=False)
        for op in (enc, nli):  # warm-up: loads, allocates, first kernels
            op([WARMUP[0]], [WARMUP[1]])
        wall, cpu, passes = {"enc": [], "nli": []}, {"enc": [], "nli": []}, {}
        anchored_wall, anchored_passes = {"enc": [], "nli": []}, {}
        token_wall, token_inputs = [], []
        for i, (question, answers) in enumerate(questions(n_questions)):
            for name, op in (("enc", enc), ("nli", nli)):
                out, seconds = timed(op, question, answers)
                wall[name].append(out.cost.wall_time_s)
                cpu[name].append(seconds)
                passes[name] = out.cost.forward_passes
                anchored, _ = timed(op, question, answers, greedy_answer(answers))
                anchored_wall[name].append(anchored.cost.wall_time_s)
                anchored_passes[name] = anchored.cost.forward_passes
            greedy = greedy_answer(answers)
            start = time.perf_counter()
            enc.token_similarity([question], [[greedy]], [[word_spans(greedy)]])
            token_wall.append(time.perf_counter() - start)
            token_inputs.append(len(word_spans(greedy)) + 1)
            print(
                f"  question {i + 1}/{n_questions}: enc {wall['enc'][-1]:.3f} s wall / {cpu['enc'][-1]:.2f} s CPU "
                f"({passes['enc']} passes), nli {wall['nli'][-1]:.2f} s wall / {cpu['nli'][-1]:.1f} s CPU "
                f"({passes['nli']} passes), ratio {wall['nli'][-1] / wall['enc'][-1]:.0f}x wall, "
                f"{cpu['nli'][-1] / cpu['enc'][-1]:.0f}x CPU",
                flush=True,
            )
        del encoder, cross, enc, nli
    median = {
        key: {name: statistics.median(v) for name, v in d.items()}
        for key, d in (("wall", wall), ("cpu", cpu))
    }
    return {
        "label": label,
        "enc_model": enc_name,
        "nli_model": nli_name,
        "enc": median["wall"]["enc"],
        "nli": median["wall"]["nli"],
        "ratio": median["wall"]["nli"] / median["wall"]["enc"],
        "cpu_ratio": median["cpu"]["nli"] / median["cpu"]["enc"],
        "per_question": [n / e for e, n in zip(wall["enc"], wall["nli"], strict=True)],
        "passes": (passes["enc"], passes["nli"]),
        "anchored_passes": (anchored_passes["enc"], anchored_passes["nli"]),
        "token_inputs": statistics.median(token_inputs),
        "token_overhead": statistics.median(t / w for t, w in zip(token_wall, wall["enc"], strict=True)),
        "anchored_overhead": tuple(
            statistics.median(a / w - 1 for a, w in zip(anchored_wall[name], wall[name], strict=True))
            for name in ("enc", "nli")
        ),
        "questions": n_questions,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="3 small-backbone questions, 1 paper-architecture question"
    )
    parser.add_argument("--questions", type=int, help="timed questions for (a) (default 5, quick 3)")
    parser.add_argument(
        "--paper-questions", type=int, help="timed questions for (b) (default 3, quick 1; 0 skips)"
    )
    parser.add_argument("--nli-batch-size", type=int, default=64)
    parser.add_argument(
        "--threads",
        type=int,
        help="torch CPU threads for both operators (default: torch's; 1 on a busy machine)",
    )
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    n_small = args.questions or (3 if args.quick else 5)
    n_paper = args.paper_questions if args.paper_questions is not None else (1 if args.quick else 3)

    torch.manual_seed(0)
    tokenizer, tok_name = load_tokenizer()
    sample = questions(len(SPECS))
    q_len = statistics.mean(len(tokenizer(q, add_special_tokens=False)["input_ids"]) for q, _ in sample)
    a_len = statistics.mean(
        len(tokenizer(a, add_special_tokens=False)["input_ids"]) for _, ans in sample for a in ans
    )
    load_start = os.getloadavg()[0]
    print("semuq-eval operator benchmark: post-hoc time to build S per question (N = 20 distinct answers)")
    print(
        f"device cpu, float32, torch threads {torch.get_num_threads()}, CPUs {os.cpu_count()}, "
        f"load average at start {load_start:.2f}"
    )
    print(f"tokenizer: {tok_name}; mean question {q_len:.1f} tokens, mean answer {a_len:.1f} tokens")
    if load_start > 0.5 and torch.get_num_threads() > 1:
        print(
            "warning: other processes are using the CPU; with several torch threads small forward passes "
            "(enc) lose more than large ones (nli). Compare with --threads 1.",
            flush=True,
        )

    results = [run_setting("(a) same small backbone", small_models, tokenizer, n_small, args.nli_batch_size)]
    if n_paper > 0:
        results.append(
            run_setting("(b) paper architectures", paper_models, tokenizer, n_paper, args.nli_batch_size)
        )

    print("\nmedian seconds per question (enc: bi-encoder, N passes; nli: cross-encoder, N(N-1) passes)")
    header = (
        f"{'setting':<26}{'enc operator':<32}{'nli operator':<32}{'Q':>3}"
        f"{'enc s':>9}{'nli s':>9}{'nli/enc':>9}{'CPU-time ratio':>16}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        print(
            f"{r['label']:<26}{r['enc_model']:<32}{r['nli_model']:<32}{r['questions']:>3}"
            f"{r['enc']:>9.3f}{r['nli']:>9.2f}{r['ratio']:>8.0f}x{r['cpu_ratio']:>15.0f}x"
        )
    for r in results:
        per_q = ", ".join(f"{x:.0f}x" for x in r["per_question"])
        print(
            f"{r['label']}: forward passes enc {r['passes'][0]} / nli {r['passes'][1]}; per-question ratios {per_q}"
        )
    print(f"\ngreedy-anchored comparisons (target: enc +1 pass; nli +{2 / (N_ANSWERS - 1):.1%} of its cost)")
    for r in results:
        (enc_p, nli_p), (enc_a, nli_a) = r["passes"], r["anchored_passes"]
        enc_o, nli_o = r["anchored_overhead"]
        print(
            f"{r['label']}: enc {enc_p} -> {enc_a} passes, wall {enc_o:+.1%}; "
            f"nli {nli_p} -> {nli_a} passes ({nli_a / nli_p - 1:+.1%}), wall {nli_o:+.1%} (medians)"
        )
    print("\nTokenSAR's token_similarity on the greedy answer (enc; T + 1 encoder inputs)")
    for r in results:
        print(
            f"{r['label']}: {r['token_inputs']:.0f} inputs, wall {r['token_overhead']:.1%} of building S (median)"
        )
    print(f"load average at end {os.getloadavg()[0]:.2f}; paper (GPU): 1.11 s vs 0.03 s per question, 37x")


if __name__ == "__main__":
    main()
