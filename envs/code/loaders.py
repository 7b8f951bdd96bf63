"""Code task sets: the built-in tasks and HumanEval / MBPP file loaders.

Every code :class:`~flexmg.tasks.Task` has ``prompt`` = the function to write
(signature + docstring), ``answer`` = a reference solution and ``meta`` with
``entry_point``, ``tests`` (a HumanEval ``check(candidate)`` string or a list
of MBPP-style assert strings), ``difficulty`` (1..3) and ``source``.

Example:
    >>> tasks = builtin_tasks()
    >>> len(tasks) >= 60 and tasks[0].meta["source"]
    'builtin'
"""

from __future__ import annotations

import ast
import builtins
import functools
import gzip
import json
import re
from collections import Counter
from collections.abc import Iterator
from os import PathLike
from pathlib import Path
from typing import Any

from flexmg.tasks import Task

__all__ = ["builtin_tasks", "load_tasks", "BUILTIN_TASKS_PATH", "difficulty_from_solution"]

#: The data file holding the built-in task set (one JSON object per line).
BUILTIN_TASKS_PATH = Path(__file__).with_name("builtin_tasks.jsonl")

_BUILTIN_KEYS = {"id", "entry_point", "difficulty", "prompt", "solution", "tests"}


def _open_text(path: Path):
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def _read_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, record) from a jsonl(.gz) file or a JSON array file."""
    with _open_text(path) as f:
        text = f.read()
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: invalid JSON array: {e}") from e
        for i, rec in enumerate(data):
            if not isinstance(rec, dict):
                raise ValueError(f"{path}: element {i} is {type(rec).__name__}, expected an object")
            yield i + 1, rec
        return
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{lineno}: invalid JSON ({e.msg})") from e
        if not isinstance(rec, dict):
            raise ValueError(f"{path}:{lineno}: expected a JSON object, got {type(rec).__name__}")
        yield lineno, rec


def difficulty_from_solution(solution: str) -> int:
    """A 1..3 difficulty guess for dataset tasks that carry none: the number of
    non-blank lines of the reference solution (<= 6: 1, <= 15: 2, else 3).

    >>> difficulty_from_solution("    return a + b\\n")
    1
    """
    n = sum(1 for line in solution.splitlines() if line.strip())
    return 1 if n <= 6 else 2 if n <= 15 else 3


def _builtin_record(lineno: int, rec: dict[str, Any], path: Path) -> Task:
    missing = _BUILTIN_KEYS - rec.keys()
    if missing:
        raise ValueError(f"{path}:{lineno}: built-in task lacks keys {sorted(missing)}")
    return Task(
        id=str(rec["id"]),
        prompt=rec["prompt"],
        answer=rec["solution"],
        meta={
            "entry_point": rec["entry_point"],
            "tests": list(rec["tests"]),
            "difficulty": int(rec["difficulty"]),
            "category": rec.get("category", ""),
            "source": "builtin",
        },
    )


@functools.lru_cache(maxsize=1)
def _builtin_cached() -> tuple[Task, ...]:
    return tuple(
        _builtin_record(lineno, rec, BUILTIN_TASKS_PATH)
        for lineno, rec in _read_records(BUILTIN_TASKS_PATH)
    )


def builtin_tasks() -> list[Task]:
    """The built-in set of function-writing tasks written for flexmg.

    Each has a reference solution (``answer``) and at least three hidden
    assert tests (``meta["tests"]``), with ``meta["difficulty"]`` in 1..3 and
    ``meta["category"]`` in string / list / math / dict.

    >>> t = builtin_tasks()[0]
    >>> t.meta["entry_point"] in t.prompt
    True
    """
    return list(_builtin_cached())


def _humaneval_record(lineno: int, rec: dict[str, Any], path: Path) -> Task:
    for key in ("task_id", "prompt", "test", "entry_point"):
        if not isinstance(rec.get(key), str):
            raise ValueError(
                f"{path}:{lineno}: HumanEval record needs a string {key!r} "
                f"(fields: task_id, prompt, test, entry_point, canonical_solution)"
            )
    solution = rec.get("canonical_solution") or ""
    answer = rec["prompt"] + solution if solution else ""
    return Task(
        id=rec["task_id"],
        prompt=rec["prompt"],
        answer=answer,
        meta={
            "entry_point": rec["entry_point"],
            "tests": rec["test"],
            "difficulty": int(rec.get("difficulty") or difficulty_from_solution(solution)),
            "source": "humaneval",
        },
    )


_BUILTIN_NAMES = frozenset(dir(builtins)) | {"isclose", "math", "set", "sorted"}


def _called_names(tests: list[str]) -> list[str]:
    """Names called in the asserts, most frequent first (builtins excluded)."""
    counts: Counter[str] = Counter()
    for test in tests:
        try:
            tree = ast.parse(test)
        except Exception:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id not in _BUILTIN_NAMES:
                    counts[node.func.id] += 1
    return [name for name, _ in counts.most_common()]


def _top_level_functions(code: str) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    try:
        tree = ast.parse(code)
    except Exception:
        return {}
    return {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _mbpp_prompt(text: str, entry_point: str, code: str, example: str) -> str:
    """A Python stub (signature + docstring) for an MBPP task, like HumanEval's."""
    funcs = _top_level_functions(code)
    node = funcs.get(entry_point)
    signature = f"def {entry_point}(*args)"
    if node is not None:
        line = code.splitlines()[node.lineno - 1].strip()
        m = re.match(r"(?:async\s+)?def\s+\w+\s*\(.*\)\s*(?:->\s*[^:]+)?(?=:)", line)
        if m:
            signature = m.group(0)
    doc = text.strip().replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    example = example.strip().replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    stub = f'{signature}:\n    """{doc}\n\n    Example: {example}\n    """\n'
    return stub if _parses(stub) else f"{text.strip()}\nExample: {example.strip()}\n"


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except Exception:
        return False
    return True


def _mbpp_record(lineno: int, rec: dict[str, Any], path: Path) -> Task:
    text = rec.get("text", rec.get("prompt"))
    tests = rec.get("test_list")
    if not isinstance(text, str) or not isinstance(tests, list) or not tests:
        raise ValueError(
            f"{path}:{lineno}: MBPP record needs 'text' (or 'prompt') and a non-empty "
            f"'test_list' of assert strings"
        )
    tests = [str(t) for t in tests]
    code = rec.get("code") or ""
    called = _called_names(tests)
    defined = _top_level_functions(code)
    entry_point = rec.get("entry_point") or next(
        (name for name in called if name in defined), called[0] if called else ""
    )
    if not entry_point:
        raise ValueError(f"{path}:{lineno}: cannot tell which function the MBPP tests call")
    setup_parts = [rec.get("test_setup_code") or ""]
    setup_parts += [str(x) for x in rec.get("test_imports") or []]
    setup = "\n".join(p for p in setup_parts if p.strip())
    task_id = rec.get("task_id", lineno)
    return Task(
        id=f"mbpp/{task_id}",
        prompt=_mbpp_prompt(text, entry_point, code, tests[0]),
        answer=code,
        meta={
            "entry_point": entry_point,
            "tests": tests,
            "difficulty": int(rec.get("difficulty") or difficulty_from_solution(code)),
            "source": "mbpp",
            "setup": setup,
        },
    )


def _builtin_format(lineno: int, rec: dict[str, Any], path: Path) -> Task:
    task = _builtin_record(lineno, rec, path)
    meta = dict(task.meta, source=rec.get("source", "builtin"))
    return Task(id=task.id, prompt=task.prompt, answer=task.answer, meta=meta)


def _detect(rec: dict[str, Any]) -> str:
    if {"task_id", "prompt", "test", "entry_point"} <= rec.keys():
        return "humaneval"
    if "test_list" in rec:
        return "mbpp"
    if _BUILTIN_KEYS <= rec.keys():
        return "builtin"
    return ""


def load_tasks(path: str | PathLike[str]) -> list[Task]:
    """Load code tasks from a file; the format is detected from the first record.

    Formats: HumanEval jsonl(.gz) (``task_id, prompt, test, entry_point``,
    optional ``canonical_solution``: the reference answer is prompt + solution),
    MBPP jsonl or JSON array (``text`` or ``prompt``, ``test_list``, optional
    ``code``, ``task_id``, ``test_setup_code``/``test_imports``), and the
    built-in format (``id, entry_point, difficulty, prompt, solution, tests``).

    >>> import json, tempfile, os
    >>> rec = {"task_id": 1, "text": "Add a and b.", "test_list": ["assert add(1, 2) == 3"],
    ...        "code": "def add(a, b):\\n    return a + b"}
    >>> with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
    ...     _ = f.write(json.dumps(rec) + "\\n")
    >>> load_tasks(f.name)[0].meta["entry_point"]
    'add'
    >>> os.unlink(f.name)
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"code task file not found: {p} (expected HumanEval or MBPP jsonl)")
    tasks: list[Task] = []
    fmt = ""
    for lineno, rec in _read_records(p):
        if not fmt:
            fmt = _detect(rec)
            if not fmt:
                raise ValueError(
                    f"{p}:{lineno}: unknown code task format with keys {sorted(rec)[:12]}; "
                    "expected HumanEval (task_id, prompt, test, entry_point), "
                    "MBPP (text, test_list) or built-in (id, entry_point, prompt, solution, tests)"
                )
        parse = {"humaneval": _humaneval_record, "mbpp": _mbpp_record}.get(fmt, _builtin_format)
        tasks.append(parse(lineno, rec, p))
    if not tasks:
        raise ValueError(f"{p}: no tasks in file")
    ids = Counter(t.id for t in tasks)
    dupes = [i for i, c in ids.items() if c > 1]
    if dupes:
        raise ValueError(f"{p}: duplicate task ids {dupes[:5]}; ids must be unique")
    return tasks
