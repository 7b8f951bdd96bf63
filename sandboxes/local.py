"""The embedded default backend: bubblewrap namespaces + a per-worker cgroup.

Each worker is one ``bwrap`` sandbox: new user, pid, net, ipc, uts, mount and
cgroup namespaces; uid/gid 65534 with no capabilities (bounding set cleared);
``--disable-userns`` (no nested user namespaces); ``--die-with-parent``;
``--new-session``; a cleared environment with an allowlist; read-only binds of
only the interpreter, its shared libraries and the standard library (site-packages
hidden), mounted at ``/opt/python``; a size-limited tmpfs at ``/tmp`` as the only
writable place; ``/dev`` and ``/`` read-only; no network; a seccomp filter
(:mod:`flexmg.sandboxes.seccomp`) on calls like ``ptrace`` and ``bpf``. The zygote runs as pid 1
of the sandbox (signals from inside cannot kill it), kills every process of a run
when it ends and empties ``/tmp`` and IPC before the next one. A cgroup caps the
number of processes and memory; rlimits cap CPU, address space, file size and
open files. As root, each worker's bubblewrap runs as a host uid of its own
(:mod:`flexmg.sandboxes.uids`, started through :mod:`flexmg.sandboxes.dropuid`), so
per-uid kernel quotas a run exhausts are its worker's alone.

Example:
    >>> from flexmg.sandboxes import LocalSandbox
    >>> with LocalSandbox(timeout=2.0) as sb:  # doctest: +SKIP
    ...     sb.run("import os; print(os.getuid())").stdout
    '65534\\n'
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import subprocess
import sys
import uuid
import warnings
from collections.abc import Iterator
from typing import Any

from . import dropuid, seccomp
from .base import Sandbox, SandboxUnavailable
from .cgroups import CgroupUnavailable, WorkerCgroup
from .limits import Limits, cleanup_budget
from .rootfs import Manifest, python_manifest
from .uids import DEFAULT_RANGE, WorkerUid, uid_range
from .worker import PipeWorker, Worker, zygote_argv

SANDBOX_UID = 65534
_CGROUP_EXTRA = 256 << 20  # zygote + judge + tmpfs, on top of the solution's memory


def bwrap_args(m: Manifest, limits: Limits, seccomp_fd: int | None = None) -> list[str]:
    """The bubblewrap options of one worker (everything before the command).

    ``seccomp_fd``: a descriptor holding the BPF filter (:func:`seccomp.filter_fd`),
    passed to the bwrap process, which installs it before starting the command.
    """
    bwrap = shutil.which("bwrap") or "bwrap"
    args = [
        bwrap,
        *(["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else []),
        "--unshare-all",
        "--unshare-user",
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_UID),
        "--disable-userns",
        "--cap-drop",
        "ALL",
        "--die-with-parent",
        "--new-session",
        "--as-pid-1",
        "--hostname",
        "sandbox",
    ]
    for src, dst in m.files:
        args += ["--ro-bind", src, dst]
    src, dst = m.stdlib
    args += ["--ro-bind", src, dst]
    for name in m.skip:
        args += ["--tmpfs", f"{dst}/{name}", "--remount-ro", f"{dst}/{name}"]
    args += [
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--mqueue",
        "/dev/mqueue",
        "--remount-ro",
        "/dev",
        "--perms",
        "1777",
        "--size",
        str(int(limits.tmp_mb) << 20),
        "--tmpfs",
        "/tmp",
        "--remount-ro",
        "/",
        "--chdir",
        "/tmp",
        "--clearenv",
    ]
    for key, value in m.env().items():
        args += ["--setenv", key, value]
    return args


@contextlib.contextmanager
def _seccomp_fd() -> Iterator[int | None]:
    """The filter's descriptor while a bwrap process is started (None: filter off)."""
    if not seccomp.seccomp_enabled():
        yield None
        return
    fd = seccomp.filter_fd()
    try:
        yield fd
    finally:
        os.close(fd)  # the started bwrap process holds its own copy


def _fds(fd: int | None) -> tuple[int, ...]:
    return () if fd is None else (fd,)


@functools.lru_cache(maxsize=1)
def probe_local() -> str | None:
    """None when the local backend works here, else why not (and what to install)."""
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (apt-get install -y bubblewrap)"
    try:
        m = python_manifest()
    except Exception as e:  # pragma: no cover - ldd missing etc.
        return f"could not find this Python's files: {e}"
    with _seccomp_fd() as fd:
        cmd = [
            *bwrap_args(m, Limits(), fd),
            m.python,
            "-I",
            "-S",
            "-c",
            "import os; print(os.getuid())",
        ]
        try:
            out = subprocess.run(
                cmd, capture_output=True, text=True, timeout=30, env={}, pass_fds=_fds(fd)
            )
        except (OSError, subprocess.SubprocessError) as e:
            return f"bwrap could not start: {e}"
    if out.returncode != 0 or out.stdout.strip() != str(SANDBOX_UID):
        seccomp_hint = (
            "; if the kernel has no seccomp, FLEXMG_SANDBOX_SECCOMP=0 runs without the filter"
            if "seccomp" in out.stderr.lower()
            else ""
        )
        return (
            f"bwrap failed (exit {out.returncode}): {out.stderr.strip()[-400:]}; the kernel must allow "
            "user namespaces (sysctl user.max_user_namespaces > 0; on Debian/Ubuntu also "
            f"kernel.unprivileged_userns_clone=1 or run as root){seccomp_hint}"
        )
    if os.geteuid() == 0:
        try:
            cg = WorkerCgroup.create(f"probe-{os.getpid()}-{uuid.uuid4().hex[:6]}", 16, 64 << 20)
            cg.remove()
        except CgroupUnavailable as e:
            return f"running as root, the local backend needs a pids cgroup: {e}"
    return None


def _reveal(m: Manifest) -> list[str]:
    """The host paths bubblewrap binds (made reachable for a worker uid by :mod:`dropuid`)."""
    return [src for src, _ in m.files] + [m.stdlib[0]]


def as_worker_uid(
    argv: list[str], host_uid: int, m: Manifest, cgroup_procs: list[str] | None = None
) -> list[str]:
    """``argv`` run through :mod:`dropuid`: in the worker's cgroups, as ``host_uid``."""
    cfg = {"uid": host_uid, "cgroup_procs": cgroup_procs or [], "reveal": _reveal(m)}
    helper = sys.executable or shutil.which("python3") or "python3"
    return [helper, "-I", "-S", dropuid.__file__, json.dumps(cfg), *argv]


@functools.lru_cache(maxsize=1)
def probe_worker_uids() -> str | None:
    """None when each worker can run as a host uid of its own here, else why not.

    Needs root (the host switches uid) and unprivileged user namespaces (the
    worker's bubblewrap then runs as that uid). ``FLEXMG_SANDBOX_UIDS=off`` (read
    when a sandbox is created) turns the feature off whatever this says.
    """
    if os.geteuid() != 0:
        return "not root: every worker runs as the calling user"
    try:
        rng = uid_range() or DEFAULT_RANGE
    except ValueError as e:
        return str(e)
    if probe_local() is not None:
        return "the local backend does not work here"
    try:
        held = WorkerUid.acquire(*rng)
    except OSError as e:
        return f"no sandbox uid: {e}"
    try:
        m = python_manifest()
        with _seccomp_fd() as fd:
            cmd = [*bwrap_args(m, Limits(), fd), m.python, "-I", "-S", "-c", "print(1)"]
            out = subprocess.run(
                as_worker_uid(cmd, held.uid, m),
                capture_output=True,
                text=True,
                timeout=30,
                env={},
                cwd="/",
                pass_fds=_fds(fd),
            )
    except (OSError, subprocess.SubprocessError) as e:
        return f"could not start bwrap as uid {held.uid}: {e}"
    finally:
        held.release()
    if out.returncode != 0 or out.stdout.strip() != "1":
        return (
            f"bwrap as uid {held.uid} failed (exit {out.returncode}): {out.stderr.strip()[-400:]}"
            "; unprivileged user namespaces must be allowed"
        )
    return None


class CgroupWorker(PipeWorker):
    """A :class:`PipeWorker` whose process tree lives in its own cgroup."""

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        cgroup: WorkerCgroup | None,
        cwd: str | None = None,
        pass_fds: tuple[int, ...] = (),
        host_uid: WorkerUid | None = None,
        manifest: Manifest | None = None,
    ) -> None:
        self.cgroup = cgroup
        self.host_uid = host_uid
        self.oom_seen = cgroup.oom_kills() if cgroup else 0
        if host_uid is not None and manifest is not None:
            procs = cgroup.procs_files if cgroup is not None else []
            argv = as_worker_uid(argv, host_uid.uid, manifest, procs)
            cwd = "/"
        elif cgroup is not None:
            files = cgroup.procs_files
            script = (
                'n=$1; shift; i=0; while [ "$i" -lt "$n" ]; do echo $$ > "$1" || exit 97; '
                'shift; i=$((i+1)); done; exec "$@"'
            )
            argv = ["/bin/sh", "-c", script, "sh", str(len(files)), *files, *argv]
        super().__init__(argv, env, cwd, pass_fds)

    def new_oom_kills(self) -> int:
        if self.cgroup is None:
            return 0
        now = self.cgroup.oom_kills()
        seen, self.oom_seen = self.oom_seen, now
        return now - seen

    def close(self) -> None:
        super().close()
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None
        if self.host_uid is not None:  # every process of the worker is gone now
            self.host_uid.release()
            self.host_uid = None


class LocalSandbox(Sandbox):
    """The bubblewrap backend (the default). See the module docstring.

    Args:
        workers: warm sandboxes run in parallel (default: the usable CPU cores).
        limits: a :class:`Limits`, or pass its fields as keywords (``timeout=2.0``).
    """

    backend = "local"

    def __init__(
        self, *, workers: int | None = None, limits: Limits | None = None, **limit_kwargs: Any
    ) -> None:
        why = probe_local()
        if why is not None:
            raise SandboxUnavailable(f"the local sandbox backend cannot work here: {why}")
        if limits is not None and limit_kwargs:
            raise TypeError("pass either limits=Limits(...) or limit keywords, not both")
        super().__init__(limits or Limits.from_kwargs(**limit_kwargs), workers=workers)
        self._manifest = python_manifest()
        self._use_cgroup = True
        wanted = uid_range()  # ValueError on a malformed FLEXMG_SANDBOX_UIDS
        why_not = probe_worker_uids() if wanted is not None else None
        self._uids = wanted if why_not is None else None
        if why_not is not None:
            warnings.warn(
                f"sandbox workers share the caller's uid (root) and its kernel quotas: {why_not}",
                stacklevel=2,
            )

    def _config(self) -> dict[str, Any]:
        return {
            "tmp_root": "/tmp",
            "env": self._manifest.env(),
            "clean_ipc": True,
            "cleanup_budget": cleanup_budget(),
        }

    def _rlimits(self, limits: Limits) -> dict[str, int]:
        return limits.rlimits(procs=os.geteuid() != 0 and not self._use_cgroup)

    def _start_worker(self, cpu: int | None) -> Worker:
        lim = self.limits
        cgroup = None
        try:
            cgroup = WorkerCgroup.create(
                f"{os.getpid()}-{uuid.uuid4().hex[:10]}",
                pids_max=lim.max_procs,
                memory_bytes=(int(lim.memory_mb) << 20) * 2
                + (int(lim.tmp_mb) << 20)
                + _CGROUP_EXTRA,
            )
        except CgroupUnavailable as e:
            if os.geteuid() == 0:
                raise SandboxUnavailable(str(e)) from None
            self._use_cgroup = False  # unprivileged: RLIMIT_NPROC applies to our own uid
        held: WorkerUid | None = None
        w: CgroupWorker | None = None
        try:
            if self._uids is not None:
                try:
                    held = WorkerUid.acquire(*self._uids)
                except OSError as e:
                    raise SandboxUnavailable(f"no host uid for a sandbox worker: {e}") from None
            with _seccomp_fd() as fd:
                argv = [
                    *bwrap_args(self._manifest, lim, fd),
                    *zygote_argv(
                        self._manifest.python,
                        {**self._config(), "cpu": cpu},
                    ),
                ]
                w = CgroupWorker(
                    argv, {}, cgroup, pass_fds=_fds(fd), host_uid=held, manifest=self._manifest
                )
            w.wait_ready()
        except BaseException:
            if w is not None:
                w.close()  # kills it, removes the cgroup, gives the uid back
            else:
                if cgroup is not None:
                    cgroup.remove()
                if held is not None:
                    held.release()
            raise
        return w

    def _after_reply(self, w: Worker, reply: dict[str, Any]) -> None:
        if isinstance(w, CgroupWorker) and w.new_oom_kills() > 0:
            reply["cgroup_oom"] = True
            verdict = reply.get("verdict")
            if reply.get("status") is None and not isinstance(verdict, dict):
                reply["status"] = "oom_killed"
