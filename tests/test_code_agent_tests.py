"""run_agent_tests / extract_agent_tests: the tester role's asserts, run and summarised."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from flexmg.envs.code import builtin_tasks, extract_agent_tests, run_agent_tests

CODER = "My code:\n```python\ndef add(a, b):\n    return a + b\n```"


# --- extraction (no sandbox) ---------------------------------------------------


def test_extracts_top_level_asserts_with_setup() -> None:
    msg = "Tests:\n```python\nimport math\nX = 3\nassert add(1, 2) == X\nassert math.isclose(add(0.1, 0.2), 0.3)\nprint('hi')\n```"
    tests = extract_agent_tests(msg)
    assert len(tests) == 2
    assert all(t.startswith("import math\nX = 3\n") for t in tests)
    assert tests[0].endswith("assert add(1, 2) == X")


def test_extracts_test_functions_and_check() -> None:
    msg = (
        "```python\ndef test_small():\n    assert add(1, 1) == 2\n\n"
        "def check(candidate):\n    assert candidate(2, 2) == 4\n```"
    )
    tests = extract_agent_tests(msg, entry_point="add")
    assert tests[0].endswith("test_small()")
    assert tests[1].endswith("check(add)")
    # Without an entry point check() is only a helper: one test remains.
    assert [t.splitlines()[-1] for t in extract_agent_tests(msg)] == ["test_small()"]


def test_redefinition_of_code_under_test_is_dropped() -> None:
    msg = "```python\ndef add(a, b):\n    return 0\n\nassert add(2, 2) == 0\n```"
    (test,) = extract_agent_tests(msg, protected={"add"})
    assert "return 0" not in test


def test_multiline_assert_and_unparsable_fallback() -> None:
    msg = "```python\nassert add(\n    1, 2\n) == 3\n```"
    assert extract_agent_tests(msg) == ["assert add(\n    1, 2\n) == 3"]
    broken = "assert add(1, 2) == 3\nthis is not python (\nassert add(2, 2) == 4"
    assert extract_agent_tests(broken) == ["assert add(1, 2) == 3", "assert add(2, 2) == 4"]


def test_dedup_and_cap() -> None:
    msg = "\n".join(f"assert add({i}, 0) == {i}" for i in range(50)) + "\nassert add(0, 0) == 0"
    assert len(extract_agent_tests(msg, max_tests=7)) == 7
    assert len(extract_agent_tests(msg)) == 20


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_extraction_never_raises(text: str) -> None:
    for t in extract_agent_tests(text):
        assert isinstance(t, str)


class RaisingSandbox:
    def run_tests(self, *args: Any, **kwargs: Any) -> Any:
        raise OSError("no bwrap")


def test_summary_messages_without_sandbox_runs() -> None:
    sb = RaisingSandbox()
    assert "no code" in run_agent_tests("", "assert add(1, 2) == 3", sb)
    assert "No runnable tests" in run_agent_tests(CODER, "Looks good to me!", sb)
    out = run_agent_tests(CODER, "assert add(1, 2) == 3", sb)
    assert "could not be run" in out and "no bwrap" in out


# --- with the real sandbox -------------------------------------------------------


def test_pass_and_fail_summary(sandbox: Any) -> None:
    tester = (
        "```python\nassert add(1, 2) == 3\nassert add(-1, 1) == 0\n"
        "assert add(2, 2) == 5, 'two plus two'\n```"
    )
    out = run_agent_tests(CODER, tester, sandbox)
    lines = out.splitlines()
    assert lines[0].startswith("Tester's tests: 2/3 passed")
    assert lines[1].startswith("PASS: assert add(1, 2) == 3")
    assert lines[3].startswith("FAIL: assert add(2, 2) == 5")


def test_tester_cannot_replace_the_code(sandbox: Any) -> None:
    tester = "```python\ndef add(a, b):\n    return 42\nassert add(1, 1) == 42\n```"
    out = run_agent_tests(CODER, tester, sandbox)
    assert out.startswith("Tester's tests: 0/1 passed")


def test_with_task_builds_program_like_grading(sandbox: Any) -> None:
    task = next(t for t in builtin_tasks() if t.id == "builtin/count_vowels")
    body = '```python\n    return sum(ch in "aeiouAEIOU" for ch in s)\n```'
    tests = "```python\nassert count_vowels('aa') == 2\nassert count_vowels('') == 0\n```"
    out = run_agent_tests(body, tests, sandbox, task=task)
    assert out.startswith("Tester's tests: 2/2 passed")


def test_load_error_names_the_line_of_the_coders_code(sandbox: Any) -> None:
    task = next(t for t in builtin_tasks() if t.id == "builtin/count_vowels")
    code = "```python\ndef count_vowels(s):\n    return (\n```"
    out = run_agent_tests(code, "assert count_vowels('a') == 1", sandbox, task=task)
    assert "(line 2 of your code)" in out and "<solution>" not in out, out


def test_hostile_tests_do_not_escape(sandbox: Any) -> None:
    tester = "```python\nassert add(1, 1) == 2\nwhile True:\n    pass\nassert __import__('os')._exit(0) or True\n```"
    out = run_agent_tests(CODER, tester, sandbox)
    assert out.startswith("Tester's tests:") and len(out) <= 2000
