"""The judge: runs the tests against a runner, talking plain data only (fresh judge or judge server)."""

from __future__ import annotations

import builtins
import os
import signal
import socket
import sys
import time

from .codec import NotPlainData, decode, encode, encoded_size, safe_repr
from .frames import MAX_FRAME, FrameTimeout, read_frame, write_frame
from .procs import (
    _CATCHABLE,
    PR_SET_DUMPABLE,
    _apply_limits,
    _exc_line,
    _exec_python,
    _flush_stdio,
    _new_group,
    _prctl,
)
from .runner import _MUTABLE, _builtin_exception, _read_job

TYPE_CHECKING = False  # typing is never imported in the sandbox; mypy reads True
if TYPE_CHECKING:
    from typing import Any

_COMPARE_BYTES = 1 << 20  # larger sides of an ``==`` test are compared by the judge itself


class _TestTimeout(Exception):
    pass


class _RunnerDied(Exception):
    pass


class CandidateError(Exception):
    """An exception raised by the solution whose type is not a builtin exception."""


class _Proxy:
    def __init__(self, judge: Judge, name: str) -> None:
        self._judge = judge
        self.__name__ = name

    def __call__(self, *args: object, **kwargs: object) -> object:
        return self._judge.call(self.__name__, args, kwargs)

    def __repr__(self) -> str:
        return f"<solution function {self.__name__}>"


class Judge:
    """Runs test units against a runner process, talking plain data only."""

    def __init__(self, job: dict, config: dict, wfd: int, rfd: int) -> None:
        self.job = job
        self.config = config
        self.wfd: int | None = wfd
        self.rfd: int | None = rfd
        self.runner_pid: int | None = None
        self.test_deadline = 0.0
        self.load_info: dict | None = None
        self.load_error: str | None = None
        self.load_kind = "error"
        self.verdict_budget = MAX_FRAME // 2  # bytes of compared values the verdict may carry
        # the zygote wrote the first runner's job itself, so it loads while we start
        self.preloaded = bool(job.get("runner_preloaded"))

    def call(self, name: str, args: tuple, kwargs: dict) -> object:
        functions: list = []  # the test's functions among the arguments, sent by reference
        try:
            payload = {
                "fn": name,
                "args": encode(list(args), functions),
                "kwargs": encode(dict(kwargs), functions),
            }
        except NotPlainData as e:
            raise TypeError(
                f"the test passes a value that is not plain data to {name}: {e}"
            ) from None
        self._ensure_runner()
        reply = self._ask(payload, functions)
        if "mutable" in reply:
            self._write_back(reply["mutable"], args, kwargs)
        if "ok" in reply:
            return decode(reply["ok"])
        exc_name, msg = str(reply.get("exc")), str(reply.get("msg", ""))
        exc = _builtin_exception(exc_name, msg)
        if exc is not None:
            raise exc
        raise CandidateError(f"{exc_name}: {msg}" if msg else exc_name)

    def _run_test_function(self, request: dict, functions: list) -> dict:
        """Run a function the test passed to the solution, which called it (plain data only)."""
        index = request.get("callback")
        if type(index) is not int or not 0 <= index < len(functions):
            raise self._broken()
        try:
            args = decode(request.get("args"))
            kwargs = decode(request.get("kwargs"))
        except ValueError:
            raise self._broken() from None
        if (
            type(args) is not list
            or type(kwargs) is not dict
            or not all(type(k) is str for k in kwargs)
        ):
            raise self._broken()
        try:
            return {"ok": encode(functions[index](*args, **kwargs), functions)}
        except NotPlainData as e:
            msg = f"the test's function returned a value that is not plain data ({e})"
            return {"exc": "TypeError", "msg": msg}
        except (_TestTimeout, _RunnerDied):
            raise
        except Exception as e:
            return {"exc": type(e).__name__, "msg": str(e)[:2000]}

    def _broken(self) -> _RunnerDied:
        """Kill the runner that broke the protocol; returns the exception to raise."""
        self._kill_runner()
        return _RunnerDied("the solution process broke the call protocol")

    def _write_back(self, changed: object, args: tuple, kwargs: dict) -> None:
        """Apply the call's in-place changes to the test's own argument objects."""
        if not isinstance(changed, dict):
            raise self._broken()
        for key, encoded in changed.items():
            if not isinstance(key, str):
                continue
            target: Any  # and value: one type of _MUTABLE, checked below
            if key.startswith("k:"):
                target = kwargs.get(key[2:])
            elif key.isascii() and key.isdigit() and int(key) < len(args):
                target = args[int(key)]
            else:
                continue
            try:
                value: Any = decode(encoded)
            except ValueError:
                raise self._broken() from None
            if type(target) is not type(value) or type(target) not in _MUTABLE:
                continue
            if isinstance(target, (list, bytearray)):
                target[:] = value
            else:
                target.clear()
                target.update(value)

    def _ask(self, payload: dict, functions: list | None = None) -> dict:
        assert self.wfd is not None and self.rfd is not None  # _ensure_runner just ran
        try:
            write_frame(self.wfd, payload)
            reply = read_frame(self.rfd, self.test_deadline)
            while isinstance(reply, dict) and "callback" in reply:
                answer = self._run_test_function(reply, functions or [])
                write_frame(self.wfd, answer)
                reply = read_frame(self.rfd, self.test_deadline)
        except FrameTimeout:
            self._kill_runner()
            raise _TestTimeout() from None
        except (OSError, ValueError):
            reply = None
        if not isinstance(reply, dict):
            self._kill_runner()
            raise _RunnerDied("the solution process died or broke the call protocol")
        return reply

    def _kill_runner(self) -> None:
        for fd in (self.wfd, self.rfd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.wfd = self.rfd = None
        pid, self.runner_pid = self.runner_pid, None
        if pid:
            for target in (-pid, pid):
                try:
                    os.kill(target, signal.SIGKILL)
                except OSError:
                    pass

    def _ensure_runner(self) -> None:
        if self.wfd is not None and self.load_info is not None:
            return
        if self.wfd is None:
            self._spawn_runner()
            self.preloaded = False
        assert self.wfd is not None and self.rfd is not None  # set as a pair
        reply = None
        try:
            if not self.preloaded:
                write_frame(self.wfd, self.job["runner_job"])
            self.preloaded = False
            reply = read_frame(self.rfd, self.test_deadline)
        except FrameTimeout:
            self._kill_runner()
            self.load_error = "loading the solution took longer than the time limit"
            self.load_kind = "timeout"
            raise _TestTimeout() from None
        except (OSError, ValueError):
            reply = None
        if (
            isinstance(reply, dict)
            and reply.get("loaded") is not None
            and not _load_frame_ok(reply)
        ):
            self._kill_runner()
            self.load_error = "the solution process sent a malformed load frame"
            raise _RunnerDied(self.load_error)
        if not isinstance(reply, dict) or not reply.get("loaded"):
            self._kill_runner()
            if isinstance(reply, dict) and "load_error" in reply:
                self.load_error = "the solution failed to load: " + str(reply["load_error"])
                self.load_kind = "oom" if reply.get("kind") == "oom" else "error"
            else:
                self.load_error = "the solution process exited or died while loading"
            raise _RunnerDied(self.load_error)
        self.load_info = reply

    def _spawn_runner(self) -> None:
        ci_r, ci_w = os.pipe()
        co_r, co_w = os.pipe()
        devnull = os.open(os.devnull, os.O_RDONLY)
        pid = os.fork()
        if pid == 0:
            try:
                _new_group("runner", self.config)
                _exec_python("runner", self.config, [devnull, 1, 2, ci_r, co_w])
            finally:
                os._exit(127)
        for fd in (ci_r, co_w, devnull):
            os.close(fd)
        self.wfd, self.rfd, self.runner_pid = ci_w, co_r, pid

    def run(self) -> dict:
        job = self.job
        start = time.monotonic()
        run_deadline = start + float(job["timeout"])
        test_timeout = float(job["test_timeout"])
        results: list[dict] = []
        ns: dict = {"__builtins__": builtins, "__name__": "__flexmg_tests__"}
        self.test_deadline = min(run_deadline, start + test_timeout)
        try:
            self._ensure_runner()
        except (_TestTimeout, _RunnerDied):
            pass
        if self.load_info is None:
            return {"load_error": self.load_error, "load_kind": self.load_kind, "results": []}
        self._bind_solution(ns)
        setup_error = _exec_task_code(job["task_code"], ns) if job.get("task_code") else None
        defined = self.load_info.get("functions") or ()
        named = job.get("function_name")  # the task names it: bound even if it is a builtin's
        if isinstance(named, str) and named in defined:
            ns[named] = _Proxy(self, named)
        entry = job.get("entry_point")
        if entry:
            if entry not in defined:
                return {
                    "load_error": f"the solution does not define a function named {entry!r}",
                    "load_kind": "error",
                    "results": [],
                }
            ns[entry] = ns[job.get("candidate_name") or "candidate"] = _Proxy(self, entry)
        if job.get("setup"):
            self.test_deadline = min(run_deadline, time.monotonic() + test_timeout)
            try:
                exec(compile(job["setup"], "<tests>", "exec"), ns)  # noqa: S102
            except BaseException as e:
                setup_error = "the test setup failed: " + _exc_line(e)
        for unit in job["units"]:
            now = time.monotonic()
            if setup_error is not None:
                if unit["kind"] == "test":
                    results.append({"status": "error", "message": setup_error})
                continue
            if now >= run_deadline:
                if unit["kind"] == "test":
                    results.append(
                        {"status": "timeout", "message": "not run: the time limit was used up"}
                    )
                continue
            self.test_deadline = min(run_deadline, now + test_timeout)
            outcome = self._run_unit(unit, ns)
            if unit["kind"] == "test":
                results.append(outcome)
            elif outcome["status"] != "pass":
                setup_error = "a setup statement failed: " + outcome["message"]
        return {"results": results, "load_error": None}

    def _comparison(self, left: object, right: object, sides: tuple) -> dict:
        """The outcome of ``assert LEFT == RIGHT`` on plain data, within the verdict's budget.

        Small sides go to the host, which compares them; sides too big for the
        verdict's frame (a solution returning a 36 MiB string) are compared here,
        on plain data, and only a bounded message travels: the run is judged, and
        a wrong huge answer is a failure like any other.
        """
        size = encoded_size(sides[0]) + encoded_size(sides[1])
        if size <= min(_COMPARE_BYTES, self.verdict_budget):
            self.verdict_budget -= size
            return {"status": "compare", "left": sides[0], "right": sides[1]}
        if left == right:
            return {"status": "pass", "message": ""}
        return {"status": "fail", "message": f"expected {safe_repr(right)}, got {safe_repr(left)}"}

    def _bind_solution(self, ns: dict) -> None:
        """Put the solution's functions (as proxies) and stdlib imports into the tests' names.

        Names of builtins are never bound: a solution that defines ``abs`` or
        ``sorted`` changes what its own code computes, never what the tests do.
        """
        info = self.load_info or {}
        for alias, modname in (info.get("modules") or {}).items():
            if _shadows_builtin(alias) or str(modname).split(".")[0] not in sys.stdlib_module_names:
                continue
            try:
                ns[alias] = __import__(modname, fromlist=["_"])
            except BaseException:
                pass
        for name in info.get("functions") or []:
            if not _shadows_builtin(name):
                ns[name] = _Proxy(self, name)

    def _run_unit(self, unit: dict, ns: dict) -> dict:
        try:
            if unit.get("eq"):
                left = eval(compile(unit["eq"][0], "<test>", "eval"), ns)  # noqa: S307
                right = eval(compile(unit["eq"][1], "<test>", "eval"), ns)  # noqa: S307
                try:
                    sides = encode(left), encode(right)
                except NotPlainData:
                    same = bool(left == right)
                    if same:
                        return {"status": "pass", "message": ""}
                    return {"status": "fail", "message": "the two sides differ"}
                return self._comparison(left, right, sides)
            exec(compile(unit["src"], "<test>", "exec"), ns)  # noqa: S102
            return {"status": "pass", "message": ""}
        except _TestTimeout:
            return {"status": "timeout", "message": "the test took longer than its time limit"}
        except _RunnerDied as e:
            return {"status": "crash", "message": str(e)}
        except MemoryError:
            return {"status": "oom", "message": "the solution ran out of memory"}
        except AssertionError as e:
            msg = _exc_line(e)
            return {
                "status": "fail",
                "message": msg if msg != "AssertionError" else "assert failed",
            }
        except RecursionError as e:
            return {"status": "error", "message": _exc_line(e)}
        except BaseException as e:
            return {"status": "error", "message": _exc_line(e)}


def _load_frame_ok(frame: dict) -> bool:
    """The runner's load frame has the shape the judge uses (it is the solution's to forge).

    >>> _load_frame_ok({"loaded": True, "functions": ["f"], "modules": {"m": "math"}})
    True
    >>> _load_frame_ok({"loaded": 1, "functions": 5})
    False
    """
    functions, modules = frame.get("functions"), frame.get("modules", {})
    return (
        frame.get("loaded") is True
        and type(functions) is list
        and all(type(f) is str for f in functions)
        and type(modules) is dict
        and all(type(v) is str for v in modules.values())
    )


def _shadows_builtin(name: object) -> bool:
    """True when ``name`` is a builtin's name (``abs``, ``len``, ``set``, ``__import__``...)."""
    return not isinstance(name, str) or hasattr(builtins, name) or name.startswith("__")


def _exec_task_code(code: str, ns: dict) -> str | None:
    """Run the task's own code (its prompt: imports and helpers) in the tests' names.

    The task is trusted: the helpers it defines are the task's, whatever the
    solution redefined. Returns an error line when the task's code fails.
    """
    try:
        exec(compile(code, "<task>", "exec"), ns)  # noqa: S102 - trusted task text
    except BaseException as e:
        return "the task's own code failed: " + _exc_line(e)
    return None


def _judge_job(job: dict, config: dict, wfd: int, rfd: int, verdict_fd: int) -> Judge | None:
    """Run one test job against the runner on (``wfd``, ``rfd``); write the verdict.

    Returns the :class:`Judge` (its ``wfd``/``rfd`` are the runner pipes still
    open), or None when it could not be built.
    """
    try:
        os.chdir(job["runner_job"]["workdir"])
    except (OSError, KeyError, TypeError):
        pass
    judge = None
    try:
        judge = Judge(job, config, wfd, rfd)
        verdict = judge.run()
    except BaseException as e:
        verdict = {"judge_error": _exc_line(e), "results": []}
    _flush_stdio()
    try:
        write_frame(verdict_fd, verdict)
    except BaseException:
        pass
    return judge


def judge_main(config: dict) -> None:
    """fds: 0 null, 1/2 captured output, 3 job in, 4 verdict out, 5 runner in, 6 runner out."""
    job = _read_job(3)
    if job is None:
        os._exit(0)
    _apply_limits(job.get("judge_limits") or {})
    sys.setrecursionlimit(10_000)
    _judge_job(job, config, 5, 6, 4)
    os._exit(0)


def judge_server_main(config: dict) -> None:
    """A judge that serves many runs whose tests are trusted (the task's own tests).

    fd 3: a unix socket from the zygote. Each job arrives as fds (job pipe,
    stdout, stderr, runner in, runner out, verdict out) plus the job on its pipe;
    the tests run against that run's fresh runner exactly as in a fresh judge.
    Keeping one judge saves a process per run. Only trusted tests come here:
    they could change this process for later runs, which an agent's tests
    must not (those get a fresh judge). The runner still reaches it only by
    plain data and signals: every catchable signal is ignored, and the zygote
    replaces a judge server that was killed, stopped or did not finish a job.
    """
    _prctl(PR_SET_DUMPABLE, 0)
    for sig in _CATCHABLE:
        if sig != signal.SIGCHLD:
            try:
                signal.signal(sig, signal.SIG_IGN)
            except (OSError, ValueError, RuntimeError):
                pass
    sock = socket.socket(fileno=3)
    devnull = os.open(os.devnull, os.O_RDWR)
    sys.setrecursionlimit(10_000)
    limited = False
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(sock, 16, 8)
        except OSError:
            os._exit(0)
        if not msg or len(fds) != 6:
            os._exit(0)
        while True:  # runners this judge restarted in an earlier job (killed by the zygote)
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break
        job_r, out_w, err_w, ci_w, co_r, jo_w = fds
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.close(out_w)
        os.close(err_w)
        job = _read_job(job_r)
        os.close(job_r)
        judge = None
        if job is not None:
            if not limited:  # no CPU limit: it would add up over runs (the zygote has a deadline)
                _apply_limits({**(job.get("judge_limits") or {}), "cpu_seconds": 0})
                limited = True
            judge = _judge_job(job, config, ci_w, co_r, jo_w)
        for fd in {jo_w, *((judge.wfd, judge.rfd) if judge is not None else (ci_w, co_r))}:
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.chdir("/")
