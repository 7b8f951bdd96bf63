"""Pid reuse end to end (issue 25, forged lineage), local and docker backends, as root.

A run kills the worker's idle runner, then puts a process of its own on the
dead runner's pid, hoping the zygote takes it for the runner (keeps it through
the cleanup, hands it the next job). Wrapping the pid namespace's counter takes
millions of forks from inside; here the test drives it instead: a run cannot
write ``/proc/sys/kernel/ns_last_pid`` (no capability in its namespace), but the
host (root) can, from a helper it forks into the sandbox's pid namespace (a docker
container's pid namespace too: it belongs to the host's user namespace). The
run then forks straight onto the dead runner's pid, and the test checks that
the impostor is killed with the run and that later runs are judged normally.
Without the seccomp filter the impostor is even a child of the fork server
(``clone(CLONE_PARENT)``), as the dead runner was: only the pidfds the fork
server took at fork tell them apart.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from flexmg.sandboxes import ExecResult, Sandbox
from flexmg.sandboxes.seccomp import seccomp_enabled
from flexmg.sandboxes.testing import open_sandbox
from helpers import stopped_process

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="driving ns_last_pid needs root")

GOOD = ("def f(x):\n    return 2 * x\n", ["assert f(2) == 4", "assert f(3) == 6"])

ATTACK = """
import ctypes, os, signal, time
libc = ctypes.CDLL(None, use_errno=True)
def children(pid):
    out = set()
    for tid in os.listdir(f'/proc/{pid}/task'):
        with open(f'/proc/{pid}/task/{tid}/children') as f:
            out.update(int(x) for x in f.read().split())
    return out
def comm(pid):
    try:
        with open(f'/proc/{pid}/comm') as f:
            return f.read().strip()
    except OSError:
        return ''
for _ in range(300):  # the fork server forks the next run's runner while this one runs
    spares = [p for p in children(os.getppid()) if p != os.getpid() and comm(p) == 'flexmg-runner']
    if spares:
        break
    time.sleep(0.01)
else:
    print('no spare runner')
    raise SystemExit
victim = spares[0]
os.kill(victim, signal.SIGKILL)
for _ in range(500):  # until the fork server has reaped it: the pid is free
    if not os.path.exists(f'/proc/{victim}'):
        break
    time.sleep(0.01)
libc.prctl(15, f'{TOKEN}{victim}'.encode(), 0, 0, 0)
os.kill(os.getpid(), signal.SIGSTOP)  # the test sets ns_last_pid to victim - 1
r, w = os.pipe()
# clone(CLONE_PARENT): a child of the fork server, like the runner it replaces (the filter
# refuses it: then a plain fork, orphaned to the zygote when the run's main process exits)
SYS_CLONE = {'x86_64': 56, 'aarch64': 220}[os.uname().machine]
pid = libc.syscall(SYS_CLONE, 0x8000 | signal.SIGCHLD, 0, 0, 0, 0)
how = 'clone_parent'
if pid < 0:
    pid, how = os.fork(), 'fork'
if pid == 0:  # the impostor, on the victim's pid
    libc.prctl(15, IMPOSTOR.encode(), 0, 0, 0)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)
    os.write(w, str(os.getpid()).encode())
    os.close(w)
    while True:
        time.sleep(1)
os.close(w)
print(victim, os.read(r, 32).decode(), how)
"""

SCAN = """
import os
names = []
for p in os.listdir('/proc'):
    if p.isdigit():
        try:
            with open(f'/proc/{p}/comm') as f:
                names.append(f.read().strip())
        except OSError:
            pass
print(IMPOSTOR in names)
"""

SET_LAST_PID = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(sys.argv[1], os.O_RDONLY)
if libc.setns(fd, 0x20000000) != 0:  # CLONE_NEWPID: our children are born in the sandbox's
    raise OSError(ctypes.get_errno(), 'setns')
pid = os.fork()
if pid == 0:
    with open('/proc/sys/kernel/ns_last_pid', 'w') as f:
        f.write(sys.argv[2])
    os._exit(0)
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


@pytest.fixture(
    params=[
        pytest.param(("local", "filter"), id="local-filter"),
        pytest.param(("local", "no-filter"), id="local-no-filter"),
        pytest.param(("docker", "filter"), id="docker-filter", marks=pytest.mark.docker),
        pytest.param(("docker", "no-filter"), id="docker-no-filter", marks=pytest.mark.docker),
    ]
)
def sb(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    """A worker with the seccomp filter, and one without (CLONE_PARENT then works; on
    docker, Docker's own default profile lets it through too), on each backend."""
    backend, filtered = request.param
    if filtered == "no-filter":
        monkeypatch.setenv("FLEXMG_SANDBOX_SECCOMP", "0")
    box = open_sandbox(backend, workers=1, timeout=30.0, memory_mb=256)
    yield box
    box.close()


def _stopped(token: str, deadline: float) -> tuple[int, int]:
    """(host pid, victim's pid in the sandbox) of the stopped run named ``token<victim>``."""
    pid, name = stopped_process(token, deadline, "the attacking run never stopped itself")
    return pid, int(name[len(token) :])


def _attack(sb: Sandbox) -> tuple[ExecResult, str]:
    token = "pw" + uuid.uuid4().hex[:5]
    impostor = "imp" + uuid.uuid4().hex[:8]
    code = f"TOKEN = {token!r}\nIMPOSTOR = {impostor!r}\n" + ATTACK
    out: list[ExecResult] = []
    t = threading.Thread(target=lambda: out.append(sb.run(code)))
    t.start()
    try:
        host_pid, victim = _stopped(token, time.monotonic() + 20)
        try:
            subprocess.run(
                [sys.executable, "-I", "-S", "-c", SET_LAST_PID, f"/proc/{host_pid}/ns/pid"]
                + [str(victim - 1)],
                check=True,
                timeout=30,
            )
        finally:
            os.kill(host_pid, signal.SIGCONT)
    finally:
        t.join()
    return out[0], impostor


def test_a_process_on_a_killed_runners_pid_is_not_the_sandboxs_own(sb: Sandbox) -> None:
    landed = 0
    for _ in range(3):  # another fork in the namespace could take the pid first: retry
        r, impostor = _attack(sb)
        assert r.status == "ok", (r.status, r.stderr)
        victim, pid, how = r.stdout.split()
        landed += victim == pid
        assert how == ("fork" if seccomp_enabled() else "clone_parent"), r.stdout
        # the next runs (someone else's correct code) are judged as in a fresh worker
        for trusted in (True, False):
            rep = sb.run_tests(*GOOD, trusted_tests=trusted)
            assert (rep.status, rep.passed) == ("ok", 2), (trusted, rep.error)
        # the impostor did not survive its run's cleanup
        scan = sb.run(f"IMPOSTOR = {impostor!r}\n" + SCAN)
        assert scan.stdout == "False\n", (victim, pid, scan.stdout, scan.stderr)
    assert landed, "the impostor never landed on the killed runner's pid"
