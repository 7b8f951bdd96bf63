"""Math dataset loaders and make_math_source."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from flexmg.envs.math import make_math_source
from flexmg.envs.math.generators import ArithmeticGenerator, LinearGenerator
from flexmg.envs.math.loaders import detect_format, gsm8k_final_answer, load_file
from flexmg.tasks import ListTaskSource, Task, task_source_factory, task_source_names

# the math generators of the one task-source registry, by name
GENERATORS = {n: task_source_factory(n, "math") for n in task_source_names("math")}

GSM8K = [
    {"question": f"Q{i}: 2 + {i}?", "answer": f"2 + {i} = {2 + i}\n#### {2 + i:,}"}
    for i in range(0, 2000, 37)
]
MATH = [
    {
        "problem": f"P{i}",
        "solution": f"so $\\boxed{{\\frac{{{i}}}{{7}}}}$.",
        "answer": f"\\frac{{{i}}}{{7}}",
        "unique_id": f"test/algebra/{i}.json",
        "level": "Level 2",
        "subject": "Algebra",
    }
    for i in range(1, 40)
]
PLAIN = [{"question": f"What is {i} squared?", "answer": str(i * i)} for i in range(30)]


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_detect_format() -> None:
    assert detect_format(GSM8K[0]) == "gsm8k"
    assert detect_format(MATH[0]) == "math"
    assert detect_format({"problem": "p", "solution": "\\boxed{1}"}) == "math"
    assert detect_format(PLAIN[0]) == "plain"
    with pytest.raises(ValueError, match="known formats: gsm8k"):
        detect_format({"text": "hi"})


def test_gsm8k_final_answer_strips_separators() -> None:
    assert gsm8k_final_answer("blah\n#### 1,450,000") == "1450000"
    assert gsm8k_final_answer("#### $18") == "18"


def test_gsm8k_jsonl(tmp_path: Path) -> None:
    tasks = load_file(write_jsonl(tmp_path / "gsm8k_mini.jsonl", GSM8K))
    assert len(tasks) == len(GSM8K)
    task = tasks[-1]
    assert task.id == f"gsm8k_mini/{len(GSM8K) - 1}"
    assert task.answer == str(2 + 37 * (len(GSM8K) - 1))  # thousands separator removed
    assert task.meta["format"] == "gsm8k" and "####" in task.meta["solution"]


def test_math_json_and_boxed_fallback(tmp_path: Path) -> None:
    path = tmp_path / "math_mini.json"
    path.write_text(json.dumps({"data": MATH}), encoding="utf-8")
    tasks = load_file(path)
    assert tasks[0].id == "math_mini/test/algebra/1.json"
    assert tasks[0].answer == "\\frac{1}{7}" and tasks[0].meta["level"] == "Level 2"
    no_answer = [{k: v for k, v in r.items() if k != "answer"} for r in MATH]
    path2 = write_jsonl(tmp_path / "math_noanswer.jsonl", no_answer)
    assert [t.answer for t in load_file(path2)] == [t.answer for t in tasks]


def test_plain_jsonl_gz(tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("".join(json.dumps(r) + "\n" for r in PLAIN))
    tasks = load_file(path)
    assert [t.answer for t in tasks] == [str(i * i) for i in range(30)]
    assert tasks[3].prompt == "What is 3 squared?"


def test_parquet(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed")
    import pyarrow.parquet as pq

    path = tmp_path / "plain.parquet"
    pq.write_table(pa.Table.from_pylist(PLAIN), path)
    assert [t.answer for t in load_file(path)] == [str(i * i) for i in range(30)]


def test_bad_files_are_reported(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not found"):
        load_file(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q", "answer": "1"}\n{oops\n', encoding="utf-8")
    with pytest.raises(ValueError, match="bad.jsonl:2: invalid JSON"):
        load_file(bad)
    dup = write_jsonl(tmp_path / "dup.jsonl", [MATH[0], MATH[0]])
    with pytest.raises(ValueError, match="two records with id"):
        load_file(dup)
    empty = write_jsonl(tmp_path / "empty.jsonl", [])
    with pytest.raises(ValueError, match="no records"):
        load_file(empty)


class FakeHFDataset:
    """Quacks like datasets.Dataset (column_names, len, indexing, iteration)."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows
        self.column_names = list(rows[0])

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return self.rows[i]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.rows)


def test_hf_dataset_objects() -> None:
    src = make_math_source(FakeHFDataset(GSM8K), split="all", name="gsm8k_hf")
    assert isinstance(src, ListTaskSource) and len(src) == len(GSM8K)
    assert src.get(1).id == "gsm8k_hf/1" and src.get(1).answer == "39"


def test_real_hf_dataset_if_installed() -> None:
    datasets = pytest.importorskip("datasets", reason="the datasets package is not installed")
    src = make_math_source(datasets.Dataset.from_list(PLAIN), split="all", name="plain_hf")
    assert len(src) == len(PLAIN)


def test_make_math_source_variants(tmp_path: Path) -> None:
    default = make_math_source()
    assert isinstance(default, ArithmeticGenerator) and default.difficulty == 1
    assert default.split == "train"
    linear = make_math_source({"name": "linear", "difficulty": 3}, split="eval")
    assert isinstance(linear, LinearGenerator) and (linear.difficulty, linear.split) == (3, "eval")
    assert make_math_source("chain", difficulty=2, seed=5).seed == 5
    path = write_jsonl(tmp_path / "plain.jsonl", PLAIN)
    for spec in (path, str(path)):
        src = make_math_source(spec, split="all")
        assert len(src) == len(PLAIN) and src.name == "plain"
    tasks = [Task(id=f"t{i}", prompt=f"{i}+0?", answer=str(i)) for i in range(20)]
    assert len(make_math_source(tasks, split="all")) == 20


def test_make_math_source_splits_never_overlap(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "gsm.jsonl", GSM8K)
    ids = {}
    for split in ("train", "eval", "test"):
        source = make_math_source(path, split=split)
        ids[split] = {source.get(i).id for i in range(len(source))}
    assert all(ids.values())
    assert sum(len(part) for part in ids.values()) == len(set().union(*ids.values()))
    assert len(set().union(*ids.values())) == len(GSM8K)


def test_make_math_source_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="known generators: .*arithmetic"):
        make_math_source("algebra")
    with pytest.raises(ValueError, match="needs a generator 'name'"):
        make_math_source({"difficulty": 2})
    with pytest.raises(ValueError, match="unknown math task source"):
        make_math_source(42)
    with pytest.raises(ValueError, match="unexpected options"):
        make_math_source(write_jsonl(tmp_path / "p.jsonl", PLAIN), difficulty=3)
    with pytest.raises(FileNotFoundError):
        make_math_source(str(tmp_path / "none.jsonl"))
    assert set(GENERATORS) >= {"arithmetic", "linear"}
