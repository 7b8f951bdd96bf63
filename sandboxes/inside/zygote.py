"""The zygote: the per-sandbox supervisor (pid 1 of the sandbox) and its serve loop.

It reads a job, hands it to a verified idle runner (and judge), watches the run to
its end, replies, then removes everything the run left before reading the next job.
The fork server it asks for processes is reached through
:class:`.forkserver.ForkServerLink`; the ``/proc`` settings it puts back after each
run are in :mod:`.procstate`; the process and file cleanup in :mod:`.cleanup`.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import sys
import time

from .cleanup import _has_live_thread, _pidfd, _wait_exits, empty_directory
from .forkserver import ForkServerLink
from .frames import (
    MAX_DEPTH,
    MAX_FRAME,
    _frame_complete,
    _too_deep,
    parse_frame_body,
    read_frame,
    write_frame,
)
from .procs import (
    PR_SET_CHILD_SUBREAPER,
    PR_SET_DUMPABLE,
    _dying,
    _exc_line,
    _ignore_signals,
    _prctl,
    _set_name,
    _signalled,
    _status_exit_code,
    _wait_kind,
    install_seccomp,
)
from .procstate import read_proc_state, reset_proc_state

# Seconds the between-run delete may take; past it the worker retires (its next job
# is answered "retire" and the host runs that job on a fresh worker).
CLEANUP_BUDGET = 1.0


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


class RunWatch:
    """One run as the zygote follows it: its processes, pipes, output and deadline."""

    def __init__(
        self,
        mode: str,
        t0: float,
        deadline: float,
        cap: int,
        runner: int | None,
        judge: int | None,
        verdict_r: int | None,
        si_w: int | None,
        stdin: memoryview,
        fs_fd: int,
        readers: dict[int, bytearray],
        out: bytearray,
        err: bytearray,
        verdict: bytearray,
        notes: bytearray,
    ) -> None:
        self.mode = mode  # "exec" or "tests"
        self.t0, self.deadline = t0, deadline
        self.cap = cap  # bytes of stdout + stderr
        self.runner, self.judge = runner, judge
        self.verdict_r, self.si_w, self.stdin = verdict_r, si_w, stdin
        self.fs_fd = fs_fd  # the fork server's socket (-1: none)
        self.readers, self.open_readers = readers, set(readers)
        self.out, self.err, self.verdict, self.notes = out, err, verdict, notes
        self.status: str | None = None
        self.end: float | None = None

    @classmethod
    def start(
        cls,
        job: dict,
        mode: str,
        t0: float,
        runner: int | None,
        judge: int | None,
        sp: Spare,
        verdict_r: int | None,
        si_w: int | None,
        stdin_data: bytes,
        fs_sock: socket.socket | None,
    ) -> RunWatch:
        grace = float(job.get("grace", 1.0)) if mode == "tests" else 0.0
        out, err, verdict, notes = bytearray(), bytearray(), bytearray(), bytearray()
        readers = {sp.out_r: out, sp.err_r: err}
        if mode == "exec":
            readers[sp.co_r] = notes
        else:
            readers[verdict_r] = verdict
        return cls(
            mode=mode,
            t0=t0,
            deadline=t0 + float(job["timeout"]) + grace,
            cap=int(job["max_output_bytes"]),
            runner=runner,
            judge=judge,
            verdict_r=verdict_r,
            si_w=si_w,
            stdin=memoryview(stdin_data),
            fs_fd=fs_sock.fileno() if fs_sock is not None else -1,
            readers=readers,
            out=out,
            err=err,
            verdict=verdict,
            notes=notes,
        )

    def output_size(self) -> int:
        return len(self.out) + len(self.err)


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
        _ignore_signals()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        os.set_blocking(self.wake_r, False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(self.wake_w)
        self.exited: dict[int, int] = {}
        self.traced: set[int] = set()  # processes killed because they made themselves traced
        # the fork server, its records and the pidfds of its children kept between runs
        self.fs = ForkServerLink(config, self.exited, self.traced)
        self.spare: Spare | None = None
        self.server: dict | None = None  # the judge server: {"pid", "sock"}
        self.last_untrusted = False  # the last test job's tests were not trusted
        self.dirty = False  # a run's processes and files are still to be removed
        self.retire = False  # the cleanup went over its budget: hand no more jobs here
        self.proc_state = read_proc_state("self")  # what every run starts from
        self.fs.start()

    # ---- helpers
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
            if pid == self.fs.pid:
                self.fs.pid = None

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
        keep = {me, self.fs.pid}
        if self.spare is not None:
            try:
                self._spare_pids()
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
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
            fields = stat[stat.rindex(b")") + 2 :].split()
            with open(f"/proc/{pid}/status", "rb") as f:
                status = f.read()
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

    def _fresh_judge(self, sp: Spare) -> int:
        """Spawn a fresh judge for ``sp`` now (between runs); its pid."""
        ji_r, ji_w = os.pipe()
        devnull = os.open(os.devnull, os.O_RDWR)
        try:
            self.fs.request(
                [
                    (
                        "judge",
                        [
                            devnull,
                            sp.out_w,
                            sp.err_w,
                            ji_r,
                            sp.jo_w,
                            sp.ci_w,
                            sp.co_r,
                        ],
                    )
                ]
            )
            (pid,) = self.fs.spawned_pids(1)
        except BaseException:
            self._close(ji_w)
            raise
        finally:
            self._close(ji_r)
            self._close(devnull)
        sp.ji_w = ji_w
        return pid

    def _dispatch_tests(self, sp: Spare, job: dict) -> int:
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
            self._kill_pid(sp.judge)  # a fresh judge planned for untrusted tests
            self._close(sp.ji_w)
            sp.ji_w = None
            judge = self.server["pid"]
        else:
            judge = sp.judge if sp.judge is not None else self._fresh_judge(sp)
        if use_server:  # the server gets the run's ends before any untrusted code runs
            jr, jw = os.pipe()
            try:
                ends = [sp.out_w, sp.err_w, sp.ci_w, sp.co_r, sp.jo_w]
                socket.send_fds(self.server["sock"], [b"J"], [jr, *ends])
            except OSError:
                self._close(jw)
                self._drop_server()
                raise
            finally:
                self._close(jr)
        else:
            jw, sp.ji_w = sp.ji_w, None
        try:
            # The runner gets its job now and loads the solution while the judge
            # starts. From here on untrusted code runs.
            write_frame(sp.ci_w, job["runner_job"])
        except OSError:
            self._close(jw)
            raise
        sp.close("out_w", "err_w", "ci_w", "co_r", "jo_w")
        try:
            write_frame(jw, {**job, "runner_preloaded": True})
        except OSError:
            # The solution's code killed its judge before the job reached it (the
            # judge was checked intact just before): the run ends without a verdict,
            # which is the run's failure, not the sandbox's.
            pass
        finally:
            self._close(jw)
        return judge

    def handle(self, job: dict) -> dict:
        # a random name: a run learns nothing (e.g. how many runs came before) from it
        workdir = os.path.join(self.tmp_root, "run-" + os.urandom(8).hex())
        os.mkdir(workdir, 0o700)
        mode = job["mode"]
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
        runner, judge = sp.runner, None
        stdin_data = b""
        si_w = sp.si_w
        oom_before = self._oom_kills() if mode == "exec" else None
        t0 = time.monotonic()
        try:
            if mode == "tests":
                self._close(si_w)
                si_w = sp.si_w = None
                judge = self._dispatch_tests(sp, {**job, "runner_job": runner_job})
                keep = [sp.out_r, sp.err_r, sp.jo_r]
            else:
                self._kill_pid(sp.judge)
                sp.close("ji_w", "jo_r", "out_w", "err_w", "jo_w")
                write_frame(sp.ci_w, runner_job)
                sp.close("ci_w")
                keep = [sp.out_r, sp.err_r, sp.co_r]
                if job.get("stdin") is not None:
                    # the watch closes si_w once the input is written (closing it here
                    # too closed whatever reused the number: a pidfd, the next pipes)
                    stdin_data = str(job["stdin"]).encode("utf-8", "surrogatepass")
                else:
                    self._close(si_w)
                    si_w = None
        except OSError as e:
            sp.close(*Spare.FDS)
            self._kill_everything()
            self._clean_files()
            return {"status": "sandbox_error", "error": f"could not start the run: {e}"}
        if self.spare is None and self.fs.pid is not None:
            try:  # the next run's spare forks while this run goes on
                self._request_spare(restart_forkserver=False)
            except OSError:
                self._drop_spare()
        verdict_r = sp.jo_r if mode == "tests" else None
        res = self._watch(
            RunWatch.start(
                job, mode, t0, runner, judge, sp, verdict_r, si_w, stdin_data, self.fs.sock
            )
        )
        for fd in keep:
            self._close(fd)
        if oom_before is not None:
            oom_after = self._oom_kills()
            res["oom_kills"] = oom_after - oom_before if oom_after is not None else 0
        if self.server is not None and judge == self.server["pid"] and "verdict" not in res:
            self._drop_server()  # it may still be in the job: start a new one
        # The run's processes are killed and its files removed by serve() right
        # after the reply goes out (off the caller's critical path), always
        # before the next job is read.
        self.dirty = True
        return res

    def _prune_pidfds(self) -> None:
        """Close the pidfds of processes that are no longer kept between runs."""
        keep = set()
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

    def _oom_kills(self) -> int | None:
        """The worker's cgroup OOM-kill counter (``config["oom_events"]`` files), or None.

        Read by the zygote, not the host: the host may not see the container's
        cgroup (a remote or rootless daemon). A run cannot write the counter.
        """
        for path in self.config.get("oom_events") or ():
            try:
                with open(path, "rb") as f:
                    text = f.read(4096)
            except OSError:
                continue
            for line in text.splitlines():
                key, _, value = line.partition(b" ")
                if key == b"oom_kill":
                    try:
                        return int(value)
                    except ValueError:
                        return None
        return None

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

    @staticmethod
    def _close(fd: int | None) -> None:
        if fd is None:
            return
        try:
            os.close(fd)
        except OSError:
            pass

    def _watch(self, w: RunWatch) -> dict:
        """Follow one run until it ends, its deadline passes or a cap is hit; its reply."""
        poller = self._poller(w)
        while not self._run_over(w):
            left = w.deadline - time.monotonic()
            if left <= 0:
                w.status = "timeout"
                break
            for fd, ev in poller.poll(min(left, 1.0) * 1000):
                self._on_event(w, poller, fd, ev)
            if w.status:
                break
        duration = (w.end or time.monotonic()) - w.t0
        self._close(w.si_w)
        w.si_w = None
        if w.status is None:
            self._drain_output(w)
        return self._run_reply(w, duration)

    def _poller(self, w: RunWatch) -> select.poll:
        """A poller on the run's pipes, the wake-up pipe and the fork server's socket."""
        poller = select.poll()
        for fd in w.open_readers:
            poller.register(fd, select.POLLIN)
        poller.register(self.wake_r, select.POLLIN)
        if w.fs_fd >= 0:
            poller.register(w.fs_fd, select.POLLIN)
        if w.si_w is not None:
            os.set_blocking(w.si_w, False)
            if w.stdin:
                poller.register(w.si_w, select.POLLOUT)
            else:
                self._close(w.si_w)
                w.si_w = None
        return poller

    def _run_over(self, w: RunWatch) -> bool:
        """Whether the run has ended: the program exited, or the verdict is in (or lost)."""
        self._reap()
        if w.mode == "exec":
            over = w.runner in self.exited
        else:
            over = _frame_complete(w.verdict) or (
                w.verdict_r not in w.open_readers and w.judge in self.exited
            )
        if over:
            w.end = time.monotonic()
        return over

    def _on_event(self, w: RunWatch, poller: select.poll, fd: int, ev: int) -> None:
        """Handle one poll event: a wake-up, the fork server, stdin room, or output."""
        if fd == self.wake_r:
            self._drain_wake()
        elif fd == w.fs_fd:
            self.fs.pump()
            if ev & (select.POLLHUP | select.POLLERR):
                poller.unregister(w.fs_fd)
        elif fd == w.si_w:
            self._feed_stdin(w, poller)
        else:
            self._read_output(w, poller, fd)

    def _feed_stdin(self, w: RunWatch, poller: select.poll) -> None:
        try:
            n = os.write(w.si_w, w.stdin[: 1 << 16])
            w.stdin = w.stdin[n:]
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            w.stdin = w.stdin[:0]
        if not w.stdin:
            poller.unregister(w.si_w)
            self._close(w.si_w)
            w.si_w = None

    def _read_output(self, w: RunWatch, poller: select.poll, fd: int) -> None:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            chunk = b""
        if not chunk:
            poller.unregister(fd)
            w.open_readers.discard(fd)
            return
        w.readers[fd].extend(chunk)
        if w.output_size() > w.cap:
            w.status = "output_limit"
        if len(w.verdict) > MAX_FRAME + 4:  # the solution's doing: a failed run
            w.status = "verdict_too_large"

    def _drain_output(self, w: RunWatch) -> None:
        """Read what the run's output pipes already hold, without waiting."""
        for fd in list(w.open_readers):
            if fd == w.verdict_r:
                continue
            os.set_blocking(fd, False)
            try:
                while w.output_size() <= w.cap:
                    chunk = os.read(fd, 1 << 16)
                    if not chunk:
                        break
                    w.readers[fd].extend(chunk)
            except OSError:
                pass
        if w.output_size() > w.cap:
            w.status = "output_limit"

    def _run_reply(self, w: RunWatch, duration: float) -> dict:
        out, err, cap = w.out, w.err, w.cap
        res: dict = {
            "duration": duration,
            "stdout": bytes(out[:cap]).decode("utf-8", "replace"),
            "stderr": bytes(err[: max(0, cap - len(out))]).decode("utf-8", "replace"),
            "truncated": w.output_size() > cap,
            "status": w.status,
            "traced": w.runner in self.traced,
        }
        if w.mode == "exec":
            st = self.exited.get(w.runner)
            if st is not None:
                res["exit_code"] = _status_exit_code(st)
            res["oom"] = b"M" in w.notes
        else:
            if _frame_complete(w.verdict):
                try:  # the tests' to forge when an agent wrote them: checked like any frame
                    verdict = parse_frame_body(bytes(w.verdict[4:]))
                    if not isinstance(verdict, dict) or _too_deep(verdict, MAX_DEPTH - 8):
                        raise ValueError("malformed verdict")
                    res["verdict"] = verdict
                except ValueError:
                    res["verdict"] = None
                    res["verdict_malformed"] = True
            st = self.exited.get(w.judge)
            if st is not None:
                res["judge_exit"] = _status_exit_code(st)
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
            try:
                if self._victims():
                    self._kill_everything()
                    self._clean_files()
                self._reap()
                if job.get("op") != "ping" and self.fs.pid is None:
                    self._drop_spare()
                    self.fs.start()
            except BaseException:  # broken before the job started: not the job's failure
                self.retire = True
            if self.retire:  # the host runs this job on a fresh worker
                try:
                    write_frame(self.out, {"retire": True, "id": job.get("id")})
                finally:
                    os._exit(0)
            if job.get("op") == "ping":
                reply = {"pong": True, "procs": self._census(), "fs_starts": self.fs.starts}
            else:
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
                    if self.fs.pid is None:
                        self.fs.start()
                    self._request_spare()  # its pids are read when the next job comes
                except OSError:
                    self.spare = None


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
