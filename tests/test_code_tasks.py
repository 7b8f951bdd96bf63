"""Code task sets: built-in tasks, HumanEval / MBPP loaders, the task source."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from flexmg.envs.code import builtin_tasks, load_tasks, make_code_source
from flexmg.envs.code.program import build_program, defines_name, prompt_is_python
from flexmg.tasks import Task

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
HUMANEVAL = DATA / "HumanEval.jsonl.gz"


def _write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# --- built-in set -----------------------------------------------------------


def test_builtin_set_shape() -> None:
    tasks = builtin_tasks()
    assert len(tasks) >= 60
    assert len({t.id for t in tasks}) == len(tasks)
    levels = Counter(t.meta["difficulty"] for t in tasks)
    assert set(levels) == {1, 2, 3} and min(levels.values()) >= 15
    assert set(t.meta["category"] for t in tasks) == {"string", "list", "math", "dict"}
    for t in tasks:
        assert t.meta["source"] == "builtin"
        assert len(t.meta["tests"]) >= 3, t.id
        assert prompt_is_python(t.prompt), t.id
        assert defines_name(t.answer, t.meta["entry_point"]), t.id
        assert t.meta["entry_point"] in t.prompt and '"""' in t.prompt, t.id
        assert all(t.meta["entry_point"] in test for test in t.meta["tests"]), t.id


def test_builtin_tasks_returns_fresh_list() -> None:
    a = builtin_tasks()
    a.clear()
    assert len(builtin_tasks()) >= 60


# --- HumanEval ----------------------------------------------------------------


def test_load_humaneval_real_file() -> None:
    if not HUMANEVAL.is_file():
        pytest.skip(f"HumanEval data not found at {HUMANEVAL} (shared/data is absent)")
    tasks = load_tasks(HUMANEVAL)
    assert len(tasks) == 164
    t = tasks[0]
    assert t.id == "HumanEval/0" and t.meta["entry_point"] == "has_close_elements"
    assert t.meta["source"] == "humaneval" and "def check(candidate)" in t.meta["tests"]
    assert t.answer.startswith(t.prompt)
    assert all(t.meta["difficulty"] in (1, 2, 3) for t in tasks)


def test_load_humaneval_plain_and_gz(tmp_path: Path) -> None:
    rec = {
        "task_id": "X/0",
        "prompt": "def inc(x):\n    'Add one.'\n",
        "canonical_solution": "    return x + 1\n",
        "test": "def check(candidate):\n    assert candidate(1) == 2\n",
        "entry_point": "inc",
    }
    plain = _write_jsonl(tmp_path / "he.jsonl", [rec])
    gz = tmp_path / "he.jsonl.gz"
    with gzip.open(gz, "wt", encoding="utf-8") as f:
        f.write(json.dumps(rec) + "\n")
    for path in (plain, gz):
        (t,) = load_tasks(path)
        assert t.answer == rec["prompt"] + rec["canonical_solution"]
        assert t.meta["tests"] == rec["test"] and t.meta["difficulty"] == 1


# --- MBPP ---------------------------------------------------------------------


MBPP = [
    {
        "task_id": 11,
        "text": "Write a function to remove first and last occurrence of a given character.",
        "code": "def remove_Occ(s,ch):\r\n    return s.replace(ch, '', 1)[::-1].replace(ch, '', 1)[::-1]",
        "test_list": [
            'assert remove_Occ("hello","l") == "heo"',
            'assert remove_Occ("abcda","a") == "bcd"',
            'assert remove_Occ("PHP","P") == "H"',
        ],
        "test_setup_code": "",
        "challenge_test_list": [],
    },
    {
        "task_id": 2,
        "text": 'Write a function to find the "similar" elements from two tuples.',
        "code": "import math\ndef similar_elements(a, b):\n  return tuple(set(a) & set(b))",
        "test_list": [
            "assert set(similar_elements((3, 4, 5, 6),(5, 7, 4, 10))) == set((4, 5))",
            "assert math.isclose(len(similar_elements((1,), (1,))), 1)",
        ],
        "test_setup_code": "import math",
    },
]


def test_load_mbpp_jsonl(tmp_path: Path) -> None:
    tasks = load_tasks(_write_jsonl(tmp_path / "mbpp.jsonl", MBPP))
    assert [t.id for t in tasks] == ["mbpp/11", "mbpp/2"]
    a, b = tasks
    assert a.meta["entry_point"] == "remove_Occ" and a.meta["source"] == "mbpp"
    assert b.meta["entry_point"] == "similar_elements" and b.meta["setup"] == "import math"
    assert isinstance(a.meta["tests"], list) and len(a.meta["tests"]) == 3
    # The prompt is a Python stub with the reference signature and an example.
    assert prompt_is_python(a.prompt) and a.prompt.startswith("def remove_Occ(s,ch):")
    assert 'assert remove_Occ("hello","l")' in a.prompt
    assert prompt_is_python(b.prompt) and 'find the "similar" elements' in b.prompt


def test_load_mbpp_json_array_with_prompt_key(tmp_path: Path) -> None:
    recs = [
        {
            "task_id": 5,
            "prompt": "Add.",
            "code": "def add(a, b):\n    return a+b",
            "test_list": ["assert add(1, 2) == 3"],
            "test_imports": ["import os"],
        }
    ]
    path = tmp_path / "sanitized.json"
    path.write_text(json.dumps(recs), encoding="utf-8")
    (t,) = load_tasks(path)
    assert t.meta["entry_point"] == "add" and t.meta["setup"] == "import os"
    assert "import os" in build_program("def add(a, b):\n    return a + b", t)


def test_mbpp_without_code_uses_called_name(tmp_path: Path) -> None:
    recs = [{"task_id": 1, "text": "Square it.", "test_list": ["assert sq(3) == 9"]}]
    (t,) = load_tasks(_write_jsonl(tmp_path / "m.jsonl", recs))
    assert t.meta["entry_point"] == "sq" and t.answer == ""


# --- loader errors ------------------------------------------------------------


def test_loader_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not found"):
        load_tasks(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "a"}\nnot json\n', encoding="utf-8")
    with pytest.raises(ValueError, match="unknown code task format"):
        load_tasks(bad)
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(MBPP[0]) + "\n{oops\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"broken.jsonl:2: invalid JSON"):
        load_tasks(broken)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no tasks"):
        load_tasks(empty)
    dup = _write_jsonl(tmp_path / "dup.jsonl", [MBPP[0], MBPP[0]])
    with pytest.raises(ValueError, match="duplicate task ids"):
        load_tasks(dup)


# --- task source --------------------------------------------------------------


def test_source_splits_never_overlap_and_cover_everything() -> None:
    ids = {
        split: {t.id for t in make_code_source("builtin", split=split).tasks}
        for split in ("train", "eval", "test")
    }
    every = make_code_source("builtin", split="all")
    assert not ids["train"] & ids["eval"] and not ids["train"] & ids["test"]
    assert not ids["eval"] & ids["test"]
    assert ids["train"] | ids["eval"] | ids["test"] == {t.id for t in every.tasks}
    assert len(every) == len(builtin_tasks()) and ids["eval"] and ids["test"]


def test_source_is_deterministic_by_index() -> None:
    a, b = make_code_source(split="train"), make_code_source(split="train")
    assert [a.get(i).id for i in range(100)] == [b.get(i).id for i in range(100)]


def test_source_difficulty_filter() -> None:
    easy = make_code_source("builtin", split="all", difficulty=1)
    assert {t.meta["difficulty"] for t in easy.tasks} == {1}
    mid_hard = make_code_source("builtin", split="all", difficulty=[2, 3])
    assert {t.meta["difficulty"] for t in mid_hard.tasks} == {2, 3}
    with pytest.raises(ValueError, match="difficulty"):
        make_code_source("builtin", difficulty=7)
    with pytest.raises(ValueError, match="difficulty"):
        make_code_source(difficulty=7)  # the default (procedural) family: 1..5


def test_source_from_path_and_list(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "mbpp.jsonl", MBPP)
    src = make_code_source(str(path), split="all")
    assert src.name == "code-mbpp" and len(src) == 2
    tasks = [
        Task(id=f"t{i}", prompt="p", meta={"tests": ["assert 1"], "difficulty": 1})
        for i in range(20)
    ]
    assert len(make_code_source(tasks, split="all")) == 20


def test_source_bad_arguments() -> None:
    with pytest.raises(FileNotFoundError, match="builtin"):
        make_code_source("no-such-set")
    with pytest.raises(TypeError, match="Task"):
        make_code_source([1, 2])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        make_code_source(3.5)  # type: ignore[arg-type]
