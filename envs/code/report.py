"""What grading needs from a sandbox's test report.

A flexmg sandbox returns a :class:`~flexmg.sandboxes.TestReport`, and
:func:`interpret_report` reads its fields directly. A user's own sandbox object
(anything with ``run_tests``) may return another object or a dict of that shape,
with other field spellings (``ok``/``success`` for ``passed``, ``outcome`` for
``status``, ...): :func:`as_test_report` converts it once, where the report
comes back from the sandbox.

Example:
    >>> from types import SimpleNamespace as NS
    >>> rep = NS(passed=1, total=2, results=[NS(status="pass"), NS(status="fail", message="x")])
    >>> view = interpret_report(as_test_report(rep))
    >>> view.passed, view.total, view.status, view.safe_details
    (1, 2, 'failed', ['test 2: wrong result'])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flexmg.sandboxes.results import TestReport, TestResult

__all__ = [
    "MAX_DETAILS",
    "ReportView",
    "as_test_report",
    "clip",
    "interpret_report",
]

MAX_DETAILS = 12
_MAX_DETAIL_CHARS = 300


def clip(text: Any, limit: int = _MAX_DETAIL_CHARS) -> str:
    """``text`` as one stripped string of at most ``limit`` characters."""
    s = str(text).strip().replace("\r", "")
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _field(obj: Any, *names: str, default: Any = None) -> Any:
    """The first present attribute (or mapping key) among ``names`` of a foreign report."""
    for name in names:
        if isinstance(obj, dict) and name in obj:
            return obj[name]
        if hasattr(obj, name):
            return getattr(obj, name)
    return default


def _as_test_result(result: Any) -> TestResult:
    from flexmg.sandboxes.results import TestResult

    if isinstance(result, TestResult):
        return result
    passed = _field(result, "passed", "ok", "success")
    status = str(_field(result, "status", "outcome", default="") or "")
    if passed is None:
        passed = status in ("ok", "passed", "pass")
    return TestResult(
        name=str(_field(result, "name", "test", "source", default="") or ""),
        passed=bool(passed),
        status=status,
        message=str(_field(result, "message", "error", "stderr", "detail", default="") or ""),
    )


def as_test_report(report: Any) -> TestReport:
    """``report`` as a ``TestReport``: a flexmg sandbox's as it is, any other shape converted.

    A foreign report's sandbox failure (a ``sandbox_error`` attribute, or status
    ``"sandbox_error"``) becomes status ``"sandbox_error"`` with its message in ``error``.

    >>> as_test_report({"total": 1, "results": [{"outcome": "passed"}]}).results[0].passed
    True
    """
    from flexmg.sandboxes.results import TestReport

    if isinstance(report, TestReport):
        return report
    results = [_as_test_result(r) for r in (_field(report, "results", default=None) or [])]
    status = str(_field(report, "status", default="") or "")
    error = str(_field(report, "error", default="") or "")
    declared = getattr(report, "sandbox_error", None) if not isinstance(report, dict) else None
    if declared:
        status, error = "sandbox_error", str(declared)
    elif status == "sandbox_error":
        error = str(_field(report, "error", "message", default="") or "sandbox error")
    passed = _field(report, "passed", default=sum(r.passed for r in results))
    return TestReport(
        status=status,  # type: ignore[arg-type]  # a foreign sandbox's own status words
        passed=int(passed or 0),
        total=int(_field(report, "total", default=len(results)) or 0),
        results=results,
        error=error,
    )


@dataclass(frozen=True)
class ReportView:
    """What grading needs from a sandbox report.

    ``details`` name each failing test (its source) and why it failed;
    ``safe_details`` say only which test number failed and how (exception type,
    timeout), without the test's source or expected values, so they can be shown
    to agents without revealing hidden tests.
    """

    passed: int
    total: int
    status: str
    sandbox_error: str | None = None
    details: list[str] = field(default_factory=list)
    safe_details: list[str] = field(default_factory=list)
    failed_names: list[str] = field(default_factory=list)


def _safe_line(index: int, status: str, message: str) -> str:
    if status in ("fail", "failed", ""):
        return f"test {index + 1}: wrong result"
    if status == "error":
        exc = message.split(":", 1)[0].strip()
        exc = exc if exc.isidentifier() else "an exception"
        return f"test {index + 1}: raised {exc}"
    return f"test {index + 1}: {status}"


def interpret_report(report: TestReport) -> ReportView:
    """Summarise a sandbox's ``TestReport`` (:func:`as_test_report` converts other shapes).

    Grade statuses: ``passed`` (every test passed), ``timeout`` / ``oom`` /
    ``output_limit`` (a limit was hit, by the run or by any test), ``error``
    (the solution did not load, or no test could run), ``failed`` (otherwise),
    ``sandbox_error`` (the sandbox could not run the code).
    """
    results = report.results
    passed, total, rep_status, run_error = report.passed, report.total, report.status, report.error
    sandbox_error = report.sandbox_error or (
        "sandbox error" if rep_status == "sandbox_error" else None
    )
    if sandbox_error:
        msg = clip(sandbox_error)
        line = f"sandbox error: {msg}"
        return ReportView(0, total, "sandbox_error", msg, [line], [line])
    details: list[str] = []
    safe: list[str] = []
    names: list[str] = []
    statuses = {r.status for r in results}
    for i, r in enumerate(results):
        if r.passed:
            continue
        if len(details) >= MAX_DETAILS:
            more = f"... and more failures ({total - passed} failed in all)"
            details.append(more)
            safe.append(more)
            break
        status, msg, name = r.status, r.message, clip(r.name, 160)
        if run_error and status in ("not_run", "crash", "timeout") and msg in run_error:
            continue  # the run-level error below says it once for all
        label = f"test {i + 1}" + (f" `{name}`" if name else "")
        details.append(f"{label}: {clip(msg or status or 'failed')}")
        safe.append(_safe_line(i, status, msg))
        names.append(name)
    if total > 0 and passed >= total:
        status = "passed"
    elif rep_status in ("timeout", "oom", "output_limit"):
        status = rep_status
    elif rep_status == "error" or total == 0 or statuses <= {"not_run"}:
        status = "error"
    else:
        status = next((s for s in ("timeout", "oom") if s in statuses), "failed")
    if status != "passed" and run_error:
        # A run-level error (load error, limit hit) is about the code, not a test.
        line = clip(run_error)
        details.insert(0, line)
        safe.insert(0, line)
    if status == "error" and not details:
        details = safe = ["no test was run (did the program load?)"]
    return ReportView(passed, total, status, None, details, safe, names)
