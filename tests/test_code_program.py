"""build_program: how extracted code becomes the graded program."""

from __future__ import annotations

import ast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flexmg.envs.code.program import (
    assemble_program,
    build_program,
    defines_name,
    sanitize_source,
)
from flexmg.tasks import Task

PROMPT = 'from typing import List\n\n\ndef total(xs: List[int]) -> int:\n    """Sum xs."""\n'
TASK = Task(id="t", prompt=PROMPT, meta={"entry_point": "total", "tests": ["assert 1"]})


def _run(program: str) -> dict:
    ns: dict = {}
    exec(compile(program, "p", "exec"), ns)  # trusted test code only
    return ns


def test_full_function_keeps_prompt_imports() -> None:
    program = build_program("def total(xs: List[int]) -> int:\n    return sum(xs)", TASK)
    assert program.startswith(PROMPT.rstrip())
    assert _run(program)["total"]([1, 2]) == 3


def test_indented_body_completes_prompt() -> None:
    program = build_program("    return sum(xs)\n", TASK)
    assert program == PROMPT + "    return sum(xs)\n"
    assert _run(program)["total"]([4]) == 4


def test_flush_left_body_is_indented() -> None:
    program = build_program("s = 0\nfor x in xs:\n    s += x\nreturn s", TASK)
    assert _run(program)["total"]([1, 2, 3]) == 6


def test_whole_block_indented_function_is_dedented() -> None:
    program = build_program("    def total(xs):\n        return len(xs)", TASK)
    assert _run(program)["total"]([7, 7]) == 2


def test_text_prompt_is_not_prepended() -> None:
    task = Task(id="m", prompt="Write add.", meta={"entry_point": "add", "setup": "import math"})
    program = build_program("def add(a, b):\n    return a + b", task)
    assert "Write add." not in program and program.endswith("import math\n")


def test_future_import_is_not_broken_by_prompt() -> None:
    code = "from __future__ import annotations\ndef total(xs):\n    return 0"
    program = build_program(code, TASK)
    assert program.startswith("from __future__")
    _run(program)


def test_defines_name() -> None:
    assert defines_name("def f(x): pass", "f")
    assert defines_name("async def f(): pass", "f")
    assert defines_name("class f:\n    pass", "f")
    assert defines_name("f = lambda x: x", "f")
    assert defines_name("f: Callable = g", "f")
    assert not defines_name("f == 3", "f")
    assert not defines_name("def ff(x): pass", "f")
    assert not defines_name("    def f(x): pass", "f")
    assert not defines_name("def f(x): pass", "")


def test_sanitize_source() -> None:
    assert sanitize_source("a\x00b") == "ab"
    assert sanitize_source("'\udcff'") == "'?'"
    assert sanitize_source("é 漢 🙂") == "é 漢 🙂"


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_build_program_never_raises_and_is_utf8(code: str) -> None:
    program = build_program(code, TASK)
    program.encode("utf-8")
    assert "\x00" not in program


def test_humaneval_style_prompt_parses_after_body() -> None:
    program = build_program("    return 0", TASK)
    ast.parse(program)


# --- where the agent's code sits in the program (for load-error line numbers) ---


@pytest.mark.parametrize(
    "code",
    [
        "def total(xs: List[int]) -> int:\n    s = 0\n    return sum(xs)",  # full function
        "    s = 0\n    return sum(xs)\n",  # indented body
        "s = 0\nfor x in xs:\n    s += x\nreturn s",  # flush-left body
        "from __future__ import annotations\ndef total(xs):\n    return sum(xs)",  # code alone
    ],
)
def test_assemble_program_locates_the_code(code: str) -> None:
    program = assemble_program(code, TASK)
    assert program.source == build_program(code, TASK)
    lines = program.source.split("\n")
    located = lines[program.code_start - 1 : program.code_end]
    assert [x.strip() for x in located] == [x.strip() for x in code.rstrip("\n").split("\n")]


def test_setup_code_comes_after_the_located_code() -> None:
    task = Task(id="m", prompt="Sum a list.", meta={"entry_point": "total", "setup": "K = 1\n"})
    program = assemble_program("def total(xs):\n    return sum(xs)", task)
    assert (program.code_start, program.code_end) == (1, 2)
    assert program.source.split("\n")[program.code_end + 1] == "K = 1"
    assert "line 2 after your code" in program.relabel("bad (<solution>, line 4)")


def test_relabel_maps_every_solution_line_reference() -> None:
    program = assemble_program("    x = (\n    return 1\n", TASK)
    start = program.code_start
    msg = f"SyntaxError: '(' was never closed (<solution>, line {start})"
    assert program.relabel(msg) == "SyntaxError: '(' was never closed (line 1 of your code)"
    assert "of the task's prompt" in program.relabel("e (<solution>, line 1)")
    assert program.relabel("no line here (<tests>, line 3)") == "no line here (<tests>, line 3)"
