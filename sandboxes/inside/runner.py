"""The runner: runs the untrusted code (``exec`` mode) or loads it and serves calls (``serve`` mode)."""

from __future__ import annotations

import builtins
import os
import sys
import types
from collections.abc import Callable

from .codec import NotPlainData, decode, encode
from .frames import read_frame, write_frame
from .procs import (
    PR_SET_DUMPABLE,
    _apply_limits,
    _exc_line,
    _flush_stdio,
    _format_exc,
    _own_session,
    _prctl,
)

TYPE_CHECKING = False  # typing is never imported in the sandbox; mypy reads True
if TYPE_CHECKING:
    from typing import Any


def _read_job(fd: int) -> dict | None:
    """The job frame on ``fd``, or None (EOF, garbage, not a dict)."""
    try:
        job = read_frame(fd)
    except Exception:
        return None
    return job if isinstance(job, dict) else None


def runner_main(config: dict) -> None:
    """fds: 0 stdin, 1 stdout, 2 stderr, 3 job/calls in, 4 replies out.

    ``sys.std*`` and ``os.environ`` are already set up by the fork server (or
    the exec path in :func:`_main`).
    """
    job = _read_job(3)
    if job is None:
        os._exit(0)
    _own_session()  # only now: an idle runner's autogroup is the worker's, not the next run's
    # Untrusted anyway. Dumpable, its /proc/self files are its own uid's, not root's: it
    # can read them, and _apply_limits can raise its oom_score_adj (the run is the OOM
    # killer's first choice) also where the worker runs as an unprivileged uid (a uid
    # per worker, docker), where a non-dumpable process cannot open that file.
    _prctl(PR_SET_DUMPABLE, 1)
    _apply_limits(job.get("limits") or {})
    try:
        os.chdir(job["workdir"])
    except OSError:
        pass
    os.environ["HOME"] = job["workdir"]
    if job.get("mode") == "serve":
        _runner_serve(job)
    else:
        _runner_exec(job)


def _runner_exec(job: dict) -> None:
    ns = {"__name__": "__main__", "__builtins__": builtins}
    code = job["code"]
    rc = 0
    try:
        exec(compile(code, "<solution>", "exec"), ns)  # noqa: S102 - this is the sandbox
    except SystemExit as e:
        rc = _exit_code(e)
    except MemoryError as e:
        _note(b"M")
        sys.stderr.write(_format_exc(e))
        rc = 1
    except BaseException as e:
        sys.stderr.write(_format_exc(e))
        rc = 1
    try:
        threading = sys.modules.get("threading")
        if threading is not None:
            threading._shutdown()  # wait for non-daemon threads, as python does
    except BaseException:
        pass
    _flush_stdio()
    os._exit(rc)


def _note(tag: bytes) -> None:
    try:
        os.write(4, tag)
    except OSError:
        pass


def _exit_code(e: SystemExit) -> int:
    code = e.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write(f"{code}\n")
    except BaseException:
        pass
    return 1


def _runner_serve(job: dict) -> None:
    ns: dict = {"__name__": "__main__", "__builtins__": builtins}
    try:
        exec(compile(job["code"], "<solution>", "exec"), ns)  # noqa: S102
    except BaseException as e:
        sys.stderr.write(_format_exc(e))
        _flush_stdio()
        kind = "oom" if isinstance(e, MemoryError) else "error"
        try:
            write_frame(4, {"load_error": _exc_line(e), "kind": kind})
        except BaseException:
            pass
        os._exit(1)
    functions = sorted(
        k
        for k, v in list(ns.items())
        if isinstance(k, str) and callable(v) and not isinstance(v, types.ModuleType)
    )
    modules = {
        k: v.__name__
        for k, v in list(ns.items())
        if isinstance(k, str) and isinstance(v, types.ModuleType)
    }
    _SOLUTION[:] = [ns]
    _flush_stdio()
    write_frame(4, {"loaded": True, "functions": functions, "modules": modules})
    while True:
        req = _next_frame()
        write_frame(4, _serve_request(ns, req))


def _next_frame() -> dict:
    """The judge's next frame (a call, or the answer to a callback); exits when it is gone."""
    try:
        frame = read_frame(3)
    except Exception:
        frame = None
    if not isinstance(frame, dict):
        os._exit(0)
    return frame


def _serve_request(ns: dict, req: dict) -> dict:
    """Run one call of the solution for the judge; returns the reply frame."""
    args: Any = []  # decoded from the judge's frame: any plain data
    kwargs: Any = {}
    try:
        fn = ns[req["fn"]]
        args = decode(req["args"], _test_function)
        kwargs = decode(req["kwargs"], _test_function)
        result = fn(*args, **kwargs)
        try:
            reply = {"ok": encode(result)}
        except NotPlainData as e:
            reply = {
                "exc": "TypeError",
                "msg": f"the solution returned a value that is not plain data ({e})",
            }
    except MemoryError:
        reply = {"exc": "MemoryError", "msg": "out of memory"}
    except BaseException as e:
        try:
            msg = str(e)[:2000]
        except BaseException:
            msg = ""
        reply = {"exc": type(e).__name__, "msg": msg}
    try:
        changed = _mutable_arguments(args, kwargs)
    except BaseException:  # e.g. MemoryError, or a recursion in a self-containing list
        changed = {}
    if changed:
        reply["mutable"] = changed
    _flush_stdio()
    return reply


def _builtin_exception(name: str, msg: str) -> Exception | None:
    """``name(msg)`` when ``name`` is a builtin exception that takes one message, else None."""
    cls = getattr(builtins, name, None)
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        return None
    try:
        return cls(msg)
    except Exception:  # e.g. UnicodeDecodeError needs five arguments
        return None


_SOLUTION: list[dict] = []  # the loaded solution's namespace (for calls nested in callbacks)


def _test_function(index: int) -> Callable[..., object]:
    """A stand-in for a function the test passed: calling it asks the judge to run it."""

    def call_test_function(*args: object, **kwargs: object) -> object:
        try:
            frame = {"callback": index, "args": encode(list(args)), "kwargs": encode(dict(kwargs))}
        except NotPlainData as e:
            raise TypeError(
                f"a value passed to the test's function is not plain data ({e})"
            ) from None
        _flush_stdio()
        write_frame(4, frame)
        while True:
            reply = _next_frame()
            if "fn" in reply:  # the test's function calls the solution in turn
                write_frame(4, _serve_request(_SOLUTION[0], reply))
                continue
            break
        if "ok" in reply:
            return decode(reply["ok"], _test_function)
        name, msg = str(reply.get("exc")), str(reply.get("msg", ""))
        exc = _builtin_exception(name, msg)
        if exc is not None:
            raise exc
        raise RuntimeError(f"the test's function raised {name}: {msg}")

    call_test_function.__name__ = call_test_function.__qualname__ = f"test_function_{index}"
    return call_test_function


_MUTABLE = (list, dict, set, bytearray)


def _mutable_arguments(args: object, kwargs: object) -> dict:
    """The final state of the call's list/dict/set/bytearray arguments, encoded.

    Keys are positions (``"0"``, ``"1"``, ...) and keyword names (``"k:name"``).
    The judge writes them back into its own objects, so a test sees the call's
    in-place changes as it would in one process. Arguments that no longer hold
    plain data are left out (the judge keeps its copy).
    """
    out: dict = {}
    items = list(enumerate(args)) if type(args) is list else []
    named = list(kwargs.items()) if type(kwargs) is dict else []
    for key, value in [(str(i), v) for i, v in items] + [(f"k:{k}", v) for k, v in named]:
        if type(value) in _MUTABLE:
            try:
                out[key] = encode(value)
            except NotPlainData:
                pass
    return out
