"""benchmarks/answer_offsets.py: right / slip / other shares of the solver's greedy answers."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from helpers import load_benchmark


@pytest.fixture(scope="module")
def answer_offsets():
    return load_benchmark("answer_offsets")


def test_classes_and_distinct_prompts(answer_offsets) -> None:
    assert answer_offsets.classes(Counter({0: 3, 1: 1})) == {"right": 0.75, "slip": 0.25,
                                                             "other": 0.0}  # fmt: skip
    tasks = answer_offsets.distinct_tasks("eval", 12)
    assert len({t.prompt for t in tasks}) == 12


def test_the_shipped_solver_answers_mostly_right_or_with_the_slip(answer_offsets, tmp_path) -> None:
    out = tmp_path / "offsets.json"
    assert answer_offsets.main(["--base", "--prompts", "40", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    for split in ("eval", "train"):
        shares = result[split]
        assert result[split]["prompts"] == 40
        assert shares["right"] + shares["slip"] + shares["other"] == pytest.approx(1.0)
        assert sum(shares["offsets"].values()) == 40
        # The warm start's answers are mostly the right value or the teacher's slip.
        assert shares["right"] + shares["slip"] >= 0.7, shares
    with pytest.raises(SystemExit):
        answer_offsets.main([])  # neither a checkpoint nor --base
