"""The :class:`Sandbox` API shared by every backend: run, run_tests, map_tests, a worker pool.

A backend only knows how to start a warm worker (:meth:`Sandbox._start_worker`);
jobs, limits, judging and the pool live here.

Example:
    >>> from flexmg.sandboxes import make_sandbox
    >>> with make_sandbox("local", timeout=2.0) as sb:  # doctest: +SKIP
    ...     sb.run("print(1 + 1)").stdout
    '2\\n'
"""

from __future__ import annotations

import os
import queue
import signal
import threading
import weakref
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .inside import codec, frames
from .limits import Limits
from .results import ExecResult, TestReport, TestResult
from .testspec import TestSpec, parse_tests
from .worker import Worker, WorkerError

_JUDGE_GRACE = 1.0  # seconds the judge has, after the test budget, to report
_HOST_GRACE = 10.0  # seconds past that before the host gives up on a worker
_SHORT = 300


class SandboxUnavailable(RuntimeError):
    """A backend cannot work on this machine; the message says what to install or run."""


TRACED_ERROR = "killed: the program made itself traced (ptrace), which the sandbox does not allow"


def _short(text: str, limit: int = _SHORT) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _compare(item: dict[str, Any]) -> tuple[object, object, bool]:
    """Decode both sides of a ``compare`` verdict and compare them (plain data)."""
    left = codec.decode(item.get("left"))
    right = codec.decode(item.get("right"))
    return left, right, bool(left == right)


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


class Sandbox:
    """Runs untrusted Python; see :func:`flexmg.sandboxes.make_sandbox`.

    Safe to create in each process (workers start lazily in the process that
    uses them; a copy inherited through ``fork`` starts its own). Thread-safe:
    up to ``workers`` runs go on at once, each in its own warm worker.
    """

    backend = "base"

    def __init__(self, limits: Limits | None = None, *, workers: int | None = None) -> None:
        self.limits = limits or Limits()
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)):
            raise TypeError(f"workers must be an int, got {workers!r}")
        if workers is not None and workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = workers or max(1, len(os.sched_getaffinity(0)))
        self._lock = threading.Lock()
        self._reset_pool()
        self._closed = False
        self._finalizer = weakref.finalize(self, Sandbox._finalize, self._all, os.getpid())

    # ------------------------------------------------------------------ pool
    def _reset_pool(self) -> None:
        self._pid = os.getpid()
        self._idle: queue.LifoQueue[Worker] = queue.LifoQueue()
        self._all: list[Worker] = []
        self._cpus_starting: list[int] = []  # CPUs reserved for workers still starting
        self._slots = threading.BoundedSemaphore(self.workers)

    @staticmethod
    def _finalize(workers: list[Worker], owner: int) -> None:
        if os.getpid() != owner:  # a forked copy must not kill its parent's workers
            return
        for w in list(workers):
            try:
                w.close()
            except Exception:
                pass
        workers.clear()

    def _reserve_cpu(self) -> int | None:
        """The CPU for a new worker's processes, or None to leave them unpinned.

        With two or more workers each one is pinned to its own CPU (the one with
        the fewest of this sandbox's live workers): a run's processes then hand
        work to each other on one core instead of waking each other across cores,
        and the workers do not compete for a core. ``FLEXMG_SANDBOX_PIN=0`` turns
        it off.
        """
        if os.environ.get("FLEXMG_SANDBOX_PIN", "1") == "0" or self.workers < 2:
            return None
        try:
            allowed = sorted(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            return None
        if len(allowed) < 2:
            return None
        with self._lock:  # workers may start in several threads at once
            used = [w.cpu for w in self._all] + self._cpus_starting
            cpu = min(allowed, key=lambda c: (used.count(c), allowed.index(c)))
            self._cpus_starting.append(cpu)
        return cpu

    def _start_worker(self, cpu: int | None) -> Worker:
        """Start one warm worker whose processes run on ``cpu`` (backend-specific)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _start_worker(cpu)")

    def _acquire(self) -> Worker:
        if self._closed:
            raise RuntimeError("this sandbox is closed; create a new one with make_sandbox()")
        with self._lock:
            if os.getpid() != self._pid:  # inherited through fork: start afresh
                self._reset_pool()
                self._finalizer.detach()
                self._finalizer = weakref.finalize(self, Sandbox._finalize, self._all, self._pid)
        self._slots.acquire()
        try:
            while True:
                try:
                    w = self._idle.get_nowait()
                except queue.Empty:
                    break
                if w.alive:
                    return w
                self._discard(w)
            cpu = self._reserve_cpu()
            try:
                w = self._start_worker(cpu)
                w.cpu = cpu
                with self._lock:
                    self._all.append(w)
            finally:
                if cpu is not None:
                    with self._lock:  # the CPU is now a live worker's (or the start failed)
                        self._cpus_starting.remove(cpu)
            return w
        except BaseException:
            self._slots.release()
            raise

    def _release(self, w: Worker) -> None:
        if w.alive and not self._closed:
            self._idle.put(w)
        else:
            self._discard(w)
        self._slots.release()

    def _discard(self, w: Worker) -> None:
        with self._lock:
            if w in self._all:
                self._all.remove(w)
        try:
            w.close()
        except Exception:
            pass

    def _call(self, job: dict[str, Any], wait: float) -> dict[str, Any]:
        """Run ``job`` on a worker; a broken worker becomes a ``sandbox_error`` reply."""
        for _ in range(3):
            try:
                w = self._acquire()
            except (WorkerError, SandboxUnavailable, OSError) as e:
                return {"status": "sandbox_error", "error": f"could not start a sandbox: {e}"}
            try:
                reply = w.request(job, wait)
                if reply.get("retire"):  # its cleanup went over budget: run on a fresh one
                    w.alive = False
                    continue
                self._after_reply(w, reply)
                return reply
            except WorkerError as e:
                w.alive = False
                return {"status": "sandbox_error", "error": f"the sandbox failed: {e}"}
            finally:
                self._release(w)
        return {"status": "sandbox_error", "error": "three sandbox workers in a row retired"}

    def _after_reply(self, w: Worker, reply: dict[str, Any]) -> None:
        """Backend hook (e.g. read the cgroup's OOM counter)."""

    def _judge_limits(self, limits: Limits) -> dict[str, int]:
        lim = limits.rlimits(procs=False)
        lim["memory_bytes"] = lim["memory_bytes"] * 2 + (256 << 20)
        lim["cpu_seconds"] = limits.cpu_limit + 2
        return lim

    def _rlimits(self, limits: Limits) -> dict[str, int]:
        return limits.rlimits(procs=False)

    # ------------------------------------------------------------------ API
    def run(
        self, code: str, stdin: str | None = None, *, timeout: float | None = None
    ) -> ExecResult:
        """Run ``code`` as a Python program; never raises on hostile code.

        Args:
            code: the program text (any text: it is scored, never trusted).
            stdin: text fed to the program's standard input (None: empty).
            timeout: overrides the sandbox's ``timeout`` for this run.
        """
        if not isinstance(code, str):
            raise TypeError(f"code must be a str, got {type(code).__name__}")
        if stdin is not None and not isinstance(stdin, str):
            raise TypeError(f"stdin must be a str or None, got {type(stdin).__name__}")
        lim = self.limits.with_timeout(timeout)
        job = {
            "op": "run",
            "mode": "exec",
            "code": code,
            "stdin": stdin,
            "timeout": lim.timeout,
            "max_output_bytes": lim.max_output_bytes,
            "limits": self._rlimits(lim),
        }
        reply = self._call(job, lim.timeout + _HOST_GRACE)
        return self._exec_result(reply, lim.timeout)

    def _exec_result(self, reply: dict[str, Any], timeout: float) -> ExecResult:
        st = reply.get("status")
        code = reply.get("exit_code")
        stdout, stderr = str(reply.get("stdout", "")), str(reply.get("stderr", ""))
        duration = float(reply.get("duration") or 0.0)
        truncated = bool(reply.get("truncated"))
        if st == "sandbox_error":
            return ExecResult(
                "sandbox_error",
                None,
                stdout,
                stderr,
                duration,
                str(reply.get("error") or "sandbox error"),
                truncated,
            )
        if st == "timeout":
            err = f"killed: over the {timeout:g} s time limit"
            return ExecResult("timeout", None, stdout, stderr, duration, err, truncated)
        if st == "output_limit":
            return ExecResult(
                "output_limit",
                None,
                stdout,
                stderr,
                duration,
                "killed: output over the max_output_bytes limit",
                True,
            )
        if reply.get("traced"):
            return ExecResult("error", code, stdout, stderr, duration, TRACED_ERROR, truncated)
        if reply.get("oom") or reply.get("cgroup_oom"):
            return ExecResult("oom", code, stdout, stderr, duration, "out of memory", truncated)
        if code is None:
            return ExecResult(
                "sandbox_error",
                None,
                stdout,
                stderr,
                duration,
                "the program's exit status was lost",
                truncated,
            )
        if code == 0:
            return ExecResult("ok", 0, stdout, stderr, duration, "", truncated)
        if code < 0:
            name = _signal_name(code)
            if name == "SIGXCPU":
                return ExecResult(
                    "timeout",
                    code,
                    stdout,
                    stderr,
                    duration,
                    "killed: CPU time limit (SIGXCPU)",
                    truncated,
                )
            return ExecResult(
                "error", code, stdout, stderr, duration, f"killed by {name}", truncated
            )
        last = stderr.strip().splitlines()[-1:] or [""]
        return ExecResult(
            "error",
            code,
            stdout,
            stderr,
            duration,
            _short(f"exit code {code}" + (f": {last[0]}" if last[0] else "")),
            truncated,
        )

    def run_tests(
        self,
        code: str,
        tests: str | Sequence[str],
        entry_point: str | None = None,
        *,
        timeout: float | None = None,
        trusted_tests: bool = False,
        task_code: str | None = None,
    ) -> TestReport:
        """Run ``tests`` against the solution ``code``; the trusted side decides each test.

        Args:
            code: the solution program (untrusted text).
            tests: a HumanEval ``check(candidate)`` string (needs ``entry_point``) or
                an MBPP list of ``assert`` strings (one test each).
            entry_point: the function ``check`` receives as ``candidate``.
            timeout: seconds for the whole test run (default: the sandbox's ``timeout``);
                each test gets at most ``test_timeout`` of it.
            trusted_tests: the tests are the task's own (a dataset's hidden tests),
                not text an agent wrote. They then run in the sandbox's long-lived
                judge process instead of a fresh one per run (one process less per
                run). The solution is isolated the same way either way; leave it
                False for tests an agent wrote, which could otherwise change the
                judge for later runs.
            task_code: the task's own code (e.g. a HumanEval prompt: imports and
                helper functions), run on the judge's side before the tests. The
                tests then call the task's helpers, never the solution's
                redefinitions of them. Either way the tests see the real
                builtins, whatever the solution defines (``def abs(x): return 0``).

        Raises ``ValueError``/``TypeError`` only for malformed *tests* (a task bug).
        """
        if not isinstance(code, str):
            raise TypeError(f"code must be a str, got {type(code).__name__}")
        if task_code is not None and not isinstance(task_code, str):
            raise TypeError(
                f"task_code must be a str (the task's own code) or None, got {type(task_code).__name__}"
            )
        spec = parse_tests(tests, entry_point)
        lim = self.limits.with_timeout(timeout)
        job = {
            "op": "run",
            "mode": "tests",
            "code": code,
            "timeout": lim.timeout,
            "test_timeout": lim.per_test_timeout,
            "grace": _JUDGE_GRACE,
            "max_output_bytes": lim.max_output_bytes,
            "limits": self._rlimits(lim),
            "judge_limits": self._judge_limits(lim),
            "setup": spec.setup,
            "units": spec.units,
            "entry_point": entry_point if isinstance(tests, str) else None,
            "function_name": entry_point,
            "task_code": task_code or None,
            "candidate_name": spec.candidate_name,
            "trusted_tests": bool(trusted_tests),
        }
        reply = self._call(job, lim.timeout + _JUDGE_GRACE + _HOST_GRACE)
        return self._report(spec, reply)

    def _report(self, spec: TestSpec, reply: dict[str, Any]) -> TestReport:
        names = spec.names
        total = len(names)
        stdout, stderr = str(reply.get("stdout", "")), str(reply.get("stderr", ""))
        duration = float(reply.get("duration") or 0.0)

        def report(status: str, results: list[TestResult], error: str = "") -> TestReport:
            passed = sum(r.passed for r in results)
            return TestReport(
                status,  # type: ignore[arg-type]  # one of Status, by the callers
                passed,
                total,
                results,
                error,
                stdout,
                stderr,
                duration,
                self.backend,
            )

        def all_failed(test_status: str, message: str) -> list[TestResult]:
            return [TestResult(n, False, test_status, _short(message)) for n in names]

        st = reply.get("status")
        verdict = reply.get("verdict")
        if st == "sandbox_error":
            err = str(reply.get("error") or "sandbox error")
            return report("sandbox_error", all_failed("not_run", err), err)
        if st == "output_limit":
            err = "killed: the solution printed more than max_output_bytes"
            return report("output_limit", all_failed("not_run", err), err)
        if st == "verdict_too_large":
            err = "the solution's results made the verdict too large to send; the solution scores 0"
            return report("error", all_failed("crash", err), err)
        if st == "timeout" and not isinstance(verdict, dict):
            err = "killed: the test run went over its time limit"
            return report("timeout", all_failed("timeout", err), err)
        if not isinstance(verdict, dict) and reply.get("verdict_malformed"):
            err = "the tests sent a malformed verdict (wrong shape or nested too deeply)"
            return report("error", all_failed("crash", err), err)
        if not isinstance(verdict, dict):
            code = reply.get("judge_exit")
            how = f" ({_signal_name(code)})" if isinstance(code, int) and code < 0 else ""
            err = f"the test harness was killed before it reported{how}; the solution scores 0"
            return report("error", all_failed("crash", err), err)
        if verdict.get("judge_error"):
            err = "the judge failed: " + str(verdict["judge_error"])
            return report("sandbox_error", all_failed("not_run", err), err)
        if verdict.get("load_error"):
            err = TRACED_ERROR if reply.get("traced") else str(verdict["load_error"])
            kind = str(verdict.get("load_kind") or "error")
            kind = kind if kind in ("error", "timeout", "oom") else "error"
            return report(kind, all_failed("not_run", err), _short(err, 2000))
        raw = verdict.get("results")
        raw = raw if isinstance(raw, list) else []
        results: list[TestResult] = []
        for i, name in enumerate(names):
            item = raw[i] if i < len(raw) and isinstance(raw[i], dict) else None
            results.append(self._judge_one(name, item))
        statuses = {r.status for r in results}
        for special in ("timeout", "oom"):
            if special in statuses:
                return report(special, results, f"a test hit the {special} limit")
        if "crash" in statuses and not any(r.passed for r in results):
            return report("error", results, "the solution process died during the tests")
        return report("ok", results)

    @staticmethod
    def _judge_one(name: str, item: dict[str, Any] | None) -> TestResult:
        if item is None:
            return TestResult(name, False, "not_run", "no verdict for this test")
        status = str(item.get("status", ""))
        if status == "compare":
            try:
                try:
                    left, right, same = _compare(item)
                except RecursionError:  # the caller's stack is deep: again on a fresh one
                    left, right, same = frames._on_fresh_stack(_compare, item)
            except (ValueError, RecursionError, TypeError) as e:
                return TestResult(name, False, "error", _short(f"malformed result: {e}"))
            if same:
                return TestResult(name, True, "pass", "")
            return TestResult(
                name,
                False,
                "fail",
                _short(f"expected {codec.safe_repr(right)}, got {codec.safe_repr(left)}"),
            )
        if status == "pass":
            return TestResult(name, True, "pass", "")
        known = ("fail", "error", "timeout", "oom", "crash")
        return TestResult(
            name,
            False,
            status if status in known else "error",
            _short(str(item.get("message", ""))),
        )

    def map_tests(
        self,
        jobs: Iterable[Sequence[Any] | dict[str, Any]],
        *,
        timeout: float | None = None,
        trusted_tests: bool = False,
    ) -> list[TestReport]:
        """Run many test jobs at once on all workers; results in input order.

        Each job is ``(code, tests)``, ``(code, tests, entry_point)`` or a dict
        with those keys (and optionally ``task_code``); ``trusted_tests`` as in
        :meth:`run_tests`. Malformed tests raise before anything runs; after
        that, one job's failure is that job's ``sandbox_error`` report and never
        changes the others' reports.

        >>> with make_sandbox("local") as sb:  # doctest: +SKIP
        ...     reps = sb.map_tests([("def f(): return 1", ["assert f() == 1"])])
        >>> reps[0].passed  # doctest: +SKIP
        1
        """
        parsed: list[tuple[str, Any, str | None, str | None]] = []
        for i, job in enumerate(jobs):
            if isinstance(job, dict):
                parsed.append(
                    (job["code"], job["tests"], job.get("entry_point"), job.get("task_code"))
                )
            elif isinstance(job, (tuple, list)) and len(job) in (2, 3):
                parsed.append((job[0], job[1], job[2] if len(job) == 3 else None, None))
            else:
                raise TypeError(
                    f"job {i} must be (code, tests[, entry_point]) or a dict, got {job!r:.80}"
                )
            parse_tests(parsed[-1][1], parsed[-1][2])  # a task bug raises now, not mid-batch
        if not parsed:
            return []

        def one(code: str, tests: Any, entry: str | None, task: str | None) -> TestReport:
            try:
                return self.run_tests(
                    code, tests, entry, timeout=timeout, trusted_tests=trusted_tests, task_code=task
                )
            except Exception as e:  # this job's failure only
                spec = parse_tests(tests, entry)
                err = _short(f"the sandbox failed on this job: {type(e).__name__}: {e}")
                return self._report(spec, {"status": "sandbox_error", "error": err})

        with ThreadPoolExecutor(max_workers=min(self.workers, len(parsed))) as pool:
            return list(pool.map(lambda job: one(*job), parsed))

    def map_run(self, codes: Iterable[str], *, timeout: float | None = None) -> list[ExecResult]:
        """Run many programs at once on all workers; results in input order."""
        items = list(codes)
        if not items:
            return []
        with ThreadPoolExecutor(max_workers=min(self.workers, len(items))) as pool:
            return list(pool.map(lambda c: self.run(c, timeout=timeout), items))

    def process_count(self) -> int:
        """Processes left in idle workers besides their own supervisors (0 when clean)."""
        total = 0
        workers: list[Worker] = []
        while True:
            try:
                workers.append(self._idle.get_nowait())
            except queue.Empty:
                break
        try:
            for w in workers:
                if w.alive:
                    total += int(w.request({"op": "ping"}, 10.0).get("procs", 0))
        finally:
            for w in workers:
                self._idle.put(w)
        return total

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (a closed sandbox refuses new runs)."""
        return self._closed

    def close(self) -> None:
        """Stop every worker and free its resources (idempotent)."""
        self._closed = True
        if os.getpid() == self._pid:
            Sandbox._finalize(self._all, self._pid)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(workers={self.workers}, limits={self.limits})"
