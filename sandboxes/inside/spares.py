"""The next run's idle processes: requested while a run goes on, checked before use.

:class:`Spare` holds one request's processes (an idle runner, a fresh judge when
the last tests were an agent's) and the pipes of that run. :class:`SpareKeeper`
is the part of :class:`.zygote.Zygote` that asks the fork server for them (and
for the judge server), checks they are intact before a job is handed to them,
and drops them when they are not.
"""

from __future__ import annotations

import os
import signal
import socket

from .procs import _dying, _signalled, read_proc

# typing is never imported in the sandbox (start-up time): mypy reads this name as True
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .forkserver import ForkServerLink


class Spare:
    """The next run's idle processes and the pipes of that run: the zygote's ends
    (``out_r``, ``err_r`` the run's output; ``si_w`` the runner's stdin; ``jo_r``
    the verdict; ``ji_w`` a fresh judge's job pipe, if one was forked) and a
    judge's ends, kept until the job decides which judge gets them (``out_w``,
    ``err_w``, ``ci_w``/``co_r`` the runner's calls, ``jo_w`` the verdict).

    A plain class (no ``dataclasses``): every interpreter of the sandbox loads
    this module, and importing ``dataclasses`` would cost each a few ms.
    """

    FDS = ("out_r", "err_r", "si_w", "jo_r", "ji_w", "out_w", "err_w", "ci_w", "co_r", "jo_w")
    if TYPE_CHECKING:  # the FDS (close() sets them to None: never read after)
        out_r: int
        err_r: int
        si_w: int | None
        jo_r: int
        ji_w: int | None
        out_w: int
        err_w: int
        ci_w: int
        co_r: int
        jo_w: int

    def __init__(self, roles: list[str], **fds: int | None) -> None:
        if set(fds) != set(self.FDS):
            raise TypeError(f"Spare needs exactly the descriptors {self.FDS}")
        self.roles = roles
        self.pids: dict[str, int] | None = None  # role -> pid, once the fork server reported
        self.runner: int | None = None
        self.judge: int | None = None
        for name, fd in fds.items():
            setattr(self, name, fd)

    def close(self, *names: str) -> None:
        """Close the descriptors ``names`` (attributes in :data:`FDS`) and forget them."""
        for name in names:
            fd = getattr(self, name)
            setattr(self, name, None)
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass


class SpareKeeper:
    """The zygote's spare runner, judge and judge server (mixed into :class:`.zygote.Zygote`)."""

    if TYPE_CHECKING:  # the zygote's state and helpers this part uses
        fs: ForkServerLink
        spare: Spare | None
        server: dict | None
        last_untrusted: bool

        @staticmethod
        def _close(fd: int | None) -> None: ...
        def _kill_pid(self, pid: int | None) -> None: ...
        def _reap(self) -> None: ...
        def _kill_everything(self) -> int: ...

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
            self.fs.request(plan, restart_forkserver)
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
        self.spare = Spare(
            roles=roles,
            out_r=out_r,
            err_r=err_r,
            si_w=si_w,
            jo_r=jo_r,
            ji_w=ji_w,
            out_w=out_w,
            err_w=err_w,
            ci_w=ci_w,
            co_r=co_r,
            jo_w=jo_w,
        )

    def _spare_pids(self) -> None:
        """Wait until the fork server has reported the pids of the spare's request."""
        sp = self.spare
        if sp is not None and sp.pids is None:
            if self.fs.pid:
                try:  # a run may have stopped it
                    os.kill(self.fs.pid, signal.SIGCONT)
                except OSError:
                    pass
            pids = dict(zip(sp.roles, self.fs.spawned_pids(len(sp.roles))))
            sp.pids = pids
            sp.runner, sp.judge = pids["runner"], pids.get("judge")
            if "judge-server" in pids and self.server is not None:
                self.server["pid"] = pids["judge-server"]

    def _intact(self, pid: int | None) -> bool:
        """``pid`` is alive, not stopped, not dying, has no signal waiting, and a child of the
        fork server.

        Called when no untrusted process exists. SIGCONT first: it resumes a
        stopped process and discards a stop signal still pending. A process a
        run sent SIGKILL may not have been scheduled to die yet (on a loaded
        host, for milliseconds): its state still reads running, so the pending
        SIGKILL and the exiting flag are checked too.
        """
        if not pid or not self.fs.owns(pid):
            return False
        try:
            os.kill(pid, signal.SIGCONT)
            stat = read_proc(f"/proc/{pid}/stat")
            fields = stat[stat.rindex(b")") + 2 :].split()
            status = read_proc(f"/proc/{pid}/status")
        except (OSError, ValueError):
            return False
        return (
            fields[0] not in (b"T", b"t", b"Z", b"X")
            and int(fields[1]) == self.fs.pid
            and not _dying(int(fields[6]), status)
            and not _signalled(status)
        )

    def _take_spare(self) -> Spare:
        """A verified idle runner (and fresh judge, if any) for the job that starts now."""
        for _ in range(3):
            try:
                if self.fs.pid is None:
                    self._drop_spare()
                    self._drop_server()
                    self.fs.start()
                if self.spare is None:
                    self._request_spare()
                self._spare_pids()
            except OSError:
                self._drop_spare()
                self._drop_server()
                self.fs.kill()
                self._reap()
                self.fs.pid = None
                continue
            sp = self.spare
            assert sp is not None  # _request_spare set it
            if self._intact(sp.runner) and (sp.judge is None or self._intact(sp.judge)):
                self.spare = None
                return sp
            self._drop_spare()
            self._kill_everything()
        raise OSError("the fork server could not start a runner and a judge")

    def _drop_spare(self) -> None:
        """Forget the spare; its processes get EOF and become victims of the next cleanup."""
        if self.spare is not None and self.spare.pids is None:
            try:
                self._spare_pids()
            except (OSError, ValueError):
                pass
        spare, self.spare = self.spare, None
        if spare:
            spare.close(*Spare.FDS)

    def _drop_server(self) -> None:
        """Forget the judge server (it becomes a victim of the next cleanup)."""
        server, self.server = self.server, None
        if server is not None:
            self._kill_pid(server["pid"])
            try:
                server["sock"].close()
            except OSError:
                pass
