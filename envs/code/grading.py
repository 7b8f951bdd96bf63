"""Grade an agent's message on a code task by running the hidden tests.

The code is the message's last fenced Python block (:func:`extract_code`); the
program run is built by :func:`build_program`; the tests run in a
``flexmg.sandboxes`` sandbox (``sandbox.run_tests(program, tests,
entry_point=...)``). The reward is the fraction of hidden tests passed.

Nothing is scored 0 silently: every grade carries a ``status`` and ``details``
saying why, and a sandbox that could not run the tests is reported in
``sandbox_error`` (the reward is then 0.0, but the env should treat the
episode as unjudged rather than failed).

Example:
    >>> from flexmg.sandboxes import make_sandbox  # doctest: +SKIP
    >>> from flexmg.envs.code import builtin_tasks
    >>> task = builtin_tasks()[0]
    >>> with make_sandbox("local") as sb:  # doctest: +SKIP
    ...     g = grade_code("```python\\n" + task.answer + "```", task, sb)
    >>> g.reward, g.status  # doctest: +SKIP
    (1.0, 'passed')
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from flexmg.tasks import Task

from .extract import extract_code
from .program import Program, assemble_program, prompt_is_python
from .report import MAX_DETAILS, as_test_report, clip, interpret_report

if TYPE_CHECKING:
    from flexmg.sandboxes.results import TestReport

__all__ = ["CodeGrade", "grade_code", "grade_many", "GRADE_STATUSES"]

#: Values of :attr:`CodeGrade.status`.
GRADE_STATUSES = (
    "passed",  # every hidden test passed
    "failed",  # the program ran, some tests failed
    "error",  # the program did not load (syntax error, exception at import, no entry point)
    "timeout",  # the run hit the sandbox time limit
    "oom",  # the run hit the sandbox memory limit
    "output_limit",  # the run printed more than the sandbox allows
    "no_code",  # the message has no fenced Python block (format error)
    "sandbox_error",  # the sandbox could not run the tests at all
)


@dataclass(frozen=True)
class CodeGrade:
    """The verdict on one message.

    Attributes:
        reward: fraction of hidden tests passed, in [0, 1].
        passed: number of hidden tests passed.
        total: number of hidden tests, as the sandbox counts them (each
            assert of a ``check(candidate)`` body is one), also when nothing ran.
        format_error: True when the message holds no fenced Python block.
        sandbox_error: why the sandbox could not run the tests, else None.
        status: one of :data:`GRADE_STATUSES`.
        details: short lines for logs and ``infos``: which tests failed
            (with their source) and why.
        failed_tests: the source of the failing hidden tests, for analysis.
        safe_details: the same failures without test source or expected
            values (``test 3: wrong result``), safe to show to agents.
    """

    reward: float
    passed: int
    total: int
    format_error: bool = False
    sandbox_error: str | None = None
    status: str = "failed"
    details: list[str] = field(default_factory=list)
    failed_tests: list[str] = field(default_factory=list)
    safe_details: list[str] = field(default_factory=list)

    @property
    def success(self) -> bool:
        """True when every hidden test passed."""
        return self.status == "passed"

    def to_info(self) -> dict[str, Any]:
        """A plain dict for ``infos`` / episode metrics.

        >>> CodeGrade(1.0, 3, 3, status="passed").to_info()["tests_passed"]
        3
        """
        d = asdict(self)
        d["tests_passed"] = d.pop("passed")
        d["tests_total"] = d.pop("total")
        return d

    def feedback(self, reveal_tests: bool = False) -> str:
        """A short summary for the next round's judge feedback. Hidden tests'
        source and expected values are only included with ``reveal_tests=True``.

        >>> g = CodeGrade(0.5, 1, 2, details=["test 2 `assert f(1) == 2`: 1 != 2"],
        ...               safe_details=["test 2: wrong result"])
        >>> g.feedback()
        'Hidden tests: 1/2 passed.\\ntest 2: wrong result'
        """
        if self.format_error:
            return "No fenced Python code block (```python ... ```) was found; nothing was run."
        if self.sandbox_error:
            return f"The tests could not be run (sandbox error: {self.sandbox_error})."
        head = f"Hidden tests: {self.passed}/{self.total} passed."
        return "\n".join([head, *(self.details if reveal_tests else self.safe_details)])


@functools.lru_cache(maxsize=2048)
def _count_check_tests(tests: str, entry_point: str | None) -> int:
    try:
        from flexmg.sandboxes import parse_tests

        return max(1, int(parse_tests(tests, entry_point).total))
    except Exception:  # no sandbox package, or tests it cannot split
        return 1


def _expected_total(tests: Any, entry_point: str | None) -> int:
    """How many tests the sandbox would count (for grades where nothing ran)."""
    if isinstance(tests, (list, tuple)):
        return len(tests)
    return _count_check_tests(tests, entry_point)


def _failed_tests(report: TestReport, tests: Any) -> list[str]:
    results = report.results
    if not isinstance(tests, list) or len(results) != len(tests):
        return []
    return [t for t, r in zip(tests, results) if not r.passed][:MAX_DETAILS]


def _sandbox_failure(expected: int, exc: BaseException) -> CodeGrade:
    msg = clip(f"{type(exc).__name__}: {exc}")
    line = f"sandbox error: {msg}"
    return CodeGrade(
        reward=0.0,
        passed=0,
        total=expected,
        sandbox_error=msg,
        status="sandbox_error",
        details=[line],
        safe_details=[line],
    )


@dataclass(frozen=True)
class _Job:
    program: Program
    tests: str | list[str]
    entry_point: str | None
    expected: int
    task_code: str | None = (
        None  # the prompt's code: the tests call its helpers, not the solution's
    )


def _prepare(completion: str, task: Task) -> _Job | CodeGrade:
    """The sandbox job for ``completion``, or the final grade when nothing runs."""
    tests = task.meta.get("tests") if isinstance(task.meta, dict) else None
    if not tests or not isinstance(tests, (str, list, tuple)):
        raise ValueError(
            f"task {task.id!r} is not a code task: meta['tests'] must be a check(candidate) "
            "string or a list of assert strings (load tasks with flexmg.envs.code.load_tasks)"
        )
    entry_point = str(task.meta.get("entry_point") or "") or None
    expected = _expected_total(tests, entry_point)
    code = extract_code(completion) if isinstance(completion, str) else None
    if code is None:
        line = "no fenced Python code block in the message"
        return CodeGrade(0.0, 0, expected, True, None, "no_code", [line], [], [line])
    tests_arg = list(tests) if isinstance(tests, tuple) else tests
    task_code = task.prompt if prompt_is_python(task.prompt) else None
    return _Job(assemble_program(code, task), tests_arg, entry_point, expected, task_code)


def _finish(job: _Job, sandbox_report: Any) -> CodeGrade:
    report = as_test_report(sandbox_report)
    view = interpret_report(report)
    failed_tests = _failed_tests(report, job.tests) or view.failed_names
    total = view.total if view.total > 0 else job.expected
    passed = max(0, min(view.passed, total))
    return CodeGrade(
        reward=passed / total if total and view.status != "sandbox_error" else 0.0,
        passed=passed,
        total=total,
        sandbox_error=view.sandbox_error,
        status=view.status,
        details=[job.program.relabel(line) for line in view.details],
        failed_tests=[] if view.status == "sandbox_error" else failed_tests,
        safe_details=[job.program.relabel(line) for line in view.safe_details],
    )


def grade_code(completion: str, task: Task, sandbox: Any) -> CodeGrade:
    """Grade ``completion`` (a whole agent message) on ``task`` with ``sandbox``.

    Args:
        completion: the graded role's message; its last fenced Python block
            is the solution (see :func:`extract_code`).
        task: a code task (``meta["tests"]`` and ``meta["entry_point"]``).
        sandbox: a ``flexmg.sandboxes`` sandbox (anything with ``run_tests``).

    Returns:
        A :class:`CodeGrade`; never raises on hostile text or a failing sandbox.

    Raises:
        ValueError: ``task`` is not a code task (no ``meta["tests"]``).
    """
    job = _prepare(completion, task)
    if isinstance(job, CodeGrade):
        return job
    try:
        report = sandbox.run_tests(
            job.program.source,
            job.tests,
            entry_point=job.entry_point,
            **_trusted(sandbox.run_tests),
            **_task_code(sandbox.run_tests, job),
        )
    except Exception as e:  # a broken sandbox must not crash the env
        return _sandbox_failure(job.expected, e)
    return _finish(job, report)


def _trusted(method: Any) -> dict[str, bool]:
    """``{"trusted_tests": True}`` when ``method`` takes it (flexmg sandboxes do).

    The hidden tests are the task's own, so a flexmg sandbox may run them in its
    long-lived judge; other sandbox objects are called as before.
    """
    return {"trusted_tests": True} if _takes(method, "trusted_tests") else {}


def _task_code(method: Any, job: _Job) -> dict[str, str]:
    """``{"task_code": prompt}`` when the task's prompt is code and ``method`` takes it.

    The judge runs the prompt's code (imports, helper functions) next to the
    tests, so a solution that redefines a helper the tests call (HumanEval's
    ``encode_cyclic``) cannot change what the tests compute.
    """
    return {"task_code": job.task_code} if job.task_code and _takes(method, "task_code") else {}


def _takes(method: Any, name: str) -> bool:
    """Whether ``method`` accepts the keyword ``name`` (cached per function)."""
    func = getattr(method, "__func__", method)  # one answer per function, not per bound method
    try:
        names = _keywords(func)
    except TypeError:  # an unhashable callable object
        names = _keywords.__wrapped__(func)
    return names is None or name in names


@functools.lru_cache(maxsize=256)
def _keywords(func: Any) -> frozenset[str] | None:
    """The parameter names of ``func``; None when it takes ``**kwargs`` (any name)."""
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return frozenset()
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return None
    return frozenset(params)


def grade_many(completions: Sequence[str], tasks: Sequence[Task], sandbox: Any) -> list[CodeGrade]:
    """Grade many (completion, task) pairs at once, in input order.

    Uses the sandbox's parallel pool (``sandbox.map_tests``) when it has one,
    else grades one by one; the grades equal :func:`grade_code`'s.

    >>> class Down:
    ...     def run_tests(self, *a, **k):
    ...         raise OSError("no sandbox")
    >>> [g.status for g in grade_many(["no code", "```python\\nx = 1\\n```"],
    ...                               [Task("a", "p", meta={"tests": ["assert 1"]})] * 2, Down())]
    ['no_code', 'sandbox_error']
    """
    if len(completions) != len(tasks):
        raise ValueError(
            f"grade_many needs one task per completion, got {len(completions)} completions "
            f"and {len(tasks)} tasks"
        )
    prepared = [_prepare(c, t) for c, t in zip(completions, tasks)]
    jobs = [(i, p) for i, p in enumerate(prepared) if isinstance(p, _Job)]
    grades: list[CodeGrade | None] = [p if isinstance(p, CodeGrade) else None for p in prepared]
    map_tests = getattr(sandbox, "map_tests", None)
    if jobs and callable(map_tests):
        with_task = _takes(getattr(sandbox, "run_tests", None), "task_code")
        try:
            reports = map_tests([_map_job(j, with_task) for _, j in jobs], **_trusted(map_tests))
        except Exception as e:
            for i, j in jobs:
                grades[i] = _sandbox_failure(j.expected, e)
        else:
            for (i, j), report in zip(jobs, reports):
                grades[i] = _finish(j, report)
    else:
        for i, j in jobs:
            try:
                report = sandbox.run_tests(
                    j.program.source,
                    j.tests,
                    entry_point=j.entry_point,
                    **_trusted(sandbox.run_tests),
                    **_task_code(sandbox.run_tests, j),
                )
                grades[i] = _finish(j, report)
            except Exception as e:
                grades[i] = _sandbox_failure(j.expected, e)
    return [g for g in grades if g is not None]


def _map_job(job: _Job, with_task: bool) -> tuple[str, Any, str | None] | dict[str, Any]:
    """One ``map_tests`` job: a dict with ``task_code`` where the sandbox takes it."""
    if with_task and job.task_code:
        return {
            "code": job.program.source,
            "tests": job.tests,
            "entry_point": job.entry_point,
            "task_code": job.task_code,
        }
    return (job.program.source, job.tests, job.entry_point)
