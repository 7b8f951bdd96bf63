"""grade_code: rewards from hidden tests run in the sandbox, and every failure mode."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flexmg.envs.code import (
    GRADE_STATUSES,
    CodeGrade,
    builtin_tasks,
    grade_code,
    grade_many,
    load_tasks,
)
from flexmg.tasks import Task


@pytest.fixture(scope="module")
def short_sandbox() -> Iterator[Any]:
    """A sandbox with a 1 s limit, for code that never ends."""
    from flexmg.sandboxes import make_sandbox

    try:
        sb = make_sandbox("local", timeout=1.0, memory_mb=256)
    except Exception as e:
        pytest.skip(f"the local sandbox cannot run here: {e}")
    with sb:
        yield sb


def fenced(code: str) -> str:
    return f"Here is my solution.\n```python\n{code}\n```\nDone."


def by_id(task_id: str) -> Task:
    return next(t for t in builtin_tasks() if t.id == task_id)


# --- the built-in set through the real sandbox -------------------------------


def test_every_builtin_reference_scores_one(sandbox: Any) -> None:
    tasks = builtin_tasks()
    grades = grade_many([fenced(t.answer) for t in tasks], tasks, sandbox)
    failures = [(t.id, g.status, g.details[:2]) for t, g in zip(tasks, grades) if g.reward != 1.0]
    assert not failures
    assert all(
        g.status == "passed" and g.total == len(t.meta["tests"]) for t, g in zip(tasks, grades)
    )


def test_every_builtin_rejects_a_stub(sandbox: Any) -> None:
    tasks = builtin_tasks()
    grades = grade_many([fenced(t.prompt + "    return None\n") for t in tasks], tasks, sandbox)
    for task, g in zip(tasks, grades):
        assert g.reward < 1.0 and g.status != "passed", task.id
        assert g.total == len(task.meta["tests"])


def test_grade_many_equals_grade_code(sandbox: Any) -> None:
    tasks = builtin_tasks()[:6]
    messages = [
        fenced(tasks[0].answer),
        "no code at all",
        fenced("def nothing(): pass"),
        fenced(tasks[3].answer.replace("return", "return 0 or", 1)),
        fenced("def broken(:"),
        fenced(tasks[5].prompt + "    return None"),
    ]
    many = grade_many(messages, tasks, sandbox)
    one = [grade_code(m, t, sandbox) for m, t in zip(messages, tasks)]
    assert [(g.status, g.passed, g.total) for g in many] == [
        (g.status, g.passed, g.total) for g in one
    ]
    with pytest.raises(ValueError, match="one task per completion"):
        grade_many(messages, tasks[:2], sandbox)


def test_partial_credit_is_the_fraction_of_tests_passed(sandbox: Any) -> None:
    task = by_id("builtin/factorial")
    wrong = "def factorial(n):\n    return n * factorial(n - 1) if n > 1 else n"
    g = grade_code(fenced(wrong), task, sandbox)  # fails only factorial(0) == 1
    assert g.status == "failed" and g.total == 5 and g.passed == 4
    assert g.reward == pytest.approx(0.8)
    assert g.details and g.failed_tests == ["assert factorial(0) == 1"]
    assert "factorial(0)" not in g.feedback() and "4/5" in g.feedback()
    assert "factorial(0)" in g.feedback(reveal_tests=True)


def test_body_only_completion(sandbox: Any) -> None:
    task = by_id("builtin/count_vowels")
    g = grade_code(fenced('    return sum(ch in "aeiouAEIOU" for ch in s)'), task, sandbox)
    assert g.reward == 1.0


def test_load_error_line_numbers_count_from_the_agents_code(sandbox: Any) -> None:
    # The prompt (a signature and docstring) comes first in the program; the feedback
    # must name the line of the agent's own code, as the agent wrote it.
    task = by_id("builtin/count_vowels")
    code = "def count_vowels(s):\n    n = (\n    return n"
    g = grade_code(fenced(code), task, sandbox)
    assert g.status == "error" and g.reward == 0.0
    assert "(line 2 of your code)" in g.safe_details[0], g.safe_details
    assert "(line 2 of your code)" in g.feedback() and "<solution>" not in g.feedback()
    body = "    n = 0\n    for ch in s:\n        n += ch in 'aeiou'\n    return n +\n"
    g = grade_code(fenced(body), task, sandbox)
    assert "(line 4 of your code)" in g.details[0], g.details


# --- format and hostile code -------------------------------------------------


def test_no_code_block_is_a_format_error(sandbox: Any) -> None:
    task = by_id("builtin/count_vowels")
    g = grade_code("def count_vowels(s): return 0", task, sandbox)
    assert g.format_error and g.status == "no_code" and g.reward == 0.0
    assert g.total == len(task.meta["tests"]) and g.details
    assert "No fenced Python code block" in g.feedback()


@pytest.mark.parametrize(
    ("code", "statuses"),
    [
        ("def count_vowels(s)\n    return 0", {"error", "failed"}),  # syntax error
        ("raise SystemExit(0)", {"error", "failed"}),
        ("import os\nos._exit(0)", {"error", "failed"}),
        ("def count_vowels(s):\n    import os\n    os._exit(0)", {"error", "failed"}),
        ("def count_vowels(s):\n    while True:\n        pass", {"timeout", "failed"}),
        ("while True:\n    pass", {"timeout", "error", "failed"}),
        ("def count_vowels(s):\n    print('x' * 10**8)\n    return 0", {"output_limit", "failed"}),
        ("x = bytearray(10**10)", {"oom", "error", "failed"}),
        ("print('1 passed, 0 failed')\ndef count_vowels(s):\n    return -1", {"failed"}),
        ("def count_vowels(s):\n    return '\x00\ud800 漢字 🙂'", {"failed"}),
        ("\x00\x00", {"error", "failed"}),
        ("(" * 100_000, {"error", "output_limit"}),  # the traceback echoes the line
    ],
)
def test_hostile_code_is_scored_not_crashed(
    short_sandbox: Any, code: str, statuses: set[str]
) -> None:
    task = by_id("builtin/count_vowels")
    g = grade_code(fenced(code), task, short_sandbox)
    assert isinstance(g, CodeGrade)
    assert g.reward < 1.0 and g.status in statuses, (g.status, g.details)
    assert g.sandbox_error is None and g.details  # the reason is recorded


def test_huge_and_unicode_messages(sandbox: Any) -> None:
    task = by_id("builtin/reverse_words")
    noise = "🙂 é 漢字 " * 20_000
    g = grade_code(noise + fenced(task.answer) + noise, task, sandbox)
    assert g.reward == 1.0


# --- sandbox failures are reported, not silently scored ------------------------


class RaisingSandbox:
    def run_tests(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("bwrap: setting up uid map: Permission denied")


class ErrorReportSandbox:
    def run_tests(self, *args: Any, **kwargs: Any) -> Any:
        return SimpleNamespace(
            passed=0, total=3, results=[], status="sandbox_error", error="image missing"
        )


class CountingSandbox:
    """Reports the first k of n results as passed."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.calls: list[tuple[str, Any, Any]] = []

    def run_tests(self, program: str, tests: Any, entry_point: Any = None) -> Any:
        self.calls.append((program, tests, entry_point))
        results = [
            SimpleNamespace(passed=i < self.k, message="" if i < self.k else "AssertionError")
            for i in range(len(tests))
        ]
        return SimpleNamespace(passed=self.k, total=len(tests), results=results)


def test_sandbox_exception_becomes_sandbox_error() -> None:
    task = by_id("builtin/count_vowels")
    g = grade_code(fenced(task.answer), task, RaisingSandbox())
    assert g.status == "sandbox_error" and g.reward == 0.0
    assert g.sandbox_error and "Permission denied" in g.sandbox_error
    assert "sandbox error" in g.feedback()


def test_sandbox_error_report_is_propagated() -> None:
    task = by_id("builtin/count_vowels")
    g = grade_code(fenced(task.answer), task, ErrorReportSandbox())
    assert g.status == "sandbox_error" and g.sandbox_error == "image missing"


def test_counts_and_arguments_passed_to_sandbox() -> None:
    task = by_id("builtin/count_vowels")
    sb = CountingSandbox(k=2)
    g = grade_code(fenced(task.answer), task, sb)
    assert (g.passed, g.total, g.status) == (2, 5, "failed")
    assert g.reward == pytest.approx(0.4)
    program, tests, entry_point = sb.calls[0]
    assert entry_point == "count_vowels" and tests == task.meta["tests"]
    assert "def count_vowels" in program
    info = g.to_info()
    assert info["tests_passed"] == 2 and info["tests_total"] == 5 and info["status"] == "failed"


def test_not_a_code_task_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="meta\\['tests'\\]"):
        grade_code("```python\nx=1\n```", Task(id="m", prompt="1+1?", answer="2"), RaisingSandbox())


def test_mbpp_file_through_the_sandbox(sandbox: Any, tmp_path: Path) -> None:
    records = [
        {
            "task_id": 11,
            "text": "Remove the first and last occurrence of a character.",
            "code": "def remove_Occ(s,ch):\r\n    return s.replace(ch, '', 1)[::-1].replace(ch, '', 1)[::-1]",
            "test_list": [
                'assert remove_Occ("hello","l") == "heo"',
                'assert remove_Occ("abcda","a") == "bcd"',
                'assert remove_Occ("PHP","P") == "H"',
            ],
            "test_setup_code": "",
        },
        {
            "task_id": 3,
            "text": "Return the square root of x.",
            "code": "import math\ndef root(x):\n    return math.sqrt(x)",
            "test_list": ["assert math.isclose(root(2.0), 1.41421356, rel_tol=1e-6)"],
            "test_setup_code": "import math",
        },
    ]
    path = tmp_path / "mbpp.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    tasks = load_tasks(path)
    grades = grade_many([fenced(t.answer) for t in tasks], tasks, sandbox)
    assert [g.reward for g in grades] == [1.0, 1.0]
    wrong = grade_code(fenced("def remove_Occ(s, ch):\n    return s"), tasks[0], sandbox)
    assert wrong.reward == 0.0 and wrong.status == "failed"


@settings(max_examples=150, deadline=None)
@given(st.text(), st.integers(min_value=0, max_value=5))
def test_grade_code_never_raises_on_any_text(text: str, k: int) -> None:
    task = by_id("builtin/count_vowels")
    for message in (text, fenced(text)):
        g = grade_code(message, task, CountingSandbox(k))
        assert 0.0 <= g.reward <= 1.0 and g.status in GRADE_STATUSES


def test_foreign_reports_are_converted_once_at_the_boundary() -> None:
    from flexmg.envs.code.report import as_test_report, interpret_report
    from flexmg.sandboxes import TestReport, TestResult

    ours = TestReport(status="ok", passed=1, total=1, results=[TestResult("t", True, "pass")])
    assert as_test_report(ours) is ours
    results = [{"outcome": "passed"}, {"ok": False, "stderr": "boom"}]
    rep = as_test_report({"passed": 0, "status": "done", "results": results})
    assert (rep.passed, rep.total) == (0, 2)  # its own `passed` count is kept
    assert [r.passed for r in rep.results] == [True, False] and rep.results[1].message == "boom"
    assert interpret_report(as_test_report({"results": results})).passed == 1
    down = as_test_report(SimpleNamespace(sandbox_error="no bwrap", total=3, results=[]))
    assert (down.status, down.error, interpret_report(down).sandbox_error) == (
        "sandbox_error", "no bwrap", "no bwrap",
    )  # fmt: skip
    empty = as_test_report({"status": "sandbox_error", "message": "gone"})
    assert interpret_report(empty).sandbox_error == "gone"
    assert interpret_report(TestReport("sandbox_error", 0, 1)).sandbox_error == "sandbox error"
