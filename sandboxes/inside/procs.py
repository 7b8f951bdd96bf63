"""Process helpers: names, sessions, rlimits, signals, stdio, exec of a fresh interpreter, seccomp."""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback

PR_SET_DUMPABLE = 4
PR_SET_NAME = 15
PR_SET_CHILD_SUBREAPER = 36


_LIBC: list = []  # the C library handle, opened once (children inherit it)

TYPE_CHECKING = False  # typing is never imported in the sandbox; mypy reads True
if TYPE_CHECKING:
    from typing import Any


def _libc() -> Any:
    """The C library (``ctypes``), loaded once per process; None when it cannot be."""
    if not _LIBC:
        try:
            import ctypes

            _LIBC.append(ctypes.CDLL(None, use_errno=True))
        except Exception:
            return None
    return _LIBC[0]


def _prctl(option: int, value: int) -> None:
    try:
        _libc().prctl(option, value, 0, 0, 0)
    except Exception:
        pass


def _set_name(name: str) -> None:
    """Name this process (``ps``, ``top`` and profilers show ``flexmg-<role>``)."""
    try:
        _libc().prctl(PR_SET_NAME, f"flexmg-{name}"[:15].encode(), 0, 0, 0)
    except Exception:
        pass


def _new_group(role: str, config: dict) -> None:
    """A process group of its own, except for a runner: it starts a session when its
    job comes (:func:`_own_session`), which a group leader cannot, and stays in its
    parent's group until then."""
    if role == "runner":
        return
    try:
        os.setpgid(0, 0)
    except OSError:
        pass


def _own_session() -> None:
    """Start a session, hence a scheduling autogroup, of this run's own (every backend).

    A run can write ``/proc/self/autogroup`` (the nice value of its session's
    autogroup). Were the run in the worker's session, the value would slow, and be
    read back by, every later run (the zygote cannot write it back where it runs as
    an unprivileged uid: its ``/proc`` files belong to root). In a session of its
    own the run's autogroup dies with the run. Inside a cpu cgroup of its own
    (docker, local as root) the autogroup's nice has no effect on scheduling, but
    a later run could still read it. Creating and tearing an autogroup down costs
    ~0.1-0.3 ms of CPU per run. Called when the runner gets its job, not when it
    is forked: an idle runner's session, which a run could reach, is the worker's
    own, never the next run's.
    """
    try:
        os.setsid()
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


def _ignore_signals() -> None:
    """Ignore every catchable signal but SIGCHLD (for the sandbox's long-lived processes).

    A run has the same uid as the zygote, the fork server and the judge server,
    so it can send them any signal: each of them sets its dispositions on start,
    before it serves anything, and only SIGKILL and SIGSTOP remain (the zygote
    checks for those between runs). Python's own SIGINT handler
    (``KeyboardInterrupt``) is replaced too.
    """
    for sig in _CATCHABLE:
        if sig == signal.SIGCHLD:
            continue
        try:
            signal.signal(sig, signal.SIG_IGN)
        except (OSError, ValueError, RuntimeError):
            pass


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


# The modules of this package, in load order (each imports only earlier ones).
MODULES = (
    "codec",
    "frames",
    "procs",
    "procstate",
    "runner",
    "judge",
    "cleanup",
    "forkserver",
    "spares",
    "watch",
    "zygote",
    "main",
)

# ``python -I -S -c BOOT SOURCES ROLE CONFIG``: SOURCES is a JSON list of
# [module, source] pairs (:data:`MODULES` in order); the boot code makes each a
# module of the package ``inside`` (so their relative imports resolve) and
# calls ``inside.main.main()``. Nothing is read from the sandbox's filesystem.
BOOT = (
    "import sys,json,types\n"
    "p=types.ModuleType('inside');p.__path__=[];sys.modules['inside']=p\n"
    "for n,s in json.loads(sys.argv[1]):\n"
    " m=types.ModuleType('inside.'+n);m.__package__='inside';sys.modules['inside.'+n]=m\n"
    " setattr(p,n,m);exec(compile(s,'<flexmg-sandbox '+n+'>','exec'),m.__dict__)\n"
    "sys.modules['inside.main'].main()"
)


def _place_fds(fds: list[int]) -> None:
    import fcntl

    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, len(fds)) for fd in fds]  # all >= n: no clobbering
    for i, fd in enumerate(high):
        os.dup2(fd, i)
    os.closerange(len(fds), 65536)


PF_EXITING = 0x4  # a task's flag (``/proc/PID/stat`` field 9) once it has begun to exit


def read_proc(path: str, size: int = 16384) -> bytes:
    """The contents of a small ``/proc`` file (raw calls: a third of a file object's).

    Raises ``OSError`` like ``open`` would.
    """
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        data = os.read(fd, size)
        if len(data) < size:
            return data
        chunks = [data]
        while True:
            chunk = os.read(fd, size)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def _pending(status: bytes) -> list[int] | None:
    r"""The ``SigPnd`` and ``ShdPnd`` masks of a ``/proc/PID/status`` text; None: unreadable.

    >>> _pending(b"Name:\tx\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000100\n")
    [0, 256]
    """
    masks = []
    for key in (b"\nSigPnd:", b"\nShdPnd:"):
        at = status.find(key)
        if at < 0:
            if status.startswith(key[1:]):
                at = -1
            else:
                continue
        start = at + len(key)
        end = status.find(b"\n", start)
        try:
            masks.append(int(status[start : end if end >= 0 else None].strip(), 16))
        except ValueError:
            return None
    return masks


def _dying(flags: int, status: bytes) -> bool:
    r"""True when a process is on its way out though its state may still read running.

    ``flags`` is field 9 of ``/proc/PID/stat``, ``status`` the text of
    ``/proc/PID/status``: a SIGKILL pending for the process (``ShdPnd``) or its
    main thread (``SigPnd``), or the exiting flag, means it is dying.

    >>> _dying(0, b"SigPnd:\t0000000000000000\nShdPnd:\t0000000000000100\n")
    True
    >>> _dying(0, b"SigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\n")
    False
    """
    if flags & PF_EXITING:
        return True
    masks = _pending(status)
    if masks is None:
        return True  # unreadable: not to be trusted with a run
    kill_bit = 1 << (signal.SIGKILL - 1)
    return any(mask & kill_bit for mask in masks)


def _signalled(status: bytes) -> bool:
    r"""True when a signal other than SIGCONT waits for the process (``/proc/PID/status``).

    An idle runner or judge has nothing to receive: a run that stopped it and
    queued a fatal signal (SIGQUIT, SIGSEGV) would have it die once resumed,
    while loading the next run's code. Such a process is discarded.

    >>> _signalled(b"SigPnd:\t0000000000000000\nShdPnd:\t0000000000020000\n")  # SIGCONT
    False
    >>> _signalled(b"SigPnd:\t0000000000000000\nShdPnd:\t0000000000000004\n")  # SIGQUIT
    True
    """
    masks = _pending(status)
    if masks is None:
        return True
    allowed = 1 << (signal.SIGCONT - 1)
    return any(mask & ~allowed for mask in masks)


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
