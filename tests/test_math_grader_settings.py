"""Grading settings per task or dataset: the config object, loader defaults, their effect."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flexmg.envs.math import (
    DATASET_DEFAULTS,
    GradingSettings,
    grade,
    grade_detailed,
    settings_for_task,
)
from flexmg.envs.math.loaders import load_file, records_to_tasks
from flexmg.tasks import Task


def boxed(answer: str) -> str:
    return "\\boxed{" + answer + "}"


# ------------------------------------------------------------------ the object
def test_the_worker_default_is_the_settings_default() -> None:
    # The worker never imports flexmg, so it keeps its own copy of the default.
    from flexmg.envs.math import _worker

    assert _worker.DEFAULT_OPTIONS == GradingSettings().key()


def test_defaults_validate_and_round_trip() -> None:
    settings = GradingSettings()
    assert settings.validate() is settings
    assert GradingSettings.from_mapping(settings.to_dict()) == settings
    assert json.loads(json.dumps(settings.to_dict())) == settings.to_dict()
    for preset in DATASET_DEFAULTS.values():
        assert preset.validate() is preset


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"precision": -1}, "precision must be within 0..30"),
        ({"precision": 2.5}, "precision must be an int"),
        ({"precision": True}, "precision must be an int"),
        ({"set_relations": "yes"}, "set_relations must be True or False"),
        ({"strict_variables": 1}, "strict_variables must be True or False"),
        ({"units": "drop"}, "units must be one of \\('strip', 'keep'\\)"),
    ],
)
def test_validate_says_what_is_expected(fields: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        GradingSettings(**fields).validate()
    with pytest.raises(ValueError, match=message):
        grade(boxed("1"), "1", settings=fields)


def test_unknown_keys_and_wrong_types_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="unknown grading setting\\(s\\) \\['precison'\\]"):
        GradingSettings.from_mapping({"precison": 2})
    with pytest.raises(TypeError, match="settings must be a GradingSettings"):
        grade(boxed("1"), "1", settings=2)  # type: ignore[arg-type]


# -------------------------------------------------------------- their effect
def test_precision() -> None:
    assert grade(boxed("0.33"), "\\frac{1}{3}") == 0.0
    assert grade(boxed("0.33"), "\\frac{1}{3}", settings={"precision": 2}) == 1.0
    # the written decimals still have to be right to half a unit in the last place
    assert grade(boxed("0.34"), "\\frac{1}{3}", settings={"precision": 2}) == 0.0
    assert grade(boxed("(0.6,2.6667]"), "(\\frac{3}{5},\\frac{8}{3}]", settings={"precision": 2})


def test_set_relations() -> None:
    gold, answer = "x \\in [-2,7]", "-2 \\le x \\le 7"
    assert grade(boxed(answer), gold) == 0.0
    assert grade(boxed(answer), gold, settings={"set_relations": True}) == 1.0
    assert grade(boxed("x \\in [-2,7]"), "-2 \\le x \\le 7") == 1.0  # always, this way round


def test_strict_variables() -> None:
    assert grade(boxed("f(y)"), "f(x)") == 0.0
    assert grade(boxed("f(y)"), "f(x)", settings={"strict_variables": False}) == 1.0


def test_verdict_cache_is_per_setting() -> None:
    answer, gold = boxed("0.6667"), "\\frac{2}{3}"
    assert grade_detailed(answer, gold).reason == "wrong"
    assert grade_detailed(answer, gold, settings={"precision": 3}).reason == "correct"
    assert grade_detailed(answer, gold).reason == "wrong"


# ----------------------------------------------------------- per-dataset defaults
def test_loaders_attach_their_format_default() -> None:
    tasks = records_to_tasks(
        [
            {"question": "q", "answer": "work\n#### 18"},
            {"problem": "p", "answer": "[-2,7]"},
            {"question": "q", "answer": "3"},
        ],
        "mixed",
    )
    formats = [t.meta["format"] for t in tasks]
    assert formats == ["gsm8k", "math", "plain"]
    for task in tasks:
        assert settings_for_task(task) == DATASET_DEFAULTS[task.meta["format"]]
    gsm8k, math, _ = tasks
    assert grade(boxed("18 dollars"), gsm8k.answer, settings=settings_for_task(gsm8k)) == 1.0
    assert grade(boxed("-2 \\le x \\le 7"), math.answer, settings=settings_for_task(math)) == 1.0


def test_loader_override_and_bad_override() -> None:
    tasks = records_to_tasks([{"question": "q", "answer": "2"}], "toy", grading={"precision": 3})
    assert settings_for_task(tasks[0]).precision == 3
    own = records_to_tasks([{"question": "q", "answer": "2", "grading": {"units": "keep"}}], "t")
    assert settings_for_task(own[0]).units == "keep"
    with pytest.raises(ValueError, match="toy/0: bad grading settings: unknown grading"):
        records_to_tasks([{"question": "q", "answer": "2"}], "toy", grading={"digits": 3})


def test_load_file_takes_an_override(tmp_path: Path) -> None:
    path = tmp_path / "toy.jsonl"
    path.write_text('{"question": "q", "answer": "w\\n#### 7"}\n', encoding="utf-8")
    assert settings_for_task(load_file(path)[0]) == DATASET_DEFAULTS["gsm8k"]
    assert settings_for_task(load_file(path, grading={"units": "keep"})[0]).units == "keep"


def test_procedural_tasks_grade_as_written() -> None:
    task = Task(id="arith/0", prompt="1+1?", answer="2", meta={"generator": "arithmetic"})
    assert settings_for_task(task) == DATASET_DEFAULTS["procedural"]
    assert settings_for_task(task).units == "keep"
    assert grade(boxed("2 dollars"), "2", settings=settings_for_task(task)) == 0.0


DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.mark.skipif(not (DATA / "gsm8k_test.jsonl").is_file(), reason="needs shared/data")
def test_benchmark_files_get_their_defaults() -> None:
    gsm8k = load_file(DATA / "gsm8k_test.jsonl")
    assert settings_for_task(gsm8k[0]) == DATASET_DEFAULTS["gsm8k"]
    math500 = DATA / "math500_test.jsonl"
    if math500.is_file():
        assert settings_for_task(load_file(math500)[0]) == DATASET_DEFAULTS["math"]
