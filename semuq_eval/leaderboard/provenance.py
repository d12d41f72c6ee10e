"""What a run says about where it came from: the model, revision, settings, operators, judge and package
versions, read from its breakdown and from lm-eval's results file beside its store (null where not recorded,
with ``notes`` saying so)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from semuq_eval.jsonio import read_json

__all__ = ["provenance"]


def provenance(
    path: Path, task: str, llm: str, breakdown: Mapping[str, Any], settings: Mapping[str, Any]
) -> dict[str, Any]:
    """The provenance of the run ``llm`` on ``task`` stored at ``path``: from its ``breakdown`` and ``settings``,
    completed by lm-eval's newest results file for this task and model under the store's output root."""
    operators = {
        name: {
            "kind": entry.get("kind"),
            "status": entry.get("status"),
            "model": (entry.get("info") or {}).get("model"),
            "revision": (entry.get("info") or {}).get("revision"),
        }
        for name, entry in (breakdown.get("operators") or {}).items()
        if isinstance(entry, Mapping)
    }
    out: dict[str, Any] = {
        "model": {"name": llm, "pretrained": None, "revision": None, "sha": None, "model_args": None},
        "task": task,
        "n_samples": breakdown.get("n_samples", settings.get("n_samples")),
        "n_docs": breakdown.get("n_docs"),
        "seed": (breakdown.get("seeds") or {}).get("bootstrap", settings.get("seed")),
        "bootstrap": settings.get("bootstrap"),
        "operators": operators,
        "judge": dict(breakdown.get("judge") or {"judge": settings.get("judge")}),
        "decoding": (breakdown.get("decoding") or {}).get("sampled") or breakdown.get("generation_kwargs"),
        "created": breakdown.get("created"),
        "versions": {"lm_eval": None, "transformers": None, "torch": None, "semuq_eval": None},
        "results_file": None,
        "notes": [],
    }
    results = _lm_eval_results(path, task, llm)
    if results is None:
        out["notes"].append(
            "no lm-eval results file found beside the store: model revision and package versions unknown"
        )
        return out
    file, data = results
    config = data.get("config") or {}
    args = config.get("model_args")
    pretrained = None
    if isinstance(args, str):
        parts = dict(p.split("=", 1) for p in args.split(",") if "=" in p)
        pretrained = parts.get("pretrained")
    elif isinstance(args, Mapping):
        pretrained = args.get("pretrained")
    out["model"].update(
        pretrained=pretrained,
        revision=config.get("model_revision"),
        sha=config.get("model_sha") or None,
        model_args=args,
        lm_eval_model=config.get("model"),
    )
    torch_version = None
    for line in str(data.get("pretty_env_info") or "").splitlines():
        if line.startswith("PyTorch version:"):
            torch_version = line.split(":", 1)[1].strip()
    out["versions"].update(
        lm_eval=data.get("lm_eval_version"),
        transformers=data.get("transformers_version"),
        torch=torch_version,
        git_hash=data.get("git_hash"),
    )
    out["results_file"] = str(file)
    out["notes"].append(
        "semuq-eval's version is not recorded by runs; git_hash is the commit of the folder lm-eval ran in "
        "(the semuq-eval checkout, for runs started from it)"
    )
    return out


def _lm_eval_results(path: Path, task: str, llm: str) -> tuple[Path, dict] | None:
    """lm-eval's newest ``results_*.json`` for this task and model under the store's output root, if any."""
    from semuq_eval.context import model_slug

    if path.parent.parent.name != "semuq":
        return None
    root = path.parent.parent.parent
    best: tuple[str, Path, dict] | None = None
    for file in root.glob("*/results_*.json"):
        try:
            data = read_json(file)
        except (OSError, ValueError):
            continue
        if task not in (data.get("configs") or {}) and task not in (data.get("results") or {}):
            continue
        args = (data.get("config") or {}).get("model_args")
        pretrained = None
        if isinstance(args, str):
            pretrained = dict(p.split("=", 1) for p in args.split(",") if "=" in p).get("pretrained")
        elif isinstance(args, Mapping):
            pretrained = args.get("pretrained")
        if pretrained is None or model_slug(pretrained) != llm:
            continue
        if best is None or file.name > best[0]:
            best = (file.name, file, data)
    return None if best is None else (best[1], best[2])
