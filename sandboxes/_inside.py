"""The program that runs *inside* a sandbox (standard library only).

This file is shipped as text: the host starts ``python -I -S -c BOOT SOURCE ROLE CONFIG``
where ``SOURCE`` is this file, so it must not import flexmg. The host also imports
it as a module to reuse the codec and framing.

Processes inside one sandbox (one "worker"):

* **zygote** (pid 1 of the sandbox's pid namespace, or a subreaper without one):
  reads jobs from the host on fd 0, answers on fd 1, enforces the wall-clock
  deadline and output caps. Right after each reply (before it reads the next
  job) it kills every other process of the run, waiting for them on pidfds,
  and empties the scratch directory and System V / POSIX IPC.
* **fork server**: a pristine interpreter that never sees job data; it forks
  fresh runners and judges on request, which makes a run cost a fork instead of
  an interpreter start. The next run's idle runner and judge are requested as
  soon as a run has its job, so their start overlaps the run; they are checked
  (alive, not stopped, children of the fork server) before they are used.
* **runner**: runs the untrusted code. ``exec`` mode runs a program; ``serve``
  mode loads the solution then answers calls ``fn(*args)`` with plain data.
* **judge**: runs the tests with every solution function replaced by a proxy that
  calls into the runner. The judge only ever sees plain data (numbers, str, bool,
  None, bytes and list/tuple/dict/set of those), so ``__eq__`` spoofing, printed
  fake results, ``os._exit(0)`` and friends cannot make a test pass. The runner
  holds no channel to the zygote, and the judge, zygote and fork server are
  non-dumpable (no ptrace, no /proc/PID/mem from the runner).

Example (the codec, on the host):
    >>> decode(encode({"a": (1, 2.5, None), "b": {3, 4}})) == {"a": (1, 2.5, None), "b": {3, 4}}
    True
"""

from __future__ import annotations

import builtins
import json
import os
import select
import signal
import socket
import struct
import sys
import time
import traceback
import types
from collections.abc import Callable

MAX_FRAME = 64 << 20
_COMPARE_BYTES = 1 << 20  # larger sides of an ``==`` test are compared by the judge itself
_MAX_ITEMS = 1_000_000
_MAX_DEPTH = 200
_BIG_INT = 1 << 4000
PR_SET_DUMPABLE = 4
PR_SET_NAME = 15
PR_SET_CHILD_SUBREAPER = 36

# --------------------------------------------------------------------------- codec


class NotPlainData(TypeError):
    """A value is not plain data (numbers, str, bool, None, bytes, containers of those)."""


def encode(value: object, functions: list | None = None) -> object:
    """Plain data -> a JSON-able tagged form (containers become ``[tag, ...]`` lists).

    With ``functions`` (the judge's side only), a callable is appended to it and
    sent as a reference ``["F", index]``: the solution can call it back, never see it.

    >>> encode([1, (2, "x")])
    ['l', 1, ['t', 2, 'x']]
    >>> fns = []
    >>> encode([len], fns), fns == [len]
    (['l', ['F', 0]], True)
    """
    budget = [_MAX_ITEMS]
    return _enc(value, 0, budget, functions)


def _enc(v: object, depth: int, budget: list[int], fns: list | None = None) -> object:
    budget[0] -= 1
    if budget[0] < 0:
        raise NotPlainData("value too large (more than 1,000,000 items)")
    if depth > _MAX_DEPTH:
        raise NotPlainData("value nested too deeply (or contains itself)")
    t = type(v)
    if v is None or t is bool or t is str or t is float:
        return v
    if t is int:
        return ["x", hex(v)] if abs(v) >= _BIG_INT else v
    d = depth + 1
    if t is list:
        return ["l", *(_enc(x, d, budget, fns) for x in v)]
    if t is tuple:
        return ["t", *(_enc(x, d, budget, fns) for x in v)]
    if t is set:
        return ["s", *(_enc(x, d, budget, fns) for x in v)]
    if t is frozenset:
        return ["f", *(_enc(x, d, budget, fns) for x in v)]
    if t is dict:
        return ["d", *([_enc(k, d, budget, fns), _enc(x, d, budget, fns)] for k, x in v.items())]
    if t is bytes:
        return ["b", v.hex()]
    if t is bytearray:
        return ["B", v.hex()]
    if t is complex:
        return ["c", v.real, v.imag]
    if fns is not None and callable(v):
        fns.append(v)
        return ["F", len(fns) - 1]
    raise NotPlainData(f"not plain data: a value of type {t.__name__}")


def decode(obj: object, function: Callable[[int], object] | None = None) -> object:
    """Inverse of :func:`encode`; raises ``ValueError`` on malformed input.

    ``function(index)`` turns a function reference into a callable (the
    runner's side only; elsewhere a reference is malformed input).

    >>> decode(['s', 1, 2]) == {1, 2}
    True
    """
    return _dec(obj, 0, function)


def _dec(o: object, depth: int, fn: Callable[[int], object] | None = None) -> object:
    if depth > _MAX_DEPTH + 2:
        raise ValueError("encoded value nested too deeply")
    t = type(o)
    if o is None or t in (bool, int, float, str):
        return o
    if t is not list or not o or type(o[0]) is not str:
        raise ValueError(f"malformed encoded value of type {t.__name__}")
    tag, rest, d = o[0], o[1:], depth + 1
    try:
        if tag == "l":
            return [_dec(x, d, fn) for x in rest]
        if tag == "t":
            return tuple(_dec(x, d, fn) for x in rest)
        if tag == "s":
            return {_dec(x, d, fn) for x in rest}
        if tag == "f":
            return frozenset(_dec(x, d, fn) for x in rest)
        if tag == "d":
            out = {}
            for pair in rest:
                if type(pair) is not list or len(pair) != 2:
                    raise ValueError("malformed dict item")
                out[_dec(pair[0], d, fn)] = _dec(pair[1], d, fn)
            return out
        if tag == "x" and len(rest) == 1:
            return int(rest[0], 16)
        if tag == "b" and len(rest) == 1:
            return bytes.fromhex(rest[0])
        if tag == "B" and len(rest) == 1:
            return bytearray.fromhex(rest[0])
        if tag == "c" and len(rest) == 2:
            return complex(rest[0], rest[1])
        if tag == "F" and fn is not None and len(rest) == 1 and type(rest[0]) is int:
            return fn(rest[0])
    except TypeError as e:  # e.g. an unhashable key
        raise ValueError(f"malformed encoded value: {e}") from None
    raise ValueError(f"malformed encoded value with tag {tag!r}")


def safe_repr(value: object, limit: int = 140) -> str:
    """A bounded ``repr`` that never raises (huge ints, huge or self-containing values).

    >>> safe_repr(1 << 20000)
    '<int of 20001 bits>'
    >>> len(safe_repr("x" * 10_000)) <= 140
    True
    """
    import reprlib

    class Bounded(reprlib.Repr):
        def repr_int(self, x: int, level: int) -> str:
            if x.bit_length() > 4000:
                return f"<{type(x).__name__} of {x.bit_length()} bits>"
            return super().repr_int(x, level)

    shown = Bounded()
    shown.maxstring = shown.maxother = limit
    shown.maxlong = limit
    try:
        text = shown.repr(value)
    except BaseException:  # e.g. a RecursionError deep inside
        text = f"<{type(value).__name__} that cannot be shown>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def encoded_size(obj: object) -> int:
    """Bytes ``obj`` (an :func:`encode` result) takes in a frame."""
    return len(json.dumps(obj, ensure_ascii=True, allow_nan=True))


# --------------------------------------------------------------------------- framing


def dump_frame(obj: object) -> bytes:
    """A length-prefixed JSON frame (ASCII-only, so any str survives)."""
    data = json.dumps(obj, ensure_ascii=True, allow_nan=True).encode("ascii")
    return struct.pack(">I", len(data)) + data


def parse_frame_body(data: bytes) -> object:
    return json.loads(data.decode("ascii"))


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def write_frame(fd: int, obj: object) -> None:
    write_all(fd, dump_frame(obj))


class FrameTimeout(Exception):
    """No complete frame arrived before the deadline."""


def read_exact(fd: int, n: int, deadline: float | None = None) -> bytes | None:
    """Read exactly ``n`` bytes; None on EOF; :class:`FrameTimeout` past ``deadline``."""
    chunks: list[bytes] = []
    while n > 0:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise FrameTimeout()
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                raise FrameTimeout()
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, deadline: float | None = None) -> object | None:
    head = read_exact(fd, 4, deadline)
    if head is None:
        return None
    (size,) = struct.unpack(">I", head)
    if size > MAX_FRAME:
        raise ValueError(f"frame of {size} bytes is over the {MAX_FRAME} byte limit")
    body = read_exact(fd, size, deadline)
    if body is None:
        return None
    return parse_frame_body(body)


# --------------------------------------------------------------------------- process helpers


_LIBC: list = []  # the C library handle, opened once (children inherit it)


def _prctl(option: int, value: int) -> None:
    try:
        if not _LIBC:
            import ctypes

            _LIBC.append(ctypes.CDLL(None, use_errno=True))
        _LIBC[0].prctl(option, value, 0, 0, 0)
    except Exception:
        pass


def _set_name(name: str) -> None:
    """Name this process (``ps``, ``top`` and profilers show ``flexmg-<role>``)."""
    try:
        if not _LIBC:
            import ctypes

            _LIBC.append(ctypes.CDLL(None, use_errno=True))
        _LIBC[0].prctl(PR_SET_NAME, f"flexmg-{name}"[:15].encode(), 0, 0, 0)
    except Exception:
        pass


def _new_group(role: str) -> None:
    """A runner gets a session of its own (so its own scheduling autogroup: writing
    ``/proc/self/autogroup`` changes only this run); others a process group."""
    try:
        if role == "runner":
            os.setsid()
        else:
            os.setpgid(0, 0)
    except OSError:
        pass


_BASE_LIMITS: list[tuple[int, tuple[int, int]]] = []  # (resource, limits) of a pristine process


def record_base_limits() -> None:
    """Remember this (pristine) process's rlimits; every run starts from them."""
    import resource

    _BASE_LIMITS[:] = []
    for name in sorted(dir(resource)):
        if name.startswith("RLIMIT_"):
            res = getattr(resource, name)
            try:
                _BASE_LIMITS.append((res, resource.getrlimit(res)))
            except (ValueError, OSError):
                pass


def _apply_limits(lim: dict, memory_factor: float = 1.0) -> None:
    import resource

    for res, base in _BASE_LIMITS:  # every run starts from the pristine limits
        try:
            resource.setrlimit(res, base)
        except (ValueError, OSError):
            pass

    def setlim(res: int, value: int) -> None:
        try:
            resource.setrlimit(res, (value, value))
        except (ValueError, OSError):
            pass

    setlim(resource.RLIMIT_CORE, 0)
    if lim.get("memory_bytes"):
        setlim(resource.RLIMIT_AS, int(lim["memory_bytes"] * memory_factor))
    if lim.get("cpu_seconds"):
        setlim(resource.RLIMIT_CPU, int(lim["cpu_seconds"]))
    if lim.get("file_bytes"):
        setlim(resource.RLIMIT_FSIZE, int(lim["file_bytes"]))
    if lim.get("open_files"):
        setlim(resource.RLIMIT_NOFILE, int(lim["open_files"]))
    if lim.get("procs"):
        setlim(resource.RLIMIT_NPROC, int(lim["procs"]))
    try:  # raw fd calls: cheaper in a fresh fork than a Python file object
        fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
        try:
            os.write(fd, b"1000")
        finally:
            os.close(fd)
    except OSError:
        pass


_CATCHABLE = sorted(set(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP})

# Standard-library modules that solutions and tests often import (HumanEval:
# typing in most prompts, then math, random, copy, string, collections, re).
# The fork server imports them once, so a run gets them with its fork instead of
# importing them (typing alone costs a fresh process ~4 ms of CPU).
WARM_MODULES = ("typing", "math", "re", "collections", "random", "string", "copy")


def _reset_signals() -> None:
    for sig in _CATCHABLE:
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError, RuntimeError):
            pass
    # Writing past RLIMIT_FSIZE then fails with EFBIG instead of killing silently.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def _rebind_stdio() -> None:
    sys.stdin = open(0, encoding="utf-8", errors="replace", closefd=False)
    sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)


def _flush_stdio() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


def _format_exc(e: BaseException, skip_frames: int = 1) -> str:
    tb = e.__traceback__
    for _ in range(skip_frames):
        tb = tb.tb_next if tb is not None else None
    try:
        return "".join(traceback.format_exception(type(e), e, tb))
    except BaseException:
        return f"{type(e).__name__}\n"


def _exc_line(e: BaseException) -> str:
    try:
        text = str(e)
    except BaseException:
        text = ""
    text = text[:2000]
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _exec_python(role: str, config: dict, fds: list[int]) -> None:
    """In a forked child: move ``fds`` to 0..n-1 and exec a fresh interpreter in ``role``."""
    _place_fds(fds)
    src = sys.argv[1]
    argv = [sys.executable, "-I", "-S", "-c", BOOT, src, role, json.dumps(config)]
    os.execve(sys.executable, argv, config.get("env") or {})


BOOT = "import sys;exec(compile(sys.argv[1],'<flexmg-sandbox>','exec'))"


def _place_fds(fds: list[int]) -> None:
    import fcntl

    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, len(fds)) for fd in fds]  # all >= n: no clobbering
    for i, fd in enumerate(high):
        os.dup2(fd, i)
    os.closerange(len(fds), 65536)


# --------------------------------------------------------------------------- runner


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
    _apply_limits(job.get("limits") or {})
    _prctl(PR_SET_DUMPABLE, 1)  # untrusted anyway; lets it read its own /proc/self files
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
    args: list = []
    kwargs: dict = {}
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


# --------------------------------------------------------------------------- judge


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
            if key.startswith("k:"):
                target = kwargs.get(key[2:])
            elif key.isascii() and key.isdigit() and int(key) < len(args):
                target = args[int(key)]
            else:
                continue
            try:
                value = decode(encoded)
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
                _new_group("runner")
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


# --------------------------------------------------------------------------- fork server


def forkserver_main(config: dict) -> None:
    """fd 3: a unix socket from the zygote; each message (role, fds) -> one fresh child.

    Signal dispositions are reset here once (children inherit them), so a child
    only has to undo the SIGCHLD handler. Ignoring signals would not protect the
    fork server (a run can always SIGKILL or SIGSTOP it, being the same uid): the
    zygote resumes a stopped fork server and replaces a dead one between runs.
    """
    _prctl(PR_SET_DUMPABLE, 0)
    _set_name("forkserver")
    _reset_signals()
    record_base_limits()
    sock = socket.socket(fileno=3)
    os.chdir("/")
    import fcntl  # noqa: F401 - imported once here, so children start faster
    import gc
    import resource  # noqa: F401

    # Set up once what every child needs: they inherit it through fork. The
    # text streams wrap fds 0-2 (a child's own pipes once it has placed them);
    # the fork server never writes to them, so their buffers stay empty.
    _rebind_stdio()
    os.environ.clear()
    os.environ.update(config.get("env") or {})
    for name in WARM_MODULES:
        try:
            __import__(name)
        except ImportError:
            pass

    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    poller.register(wake_r, select.POLLIN)
    gc.collect()
    gc.freeze()
    while True:
        for fd, _ in poller.poll():
            if fd == wake_r:
                try:
                    while os.read(wake_r, 512):
                        pass
                except OSError:
                    pass
            else:
                _forkserver_spawn(sock, config)
        records = []
        while True:  # report every exit, so the zygote learns statuses of our children
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            kind = _wait_kind(pid, status)
            if kind is not None:
                records.append(struct.pack(">cii", kind, pid, status))
        if records:
            try:
                sock.sendall(b"".join(records))
            except OSError:
                os._exit(0)


def _status_exit_code(status: int) -> int | None:
    """The exit code (negative: killed by that signal) of an exit status, else None."""
    try:
        return os.waitstatus_to_exitcode(status)
    except ValueError:
        return None


def _wait_kind(pid: int, status: int) -> bytes | None:
    """What a waitpid ``status`` of ``pid`` means: b"X" it ended, b"T" it was traced.

    A child that made itself traced (``ptrace(PTRACE_TRACEME)``, where ptrace is
    allowed) reports its stops to its parent, the tracer: it is killed (b"T"),
    and its exit comes later as b"X", like any other. None: nothing to report.
    """
    if os.WIFEXITED(status) or os.WIFSIGNALED(status):
        return b"X"
    if os.WIFSTOPPED(status):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            return None
        return b"T"
    return None


def _forkserver_spawn(sock: socket.socket, config: dict) -> None:
    """One request "role:nfds,role:nfds" with fds: fork one child per role."""
    try:
        msg, fds, _, _ = socket.recv_fds(sock, 256, 64)
    except OSError:
        os._exit(0)
    if not msg:
        os._exit(0)
    records, at = [], 0
    for item in msg.decode().split(","):
        role, n = item.split(":")
        mine = fds[at : at + int(n)]
        at += int(n)
        child = os.fork()
        if child == 0:
            try:
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                _set_name(role)
                sock.close()
                _new_group(role)
                _place_fds(mine)
                {"runner": runner_main, "judge-server": judge_server_main}.get(role, judge_main)(
                    config
                )
            finally:
                os._exit(127)
        records.append(struct.pack(">cii", b"S", child, 0))
    for fd in fds:
        os.close(fd)
    try:
        sock.sendall(b"".join(records))
    except OSError:
        os._exit(0)


# --------------------------------------------------------------------------- zygote


def _pidfd(pid: int) -> int | None:
    """A pidfd of ``pid`` (readable once it has exited), or None (gone / unsupported)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _entries(dir_fd: int) -> list[tuple[str, bool]]:
    """(name, is a directory) of each entry of the open directory ``dir_fd``."""
    try:
        with os.scandir(dir_fd) as it:
            return [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
    except OSError:
        return []


def _unlock(dir_fd: int, name: str) -> None:
    """Give back the owner's rights on directory ``name`` (a run may have chmod-ed it to 0)."""
    try:
        os.chmod(name, 0o700, dir_fd=dir_fd)
    except OSError:
        pass


def _empty_one(root_fd: int, name: str, fresh_name: Callable[[], str]) -> bool:
    """Remove directory ``name`` of ``root_fd``: its files go, its subdirectories move up.

    Returns whether anything was removed or moved.
    """
    try:
        os.rmdir(name, dir_fd=root_fd)
        return True
    except OSError:
        pass
    _unlock(root_fd, name)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=root_fd)
    except OSError:
        return False
    progress = False
    try:
        for inner, is_dir in _entries(fd):
            try:
                if is_dir:
                    _unlock(fd, inner)  # moving a directory rewrites its ".."
                    os.rename(inner, fresh_name(), src_dir_fd=fd, dst_dir_fd=root_fd)
                else:
                    os.unlink(inner, dir_fd=fd)
                progress = True
            except OSError:
                pass
    finally:
        os.close(fd)
    try:
        os.rmdir(name, dir_fd=root_fd)
        return True
    except OSError:
        return progress


def empty_directory(root: str) -> None:
    """Remove everything under ``root``; never raises, never recurses.

    Subdirectories are moved up to ``root`` level one at a time (flattening the
    tree), so a 3,000-level chain costs no recursion, no long paths and two open
    descriptors; modes a run set (``chmod 0``) are undone. It stops when a round
    removes and moves nothing (what is left cannot be removed by this uid).
    """
    try:
        root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return
    counter = [0]

    def fresh_name() -> str:
        counter[0] += 1
        return f".flexmg-flat-{os.getpid()}-{counter[0]}"

    try:
        progress = True
        while progress:
            progress = False
            for name, is_dir in _entries(root_fd):
                if is_dir:
                    progress = _empty_one(root_fd, name, fresh_name) or progress
                else:
                    try:
                        os.unlink(name, dir_fd=root_fd)
                        progress = True
                    except OSError:
                        pass
    except BaseException:
        return
    finally:
        os.close(root_fd)


def _has_live_thread(pid: int) -> bool:
    """True when a zombie-looking ``pid`` still has a running thread.

    A process whose main thread ended with a raw ``exit`` syscall while another
    thread runs shows state ``Z`` in ``/proc/PID/stat``, yet it lives on: a
    cleanup that skipped zombies would leave it in the worker.
    """
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", "rb") as f:
                stat = f.read()
            if stat[stat.rindex(b")") + 2 :][:1] not in (b"Z", b"X"):
                return True
        except (OSError, ValueError):
            continue
    return False


def _wait_exits(handles: list[int | None], timeout: float = 2.0) -> None:
    """Block until every pidfd in ``handles`` is readable (its process has exited).

    Sleeping on the pidfds instead of polling ``/proc`` keeps the zygote off the
    CPU while the kernel tears the killed processes down. Without pidfds (old
    kernels) it sleeps briefly; the caller rescans ``/proc`` either way.
    """
    fds = [fd for fd in handles if fd is not None]
    if len(fds) < len(handles):
        time.sleep(0.0005)
    deadline = time.monotonic() + timeout
    try:
        poller = select.poll()
        for fd in fds:
            poller.register(fd, select.POLLIN)
        pending = len(fds)
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            for fd, _ in poller.poll(left * 1000):
                poller.unregister(fd)
                pending -= 1
    except (OSError, ValueError):
        return
    finally:
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass


class Zygote:
    """The per-sandbox supervisor (see the module docstring)."""

    def __init__(self, config: dict) -> None:
        self.config = config
        self.tmp_root = config["tmp_root"]
        self.pid1 = os.getpid() == 1
        self.inp = os.dup(0)
        self.out = os.dup(1)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1) if config.get("debug") else (0, 1, 2):
            os.dup2(null, fd)
        os.close(null)
        _prctl(PR_SET_DUMPABLE, 0)
        if not self.pid1:
            _prctl(PR_SET_CHILD_SUBREAPER, 1)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        os.set_blocking(self.wake_r, False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(self.wake_w)
        self.exited: dict[int, int] = {}
        self.traced: set[int] = set()  # processes killed because they made themselves traced
        self.fs_pid: int | None = None
        self.fs_sock: socket.socket | None = None
        self.fs_buf = bytearray()
        self.fs_starts = 0
        self.spawned: list[int] = []
        self.spare: dict | None = None
        self.server: dict | None = None  # the judge server: {"pid", "sock"}
        self.last_untrusted = False  # the last test job's tests were not trusted
        self.dirty = False  # a run's processes and files are still to be removed
        self._start_forkserver()

    # ---- helpers
    def _start_forkserver(self) -> None:
        if self.fs_sock is not None:
            self.fs_sock.close()
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:
            try:
                parent.close()
                _exec_python(
                    "forkserver",
                    self.config,
                    [os.open(os.devnull, os.O_RDWR), 1, 2, child.fileno()],
                )
            finally:
                os._exit(127)
        child.close()
        self.fs_starts += 1
        parent.settimeout(10.0)
        self.fs_pid, self.fs_sock = pid, parent
        self.fs_buf = bytearray()

    def _spawn_request(self, plan: list[tuple[str, list[int]]], restart: bool = True) -> None:
        """Ask the fork server for fresh children, one per (role, fds).

        Their pids arrive later (:meth:`_spawned_pids`), so the zygote goes on
        while the fork server forks. ``restart``: replace a broken fork server
        and retry once (never while untrusted code runs: a freshly exec-ed
        interpreter is dumpable until it makes itself not).
        """
        msg = ",".join(f"{role}:{len(fds)}" for role, fds in plan).encode()
        all_fds = [fd for _, fds in plan for fd in fds]
        for attempt in range(2):
            try:
                self.fs_sock.settimeout(10.0)
                socket.send_fds(self.fs_sock, [msg], all_fds)
                self.spawned = []
                return
            except OSError:
                if attempt or not restart:
                    raise
                self._kill_pid(self.fs_pid)
                self._start_forkserver()

    def _spawned_pids(self, n: int) -> list[int]:
        """Block until the fork server has reported the ``n`` children of the request."""
        while len(self.spawned) < n:
            self._fs_pump(block=True)
        return list(self.spawned[:n])

    def _fs_pump(self, block: bool = False) -> None:
        """Read the fork server's records: spawned pids and exit statuses."""
        if self.fs_sock is None:
            return
        try:
            if not block and not select.select([self.fs_sock], [], [], 0)[0]:
                return
            chunk = self.fs_sock.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            if block:
                raise OSError("the fork server closed its socket")
            return
        self.fs_buf.extend(chunk)
        while len(self.fs_buf) >= 9:
            kind, pid, status = struct.unpack(">cii", bytes(self.fs_buf[:9]))
            del self.fs_buf[:9]
            if kind == b"S":
                self.exited.pop(pid, None)  # an earlier exit record was for an older process
                self.traced.discard(pid)
                self.spawned.append(pid)
            elif kind == b"T":
                self.traced.add(pid)
            else:
                self.exited[pid] = status

    def _kill_pid(self, pid: int | None) -> None:
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if _wait_kind(pid, status) != b"X":
                continue
            self.exited[pid] = status
            if pid == self.fs_pid:
                self.fs_pid = None

    def _drain_wake(self) -> None:
        try:
            while os.read(self.wake_r, 4096):
                pass
        except (BlockingIOError, OSError):
            pass

    # ---- cleanup between runs
    def _victims(self) -> list[int]:
        """Every live process of the last run (true zombies are left to their reapers;
        a zombie whose other threads still run is live, see :func:`_has_live_thread`).

        The idle runner and judge of the next run (``self.spare``) are not victims.
        """
        me = os.getpid()
        keep = {me, self.fs_pid}
        if self.spare is not None:
            try:
                self._spare_pids()
                keep.update(self.spare["pids"].values())
            except OSError:
                self._drop_spare()
        if self.server is not None and self.server["pid"]:
            keep.add(self.server["pid"])
        parent: dict[int, int] = {}
        live: set[int] = set()
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            pid = int(name)
            try:
                with open(f"/proc/{pid}/stat", "rb") as f:
                    stat = f.read()
                fields = stat[stat.rindex(b")") + 2 :].split()
                parent[pid] = int(fields[1])
            except (OSError, ValueError, IndexError):
                continue
            if fields[0] not in (b"Z", b"X") or _has_live_thread(pid):
                live.add(pid)
        if self.pid1:  # the whole pid namespace is ours
            return [pid for pid in live if pid not in keep]
        # A subreaper sees the whole machine: ours are the descendants of the zygote,
        # followed through zombies too (a double fork's grandchild under a dying parent).
        children: dict[int, list[int]] = {}
        for pid, ppid in parent.items():
            children.setdefault(ppid, []).append(pid)
        out, stack = [], list(children.get(me, ()))
        seen = {me}
        while stack:
            pid = stack.pop()
            if pid in seen:
                continue
            seen.add(pid)
            stack.extend(children.get(pid, ()))
            if pid in live and pid not in keep:
                out.append(pid)
        return out

    def _census(self) -> int:
        """Live processes besides the zygote, the fork server and the idle runner/judge."""
        return len(self._victims())

    def _kill_everything(self) -> int:
        killed = 0
        for _ in range(10_000):
            victims = self._victims()
            if not victims:
                break
            handles = []
            for pid in victims:
                handles.append(_pidfd(pid))
                self._kill_pid(pid)
                killed += 1
            _wait_exits(handles)
            self._reap()
        self._reap()
        if self.fs_pid:
            try:
                os.kill(self.fs_pid, signal.SIGCONT)
            except OSError:
                self.fs_pid = None
        self._fs_pump()
        return killed

    def _clean_files(self) -> None:
        for root in [self.tmp_root, *self.config.get("extra_clean", [])]:
            try:
                os.chmod(root, 0o1777 if self.pid1 else 0o700)
            except OSError:
                pass
            empty_directory(root)
        self._clean_ipc()

    def _clean_ipc(self) -> None:
        if not self.config.get("clean_ipc"):
            return
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
        except Exception:
            return
        ipc_rmid = 0
        for kind, fn, id_col in (("shm", "shmctl", 1), ("sem", "semctl", 1), ("msg", "msgctl", 1)):
            try:
                with open(f"/proc/sysvipc/{kind}") as f:
                    rows = f.read().splitlines()[1:]
            except OSError:
                continue
            for row in rows:
                try:
                    ident = int(row.split()[id_col])
                    if kind == "sem":
                        libc.semctl(ident, 0, ipc_rmid)
                    else:
                        getattr(libc, fn)(ident, ipc_rmid, None)
                except (ValueError, IndexError, OSError):
                    pass
        try:
            for name in os.listdir("/dev/mqueue"):
                try:
                    os.unlink(os.path.join("/dev/mqueue", name))
                except OSError:
                    pass
        except OSError:
            pass

    # ---- one job
    def _request_spare(self, restart_forkserver: bool = True) -> None:
        """Ask the fork server for an idle runner (and judges) for the next job.

        ``self.spare`` gets a runner, a fresh judge when the last test job's tests
        were untrusted, and the pipes of the run; a judge server is requested too
        when there is none (:func:`judge_server_main`). They are pristine forks
        that wait on their pipe or socket. The next run's spare is requested as
        soon as a run has been handed its job, so forking and warming up overlap
        the run instead of delaying the next one. Untrusted code that runs
        meanwhile cannot reach them: it holds no end of their pipes, and they are
        non-dumpable (no ptrace, no ``/proc/PID/mem`` or ``fd``); a signal can only
        stop or kill them, which is checked after the run's processes are gone.
        """
        opened: list[int] = []

        def pipe() -> tuple[int, int]:
            r, w = os.pipe()
            opened.extend((r, w))
            return r, w

        server_sock = None
        try:
            out_r, out_w = pipe()
            err_r, err_w = pipe()
            ci_r, ci_w = pipe()
            co_r, co_w = pipe()
            si_r, si_w = pipe()
            jo_r, jo_w = pipe()
            devnull = os.open(os.devnull, os.O_RDWR)
            opened.append(devnull)
            plan = [("runner", [si_r, out_w, err_w, ci_r, co_w])]
            ji_w = None
            if self.last_untrusted:
                ji_r, ji_w = pipe()
                plan.append(("judge", [devnull, out_w, err_w, ji_r, jo_w, ci_w, co_r]))
            if self.server is None:
                server_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
                opened.append(child_sock.detach())
                plan.append(("judge-server", [devnull, devnull, devnull, opened[-1]]))
            self._spawn_request(plan, restart_forkserver)
        except BaseException:
            for fd in opened:
                self._close(fd)
            if server_sock is not None:
                server_sock.close()
            raise
        for fd in opened:
            if fd not in (out_r, err_r, si_w, jo_r, out_w, err_w, ci_w, co_r, jo_w, ji_w):
                self._close(fd)
        roles = [role for role, _ in plan]
        if server_sock is not None:
            self.server = {"pid": None, "sock": server_sock}
        self.spare = {
            "roles": roles,
            "pids": None,
            "runner": None,
            "judge": None,
            # the zygote's ends
            "out_r": out_r,
            "err_r": err_r,
            "si_w": si_w,
            "jo_r": jo_r,
            "ji_w": ji_w,
            # a judge's ends, kept until the job decides which judge gets them
            "out_w": out_w,
            "err_w": err_w,
            "ci_w": ci_w,
            "co_r": co_r,
            "jo_w": jo_w,
        }

    _SPARE_FDS = (
        "out_r",
        "err_r",
        "si_w",
        "jo_r",
        "ji_w",
        "out_w",
        "err_w",
        "ci_w",
        "co_r",
        "jo_w",
    )

    def _spare_pids(self) -> None:
        """Wait until the fork server has reported the pids of the spare's request."""
        sp = self.spare
        if sp is not None and sp["pids"] is None:
            if self.fs_pid:
                try:  # a run may have stopped it
                    os.kill(self.fs_pid, signal.SIGCONT)
                except OSError:
                    pass
            pids = dict(zip(sp["roles"], self._spawned_pids(len(sp["roles"]))))
            sp["pids"] = pids
            sp["runner"], sp["judge"] = pids["runner"], pids.get("judge")
            if "judge-server" in pids and self.server is not None:
                self.server["pid"] = pids["judge-server"]

    def _intact(self, pid: int | None) -> bool:
        """``pid`` is alive, not stopped, and a child of the fork server.

        Called when no untrusted process exists. SIGCONT first: it resumes a
        stopped process and discards a stop signal still pending.
        """
        if not pid:
            return False
        try:
            os.kill(pid, signal.SIGCONT)
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
            fields = stat[stat.rindex(b")") + 2 :].split()
        except (OSError, ValueError):
            return False
        return fields[0] not in (b"T", b"t", b"Z", b"X") and int(fields[1]) == self.fs_pid

    def _take_spare(self) -> dict:
        """A verified idle runner (and fresh judge, if any) for the job that starts now."""
        for _ in range(3):
            try:
                if self.fs_pid is None:
                    self._drop_spare()
                    self._drop_server()
                    self._start_forkserver()
                if self.spare is None:
                    self._request_spare()
                self._spare_pids()
            except OSError:
                self._drop_spare()
                self._drop_server()
                self._kill_pid(self.fs_pid)
                self._reap()
                self.fs_pid = None
                continue
            sp = self.spare
            if self._intact(sp["runner"]) and (sp["judge"] is None or self._intact(sp["judge"])):
                self.spare = None
                return sp
            self._drop_spare()
            self._kill_everything()
        raise OSError("the fork server could not start a runner and a judge")

    def _drop_spare(self) -> None:
        """Forget the spare; its processes get EOF and become victims of the next cleanup."""
        if self.spare is not None and self.spare["pids"] is None:
            try:
                self._spare_pids()
            except (OSError, ValueError):
                pass
        spare, self.spare = self.spare, None
        if spare:
            for key in self._SPARE_FDS:
                self._close(spare[key])

    def _drop_server(self) -> None:
        """Forget the judge server (it becomes a victim of the next cleanup)."""
        server, self.server = self.server, None
        if server is not None:
            self._kill_pid(server["pid"])
            try:
                server["sock"].close()
            except OSError:
                pass

    def _fresh_judge(self, sp: dict) -> int:
        """Spawn a fresh judge for ``sp`` now (between runs); its pid."""
        ji_r, ji_w = os.pipe()
        devnull = os.open(os.devnull, os.O_RDWR)
        try:
            self._spawn_request(
                [
                    (
                        "judge",
                        [
                            devnull,
                            sp["out_w"],
                            sp["err_w"],
                            ji_r,
                            sp["jo_w"],
                            sp["ci_w"],
                            sp["co_r"],
                        ],
                    )
                ]
            )
            (pid,) = self._spawned_pids(1)
        except BaseException:
            self._close(ji_w)
            raise
        finally:
            self._close(ji_r)
            self._close(devnull)
        sp["ji_w"] = ji_w
        return pid

    def _dispatch_tests(self, sp: dict, job: dict) -> int:
        """Hand a test job to a judge; the judge's pid.

        Tests marked trusted (the task's own tests) go to the judge server, one
        process that serves many runs; other tests (an agent's) get a fresh judge,
        so nothing they do can outlive the run. The judge is chosen (and a fresh
        one spawned) before the runner gets its job: no process is started, and
        the fork server is never restarted, while untrusted code runs.
        """
        trusted = bool(job.get("trusted_tests"))
        self.last_untrusted = not trusted
        use_server = trusted and self.server is not None and self._intact(self.server["pid"])
        if use_server:
            self._kill_pid(sp["judge"])  # a fresh judge planned for untrusted tests
            self._close(sp["ji_w"])
            sp["ji_w"] = None
            judge = self.server["pid"]
        else:
            judge = sp["judge"] if sp["judge"] is not None else self._fresh_judge(sp)
        # The runner gets its job now and loads the solution while the judge starts.
        write_frame(sp["ci_w"], job["runner_job"])
        job = {**job, "runner_preloaded": True}
        if use_server:
            jr, jw = os.pipe()
            try:
                ends = [sp[k] for k in ("out_w", "err_w", "ci_w", "co_r", "jo_w")]
                socket.send_fds(self.server["sock"], [b"J"], [jr, *ends])
            except OSError:
                self._close(jw)
                self._drop_server()
                raise
            finally:
                self._close(jr)
        else:
            jw, sp["ji_w"] = sp["ji_w"], None
        for key in ("out_w", "err_w", "ci_w", "co_r", "jo_w"):
            self._close(sp[key])
            sp[key] = None
        try:
            write_frame(jw, job)
        finally:
            self._close(jw)
        return judge

    def handle(self, job: dict) -> dict:
        # a random name: a run learns nothing (e.g. how many runs came before) from it
        workdir = os.path.join(self.tmp_root, "run-" + os.urandom(8).hex())
        os.mkdir(workdir, 0o700)
        mode = job["mode"]
        cap = int(job["max_output_bytes"])
        runner_job = {
            "mode": "serve" if mode == "tests" else "exec",
            "code": job["code"],
            "workdir": workdir,
            "limits": job["limits"],
        }
        try:
            sp = self._take_spare()
        except OSError as e:
            self._drop_spare()
            self._kill_everything()
            self._clean_files()
            return {"status": "sandbox_error", "error": f"could not start the run: {e}"}
        runner, judge = sp["runner"], None
        stdin_data = b""
        si_w = sp["si_w"]
        t0 = time.monotonic()
        try:
            if mode == "tests":
                self._close(si_w)
                si_w = sp["si_w"] = None
                judge = self._dispatch_tests(sp, {**job, "runner_job": runner_job})
                keep = [sp["out_r"], sp["err_r"], sp["jo_r"]]
            else:
                self._kill_pid(sp["judge"])
                for key in ("ji_w", "jo_r", "out_w", "err_w", "jo_w"):
                    self._close(sp[key])
                write_frame(sp["ci_w"], runner_job)
                self._close(sp["ci_w"])
                keep = [sp["out_r"], sp["err_r"], sp["co_r"]]
                if job.get("stdin") is not None:
                    stdin_data = str(job["stdin"]).encode("utf-8", "surrogatepass")
                    keep.append(si_w)
                else:
                    self._close(si_w)
                    si_w = None
        except OSError as e:
            for key in self._SPARE_FDS:
                self._close(sp[key])
            self._kill_everything()
            self._clean_files()
            return {"status": "sandbox_error", "error": f"could not start the run: {e}"}
        if self.spare is None and self.fs_pid is not None:
            try:  # the next run's spare forks while this run goes on
                self._request_spare(restart_forkserver=False)
            except OSError:
                self._drop_spare()
        verdict_r = sp["jo_r"] if mode == "tests" else None
        res = self._watch(
            job,
            mode,
            t0,
            runner,
            judge,
            sp["out_r"],
            sp["err_r"],
            sp["co_r"],
            verdict_r,
            si_w,
            stdin_data,
            cap,
        )
        for fd in keep:
            self._close(fd)
        if self.server is not None and judge == self.server["pid"] and "verdict" not in res:
            self._drop_server()  # it may still be in the job: start a new one
        # The run's processes are killed and its files removed by serve() right
        # after the reply goes out (off the caller's critical path), always
        # before the next job is read.
        self.dirty = True
        return res

    def _after_run(self) -> None:
        """Kill the run's processes, remove its files, check the judge server."""
        self._kill_everything()
        self._clean_files()
        if self.server is not None and self.server["pid"] and not self._intact(self.server["pid"]):
            self._drop_server()
            self._kill_everything()

    @staticmethod
    def _close(fd: int | None) -> None:
        if fd is None:
            return
        try:
            os.close(fd)
        except OSError:
            pass

    def _watch(
        self, job, mode, t0, runner, judge, out_r, err_r, co_r, verdict_r, si_w, stdin_data, cap
    ) -> dict:
        timeout = float(job["timeout"])
        deadline = t0 + timeout + (float(job.get("grace", 1.0)) if mode == "tests" else 0.0)
        out, err, verdict = bytearray(), bytearray(), bytearray()
        notes = bytearray()
        status = None
        readers = {out_r: out, err_r: err}
        if mode == "exec":
            readers[co_r] = notes
        else:
            readers[verdict_r] = verdict
        open_readers = set(readers)
        stdin_view = memoryview(stdin_data)
        if si_w is not None:
            os.set_blocking(si_w, False)
            if not stdin_view:
                self._close(si_w)
                si_w = None
        poller = select.poll()
        for fd in open_readers:
            poller.register(fd, select.POLLIN)
        poller.register(self.wake_r, select.POLLIN)
        fs_fd = self.fs_sock.fileno() if self.fs_sock is not None else -1
        if fs_fd >= 0:
            poller.register(fs_fd, select.POLLIN)
        if si_w is not None:
            poller.register(si_w, select.POLLOUT)
        end = None
        while True:
            self._reap()
            if mode == "exec" and runner in self.exited:
                end = time.monotonic()
                break
            if mode == "tests" and _frame_complete(verdict):
                end = time.monotonic()
                break
            if mode == "tests" and verdict_r not in open_readers and judge in self.exited:
                end = time.monotonic()
                break
            left = deadline - time.monotonic()
            if left <= 0:
                status = "timeout"
                break
            events = poller.poll(min(left, 1.0) * 1000)
            for fd, ev in events:
                if fd == self.wake_r:
                    self._drain_wake()
                    continue
                if fd == fs_fd:
                    self._fs_pump()
                    if ev & (select.POLLHUP | select.POLLERR):
                        poller.unregister(fs_fd)
                    continue
                if fd == si_w:
                    try:
                        n = os.write(si_w, stdin_view[: 1 << 16])
                        stdin_view = stdin_view[n:]
                    except (BlockingIOError, InterruptedError):
                        continue
                    except OSError:
                        stdin_view = stdin_view[:0]
                    if not stdin_view:
                        poller.unregister(si_w)
                        self._close(si_w)
                        si_w = None
                    continue
                try:
                    chunk = os.read(fd, 1 << 16)
                except OSError:
                    chunk = b""
                if not chunk:
                    poller.unregister(fd)
                    open_readers.discard(fd)
                    continue
                readers[fd].extend(chunk)
                if len(out) + len(err) > cap:
                    status = "output_limit"
                if len(verdict) > MAX_FRAME + 4:  # the solution's doing: a failed run
                    status = "verdict_too_large"
            if status:
                break
        duration = (end or time.monotonic()) - t0
        if si_w is not None:
            self._close(si_w)
        if status is None:  # drain what is already buffered, without waiting
            for fd in list(open_readers):
                if fd == verdict_r:
                    continue
                os.set_blocking(fd, False)
                try:
                    while len(out) + len(err) <= cap:
                        chunk = os.read(fd, 1 << 16)
                        if not chunk:
                            break
                        readers[fd].extend(chunk)
                except OSError:
                    pass
            if len(out) + len(err) > cap:
                status = "output_limit"
        res: dict = {
            "duration": duration,
            "stdout": bytes(out[:cap]).decode("utf-8", "replace"),
            "stderr": bytes(err[: max(0, cap - len(out))]).decode("utf-8", "replace"),
            "truncated": len(out) + len(err) > cap,
        }
        if mode == "exec":
            st = self.exited.get(runner)
            res["status"] = status
            if st is not None:
                res["exit_code"] = _status_exit_code(st)
            res["oom"] = b"M" in notes
            res["traced"] = runner in self.traced
        else:
            res["status"] = status
            if _frame_complete(verdict):
                try:
                    res["verdict"] = parse_frame_body(bytes(verdict[4:]))
                except ValueError:
                    res["verdict"] = None
            st = self.exited.get(judge)
            if st is not None:
                res["judge_exit"] = _status_exit_code(st)
            res["traced"] = runner in self.traced
        return res

    def serve(self) -> None:
        try:
            self._request_spare()
        except OSError:
            self.spare = None
        write_frame(self.out, {"ready": True, "pid": os.getpid(), "python": sys.version})
        while True:
            try:
                job = read_frame(self.inp)
            except (OSError, ValueError):
                job = None
            if not isinstance(job, dict):
                os._exit(0)
            # A process of the last run that the cleanup scan missed (seen under load:
            # a double fork's grandchild absent from the /proc listing for a moment)
            # is killed, and the files it may have written removed, before anything else.
            if self._victims():
                self._kill_everything()
                self._clean_files()
            if job.get("op") == "ping":
                self._reap()
                reply = {"pong": True, "procs": self._census(), "fs_starts": self.fs_starts}
            else:
                self._reap()
                if self.fs_pid is None:
                    self._drop_spare()
                    self._start_forkserver()
                try:
                    reply = self.handle(job)
                except BaseException as e:
                    self._drop_spare()
                    self._kill_everything()
                    self._clean_files()
                    reply = {"status": "sandbox_error", "error": "zygote: " + _exc_line(e)}
            reply["id"] = job.get("id")
            try:
                write_frame(self.out, reply)
            except OSError:
                os._exit(0)
            # Off the caller's critical path: kill the run's processes, remove its
            # files, and start the next run's runner and judge.
            if self.dirty:
                self.dirty = False
                try:
                    self._after_run()
                except BaseException:  # never let a run's leftovers end the worker
                    self._drop_spare()
                    self._drop_server()
            self.exited.clear()
            self.traced.clear()
            if self.spare is None:
                try:
                    if self.fs_pid is None:
                        self._start_forkserver()
                    self._request_spare()  # its pids are read when the next job comes
                except OSError:
                    self.spare = None


def _frame_complete(buf: bytearray) -> bool:
    if len(buf) < 4:
        return False
    (size,) = struct.unpack(">I", bytes(buf[:4]))
    return len(buf) >= 4 + size


PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2


def install_seccomp(program: bytes) -> None:
    """Install a classic BPF seccomp ``program`` on this process and its future children.

    The local backend's bubblewrap installs the filter itself; the docker and
    unsafe backends' zygotes call this before they start anything. Raises
    ``OSError`` when the kernel refuses.
    """
    import ctypes

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    ulong = ctypes.c_ulong
    if libc.prctl(PR_SET_NO_NEW_PRIVS, ulong(1), ulong(0), ulong(0), ulong(0)) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if (
        libc.prctl(
            PR_SET_SECCOMP, ulong(SECCOMP_MODE_FILTER), ctypes.byref(fprog), ulong(0), ulong(0)
        )
        != 0
    ):
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")


def zygote_main(config: dict) -> None:
    if config.get("seccomp"):
        install_seccomp(bytes.fromhex(config["seccomp"]))
    drop = config.get("drop_to_uid")
    if drop is not None and os.getuid() == 0:
        os.setgroups([])
        os.setgid(int(drop))
        os.setuid(int(drop))
    _set_name("zygote")
    cpu = config.get("cpu")
    if cpu is not None:  # this worker's processes share one core (see Sandbox._reserve_cpu)
        try:
            if int(cpu) in os.sched_getaffinity(0):
                os.sched_setaffinity(0, {int(cpu)})
        except (OSError, ValueError, TypeError):
            pass
    Zygote(config).serve()


def _main() -> None:
    role = sys.argv[2]
    config = json.loads(sys.argv[3])
    if role == "zygote":
        zygote_main(config)
    elif role == "forkserver":
        forkserver_main(config)
    elif role == "runner":
        _reset_signals()
        _rebind_stdio()
        runner_main(config)
    else:
        raise SystemExit(f"unknown role {role!r}")


if __name__ == "<flexmg-sandbox>" or (__name__ == "__main__" and len(sys.argv) > 3):
    _main()
