"""Integration: all 164 HumanEval canonical solutions score 1.0 through grade_code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flexmg.envs.code import grade_code, load_tasks

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
HUMANEVAL = DATA / "HumanEval.jsonl.gz"


@pytest.fixture(scope="module")
def humaneval() -> list:
    if not HUMANEVAL.is_file():
        pytest.skip(f"HumanEval data not found at {HUMANEVAL} (shared/data is absent)")
    return load_tasks(HUMANEVAL)


@pytest.mark.slow
def test_all_canonical_solutions_score_one(sandbox: Any, humaneval: list) -> None:
    assert len(humaneval) == 164
    failures = []
    for task in humaneval:
        body = task.answer[len(task.prompt) :]
        # As an LLM would answer: the whole function in a fenced block...
        full = grade_code(f"Solution:\n```python\n{task.answer}```", task, sandbox)
        # ...and HumanEval's own format: only the body, completing the prompt.
        part = grade_code(f"```python\n{body}```", task, sandbox)
        for kind, g in (("full", full), ("body", part)):
            if g.reward != 1.0 or g.status != "passed":
                failures.append((task.id, kind, g.status, g.details[:2]))
    assert not failures, failures[:5]


@pytest.mark.slow
def test_wrong_solutions_do_not_pass(sandbox: Any, humaneval: list) -> None:
    # Each task graded with the next task's canonical solution: none may pass.
    passed = []
    for task, other in zip(humaneval, humaneval[1:] + humaneval[:1]):
        g = grade_code(f"```python\n{other.answer}```", task, sandbox)
        if g.status == "passed":
            passed.append(task.id)
    assert not passed


def test_totals_agree_with_and_without_code(sandbox: Any, humaneval: list) -> None:
    task = humaneval[0]  # check() holds 7 asserts
    no_code = grade_code("I would loop over all pairs.", task, sandbox)
    ran = grade_code(f"```python\n{task.answer}```", task, sandbox)
    assert no_code.status == "no_code" and ran.status == "passed"
    assert no_code.total == ran.total == 7
