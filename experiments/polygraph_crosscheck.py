"""Cross-check of the issue-23 estimators against their public implementations, on the same random inputs.

LM-Polygraph (pinned at v0.7.0) is heavy to install, so nothing is installed: its estimator files are read
from a git mirror of the repository (``git show <tag>:<path>``) and loaded as modules under their own package
name, with one stub, ``lm_polygraph.utils.common.polygraph_module_init`` (a logging decorator on
``Estimator.__init__``). Their formula code runs unchanged. SNNE is not in LM-Polygraph: the authors' own
``snne`` (Nguyen et al. 2025, github.com/ShellyLeee/Semantic-Uncertainty-Baselines) is loaded the same way,
with a stub for the clustering module it imports and does not use here.

    git clone https://github.com/IINemo/lm-polygraph /tmp/lm-polygraph
    git clone https://github.com/ShellyLeee/Semantic-Uncertainty-Baselines /tmp/snne
    .venv/bin/python -m experiments.polygraph_crosscheck --polygraph /tmp/lm-polygraph --snne /tmp/snne

Prints, for each estimator, the largest absolute difference over the random questions, first where both
sides compute the same quantity (expected: rounding), then for each named variant that differs on purpose.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import types
from pathlib import Path

import numpy as np

from semuq_eval import aggregators as A

POLYGRAPH_TAG = "v0.7.0"
POLYGRAPH_FILES = ("estimator", "cocoa", "semantic_density", "sentence_sar", "token_sar", "eigenscore")
SNNE_COMMIT = "b00e9a550c2d8decbbca87ce152d168af13c3764"


def _source(repo: Path, rev: str, path: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={repo}", "show", f"{rev}:{path}"], check=True, capture_output=True, text=True
    ).stdout


def _git_dir(path: Path) -> Path:
    return path / ".git" if (path / ".git").exists() else path


def _module(name: str, source: str, package: str | None = None) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__package__ = package or name.rpartition(".")[0]
    sys.modules[name] = module
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


def load_polygraph(repo: Path) -> dict[str, types.ModuleType]:
    """LM-Polygraph's estimator modules at :data:`POLYGRAPH_TAG`, without installing the package."""
    for pkg in ("lm_polygraph", "lm_polygraph.utils", "lm_polygraph.estimators"):
        sys.modules[pkg] = types.ModuleType(pkg)
        sys.modules[pkg].__path__ = []
    common = types.ModuleType("lm_polygraph.utils.common")
    common.polygraph_module_init = lambda func: func  # the real one only logs
    sys.modules["lm_polygraph.utils.common"] = common
    return {
        f: _module(
            f"lm_polygraph.estimators.{f}",
            _source(repo, POLYGRAPH_TAG, f"src/lm_polygraph/estimators/{f}.py"),
        )
        for f in POLYGRAPH_FILES
    }


def load_snne(repo: Path) -> types.ModuleType:
    """The SNNE authors' ``entropy_utils`` at :data:`SNNE_COMMIT`."""
    for pkg in ("snne", "snne.uncertainty", "snne.uncertainty.utils"):
        sys.modules[pkg] = types.ModuleType(pkg)
        sys.modules[pkg].__path__ = []
    sys.modules["snne.uncertainty.utils.clustering"] = types.ModuleType("snne.uncertainty.utils.clustering")
    sys.modules["snne.uncertainty"].utils = sys.modules["snne.uncertainty.utils"]
    sys.modules["snne.uncertainty.utils"].clustering = sys.modules["snne.uncertainty.utils.clustering"]
    sys.modules["snne"].uncertainty = sys.modules["snne.uncertainty"]
    return _module(
        "snne.uncertainty.utils.entropy_utils",
        _source(repo, SNNE_COMMIT, "snne/uncertainty/utils/entropy_utils.py"),
    )


def random_questions(n_questions: int, n: int, seed: int) -> list[dict]:
    """Distinct samples with log-probs, lengths, a greedy answer, graded S, greedy similarities, embeddings."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_questions):
        S = rng.uniform(0, 1, (n, n))
        S = (S + S.T) / 2
        np.fill_diagonal(S, 1.0)
        lengths = rng.integers(1, 12, n)
        greedy_tokens = -rng.exponential(0.5, rng.integers(1, 10))
        z = rng.normal(size=(n, 16))
        out.append(
            {
                "S": S,
                "sims": rng.uniform(0, 1, n),
                "lp": -rng.exponential(3.0, n),
                "lengths": lengths,
                "greedy": greedy_tokens,
                "z": z,
                "contra": rng.uniform(0, 0.6, n),
                "neutral": rng.uniform(0, 0.6, n),
            }
        )
    return out


def unit(z: np.ndarray) -> np.ndarray:
    return z / np.linalg.norm(z, axis=1, keepdims=True)


def crosscheck(poly: dict[str, types.ModuleType], snne_mod: types.ModuleType | None, qs: list[dict]) -> list:
    """Rows (estimator, what is compared, largest |difference|)."""
    import torch

    rows = []

    def worst(ours, theirs) -> float:
        return float(np.max(np.abs(np.asarray(ours, dtype=float) - np.asarray(theirs, dtype=float))))

    # CoCoA: greedy_sentence_similarity = the operator's greedy similarities
    stats = {
        "greedy_sentence_similarity": [q["sims"] for q in qs],
        "greedy_log_likelihoods": [q["greedy"] for q in qs],
    }
    for cls, confidence in (("CocoaMSP", "msp"), ("CocoaPPL", "perplexity")):
        theirs = getattr(poly["cocoa"], cls)()(stats)
        ours = [A.cocoa(q["sims"], q["greedy"], confidence=confidence) for q in qs]
        rows.append((f"cocoa(confidence={confidence!r}) vs {cls}", "same inputs", worst(ours, theirs)))

    # Semantic Density: LM-Polygraph's kernel 1 - (p_contra + p_neutral / 2) is our clip(s, 0, 1) with s = that
    # kernel; it keeps distinct sample texts (ours are distinct here), and reports -SD (ours 1 - SD).
    texts = [[f"answer {i}" for i in range(len(q["lp"]))] for q in qs]
    stats = {
        "greedy_log_likelihoods": [q["greedy"] for q in qs],
        "sample_log_probs": [q["lp"] for q in qs],
        "sample_tokens": [[[0] * k for k in q["lengths"]] for q in qs],
        "sample_texts": texts,
        "concat_greedy_semantic_matrix_contra_forward": [q["contra"] for q in qs],
        "concat_greedy_semantic_matrix_neutral_forward": [q["neutral"] for q in qs],
    }
    theirs = poly["semantic_density"].SemanticDensity()(stats)
    kernels = [1.0 - (q["contra"] + q["neutral"] / 2) for q in qs]
    ours = [
        A.semantic_density(k, q["lp"], q["lengths"], q["greedy"]) for k, q in zip(kernels, qs, strict=True)
    ]
    rows.append(
        ("semantic_density vs SemanticDensity", "1 - SD vs -SD, minus 1", worst(np.array(ours) - 1, theirs))
    )
    dup = dict(stats, sample_texts=[["same"] * len(t) for t in texts])
    rows.append(
        (
            "semantic_density vs SemanticDensity",
            "variant: duplicate texts (Polygraph keeps one, ours weights every draw)",
            worst(np.array(ours) - 1, poly["semantic_density"].SemanticDensity()(dup)),
        )
    )

    # SentenceSAR: the same sample similarity matrix and log-probs, t = 0.001
    stats = {"sample_sentence_similarity": [q["S"] for q in qs], "sample_log_probs": [q["lp"] for q in qs]}
    theirs = poly["sentence_sar"].SentenceSAR()(stats)
    ours = [A.sentence_sar(q["S"], q["lp"]) for q in qs]
    rows.append(("sentence_sar vs SentenceSAR", "same inputs, t = 0.001", worst(ours, theirs)))

    # TokenSAR: the greedy answer's token log-likelihoods and token similarities (drawn apart, so that the
    # other checks keep their inputs); similarities in [0, 1) are where the paper's 1 - |s| and their 1 - s agree
    rng = np.random.default_rng(len(qs))
    for low, what in ((0.0, "similarities in [0, 1)"), (-0.5, "variant: similarities in [-0.5, 1)")):
        token_sims = [rng.uniform(low, 0.99, len(q["greedy"])) for q in qs]
        stats = {"greedy_log_likelihoods": [q["greedy"] for q in qs], "token_similarity": token_sims}
        theirs = poly["token_sar"].TokenSAR()(stats)
        for relevance in ("abs", "signed"):
            ours = [
                A.token_sar(q["greedy"], s, relevance=relevance) for q, s in zip(qs, token_sims, strict=True)
            ]
            rows.append((f"token_sar(relevance={relevance}) vs TokenSAR", what, worst(ours, theirs)))

    # EigenScore: LM-Polygraph centres each embedding over its features (Z J_d Z^T); on embeddings already
    # feature-centred and unit-norm that is our Gram matrix; on raw embeddings it is a named variant.
    centred = [unit(q["z"] - q["z"].mean(axis=1, keepdims=True)) for q in qs]
    theirs = poly["eigenscore"].EigenScore()({"sample_embeddings": centred})
    ours = [A.eigenscore(z @ z.T) for z in centred]
    rows.append(("eigenscore vs EigenScore", "unit, feature-centred embeddings", worst(ours, theirs)))
    raw = [unit(q["z"] + 0.5) for q in qs]
    theirs = poly["eigenscore"].EigenScore()({"sample_embeddings": raw})
    ours = [A.eigenscore(z @ z.T) for z in raw]
    rows.append(
        (
            "eigenscore vs EigenScore",
            "variant: feature centring (theirs) vs Gram as given (ours)",
            worst(ours, theirs),
        )
    )

    if snne_mod is not None:
        for tau, self_sim in ((1.0, False), (0.1, False), (10.0, True)):
            theirs = [
                snne_mod.snne(
                    torch.tensor(q["S"], dtype=torch.float64),
                    torch.arange(len(q["lp"])),
                    variant="only_denom",
                    temperature=tau,
                    exclude_diagonal=not self_sim,
                ).item()
                for q in qs
            ]
            ours = [A.snne(q["S"], temperature=tau, self_similarity=self_sim) for q in qs]
            rows.append(
                (
                    f"snne(temperature={tau}, self_similarity={self_sim})",
                    "authors' snne, only_denom",
                    worst(ours, theirs),
                )
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--polygraph", type=Path, required=True, help="a clone (or bare mirror) of lm-polygraph"
    )
    parser.add_argument("--snne", type=Path, help="a clone of Semantic-Uncertainty-Baselines (SNNE's code)")
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--n", type=int, default=10, help="samples per question")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    poly = load_polygraph(_git_dir(args.polygraph))
    snne_mod = load_snne(_git_dir(args.snne)) if args.snne else None
    qs = random_questions(args.questions, args.n, args.seed)
    print(f"LM-Polygraph {POLYGRAPH_TAG}; SNNE {SNNE_COMMIT[:10]}; {args.questions} questions, N = {args.n}")
    for name, what, diff in crosscheck(poly, snne_mod, qs):
        print(f"{name:55s} {what:75s} max |diff| = {diff:.3g}")


if __name__ == "__main__":
    main()
