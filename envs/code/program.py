"""Turn an agent's extracted code into the program that is graded.

Rules (the same for every task source):

1. If the code defines the entry point at top level (``def name(``,
   ``async def name(``, ``class name`` or ``name = ...``), the program is the
   task prompt followed by the code when the prompt is itself valid Python
   (HumanEval and the built-in set: it brings the prompt's imports and helper
   functions, and the code's definition replaces the stub), else the code alone.
2. Otherwise the code is taken as a *function body* completing the prompt, as in
   the original HumanEval harness: program = prompt + code. A body written
   without indentation is indented by four spaces first.

The code is only inspected as text here (never parsed or run in this process).

Example:
    >>> from flexmg.tasks import Task
    >>> t = Task(id="t", prompt="def add(a, b):\\n    'Add.'\\n", meta={"entry_point": "add"})
    >>> print(build_program("return a + b", t), end="")
    def add(a, b):
        'Add.'
        return a + b
"""

from __future__ import annotations

import ast
import functools
import re
import textwrap
from dataclasses import dataclass

from flexmg.tasks import Task

__all__ = [
    "Program",
    "assemble_program",
    "build_program",
    "defines_name",
    "prompt_is_python",
    "sanitize_source",
]

_SOLUTION_LINE = re.compile(r"\(<solution>, line (\d+)\)")


def sanitize_source(code: str) -> str:
    """Make ``code`` encodable as UTF-8 source: lone surrogates become "?" and
    NUL bytes are removed (both would otherwise crash the file write or the
    compiler before a single test runs).

    >>> sanitize_source("x = '\\ud800'\\x00")
    "x = '?'"
    """
    if "\x00" in code:
        code = code.replace("\x00", "")
    try:
        code.encode("utf-8")
    except UnicodeEncodeError:
        code = code.encode("utf-8", "replace").decode("utf-8")
    return code


def defines_name(code: str, name: str) -> bool:
    """True when ``code`` defines ``name`` at top level (text check, no parsing).

    >>> defines_name("import os\\ndef solve(x):\\n    return x", "solve")
    True
    >>> defines_name("    def solve(x): ...", "solve")
    False
    """
    if not name:
        return False
    n = re.escape(name)
    pattern = (
        rf"^(?:(?:async[ \t]+)?def[ \t]+{n}[ \t]*\(|class[ \t]+{n}\b|{n}[ \t]*(?::[^=\n]*)?=(?!=))"
    )
    return re.search(pattern, code, flags=re.MULTILINE) is not None


@functools.lru_cache(maxsize=4096)
def prompt_is_python(prompt: str) -> bool:
    """True when the task prompt parses as Python (a signature plus docstring).

    >>> prompt_is_python("def f(x):\\n    'Doc.'\\n")
    True
    >>> prompt_is_python("Write a function that adds two numbers.")
    False
    """
    try:
        ast.parse(prompt)
    except Exception:  # SyntaxError, ValueError, RecursionError, MemoryError
        return False
    return True


def _indent_body(code: str) -> str:
    """Indent a function body that was written flush-left."""
    first = next((line for line in code.split("\n") if line.strip()), "")
    if first[:1] in (" ", "\t"):
        return code
    return textwrap.indent(code, "    ")


@dataclass(frozen=True)
class Program:
    """A program built from an agent's code, and where that code sits in it.

    Attributes:
        source: the program text that runs.
        code_start: the program line (1-based) of the code's first line.
        code_end: the program line of the code's last line.
    """

    source: str
    code_start: int
    code_end: int

    def relabel(self, message: str) -> str:
        """Say where a ``(<solution>, line N)`` of a load error is in the agent's code.

        The program may start with the task's prompt and end with its setup
        code, so a raw line number would not match the code the agent wrote.

        >>> p = Program("def f():\\n    return (\\n", code_start=2, code_end=2)
        >>> p.relabel("SyntaxError: '(' was never closed (<solution>, line 2)")
        "SyntaxError: '(' was never closed (line 1 of your code)"
        """

        def where(match: re.Match[str]) -> str:
            line = int(match.group(1))
            if self.code_start <= line <= self.code_end:
                return f"(line {line - self.code_start + 1} of your code)"
            if line < self.code_start:
                return f"(line {line} of the task's prompt, before your code)"
            return f"(line {line - self.code_end} after your code, in the task's setup code)"

        return _SOLUTION_LINE.sub(where, message)


def _line_after(prefix: str) -> int:
    """The 1-based line on which text appended to ``prefix`` starts."""
    return prefix.count("\n") + 1


def assemble_program(code: str, task: Task) -> Program:
    """Build the program for ``code`` written for ``task`` and record where the code is.

    >>> from flexmg.tasks import Task
    >>> t = Task(id="t", prompt="def add(a, b):\\n    'Add.'\\n", meta={"entry_point": "add"})
    >>> p = assemble_program("return a + b", t)
    >>> p.code_start, p.code_end
    (3, 3)
    """
    entry_point = str(task.meta.get("entry_point") or "")
    code = sanitize_source(code)
    prompt = task.prompt if prompt_is_python(task.prompt) else ""
    dedented = textwrap.dedent(code)
    if defines_name(dedented, entry_point) or not entry_point:
        if "from __future__" in dedented or not prompt:
            prefix, body = "", dedented
        else:
            prefix, body = prompt.rstrip("\n") + "\n\n\n", dedented
    elif prompt:
        prefix, body = prompt + ("" if prompt.endswith("\n") else "\n"), _indent_body(code)
    else:
        prefix, body = "", dedented
    program = prefix + body
    start = _line_after(prefix)
    end = start + body.rstrip("\n").count("\n")
    setup = task.meta.get("setup")
    if isinstance(setup, str) and setup.strip():
        program = program.rstrip("\n") + "\n\n" + setup
    return Program(program.rstrip("\n") + "\n", start, end)


def build_program(code: str, task: Task) -> str:
    """Return the program to run for ``code`` written for ``task`` (see module doc).

    Setup code from the task (``meta["setup"]``, e.g. MBPP's ``test_setup_code``)
    is appended after the solution. :func:`assemble_program` also says where
    the code is in the program.

    >>> from flexmg.tasks import Task
    >>> t = Task(id="t", prompt="Add two numbers.", meta={"entry_point": "add"})
    >>> build_program("def add(a, b):\\n    return a + b", t)
    'def add(a, b):\\n    return a + b\\n'
    """
    return assemble_program(code, task).source
