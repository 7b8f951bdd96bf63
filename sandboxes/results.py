"""Result records returned by sandboxes: :class:`ExecResult`, :class:`TestResult`, :class:`TestReport`.

Example:
    >>> r = ExecResult(status="ok", exit_code=0, stdout="2\\n", stderr="", duration=0.01)
    >>> r.ok
    True
    >>> rep = TestReport(status="ok", passed=1, total=2, results=[])
    >>> rep.all_passed, rep.fraction
    (False, 0.5)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

#: Why a run ended. ``"ok"``: it ran to the end (for ``run``: exit code 0; for
#: ``run_tests``: every test was judged, pass or fail). ``"error"``: the code
#: failed (non-zero exit, failed to load, killed its judge). ``"timeout"``,
#: ``"oom"``, ``"output_limit"``: a limit was hit. ``"sandbox_error"``: the
#: sandbox itself could not run the code (``error`` says why); not the code's fault.
Status = Literal["ok", "error", "timeout", "oom", "output_limit", "sandbox_error"]
STATUSES: tuple[str, ...] = ("ok", "error", "timeout", "oom", "output_limit", "sandbox_error")

#: Outcome of one test: passed, failed (assertion or wrong value), raised
#: (``error``), ran out of time/memory, the solution process died (``crash``),
#: or was never run (``not_run``, e.g. the solution failed to load).
TestStatus = Literal["pass", "fail", "error", "timeout", "oom", "crash", "not_run"]


@dataclass(frozen=True)
class ExecResult:
    """The outcome of :meth:`Sandbox.run`.

    Attributes:
        status: see :data:`Status`.
        exit_code: the process exit code (negative: killed by that signal), or
            None when the sandbox killed it (timeout, output limit) or never ran it.
        stdout, stderr: decoded as UTF-8 with replacement, capped at ``max_output_bytes``
            (both streams together).
        duration: seconds from start to exit, measured inside the sandbox.
        error: why the status is not ``"ok"`` (empty when it is).
        truncated: True when output was cut at the cap.
    """

    status: Status
    exit_code: int | None
    stdout: str
    stderr: str
    duration: float
    error: str = ""
    truncated: bool = False

    @property
    def ok(self) -> bool:
        """True when the program exited 0 within every limit."""
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict."""
        return asdict(self)


@dataclass(frozen=True)
class TestResult:
    """The outcome of one test.

    Attributes:
        name: the test's source (one line, shortened).
        passed: True only when the trusted side saw the test pass.
        status: see :data:`TestStatus`.
        message: why it failed (expected vs got, the exception), empty on a pass.
    """

    __test__ = False  # not a pytest class

    name: str
    passed: bool
    status: str
    message: str = ""


@dataclass(frozen=True)
class TestReport:
    """The outcome of :meth:`Sandbox.run_tests`.

    Attributes:
        status: see :data:`Status`; ``"ok"`` means every test was judged.
        passed: number of tests that passed.
        total: number of tests (each MBPP assert string is one; each assert of a
            HumanEval ``check`` body is one).
        results: one :class:`TestResult` per test, in order.
        error: why the status is not ``"ok"`` (e.g. the load error), else empty.
        stdout, stderr: what the solution printed (capped).
        duration: seconds for the whole test run.
        backend: the backend that ran it.
    """

    __test__ = False

    status: Status
    passed: int
    total: int
    results: list[TestResult] = field(default_factory=list)
    error: str = ""
    stdout: str = ""
    stderr: str = ""
    duration: float = 0.0
    backend: str = ""

    @property
    def all_passed(self) -> bool:
        """True when there was at least one test and every test passed."""
        return self.total > 0 and self.passed == self.total

    @property
    def fraction(self) -> float:
        """Share of tests passed (0.0 when there are none)."""
        return self.passed / self.total if self.total else 0.0

    @property
    def sandbox_error(self) -> str | None:
        """The reason when the sandbox (not the code) failed, else None."""
        return self.error if self.status == "sandbox_error" else None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict."""
        return asdict(self)
