"""Run the tests an agent wrote (the ``tester`` role of ``code-4agent``).

The tester's message is free text; its asserts are pulled out of its fenced
Python blocks (or of the whole message when it has none):

* each top-level ``assert`` statement is one test;
* each top-level ``def test_*()`` function is one test (defined, then called);
* a ``def check(candidate)`` function is one test, called on the entry point;
* imports, assignments and helper functions become setup code run before
  every test (a redefinition of the coder's own functions is dropped, so the
  tester cannot replace the code under test).

Example:
    >>> from flexmg.envs.code.agent_tests import extract_agent_tests
    >>> extract_agent_tests("```python\\nassert f(1) == 2\\nassert f(2) == 3\\n```")
    ['assert f(1) == 2', 'assert f(2) == 3']
"""

from __future__ import annotations

import ast
import re
from typing import Any

from flexmg.tasks import Task

from .extract import extract_code, python_blocks
from .program import Program, assemble_program, sanitize_source
from .report import as_test_report, interpret_report

__all__ = ["run_agent_tests", "extract_agent_tests"]

_DEF_NAME = re.compile(r"^(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_]\w*)", re.MULTILINE)


def _defined_names(code: str) -> set[str]:
    return set(_DEF_NAME.findall(code))


def _segment(source: str, node: ast.AST) -> str:
    return (ast.get_source_segment(source, node) or "").strip()


def _tests_from_tree(
    source: str, tree: ast.Module, protected: set[str], entry_point: str | None
) -> tuple[list[str], list[str]]:
    """(setup snippets, tests) from one parsed block."""
    setup: list[str] = []
    tests: list[str] = []
    for node in tree.body:
        seg = _segment(source, node)
        if not seg:
            continue
        if isinstance(node, ast.Assert):
            tests.append(seg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            takes_no_args = not node.args.args and not node.args.posonlyargs
            if node.name.startswith("test") and takes_no_args:
                call = f"\n{node.name}()" if isinstance(node, ast.FunctionDef) else ""
                if call:
                    tests.append(seg + call)
            elif node.name == "check" and len(node.args.args) == 1 and entry_point:
                tests.append(f"{seg}\ncheck({entry_point})")
            elif node.name not in protected:
                setup.append(seg)
        elif isinstance(node, ast.ClassDef):
            if node.name not in protected:
                setup.append(seg)
        elif isinstance(node, (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign)):
            setup.append(seg)
        # Other statements (prints, calls, loops, unittest.main()) are ignored.
    return setup, tests


def _tests_from_lines(source: str) -> list[str]:
    """Fallback for text that does not parse: one-line asserts."""
    out = []
    for line in source.split("\n"):
        s = line.strip()
        if s.startswith("assert ") or s.startswith("assert("):
            try:
                ast.parse(s)
            except Exception:
                continue
            out.append(s)
    return out


def extract_agent_tests(
    message: str,
    protected: set[str] | None = None,
    entry_point: str | None = None,
    max_tests: int = 20,
) -> list[str]:
    """Return the tests found in an agent's ``message`` (see module doc), each a
    self-contained snippet (setup code first), without duplicates, at most
    ``max_tests``.

    >>> extract_agent_tests("def test_a():\\n    assert g() == 1")
    ['def test_a():\\n    assert g() == 1\\ntest_a()']
    """
    if not isinstance(message, str):
        return []
    message = sanitize_source(message)
    blocks = python_blocks(message) or [message]
    protected = set(protected or ())
    setup: list[str] = []
    tests: list[str] = []
    for block in blocks:
        try:
            tree = ast.parse(block)
        except Exception:  # SyntaxError, RecursionError, MemoryError, ValueError
            tests.extend(_tests_from_lines(block))
            continue
        block_setup, block_tests = _tests_from_tree(block, tree, protected, entry_point)
        setup.extend(block_setup)
        tests.extend(block_tests)
    prefix = "\n".join(dict.fromkeys(setup))
    out: list[str] = []
    for test in dict.fromkeys(tests):
        if len(out) >= max_tests:
            break
        out.append(f"{prefix}\n{test}" if prefix else test)
    return out


def _display(test: str, limit: int = 160) -> str:
    last = [line for line in test.strip().split("\n") if line.strip()]
    text = last[-1].strip() if last else test.strip()
    if text.endswith("()") and len(last) > 1:  # a test_* function: show its name
        text = text[:-2]
    return text if len(text) <= limit else text[: limit - 3] + "..."


def run_agent_tests(
    code: str,
    tests_text: str,
    sandbox: Any,
    *,
    task: Task | None = None,
    entry_point: str | None = None,
    max_tests: int = 20,
    max_chars: int = 2000,
) -> str:
    """Run the tests in ``tests_text`` (the tester's message) against ``code``
    (the coder's message or bare code) and return a short summary for the
    next role. Never raises on hostile text or a failing sandbox.

    Args:
        code: the coder's message; its last fenced Python block is used when
            it has one, else the whole text is taken as code.
        tests_text: the tester's message.
        sandbox: a ``flexmg.sandboxes`` sandbox.
        task: when given, the program is built as for grading (prompt
            prepended for body-only code) and its entry point is used.
        entry_point: the function under test (for ``check(candidate)``).
        max_tests: at most this many tests are run.
        max_chars: the summary is cut to this length.

    >>> class NoSandbox:
    ...     def run_tests(self, *a, **k):
    ...         raise RuntimeError("down")
    >>> print(run_agent_tests("def f(): return 1", "assert f() == 1", NoSandbox()))
    The tester's 1 test(s) could not be run: sandbox error: RuntimeError: down
    """
    if task is not None and not entry_point:
        entry_point = str(task.meta.get("entry_point") or "") or None
    raw = code if isinstance(code, str) else ""
    solution = extract_code(raw)
    if solution is None:
        solution = raw
    if not solution.strip():
        return "The coder produced no code; the tester's tests were not run."
    if task is not None:
        layout = assemble_program(solution, task)
    else:
        source = sanitize_source(solution)
        layout = Program(source, 1, max(1, source.count("\n") + 1))
    program = layout.source
    protected = _defined_names(program)
    if entry_point:
        protected.add(entry_point)
    tests = extract_agent_tests(tests_text, protected, entry_point, max_tests)
    if not tests:
        return "No runnable tests (assert statements or test_* functions) found in the tester's message."
    try:
        sandbox_report = sandbox.run_tests(program, tests, entry_point=entry_point)
    except Exception as e:
        return _cut(
            f"The tester's {len(tests)} test(s) could not be run: sandbox error: "
            f"{type(e).__name__}: {e}",
            max_chars,
        )
    report = as_test_report(sandbox_report)
    view = interpret_report(report)
    passed, total, status, sandbox_error = view.passed, view.total, view.status, view.sandbox_error
    if sandbox_error:
        return _cut(
            f"The tester's {len(tests)} test(s) could not be run: sandbox error: {sandbox_error}",
            max_chars,
        )
    results = report.results
    lines = [f"Tester's tests: {passed}/{total or len(tests)} passed ({status})."]
    if not results:
        lines += [layout.relabel(line) for line in view.details[:3]]
    for i, test in enumerate(tests):
        if i >= len(results):
            break
        r = results[i]
        ok = r.passed
        msg = r.message.strip()
        msg = layout.relabel(msg.splitlines()[-1]) if msg else ""
        mark = "PASS" if ok else "FAIL"
        line = f"{mark}: {_display(test)}"
        if not ok and msg:
            line += f" -> {msg[:200]}"
        lines.append(line)
    return _cut("\n".join(lines), max_chars)


def _cut(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[: max_chars - 15] + "\n... (truncated)"
