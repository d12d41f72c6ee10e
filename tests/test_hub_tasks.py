"""Offline validation of the five hub-backed semuq tasks against local replicas with the hub schema.

The real task YAMLs (tasks/semuq_{triviaqa,hotpotqa,okvqa,vizwiz,advqa}.yaml) are loaded through lm-eval's
TaskManager from a tiny YAML in tmp_path that does ``include: <absolute path of the real YAML>`` and
overrides only ``dataset_path`` / ``dataset_name`` / ``dataset_kwargs`` (lm-eval 0.4.13 resolves an absolute
``include`` and keeps resolving ``!function utils.x`` relative to the included file, so nothing is copied).
Each replica is a ``datasets.Dataset`` built with the hub's ``Features`` and saved to parquet, which keeps
the features (nested lists of structs, the Image feature) exactly.

Schemas and sources (the *_FEATURES below; the search tools give no repository for the unnamed code copies):

- mandarjoshi/trivia_qa, config ``rc.nocontext``, splits train (138,384) / validation (17,944) / test (17,210): the
  dataset card's ``dataset_info`` (https://huggingface.co/datasets/mandarjoshi/trivia_qa/blob/279d93a6e999c93dc992e1a705389e350ba7f706/README.md,
  the commit "Add rc.nocontext data files"; the rc.* configs share one feature set), the same features in the TFDS
  catalogue (GitHub tensorflow/datasets docs/catalog/trivia_qa.md, FeaturesDict with answer {aliases,
  matched_wiki_entity_name, normalized_aliases, normalized_matched_wiki_entity_name, normalized_value, type,
  value}, entity_pages, search_results) and https://www.tensorflow.org/datasets/community_catalog/huggingface/trivia_qa.
  In the *.nocontext configs entity_pages / search_results are kept but their wiki_context / search_context are
  empty strings. No revision is pinned yet (the YAML says so).
- hotpotqa/hotpot_qa, config ``distractor``, splits train (90,447) / validation (7,405): the dataset card's
  ``dataset_info`` (https://huggingface.co/datasets/hotpot_qa/blob/ed64de2fda17d0169425d0b8bfeb2d7c088d41d7/README.md,
  same features in https://www.tensorflow.org/datasets/community_catalog/huggingface/hotpot_qa).
- lmms-lab/OK-VQA (parquet, commit c9f8589), split val2014 (5,046 rows = the whole OK-VQA validation set):
  the dataset card's ``dataset_info`` (question_id string, image, question, answers: Sequence(string),
  question_type, answer_type; https://huggingface.co/datasets/lmms-lab/OK-VQA/blob/main/README.md), read the
  same way by lmms-eval's ok_vqa task (``test_split: val2014``, ``doc["answers"]`` as strings) and by other
  consumers (``pq.read_table(..., columns=["question_id", "question", "answers", "image"])``, GitHub
  Icecream102/VisionLang examples/multimodal_llm/build_okvqa_manifest.py). It replaces HuggingFaceM4/OK-VQA, a
  loading-script repo (OK-VQA.py).
- HuggingFaceM4/VizWiz, splits train (20,523) / validation (4,319) / test (8,000): the VizWiz loading script's
  ``_FEATURES`` (id int32, image, filename, question, answers: Sequence(string), answers_original, answer_type,
  answerable int32; a copy is in the GitHub code index) and HuggingFaceM4's evaluation classes for it
  (``answers_column_name="answers"``, ``id_column_name="filename"``, splits train / validation).
- HuggingFaceM4/AdVQA, splits validation (10,000) / testdev (36,807): a loading-script repo
  (https://huggingface.co/datasets/HuggingFaceM4/AdVQA/blob/main/AdVQA.py; counts in its README.md). The script
  is HuggingFaceM4/VQAv2's VQAv2.py (SaulLu) adapted to the AdVQA files (same _URLS / _SUB_FOLDER_OR_FILE_NAME
  layout, VQA-format annotations). Its ``_info`` block could not be read through the search tools, so the
  replica uses VQAv2.py's features (question_type, multiple_choice_answer, answers: [{answer, answer_confidence,
  answer_id}], image_id, answer_type, question_id, question, image). The task reads only ``question``,
  ``answers[].answer`` and ``image``, which every AdVQA consumer found reads too.

VizWiz and AdVQA are loading-script repos on the hub: ``datasets`` >= 4 (this venv has 5.x) refuses them
("Dataset scripts are no longer supported, but found AdVQA.py") and no maintained parquet copy of the needed
splits was found, so those two tasks need a converted copy with the same schema, which is what these replicas
stand for (through the same tmp YAML, or through the local data directory override, ``--metadata
'{"data_dir": ...}'``, which ``test_vqa_local_data_dir`` runs on the real YAMLs with the replicas laid out as a
user would copy them). ``test_yaml_loads_its_hub_dataset`` checks what the real YAMLs ask ``datasets`` for (hub
id, config, revision) with ``datasets.load_dataset`` replaced by the replica.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from datasets import Dataset, Features, Image, Sequence, Value
from PIL import Image as PILImage

from semuq_eval.harness.task import SemuqTask
from tests.fixtures.tiny_harness import TASKS_DIR, CannedLM

TEXT_PROMPT = "Answer the following question.\n"  # App. E.2
VQA_PROMPT = "<image>Answer the question about this image.\n"  # App. E.2 (lm-eval's image placeholder first)
N_SAMPLES = 3
EXTRA = 3  # replica rows beyond the selection size, so the first-N / last-N rule really drops rows

TRIVIAQA_FEATURES = Features(
    {  # mandarjoshi/trivia_qa, rc.nocontext (field order of the card's dataset_info)
        "question": Value("string"),
        "question_id": Value("string"),
        "question_source": Value("string"),
        "entity_pages": Sequence(
            {
                "doc_source": Value("string"),
                "filename": Value("string"),
                "title": Value("string"),
                "wiki_context": Value("string"),
            }
        ),
        "search_results": Sequence(
            {
                "description": Value("string"),
                "filename": Value("string"),
                "rank": Value("int32"),
                "title": Value("string"),
                "url": Value("string"),
                "search_context": Value("string"),
            }
        ),
        "answer": {
            "aliases": Sequence(Value("string")),
            "normalized_aliases": Sequence(Value("string")),
            "matched_wiki_entity_name": Value("string"),
            "normalized_matched_wiki_entity_name": Value("string"),
            "normalized_value": Value("string"),
            "type": Value("string"),
            "value": Value("string"),
        },
    }
)
HOTPOTQA_FEATURES = Features(
    {
        "id": Value("string"),
        "question": Value("string"),
        "answer": Value("string"),
        "type": Value("string"),
        "level": Value("string"),
        "supporting_facts": Sequence({"title": Value("string"), "sent_id": Value("int32")}),
        "context": Sequence({"title": Value("string"), "sentences": Sequence(Value("string"))}),
    }
)
OKVQA_FEATURES = Features(
    {  # lmms-lab/OK-VQA
        "question_id": Value("string"),
        "image": Image(),
        "question": Value("string"),
        "answers": Sequence(Value("string")),
        "question_type": Value("string"),
        "answer_type": Value("string"),
    }
)
VIZWIZ_FEATURES = Features(
    {
        "id": Value("int32"),
        "image": Image(),
        "filename": Value("string"),
        "question": Value("string"),
        "answers": Sequence(Value("string")),
        "answers_original": [{"answer": Value("string"), "answer_confidence": Value("string")}],
        "answer_type": Value("string"),
        "answerable": Value("int32"),
    }
)
ADVQA_FEATURES = Features(
    {
        "question_type": Value("string"),
        "multiple_choice_answer": Value("string"),
        "answers": [
            {"answer": Value("string"), "answer_confidence": Value("string"), "answer_id": Value("int64")}
        ],
        "image_id": Value("int64"),
        "answer_type": Value("string"),
        "question_id": Value("int64"),
        "question": Value("string"),
        "image": Image(),
    }
)


# ------------------------------------------------------------------------------------------- replicas
def _color(i: int) -> tuple[int, int, int]:
    return (i % 256, (i // 256) % 256, 7)


def _png(i: int) -> dict:
    """A 2x2 image whose colour encodes the row index (checks that each doc carries its own image)."""
    buf = io.BytesIO()
    PILImage.new("RGB", (2, 2), _color(i)).save(buf, format="PNG")
    return {"bytes": buf.getvalue(), "path": None}


def _question(i: int) -> str:
    return f"Question number {i}?"


def _normalized(answer: str) -> str:
    """Roughly TriviaQA's answer normalisation (lower case, no punctuation, no articles)."""
    words = "".join(c for c in answer.lower() if c.isalnum() or c.isspace()).split()
    return " ".join(w for w in words if w not in {"a", "an", "the"})


def _triviaqa_row(i: int, aliases: list[str] | None = None, value: str | None = None) -> dict:
    value = value if value is not None else f"Answer {i}"
    aliases = aliases if aliases is not None else [value, f"answer {i}"]
    pages = [] if i % 3 == 2 else [f"Page {i}"]  # some questions have web evidence only
    return {
        "question": _question(i),
        "question_id": f"tc_{i}",
        "question_source": "http://www.triviacountry.com/",
        # rc.nocontext: the evidence documents are listed, their text is empty
        "entity_pages": {
            "doc_source": ["TagMe"] * len(pages),
            "filename": [f"{t.replace(' ', '_')}.txt" for t in pages],
            "title": pages,
            "wiki_context": [""] * len(pages),
        },
        "search_results": {
            "description": [f"About answer {i}.", "More."],
            "filename": [f"{i}/{i}_0.txt", f"{i}/{i}_1.txt"],
            "rank": [0, 1],
            "title": [f"Result {i}", f"Result {i} (2)"],
            "url": [f"http://example.org/{i}/0", f"http://example.org/{i}/1"],
            "search_context": ["", ""],
        },
        "answer": {
            "aliases": aliases,
            "normalized_aliases": list(dict.fromkeys(_normalized(a) for a in aliases)),
            "matched_wiki_entity_name": "",
            "normalized_matched_wiki_entity_name": "",
            "normalized_value": _normalized(value),
            "type": "WikipediaEntity",
            "value": value,
        },
    }


def _hotpotqa_row(i: int) -> dict:
    return {
        "id": f"5a8b57f25542995d1e6f{i:04x}",
        "question": _question(i),
        "answer": f"answer {i}",
        "type": "bridge" if i % 2 else "comparison",
        "level": "hard",
        "supporting_facts": {"title": [f"Page {i}", f"Page {i + 1}"], "sent_id": [0, 1]},
        "context": {
            "title": [f"Page {i}", f"Page {i + 1}"],
            "sentences": [[f"Sentence {i}.", "More."], [f"Sentence {i + 1}."]],
        },
    }


def _okvqa_row(i: int, answers: list[str] | None = None) -> dict:
    # the 10 annotator answers as strings (OK-VQA: 5 answers, each listed twice)
    return {
        "question_id": str((100000 + i) * 10 + 5),
        "image": _png(i),
        "question": _question(i),
        "answers": answers or [f"answer {i}"] * 10,
        "question_type": "one",
        "answer_type": "other",
    }


def _vizwiz_row(i: int, answers: list[str] | None = None, answerable: int = 1) -> dict:
    answers = answers or [f"answer {i}"] * 10
    return {
        "id": i,
        "image": _png(i),
        "filename": f"VizWiz_train_{i:08d}.jpg",
        "question": _question(i),
        "answers": answers,
        "answers_original": [{"answer": a, "answer_confidence": "yes"} for a in answers],
        "answer_type": "other" if answerable else "unanswerable",
        "answerable": answerable,
    }


def _advqa_row(i: int, answers: list[str] | None = None) -> dict:
    answers = answers or [f"answer {i}"] * 10
    return {
        "question_type": "what",
        "multiple_choice_answer": answers[0],
        "answers": [
            {"answer": a, "answer_confidence": "yes", "answer_id": k + 1} for k, a in enumerate(answers)
        ],
        "image_id": 200000 + i,
        "answer_type": "other",
        "question_id": 300000 + i,
        "question": _question(i),
        "image": _png(i),
    }


# rows placed where the selection starts (row 0 for first-N, row EXTRA for last-N), with their expected
# references as tasks/utils.py extracts them: deduplicated, order kept, stripped
SPECIAL: dict[str, list[tuple[Callable[[int], dict], list[str]]]] = {
    "semuq_triviaqa": [
        # every alias, duplicates collapsed, order kept; the value is among them
        (
            lambda i: _triviaqa_row(
                i, ["Alfred Hitchcock", "Hitchcock", "Alfred Hitchcock"], "Alfred Hitchcock"
            ),
            ["Alfred Hitchcock", "Hitchcock"],
        ),
        # a value that is not an alias comes last
        (
            lambda i: _triviaqa_row(i, ["David Seville", "Ross Bagdasarian"], "Ross Bagdasarian Sr."),
            ["David Seville", "Ross Bagdasarian", "Ross Bagdasarian Sr."],
        ),
        # aliases are stripped before deduplication
        (
            lambda i: _triviaqa_row(i, [" Paris ", "Paris", "Ville de Paris "], "Paris"),
            ["Paris", "Ville de Paris"],
        ),
        # no aliases: the value alone
        (lambda i: _triviaqa_row(i, [], "1066"), ["1066"]),
    ],
    "semuq_hotpotqa": [
        (lambda i: {**_hotpotqa_row(i), "answer": "Arthur's Magazine"}, ["Arthur's Magazine"]),
        (lambda i: {**_hotpotqa_row(i), "answer": "yes", "type": "comparison"}, ["yes"]),
    ],
    "semuq_okvqa": [
        # every annotator answer is a reference; duplicates collapse, order of first appearance kept
        (
            lambda i: _okvqa_row(i, ["race"] * 6 + ["motocross"] * 2 + ["ride"] * 2),
            ["race", "motocross", "ride"],
        ),
        (lambda i: _okvqa_row(i, ["pony tail"] * 8 + [" pony tail ", "ponytail"]), ["pony tail", "ponytail"]),
    ],
    "semuq_vizwiz": [
        # 'unanswerable' is an ordinary annotator answer: kept as a reference string, like any other
        (
            lambda i: _vizwiz_row(i, ["coca cola"] * 6 + ["coke"] * 3 + ["unanswerable"]),
            ["coca cola", "coke", "unanswerable"],
        ),
        (lambda i: _vizwiz_row(i, ["unanswerable"] * 10, answerable=0), ["unanswerable"]),
        (lambda i: _vizwiz_row(i, ["yes"] * 9 + [" yes "]), ["yes"]),
    ],
    "semuq_advqa": [
        (lambda i: _advqa_row(i, ["2"] * 4 + ["two"] * 3 + ["3"] * 3), ["2", "two", "3"]),
        (lambda i: _advqa_row(i, ["red"] * 10), ["red"]),
    ],
}


@dataclass(frozen=True)
class Case:
    split: str  # the hub split the YAML reads (test_split)
    size: int  # how many docs the selection rule keeps
    keep: str  # "first" or "last"
    features: Features
    row: Callable[[int], dict]
    visual: bool
    hub: tuple[str, str | None, dict]  # what the YAML asks datasets.load_dataset for: path, name, kwargs


OKVQA_REVISION = "c9f858961f4095a9aeef615057b0822cce967096"  # lmms-lab/OK-VQA "Upload dataset" (c9f8589)
CASES = {
    "semuq_triviaqa": Case(
        "validation",
        1000,
        "first",
        TRIVIAQA_FEATURES,
        _triviaqa_row,
        visual=False,
        hub=("mandarjoshi/trivia_qa", "rc.nocontext", {}),  # no revision pinned yet (see the YAML)
    ),
    "semuq_hotpotqa": Case(
        "validation",
        5000,
        "first",
        HOTPOTQA_FEATURES,
        _hotpotqa_row,
        visual=False,
        hub=("hotpotqa/hotpot_qa", "distractor", {}),
    ),
    "semuq_okvqa": Case(
        "val2014",
        5000,
        "first",
        OKVQA_FEATURES,
        _okvqa_row,
        visual=True,
        hub=("lmms-lab/OK-VQA", None, {"revision": OKVQA_REVISION}),
    ),
    "semuq_vizwiz": Case(
        "train",
        4400,
        "last",
        VIZWIZ_FEATURES,
        _vizwiz_row,
        visual=True,
        hub=("HuggingFaceM4/VizWiz", None, {"trust_remote_code": True}),
    ),
    "semuq_advqa": Case(
        "validation",
        2200,
        "last",
        ADVQA_FEATURES,
        _advqa_row,
        visual=True,
        hub=("HuggingFaceM4/AdVQA", None, {"trust_remote_code": True}),
    ),
}
VQA = [name for name, case in CASES.items() if case.visual]
DATA_NAME = {"semuq_okvqa": "okvqa", "semuq_vizwiz": "vizwiz", "semuq_advqa": "advqa"}  # metadata data_name


def _start(case: Case) -> int:
    """Replica row index of the first selected doc."""
    return 0 if case.keep == "first" else EXTRA


def build_replica(name: str, features: Features | None = None) -> Dataset:
    """A replica of `name`'s hub split with size + EXTRA rows and the hub features (or `features`)."""
    case = CASES[name]
    n = case.size + EXTRA
    special = {_start(case) + k: make for k, (make, _) in enumerate(SPECIAL[name])}
    rows = [special.get(i, case.row)(i) for i in range(n)]
    features = features or case.features
    return Dataset.from_dict({col: [r[col] for r in rows] for col in features}, features=features)


def write_replica(root: Path, name: str) -> Path:
    """The replica saved to parquet with the hub features."""
    path = root / f"{name}-{CASES[name].split}.parquet"
    build_replica(name).to_parquet(str(path))
    return path


def load_task(tmp_path: Path, name: str, data_file: Path, **meta):
    """The real task YAML via `include:` (absolute path), pointed at the local replica."""
    from lm_eval.tasks import TaskManager

    case = CASES[name]
    task_dir = tmp_path / "yaml"
    task_dir.mkdir(exist_ok=True)
    override = {
        "include": str(TASKS_DIR / f"{name}.yaml"),
        "dataset_path": "parquet",
        "dataset_name": None,
        "dataset_kwargs": {
            "data_files": {case.split: str(data_file)},
            "cache_dir": str(tmp_path / "hf_cache"),
        },
    }
    (task_dir / f"{name}_local.yaml").write_text(
        json.dumps(override, indent=1), encoding="utf-8"
    )  # JSON is YAML
    metadata = {"n_samples": N_SAMPLES, "operators": ["lexical"], **meta}
    tm = TaskManager(include_path=str(task_dir), include_defaults=False, metadata=metadata)
    assert tm.all_tasks == [name]  # the included file's task name
    return tm, tm.load([name])["tasks"][name]


def load_real_task(name: str, **meta):
    """The shipped task YAML as it is (no override)."""
    from lm_eval.tasks import TaskManager

    metadata = {"n_samples": N_SAMPLES, "operators": ["lexical"], **meta}
    tm = TaskManager(include_path=str(TASKS_DIR), include_defaults=False, metadata=metadata)
    return tm.load([name])["tasks"][name]


@pytest.fixture
def hf_cache(tmp_path, monkeypatch):
    """Keep the arrow cache of datasets.load_dataset("parquet", ...) in tmp_path."""
    import datasets

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf_cache")


@pytest.fixture
def hub_calls(monkeypatch):
    """datasets.load_dataset without the hub: a hub id returns the replica of the task that asks for it (and is
    recorded), "parquet" runs the real loader."""
    import datasets

    real = datasets.load_dataset
    calls: list[tuple[str, str | None, dict]] = []
    by_path = {case.hub[0]: name for name, case in CASES.items()}

    def fake(path, name=None, **kwargs):
        if path == "parquet":
            return real(path, name, **kwargs)
        calls.append((path, name, dict(kwargs)))
        task = by_path[path]  # KeyError: a hub id no task declares
        return datasets.DatasetDict({CASES[task].split: build_replica(task)})

    monkeypatch.setattr(datasets, "load_dataset", fake)
    return calls


def _expected_hub_kwargs(case: Case) -> dict:
    import datasets
    from packaging.version import parse

    kwargs = dict(case.hub[2])
    if parse(datasets.__version__) >= parse("4.0.0"):  # lm-eval drops trust_remote_code for datasets >= 4
        kwargs.pop("trust_remote_code", None)
    return kwargs


def _check_selection(task, name: str) -> None:
    """First N / last N rule, references of the special rows, each doc's own decoded image."""
    case = CASES[name]
    docs, start = task.eval_docs, _start(case)
    assert len(docs) == case.size
    assert [docs[k]["question"] for k in (0, case.size - 1)] == [
        _question(start),
        _question(start + case.size - 1),
    ]
    for k, (_, refs) in enumerate(SPECIAL[name]):
        assert task.references_of(docs[k]) == refs, k
    if case.visual:
        for k in (0, case.size - 1):
            image = task.doc_to_image(docs[k])[0]
            assert isinstance(image, PILImage.Image)
            assert image.convert("RGB").getpixel((0, 0)) == _color(start + k)


# ---------------------------------------------------------------------------------------------- tests
@pytest.mark.parametrize("name", list(CASES))
def test_hub_task_on_replica(name, tmp_path):
    case = CASES[name]
    task = load_task(tmp_path, name, write_replica(tmp_path, name))[1]
    assert isinstance(task, SemuqTask)
    assert type(task).__name__ == ("SemuqVQATask" if case.visual else "SemuqTask")
    # the replica went through parquet with the hub schema intact, and the YAML reads the hub's split
    assert task.config.test_split == case.split
    assert task.dataset[case.split].features == case.features
    assert task.dataset[case.split].num_rows == case.size + EXTRA
    # the `!function utils.x` references of the included YAMLs resolved
    rule = {
        "semuq_triviaqa": "first_1000",
        "semuq_hotpotqa": "first_5000",
        "semuq_okvqa": "first_5000",
        "semuq_vizwiz": "vizwiz_docs",
        "semuq_advqa": "advqa_docs",
    }[name]
    assert task.config.process_docs.__name__ == rule
    target = {"semuq_triviaqa": "triviaqa_references", "semuq_hotpotqa": "hotpotqa_references"}.get(
        name, "vqa_references"
    )
    assert task.config.doc_to_target.__name__ == target

    # selection rule (App. E.1): first N / last N rows of the split survive, in order
    docs = task.eval_docs
    start = _start(case)
    assert len(docs) == case.size
    assert docs[0]["question"] == _question(start)
    assert docs[case.size - 1]["question"] == _question(start + case.size - 1)
    dropped = range(case.size, case.size + EXTRA) if case.keep == "first" else range(EXTRA)
    kept = set(docs["question"])
    assert not kept & {_question(i) for i in dropped}

    # references from the (nested) answers, and the bare question
    for k, (_, refs) in enumerate(SPECIAL[name]):
        assert task.references_of(docs[k]) == refs, k
        assert task.question_of(docs[k]) == _question(start + k)

    # requests as lm-eval builds them: per doc a greedy and a sampled Instance, same prompt (and image)
    n_docs = len(SPECIAL[name])
    task.build_all_requests(limit=n_docs)
    by_doc: dict[int, list] = {}
    for inst in task.instances:
        by_doc.setdefault(inst.doc_id, []).append(inst)
    assert sorted(by_doc) == list(range(n_docs))
    prompt = VQA_PROMPT if case.visual else TEXT_PROMPT
    for doc_id, insts in by_doc.items():
        greedy, sampled = sorted(insts, key=lambda inst: inst.idx)
        assert (greedy.idx, greedy.repeats, sampled.idx, sampled.repeats) == (0, 1, 1, N_SAMPLES)
        assert greedy.request_type == sampled.request_type == "generate_until"
        assert greedy.arguments[0] == sampled.arguments[0] == prompt + _question(start + doc_id)
        assert greedy.arguments[1] == {
            "until": ["\n\n"],
            "max_gen_toks": 128,
            "do_sample": False,
            "temperature": 0.0,
        }
        assert sampled.arguments[1] == {
            "do_sample": True,
            "temperature": 1.0,
            "top_p": 0.9,
            "top_k": 50,
            "until": ["\n\n"],
            "max_gen_toks": 128,
        }
        if not case.visual:
            assert len(greedy.arguments) == len(sampled.arguments) == 2
            continue
        assert len(greedy.arguments) == len(sampled.arguments) == 3
        for inst in (greedy, sampled):
            visual = inst.arguments[2]
            assert set(visual) == {"visual"} and len(visual["visual"]) == 1
            image = visual["visual"][0]
            assert isinstance(image, PILImage.Image)
            assert image.convert("RGB").getpixel((0, 0)) == _color(start + doc_id)  # this doc's own image


class CannedVLM(CannedLM):
    """CannedLM for image questions: answers keyed by the question line of the prompt; records the images."""

    MULTIMODAL = True  # lm-eval refuses image tasks for models without it

    def __init__(self, table: dict[str, tuple[str, list[str]]]) -> None:
        super().__init__(white_box=False)
        self.table = table
        self.images: list = []

    def generate_until(self, requests, disable_tqdm: bool = False):
        out = []
        for req in requests:
            ctx, gen_kwargs, visual = req.args
            self.calls.append((ctx, dict(gen_kwargs)))
            self.images.extend(visual["visual"])
            greedy, pool = self.table[ctx.rsplit("\n", 1)[-1]]
            out.append(self.rng.choice(pool) if gen_kwargs.get("do_sample") else greedy)
        return out


def test_advqa_replica_end_to_end(tmp_path):
    """lm_eval.simple_evaluate on the AdVQA replica (last-2,200 rule, image requests) with a canned model:
    VQA docs are labelled against their annotator answers and scored."""
    import lm_eval

    name, limit = "semuq_advqa", 6
    tm, _ = load_task(
        tmp_path, name, write_replica(tmp_path, name), bootstrap=20, output_dir=str(tmp_path / "out")
    )
    questions = [_question(EXTRA + k) for k in range(limit)]
    # even docs: right and consistent; odd docs: wrong and scattered
    table = {
        q: (
            (f"answer {EXTRA + k}", [f"answer {EXTRA + k}"])
            if k % 2 == 0
            else ("a cat", ["a cat", "blue", "seven", "the left one"])
        )
        for k, q in enumerate(questions)
    }
    table[questions[0]] = ("2", ["2"])  # references 2 / two / 3
    table[questions[1]] = ("blue", ["green", "blue", "a dog", "no"])  # reference red

    lm = CannedVLM(table)
    results = lm_eval.simple_evaluate(model=lm, tasks=[name], task_manager=tm, limit=limit, bootstrap_iters=0)

    greedy = [kw for _, kw in lm.calls if not kw.get("do_sample")]
    assert len(greedy) == limit and len(lm.calls) == limit * (1 + N_SAMPLES)
    assert all(ctx.startswith(VQA_PROMPT) for ctx, _ in lm.calls)
    assert len(lm.images) == len(lm.calls) and all(isinstance(im, PILImage.Image) for im in lm.images)
    res = results["results"][name]
    assert res["acc_greedy,none"] == pytest.approx(0.5)
    assert res["auroc_best_greedy,none"] == pytest.approx(1.0)

    b = json.loads((tmp_path / "out" / "semuq" / name / "breakdown.json").read_text())
    assert b["n_samples"] == N_SAMPLES and set(b["operators"]) == {"lexical"}
    per = b["results"]["greedy"]["kle_heat@lexical"]["auroc"]
    assert per["n"] == limit and per["value"] == pytest.approx(1.0)
    assert {"te", "se@lexical"} <= set(b["unavailable"])  # black-box strings
    assert b["bad_docs"] == []


# ------------------------------------------------------------------------- the shipped YAMLs, unmodified
@pytest.mark.parametrize("name", list(CASES))
def test_yaml_loads_its_hub_dataset(name, hub_calls):
    """What each shipped YAML asks the hub for (id, config, revision), the copy named in its header comment; the
    split it reads and the selection rule on the replica of that copy."""
    case = CASES[name]
    task = load_real_task(name)
    assert hub_calls == [(case.hub[0], case.hub[1], _expected_hub_kwargs(case))]
    assert task.config.test_split == case.split
    _check_selection(task, name)


def test_triviaqa_hub_and_dpr_tasks():
    """semuq_triviaqa reads the hub (the paper's split), semuq_triviaqa_dpr the local DPR copy: the two YAMLs as
    lm-eval's TaskManager indexes them (includes merged, nothing loaded)."""
    from lm_eval.tasks import TaskManager

    tm = TaskManager(include_path=str(TASKS_DIR), include_defaults=False)
    hub, dpr = (tm.task_index[name] for name in ("semuq_triviaqa", "semuq_triviaqa_dpr"))
    assert (hub.yaml_path.name, dpr.yaml_path.name) == ("semuq_triviaqa.yaml", "semuq_triviaqa_dpr.yaml")

    assert (hub.cfg["dataset_path"], hub.cfg["dataset_name"]) == ("mandarjoshi/trivia_qa", "rc.nocontext")
    assert "custom_dataset" not in hub.cfg
    assert hub.cfg["test_split"] == "validation"
    assert hub.cfg["process_docs"].endswith("utils.first_1000")  # !function, unresolved by the index
    assert hub.cfg["doc_to_target"].endswith("utils.triviaqa_references")

    assert dpr.cfg.get("dataset_path") is None
    assert dpr.cfg["custom_dataset"].endswith("utils.qa_datasets")
    assert dpr.cfg["dataset_kwargs"] == {"qa_set": "triviaqa", "splits": ["test"]}
    assert dpr.cfg["test_split"] == "test"
    assert "process_docs" not in dpr.cfg  # its size is metadata `limit`
    assert dpr.cfg["metadata"]["limit"] == 1000
    # both are the text task with the text prompt
    assert hub.cfg["doc_to_text"] == dpr.cfg["doc_to_text"] == TEXT_PROMPT + "{{question}}"


# where each VQA replica is put under <data_dir>/<data_name>/: file pattern, shards, image stored without the
# Image feature (plain {bytes, path} structs, as a hand-made conversion may write it)
LAYOUTS = {
    "semuq_okvqa": ("data/{split}-{k:05d}-of-00002.parquet", 2, False),  # `hf download` of the hub repo
    "semuq_vizwiz": ("{split}.parquet", 1, False),  # one converted file
    "semuq_advqa": ("default/{split}/{k:04d}.parquet", 2, True),  # a refs/convert/parquet branch
}


@pytest.mark.parametrize("name", VQA)
def test_vqa_local_data_dir(name, tmp_path, hf_cache, hub_calls):
    """--metadata '{"data_dir": ...}' on the shipped YAML: the split comes from <data_dir>/<data_name>/, in file
    order, nothing is asked of the hub, and the selection rule, references and images are as with the hub copy."""
    case = CASES[name]
    pattern, shards, plain_image = LAYOUTS[name]
    features = case.features
    if plain_image:
        features = Features({**case.features, "image": {"bytes": Value("binary"), "path": Value("string")}})
    data = build_replica(name, features)
    for k in range(shards):
        path = tmp_path / "data" / DATA_NAME[name] / pattern.format(split=case.split, k=k)
        path.parent.mkdir(parents=True, exist_ok=True)
        data.shard(num_shards=shards, index=k, contiguous=True).to_parquet(str(path))
    (tmp_path / "data" / DATA_NAME[name] / "README.md").write_text("a dataset card\n", encoding="utf-8")

    task = load_real_task(name, data_dir=str(tmp_path / "data"))
    assert hub_calls == []
    assert type(task).__name__ == "SemuqVQATask"
    assert list(task.dataset) == [case.split]
    assert task.dataset[case.split].num_rows == case.size + EXTRA
    assert isinstance(task.dataset[case.split].features["image"], Image)
    _check_selection(task, name)


def test_vqa_data_dir_without_the_set_loads_the_hub(tmp_path, hub_calls, caplog):
    """A data_dir holding other sets only (e.g. the text sets): the VQA task falls back to its hub copy, saying so."""
    (tmp_path / "data" / "triviaqa").mkdir(parents=True)
    with caplog.at_level(logging.WARNING):
        task = load_real_task("semuq_okvqa", data_dir=str(tmp_path / "data"))
    assert [call[0] for call in hub_calls] == ["lmms-lab/OK-VQA"]
    assert "okvqa" in caplog.text and "lmms-lab/OK-VQA" in caplog.text
    assert len(task.eval_docs) == CASES["semuq_okvqa"].size


def test_parquet_files_layouts(tmp_path):
    from semuq_eval.data import parquet_files

    assert parquet_files("okvqa", "val2014", tmp_path) is None  # no folder: the caller uses the hub
    folder = tmp_path / "okvqa"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "train-00000-of-00001.parquet").touch()
    with pytest.raises(FileNotFoundError, match="val2014"):  # a folder without the split is an error
        parquet_files("okvqa", "val2014", tmp_path)
    for shard in ("val2014-00001-of-00002.parquet", "val2014-00000-of-00002.parquet"):
        (folder / "data" / shard).touch()
    assert [p.name for p in parquet_files("okvqa", "val2014", tmp_path)] == [
        "val2014-00000-of-00002.parquet",
        "val2014-00001-of-00002.parquet",
    ]  # file-name order = row order
    (folder / "val2014.parquet").touch()
    assert parquet_files("okvqa", "val2014", tmp_path) == [folder / "val2014.parquet"]  # first layout wins
