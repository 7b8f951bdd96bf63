"""Turn HumanEval- or MBPP-style tests into the units the in-sandbox judge runs.

* HumanEval style: ``tests`` is a string defining ``check(candidate)``; each
  top-level statement of ``check``'s body that holds a real ``assert`` is one
  test, other statements are setup run in order. ``assert True`` lines do not
  count. When the body cannot be split (it returns, yields, declares globals)
  the whole ``check(candidate)`` call is one test.
* MBPP style: ``tests`` is a list of strings, each one test.

A test of the form ``assert LEFT == RIGHT`` is judged on the trusted side: both
sides are evaluated in the sandbox, must be plain data, and are compared by the
host after decoding, so an object whose ``__eq__`` always returns True cannot pass.

Example:
    >>> spec = parse_tests(["assert add(1, 2) == 3", "assert add(0, 0) == 0"])
    >>> [u["eq"] for u in spec.units]
    [['add(1, 2)', '3'], ['add(0, 0)', '0']]
    >>> spec = parse_tests("def check(c):\\n    x = 2\\n    assert c(x) == 4\\n", "sq")
    >>> [u["kind"] for u in spec.units], spec.total
    (['setup', 'test'], 1)
"""

from __future__ import annotations

import ast
import functools
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

_NAME_CHARS = 160
_CANDIDATE = "__flexmg_candidate__"


@dataclass(frozen=True)
class TestSpec:
    """Parsed tests: setup source, ordered units, the check parameter name."""

    __test__ = False

    setup: str
    units: list[dict[str, Any]] = field(default_factory=list)
    candidate_name: str = "candidate"

    @property
    def total(self) -> int:
        """Number of tests (units of kind ``"test"``)."""
        return sum(1 for u in self.units if u["kind"] == "test")

    @property
    def names(self) -> list[str]:
        """Display names of the tests, in order."""
        return [u["name"] for u in self.units if u["kind"] == "test"]


def _short(src: str) -> str:
    one = " ".join(src.split())
    return one if len(one) <= _NAME_CHARS else one[: _NAME_CHARS - 3] + "..."


def _eq_sides(stmt: ast.stmt) -> list[str] | None:
    if (
        isinstance(stmt, ast.Assert)
        and isinstance(stmt.test, ast.Compare)
        and len(stmt.test.ops) == 1
        and isinstance(stmt.test.ops[0], ast.Eq)
    ):
        return [ast.unparse(stmt.test.left), ast.unparse(stmt.test.comparators[0])]
    return None


def _has_real_assert(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assert) and not isinstance(sub.test, ast.Constant):
            return True
    return False


def _unit(stmts: list[ast.stmt], kind: str) -> dict[str, Any]:
    src = "\n".join(ast.unparse(s) for s in stmts)
    eq = _eq_sides(stmts[0]) if kind == "test" and len(stmts) == 1 else None
    return {"kind": kind, "src": src, "eq": eq, "name": _short(src)}


_UNSPLITTABLE = re.compile(r"\b(?:return|yield|global|nonlocal)\b")


def _splittable(fn: ast.FunctionDef, source: str | None = None) -> bool:
    if source is not None and _UNSPLITTABLE.search(source) is None:
        return True  # none of those statements without its keyword in the text
    for stmt in fn.body:
        for sub in ast.walk(stmt):
            if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            if isinstance(sub, (ast.Return, ast.Yield, ast.YieldFrom, ast.Global, ast.Nonlocal)):
                return False
    return True


def _parse_humaneval(tests: str, entry_point: str | None) -> TestSpec:
    if not entry_point:
        raise ValueError(
            "HumanEval-style tests (a string defining check(candidate)) need entry_point="
            "'<the function name>'"
        )
    try:
        tree = ast.parse(tests)
    except SyntaxError as e:
        raise ValueError(f"the tests are not valid Python: {e}") from None
    check = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"), None
    )
    if check is None or not check.args.args:
        raise ValueError(
            "HumanEval-style tests must define `def check(candidate): ...`; for MBPP style pass "
            "a list of assert strings"
        )
    param = check.args.args[0].arg
    units: list[dict[str, Any]] = []
    if _splittable(check, tests):
        pending: list[ast.stmt] = []
        for stmt in check.body:
            if _has_real_assert(stmt):
                if pending:
                    units.append(_unit(pending, "setup"))
                    pending = []
                units.append(_unit([stmt], "test"))
            else:
                pending.append(stmt)
    if not any(u["kind"] == "test" for u in units):
        units = [
            {"kind": "test", "src": f"check({_CANDIDATE})", "eq": None, "name": "check(candidate)"}
        ]
        return TestSpec(setup=tests, units=units, candidate_name=_CANDIDATE)
    return TestSpec(setup=_without_check_body(tests, check), units=units, candidate_name=param)


def _without_check_body(tests: str, check: ast.FunctionDef) -> str:
    r"""``tests`` with ``check``'s body replaced by ``pass``, when nothing can call it.

    Split into units, ``check``'s statements run as the units; the setup only
    needs what is around it (imports, helpers, ``METADATA``), and the judge then
    compiles a fraction of the text for each run. Done only when the text is
    ASCII (no other spelling of the name), the word ``check`` occurs nowhere but
    in its own ``def`` (in code, strings and comments alike) and the body starts
    on a line of its own; otherwise ``tests`` unchanged. A name built at run time
    is not seen: such a call of ``check`` would run the stub, while every one of
    its asserts still runs as a unit.

    >>> src = "M = 1\ndef check(c):\n    assert c(1) == 2\n"
    >>> print(_without_check_body(src, ast.parse(src).body[1]), end="")
    M = 1
    def check(c):
        pass
    """
    if (
        not tests.isascii()
        or "\r" in tests
        or len(_CHECK_WORD.findall(tests)) != 1
        or check.end_lineno is None
    ):
        return tests
    lines = tests.split("\n")  # the parser's lines (a lone \r also ends one: excluded above)
    first = check.body[0]
    head = lines[first.lineno - 1][: first.col_offset]
    if first.lineno <= check.lineno or head.strip():
        return tests  # the body starts on the def's line: left as it is
    stub = "\n".join([*lines[: first.lineno - 1], head + "pass", *lines[check.end_lineno :]])
    try:
        ast.parse(stub)
    except (SyntaxError, ValueError):
        return tests
    return stub


_CHECK_WORD = re.compile(r"\bcheck\b")


def _parse_mbpp(tests: Sequence[Any]) -> TestSpec:
    units: list[dict[str, Any]] = []
    for i, test in enumerate(tests):
        if not isinstance(test, str):
            raise TypeError(
                f"test {i} must be a str (an assert statement), got {type(test).__name__}"
            )
        try:
            tree = ast.parse(test)
        except SyntaxError:
            # Hostile or broken test text is scored (it fails), never raised.
            units.append({"kind": "test", "src": test, "eq": None, "name": _short(test)})
            continue
        if not tree.body:
            raise ValueError(f"test {i} is empty")
        eq = _eq_sides(tree.body[0]) if len(tree.body) == 1 else None
        units.append({"kind": "test", "src": test, "eq": eq, "name": _short(test)})
    if not units:
        raise ValueError("no tests given: pass a check(candidate) string or a list of asserts")
    return TestSpec(setup="", units=units)


# CPython 3.11's ast module keeps its recursion bookkeeping in global state, so
# parsing in several threads at once (map_tests) can fail with "AST constructor
# recursion depth mismatch": parse under one lock.
_PARSE_LOCK = threading.Lock()


def parse_tests(tests: str | Sequence[str], entry_point: str | None = None) -> TestSpec:
    """Parse ``tests`` (HumanEval ``check`` string or MBPP list of asserts).

    Thread-safe; a task's tests are parsed once and cached (graders see the
    same tests many times). Raises ``ValueError``/``TypeError`` for malformed
    tests: these come from the task, not the agent, so they are programmer errors.
    """
    if isinstance(tests, str):
        return _cached_parse(tests, entry_point)
    if isinstance(tests, Sequence):
        try:
            return _cached_parse(tuple(tests), None)
        except TypeError:  # unhashable items: parse_mbpp names the bad item
            with _PARSE_LOCK:
                return _parse_mbpp(tests)
    raise TypeError(
        "tests must be a str defining check(candidate) or a list of assert strings, "
        f"got {type(tests).__name__}"
    )


@functools.lru_cache(maxsize=4096)
def _cached_parse(tests: str | tuple[Any, ...], entry_point: str | None) -> TestSpec:
    with _PARSE_LOCK:
        if isinstance(tests, str):
            return _parse_humaneval(tests, entry_point)
        return _parse_mbpp(tests)
