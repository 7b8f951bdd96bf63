"""Per-worker cgroups: a pids limit (fork/thread bombs), a memory limit, a CPU share.

RLIMIT_NPROC does nothing for a sandbox uid that maps to host root, so the
local backend puts each worker in its own cgroup, created *under the caller's
own cgroup* (so any limit on the caller still applies). cgroup v1 (``pids``
and ``memory`` hierarchies) and v2 (a writable unified hierarchy) are supported.

Example:
    >>> cg = WorkerCgroup.create("doc-example", pids_max=32, memory_bytes=256 << 20)  # doctest: +SKIP
    >>> cg.procs_files  # doctest: +SKIP
    ['/sys/fs/cgroup/pids/flexmg-doc-example/cgroup.procs', ...]
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field

CGROUP_ROOT = "/sys/fs/cgroup"


class CgroupUnavailable(RuntimeError):
    """No writable cgroup with a pids controller here."""


def _own_paths() -> dict[str, str]:
    """Controller -> this process's cgroup path ("" key: the v2 unified path)."""
    out: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, ctrls, path = line.rstrip("\n").split(":", 2)
                for c in ctrls.split(",") if ctrls else [""]:
                    out[c] = path
    except OSError:
        pass
    return out


def _write(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


@dataclass
class WorkerCgroup:
    """The cgroup directories of one sandbox worker."""

    dirs: dict[str, str] = field(default_factory=dict)  # "pids"/"memory"/"unified" -> dir
    version: int = 1

    @property
    def procs_files(self) -> list[str]:
        """Files to write a pid into to put it in this cgroup."""
        return [os.path.join(d, "cgroup.procs") for d in self.dirs.values()]

    @classmethod
    def create(cls, name: str, pids_max: int, memory_bytes: int) -> WorkerCgroup:
        """Create the cgroup(s) named ``flexmg-<name>``; raise :class:`CgroupUnavailable`."""
        own = _own_paths()
        leaf = f"flexmg-{name}"
        errors: list[str] = []
        v1_pids = os.path.join(CGROUP_ROOT, "pids")
        if os.path.isfile(os.path.join(v1_pids, "cgroup.procs")):
            cg = cls(version=1)
            try:
                d = os.path.join(v1_pids + own.get("pids", "/"), leaf)
                os.makedirs(d, exist_ok=True)
                cg.dirs["pids"] = d
                _write(os.path.join(d, "pids.max"), str(pids_max))
                mem_root = os.path.join(CGROUP_ROOT, "memory")
                if os.path.isfile(os.path.join(mem_root, "cgroup.procs")):
                    d = os.path.join(mem_root + own.get("memory", "/"), leaf)
                    os.makedirs(d, exist_ok=True)
                    cg.dirs["memory"] = d
                    _write(os.path.join(d, "memory.limit_in_bytes"), str(memory_bytes))
                    memsw = os.path.join(d, "memory.memsw.limit_in_bytes")
                    if os.path.exists(memsw):
                        try:
                            _write(memsw, str(memory_bytes))
                        except OSError:
                            pass
                cg._add_cpu_group(own, leaf)
                return cg
            except OSError as e:
                cg.remove()
                errors.append(f"cgroup v1 at {v1_pids}: {e}")
        for unified in (CGROUP_ROOT, os.path.join(CGROUP_ROOT, "unified")):
            if not os.path.isfile(os.path.join(unified, "cgroup.controllers")):
                continue
            cg = cls(version=2)
            try:
                parent = unified + own.get("", "/")
                with open(os.path.join(parent, "cgroup.controllers")) as f:
                    if "pids" not in f.read().split():
                        raise OSError(f"the pids controller is not delegated to {parent}")
                d = os.path.join(parent, leaf)
                os.makedirs(d, exist_ok=True)
                cg.dirs["unified"] = d
                _write(os.path.join(d, "pids.max"), str(pids_max))
                try:
                    _write(os.path.join(d, "memory.max"), str(memory_bytes))
                except OSError:
                    pass
                return cg
            except OSError as e:
                cg.remove()
                errors.append(f"cgroup v2 at {unified}: {e}")
        raise CgroupUnavailable(
            "no writable cgroup with a pids controller ("
            + ("; ".join(errors) or f"none mounted under {CGROUP_ROOT}")
            + "); run as root, or delegate a cgroup v2 subtree with the pids controller"
        )

    def _add_cpu_group(self, own: dict[str, str], leaf: str) -> None:
        """A cpu cgroup of its own (v1), where the host allows one.

        The worker then gets an equal CPU share next to the other workers, and
        the scheduler's autogroups (``/proc/PID/autogroup``, which only apply in
        the root cpu group) no longer apply to it: a run that writes ``19``
        there cannot slow the worker down for later runs.
        """
        for ctrl in ("cpu", "cpu,cpuacct"):
            root = os.path.join(CGROUP_ROOT, ctrl)
            if not os.path.isfile(os.path.join(root, "cgroup.procs")):
                continue
            d = os.path.join(root + own.get("cpu", "/"), leaf)
            try:
                os.makedirs(d, exist_ok=True)
            except OSError:
                return
            self.dirs["cpu"] = d
            return

    @property
    def has_cpu_group(self) -> bool:
        """Whether the worker has a cpu cgroup of its own."""
        return "cpu" in self.dirs

    def _read(self, key: str, name: str) -> str:
        d = self.dirs.get(key)
        if not d:
            return ""
        try:
            with open(os.path.join(d, name)) as f:
                return f.read()
        except OSError:
            return ""

    def pids(self) -> list[int]:
        """Pids in the cgroup now."""
        out: set[int] = set()
        for procs in self.procs_files:
            try:
                with open(procs) as f:
                    out.update(int(x) for x in f.read().split())
            except (OSError, ValueError):
                pass
        return sorted(out)

    def oom_kills(self) -> int:
        """How many times the kernel OOM-killed (or refused memory to) a process here."""
        text = self._read("memory", "memory.oom_control") or self._read("unified", "memory.events")
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "oom_kill":
                return int(parts[1])
        return 0

    def kill_all(self) -> None:
        """SIGKILL every process in the cgroup (until it is empty, at most ~2 s)."""
        for _ in range(200):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.01)

    def remove(self) -> None:
        """Kill what is left and remove the cgroup directories."""
        self.kill_all()
        for d in self.dirs.values():
            for _ in range(100):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
        self.dirs.clear()
