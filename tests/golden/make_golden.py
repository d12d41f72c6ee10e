"""Regenerate tests/golden/core.json: fixed inputs and the aggregator / metric values they give.

Run `python tests/golden/make_golden.py` only when a definition changes on purpose, and say
so in the commit message; tests/test_golden.py compares the library against this file.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from semuq_eval import aggregators as A
from semuq_eval import metrics as M

OUT = Path(__file__).with_name("core.json")


def inputs() -> dict:
    rng = np.random.default_rng(20261121)
    X = rng.normal(size=(4, 6, 5))
    X /= np.linalg.norm(X, axis=-1, keepdims=True)
    labels = rng.integers(0, 3, size=(4, 6))
    n = 60
    correct = rng.integers(0, 2, n)
    return {
        "gram": np.round(X @ np.swapaxes(X, -1, -2), 6).tolist(),
        "equivalence": (labels[:, :, None] == labels[:, None, :]).tolist(),
        "seq_logprobs": np.round(rng.normal(-8, 3, size=(4, 6)), 4).tolist(),
        "n_tokens": rng.integers(1, 12, size=(4, 6)).tolist(),
        "token_entropies": [np.round(rng.random(k) * 3, 4).tolist() for k in (5, 1, 8)],
        "token_weights": [np.round(rng.random(k), 4).tolist() for k in (5, 1, 8)],
        "uncertainty": np.round(rng.normal(size=n) + 0.8 * (1 - correct), 4).tolist(),
        "correct": correct.tolist(),
    }


def outputs(x: dict) -> dict:
    gram, eq = np.array(x["gram"]), np.array(x["equivalence"])
    logp, n_tokens = np.array(x["seq_logprobs"]), np.array(x["n_tokens"])
    u, y = np.array(x["uncertainty"]), np.array(x["correct"])
    out = {
        name: A.get(name)(gram).tolist() for name in ["kle_heat", "kle_matern", "cos", "eigv", "deg", "ecc"]
    }
    out["kle_heat_diag"] = A.kle_heat(gram, normalize="diag").tolist()
    out["cae"] = A.cae(eq).tolist()
    out["numsets"] = A.numsets(eq).tolist()
    out["se"] = A.se(eq, logp).tolist()
    out["se_length_normalized"] = A.se(eq, logp, length_normalized=True, n_tokens=n_tokens).tolist()
    out["cae_enc_tau05"] = A.cae(gram).tolist()
    out["te"] = A.te(x["token_entropies"]).tolist()
    out["te_enc"] = A.te_enc(x["token_entropies"], x["token_weights"]).tolist()
    token_logprobs = [-np.array(h) for h in x["token_entropies"]]  # any values <= 0 serve as log-probs
    out["msp"] = [A.msp(lp) for lp in token_logprobs]
    out["perplexity"] = [A.perplexity(lp) for lp in token_logprobs]
    out["length"] = [A.length(np.arange(len(lp))) for lp in token_logprobs]
    sims = gram[: len(token_logprobs), 0, :]  # any row of similarities serves as a greedy answer's
    out["consistency"] = A.consistency(gram[:, 0, :]).tolist()
    out["cocoa_msp"] = A.cocoa(sims, token_logprobs).tolist()
    out["cocoa_perplexity"] = A.cocoa(sims, token_logprobs, confidence="perplexity").tolist()
    rows = slice(0, len(token_logprobs))
    out["semantic_density"] = A.semantic_density(sims, logp[rows], n_tokens[rows], token_logprobs).tolist()
    out["semantic_density_raw_samples_only"] = A.semantic_density(
        sims, logp[rows], n_tokens[rows], token_logprobs, length_normalized=False, include_greedy=False
    ).tolist()
    out["sentence_sar"] = A.sentence_sar(gram, logp).tolist()
    out["sentence_sar_t1"] = A.sentence_sar(gram, logp, t=1.0).tolist()
    out["snne"] = A.snne(gram).tolist()
    out["snne_t01_self"] = A.snne(gram, temperature=0.1, self_similarity=True).tolist()
    out["eigenscore"] = A.eigenscore(gram).tolist()
    out["eigenscore_samples"] = A.eigenscore(gram, centering="samples").tolist()
    out["p_true"] = [A.p_true(row[:2]) for row in logp]  # any two log values serve as the True / False masses
    out["p_true_raw"] = [A.p_true(row[:2], form="raw") for row in logp]
    out["verbalized"] = [A.verbalized(c) for c in (0.0, 7.5, 85.0, 100.0)]
    out["auroc"] = M.auroc(u, y)
    out["auarc"] = M.auarc(u, y)
    out["prr"] = M.prr(u, y)
    out["ece_isotonic"] = M.ece(u, y)
    out["ece_platt"] = M.ece(u, y, M.CalibrationProtocol(calibrator="platt"))
    r = M.evaluate({"u": u}, y, metrics=["auroc"], bootstrap=M.Bootstrap(n_resamples=200, seed=7))["u"][
        "auroc"
    ]
    out["auroc_ci_200_seed7"] = [r.ci_low, r.ci_high]
    return out


if __name__ == "__main__":
    x = inputs()
    OUT.write_text(json.dumps({"inputs": x, "outputs": outputs(x)}, indent=1) + "\n")
    print(f"wrote {OUT}")
