"""Read a sandbox ``TestReport`` defensively (objects or dicts, any field spelling).

Example:
    >>> from types import SimpleNamespace as NS
    >>> rep = NS(passed=1, total=2, results=[NS(status="pass"), NS(status="fail", message="x")])
    >>> view = interpret_report(rep)
    >>> view.passed, view.total, view.status, view.safe_details
    (1, 2, 'failed', ['test 2: wrong result'])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MAX_DETAILS",
    "ReportView",
    "clip",
    "field_of",
    "interpret_report",
    "result_message",
    "result_passed",
]

MAX_DETAILS = 12
_MAX_DETAIL_CHARS = 300


def clip(text: Any, limit: int = _MAX_DETAIL_CHARS) -> str:
    """``text`` as one stripped string of at most ``limit`` characters."""
    s = str(text).strip().replace("\r", "")
    return s if len(s) <= limit else s[: limit - 3] + "..."


def field_of(obj: Any, *names: str, default: Any = None) -> Any:
    """Read the first present attribute (or mapping key) among ``names``."""
    for name in names:
        if isinstance(obj, dict) and name in obj:
            return obj[name]
        if hasattr(obj, name):
            return getattr(obj, name)
    return default


def result_passed(result: Any) -> bool:
    value = field_of(result, "passed", "ok", "success")
    if value is None:
        value = field_of(result, "status", "outcome") in ("ok", "passed", "pass")
    return bool(value)


def _result_status(result: Any) -> str:
    return str(field_of(result, "status", "outcome", default="") or "")


def result_message(result: Any) -> str:
    return str(field_of(result, "message", "error", "stderr", "detail", default="") or "")


def _result_name(result: Any) -> str:
    return clip(field_of(result, "name", "test", "source", default="") or "", 160)


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


def _sandbox_error(report: Any, rep_status: str) -> str | None:
    if hasattr(report, "sandbox_error") and not isinstance(report, dict):
        value = report.sandbox_error
        if value:
            return str(value)
    if rep_status == "sandbox_error":
        return str(field_of(report, "error", "message", default="") or "sandbox error")
    return None


def _safe_line(index: int, status: str, message: str) -> str:
    if status in ("fail", "failed", ""):
        return f"test {index + 1}: wrong result"
    if status == "error":
        exc = message.split(":", 1)[0].strip()
        exc = exc if exc.isidentifier() else "an exception"
        return f"test {index + 1}: raised {exc}"
    return f"test {index + 1}: {status}"


def interpret_report(report: Any) -> ReportView:
    """Summarise a sandbox ``TestReport`` (or a dict / object of the same shape).

    Grade statuses: ``passed`` (every test passed), ``timeout`` / ``oom`` /
    ``output_limit`` (a limit was hit, by the run or by any test), ``error``
    (the solution did not load, or no test could run), ``failed`` (otherwise),
    ``sandbox_error`` (the sandbox could not run the code).
    """
    results = list(field_of(report, "results", default=None) or [])
    passed = int(field_of(report, "passed", default=sum(map(result_passed, results))) or 0)
    total = int(field_of(report, "total", default=len(results)) or 0)
    rep_status = str(field_of(report, "status", default="") or "")
    run_error = str(field_of(report, "error", default="") or "")
    sandbox_error = _sandbox_error(report, rep_status)
    if sandbox_error:
        msg = clip(sandbox_error)
        line = f"sandbox error: {msg}"
        return ReportView(0, total, "sandbox_error", msg, [line], [line])
    details: list[str] = []
    safe: list[str] = []
    names: list[str] = []
    statuses = {_result_status(r) for r in results}
    for i, r in enumerate(results):
        if result_passed(r):
            continue
        if len(details) >= MAX_DETAILS:
            more = f"... and more failures ({total - passed} failed in all)"
            details.append(more)
            safe.append(more)
            break
        status, msg, name = _result_status(r), result_message(r), _result_name(r)
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
