"""The ``"unsafe"`` backend: a plain subprocess with rlimits, no namespaces.

Only when asked for by name (``make_sandbox("unsafe")``); it warns. The code
can read the host's files and open sockets. Limits still hold: wall-clock
timeout with the whole process tree killed, CPU/memory/file/fd rlimits, output
caps; a pids/memory cgroup is used when one can be made. The code runs as the
calling user (as root: as root!), so never point it at code you do not trust.
Meant for machines where neither bubblewrap nor Docker works.

Example:
    >>> from flexmg.sandboxes import make_sandbox
    >>> with make_sandbox("unsafe", timeout=2.0) as sb:  # doctest: +SKIP
    ...     sb.run("print(2 * 21)").stdout
    '42\\n'
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import uuid
import warnings
from typing import Any

from . import seccomp
from .base import Sandbox
from .cgroups import CgroupUnavailable, WorkerCgroup
from .inside.cleanup import empty_directory
from .limits import Limits, cleanup_budget
from .local import CgroupWorker
from .rootfs import python_manifest
from .worker import Worker, zygote_argv


def _scratch_parent() -> str | None:
    """Where the workers' scratch directories go: ``/dev/shm`` (memory) when writable.

    A run's files are removed after every run; on a disk file system with
    ``discard`` each removed directory can cost milliseconds (a 3,000-level
    chain: over 10 s, enough to time the next run out), in memory well under one.
    None: the system's temporary directory.
    """
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None


class UnsafeSandboxWarning(UserWarning):
    """The ``unsafe`` backend gives no isolation from the host."""


class UnsafeSandbox(Sandbox):
    """Plain subprocesses with rlimits (no isolation); see the module docstring."""

    backend = "unsafe"

    def __init__(
        self, *, workers: int | None = None, limits: Limits | None = None, **limit_kwargs: Any
    ) -> None:
        warnings.warn(
            "the 'unsafe' sandbox backend does not isolate untrusted code from this machine "
            "(it can read files and use the network); use 'local' or 'docker' for real isolation",
            UnsafeSandboxWarning,
            stacklevel=2,
        )
        if limits is not None and limit_kwargs:
            raise TypeError("pass either limits=Limits(...) or limit keywords, not both")
        super().__init__(limits or Limits.from_kwargs(**limit_kwargs), workers=workers)
        self._python = python_manifest().files[0][0]
        self._dirs: list[tuple[int, str]] = []  # (creating pid, dir)

    def _rlimits(self, limits: Limits) -> dict[str, int]:
        return limits.rlimits(procs=True)

    def _start_worker(self, cpu: int | None) -> Worker:
        tmp = tempfile.mkdtemp(prefix="flexmg-unsafe-", dir=_scratch_parent())
        self._dirs.append((os.getpid(), tmp))
        cgroup = None
        try:
            cgroup = WorkerCgroup.create(
                f"{os.getpid()}-{uuid.uuid4().hex[:10]}",
                pids_max=self.limits.max_procs,
                memory_bytes=(int(self.limits.memory_mb) << 20) * 3 + (256 << 20),
            )
        except CgroupUnavailable:
            cgroup = None
        config = {
            "tmp_root": tmp,
            "cleanup_budget": cleanup_budget(),
            "env": {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": tmp, "TMPDIR": tmp},
            "clean_ipc": False,
            "cpu": cpu,
            "seccomp": seccomp.zygote_filter(),
        }
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
        w = CgroupWorker(zygote_argv(self._python, config), env, cgroup, cwd=tmp)
        try:
            w.wait_ready()
        except BaseException:
            w.close()
            raise
        return w

    def close(self) -> None:
        super().close()
        me = os.getpid()
        for pid, d in self._dirs:
            if pid == me:  # never a directory of the process we were forked from
                empty_directory(d, budget=60.0)  # any depth a run left (no recursion)
                with contextlib.suppress(OSError):
                    os.rmdir(d)
        self._dirs = [(pid, d) for pid, d in self._dirs if pid != me]
