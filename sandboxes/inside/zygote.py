"""The zygote: the per-sandbox supervisor (pid 1 of the sandbox) and its serve loop.

It reads a job, hands it to a verified idle runner (and judge), watches the run to
its end, replies, then removes everything the run left before reading the next job.
The fork server it asks for processes is reached through
:class:`.forkserver.ForkServerLink`; the next run's idle processes are kept by
:class:`.spares.SpareKeeper`; the run is followed by :class:`.watch.RunWatcher`;
the between-run cleanup is :class:`.cleanup.RunCleanup` (the ``/proc`` settings
it puts back are in :mod:`.procstate`).
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time

from .cleanup import RunCleanup
from .forkserver import ForkServerLink
from .frames import read_frame, write_frame
from .procs import (
    PR_SET_CHILD_SUBREAPER,
    PR_SET_DUMPABLE,
    _exc_line,
    _ignore_signals,
    _prctl,
    _set_name,
    _wait_kind,
    install_seccomp,
)
from .procstate import read_proc_state
from .spares import Spare, SpareKeeper
from .watch import RunWatch, RunWatcher


class Zygote(RunWatcher, SpareKeeper, RunCleanup):
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

    # ---- one job
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
            assert self.server is not None  # use_server
            judge = self.server["pid"]
        else:
            judge = sp.judge if sp.judge is not None else self._fresh_judge(sp)
        if use_server:  # the server gets the run's ends before any untrusted code runs
            jr, jw = os.pipe()
            try:
                ends = [sp.out_w, sp.err_w, sp.ci_w, sp.co_r, sp.jo_w]
                sock = self.server["sock"]  # type: ignore[index]  # use_server: not None
                socket.send_fds(sock, [b"J"], [jr, *ends])
            except OSError:
                self._close(jw)
                self._drop_server()
                raise
            finally:
                self._close(jr)
        else:
            jw, sp.ji_w = sp.ji_w, None  # type: ignore[assignment]  # set with judge
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

    @staticmethod
    def _close(fd: int | None) -> None:
        if fd is None:
            return
        try:
            os.close(fd)
        except OSError:
            pass

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
                reply: dict = {"pong": True, "procs": self._census(), "fs_starts": self.fs.starts}
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
