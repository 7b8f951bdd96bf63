"""Between runs: remove everything a run left before the next job is read.

The helpers find and wait for a run's processes (pidfds) and empty its scratch
directory in linear time; :class:`RunCleanup` is the part of
:class:`.zygote.Zygote` that uses them after each run: it kills the run's
processes, removes its files and IPC objects, and puts back the ``/proc``
settings a run can change (:mod:`.procstate`).
"""

from __future__ import annotations

import os
import select
import signal
import time

from .procs import _libc, read_proc
from .procstate import reset_proc_state

# typing is never imported in the sandbox (start-up time): mypy reads this name as True
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .forkserver import ForkServerLink
    from .spares import Spare

# Seconds the between-run delete may take; past it the worker retires (its next job
# is answered "retire" and the host runs that job on a fresh worker).
CLEANUP_BUDGET = 1.0


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


def _open_dir(name: str, dir_fd: int | None = None) -> int | None:
    try:
        return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
    except OSError:
        return None


def empty_directory(root: str, budget: float = 2.0) -> bool:
    """Remove everything under ``root``; True when done, False past ``budget`` seconds.

    Never raises, never recurses, and costs time linear in the tree: each
    directory is listed once (its files removed then, its subdirectories kept
    in a list), so a run that leaves 20,000 empty siblings costs 20,000
    removals, not a re-listing of the parent after each. The walk holds one
    descriptor at a time: down into a subdirectory by name and back up through
    ``..``, so a 3,000-level chain costs no recursion, no long paths and no
    descriptor per level (a run's processes are all gone by then, so nothing
    moves under it). Modes a run set (``chmod 0``) are undone; a directory that
    still cannot be emptied or removed is left in place. Past ``budget`` the
    walk stops: the caller retires the worker instead of making the next run wait.
    """
    deadline = time.monotonic() + budget
    cur = _open_dir(root)
    if cur is None:
        return True
    # One entry per level from root down to ``cur``: (name of ``cur`` in its parent,
    # the subdirectories of ``cur`` still to visit).
    try:
        top = _list_and_unlink(cur, deadline)
    except TimeoutError:
        os.close(cur)
        return False
    stack: list[tuple[str, list[str]]] = [("", top)]
    steps = 0
    try:
        while True:
            steps += 1
            if steps & 255 == 0 and time.monotonic() > deadline:
                return False
            _, todo = stack[-1]
            if todo:
                down = todo.pop()
                _unlock(cur, down)
                child = _open_dir(down, cur)
                if child is None:
                    continue  # left in place
                os.close(cur)
                cur = child
                stack.append((down, _list_and_unlink(cur, deadline)))
                continue
            if len(stack) == 1:  # back at the root, and nothing left to go into
                return time.monotonic() <= deadline
            parent = _open_dir("..", cur)
            if parent is None:
                return False
            os.close(cur)
            cur = parent
            name, _ = stack.pop()
            try:
                os.rmdir(name, dir_fd=cur)
            except OSError:
                pass
    except BaseException:
        return False
    finally:
        os.close(cur)


def _list_and_unlink(dir_fd: int, deadline: float) -> list[str]:
    """Remove the non-directories of the open directory ``dir_fd``; its subdirectories.

    Stops unlinking past ``deadline`` (a directory of a million files is bounded too).
    """
    subdirs = []
    for i, (name, is_dir) in enumerate(_entries(dir_fd)):
        if is_dir:
            subdirs.append(name)
            continue
        if i & 255 == 255 and time.monotonic() > deadline:
            raise TimeoutError
        try:
            os.unlink(name, dir_fd=dir_fd)
        except OSError:
            pass
    return subdirs


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
            stat = read_proc(f"/proc/{pid}/task/{tid}/stat")
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


class RunCleanup:
    """The zygote's between-run cleanup (mixed into :class:`.zygote.Zygote`)."""

    if TYPE_CHECKING:  # the zygote's state and helpers this part uses
        config: dict
        tmp_root: str
        pid1: bool
        fs: ForkServerLink
        spare: Spare | None
        server: dict | None
        proc_state: dict[str, bytes]
        retire: bool

        def _kill_pid(self, pid: int | None) -> None: ...
        def _reap(self) -> None: ...
        def _spare_pids(self) -> None: ...
        def _drop_spare(self) -> None: ...
        def _drop_server(self) -> None: ...
        def _intact(self, pid: int | None) -> bool: ...

    def _victims(self) -> list[int]:
        """Every live process of the last run (true zombies are left to their reapers;
        a zombie whose other threads still run is live, see :func:`_has_live_thread`).

        The idle runner and judge of the next run (``self.spare``) are not victims.
        """
        me = os.getpid()
        keep = {me, self.fs.pid}
        if self.spare is not None:
            try:
                self._spare_pids()
                assert self.spare.pids is not None  # _spare_pids set them
                keep.update(p for p in self.spare.pids.values() if self.fs.owns(p))
            except OSError:
                self._drop_spare()
        if self.server is not None and self.server["pid"] and self.fs.owns(self.server["pid"]):
            keep.add(self.server["pid"])
        parent: dict[int, int] = {}
        live: set[int] = set()
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            pid = int(name)
            if self.pid1 and pid in keep:
                continue  # never a victim, and as pid 1 no process's parent is needed
            try:
                stat = read_proc(f"/proc/{pid}/stat")
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
        if self.fs.pid:
            try:
                os.kill(self.fs.pid, signal.SIGCONT)
            except OSError:
                self.fs.pid = None
        self.fs.pump()
        return killed

    def _clean_files(self) -> None:
        for root in [self.tmp_root, *self.config.get("extra_clean", [])]:
            try:
                os.chmod(root, 0o1777 if self.pid1 else 0o700)
            except OSError:
                pass
            if not empty_directory(root, float(self.config.get("cleanup_budget", CLEANUP_BUDGET))):
                self.retire = True  # the next job goes to a fresh worker instead
        self._clean_ipc()

    def _clean_ipc(self) -> None:
        if not self.config.get("clean_ipc"):
            return
        libc = _libc()
        if libc is None:
            return
        ipc_rmid = 0
        for kind, fn, id_col in (("shm", "shmctl", 1), ("sem", "semctl", 1), ("msg", "msgctl", 1)):
            try:
                rows = read_proc(f"/proc/sysvipc/{kind}").splitlines()[1:]
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

    def _prune_pidfds(self) -> None:
        """Close the pidfds of processes that are no longer kept between runs."""
        keep: set[int] = set()
        if self.spare is not None and self.spare.pids:
            keep.update(self.spare.pids.values())
        if self.server is not None and self.server["pid"]:
            keep.add(self.server["pid"])
        self.fs.prune(keep)

    def _reset_proc_state(self) -> None:
        """Undo what a run wrote to the long-lived processes' ``/proc/PID`` files.

        Each setting (:mod:`.procstate`) is put back to the zygote's value at
        start on the zygote, the fork server, the judge server and the next run's
        idle runner and judge (forked while the run went on), once the run's
        processes are gone, before the next job is read.
        """
        pids = ["self", self.fs.pid, self.server["pid"] if self.server else None]
        if self.spare is not None and self.spare.pids:  # forked while the run went on
            pids.extend(self.spare.pids.values())
        reset_proc_state(self.proc_state, pids)

    def _after_run(self) -> None:
        """Kill the run's processes, remove its files, check the judge server.

        When the judge server is gone, a spare requested without one is dropped,
        so the next request brings a new server and the next trusted run uses it.
        """
        self._kill_everything()
        self._clean_files()
        self._reset_proc_state()
        self._prune_pidfds()
        if self.server is not None and self.server["pid"] and not self._intact(self.server["pid"]):
            self._drop_server()
        if (
            self.server is None
            and self.spare is not None
            and "judge-server" not in self.spare.roles
        ):
            self._drop_spare()
            self._kill_everything()
