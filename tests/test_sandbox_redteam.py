"""Third red-team pass (issue 25), every backend: signals sent to the sandbox's own
processes, trees left for the cleanup, tampered spare runners, forged runner and verdict
frames, socket families, reparenting. Each test is the attack an agent's code could run,
followed by a correct solution in the same worker that must still be judged correctly.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

from flexmg.sandboxes import Sandbox
from flexmg.sandboxes.seccomp import seccomp_enabled
from flexmg.sandboxes.testing import backend_params, open_sandbox

TIMEOUT = 3.0
pytestmark = pytest.mark.parametrize("backend", backend_params())
_boxes: dict[str, Sandbox] = {}

GOOD = ("def f(x):\n    return 2 * x\n", ["assert f(2) == 4", "assert f(3) == 6"])


@pytest.fixture(scope="module", autouse=True)
def _close_boxes() -> Iterator[None]:
    yield
    for sb in _boxes.values():
        sb.close()
    _boxes.clear()


@pytest.fixture
def sb(backend: str) -> Sandbox:
    """One warm single-worker sandbox per backend, shared by the module's tests."""
    if backend not in _boxes:
        _boxes[backend] = open_sandbox(
            backend, workers=1, timeout=TIMEOUT, memory_mb=256, max_output_bytes=1 << 16
        )
    return _boxes[backend]


def _good_still_judged(sb: Sandbox, times: int = 3) -> None:
    """A correct solution, under both judges, scores full marks in the same worker."""
    for i in range(times):
        for trusted in (True, False):
            rep = sb.run_tests(*GOOD, trusted_tests=trusted)
            assert (rep.status, rep.passed) == ("ok", 2), (i, trusted, rep.error)


# The worker's long-lived processes: the fork server (the run's parent), the zygote (its
# parent) and their other children (the judge server, the next run's idle runner).
WORKER_PIDS = """
import os
def _parent(pid):
    with open(f'/proc/{pid}/stat') as f:
        return int(f.read().rsplit(')', 1)[1].split()[1])
def _children(pid):
    out = set()
    try:
        for tid in os.listdir(f'/proc/{pid}/task'):
            with open(f'/proc/{pid}/task/{tid}/children') as f:
                out.update(int(x) for x in f.read().split())
    except OSError:
        pass
    return out
def worker_pids():
    fs = os.getppid()
    zygote = _parent(fs)
    pids = {fs, zygote} | _children(fs) | _children(zygote)
    pids.discard(os.getpid())
    return sorted(pids)
"""

SIGNAL_STORM = (
    WORKER_PIDS
    + """
import signal, time
SIGS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2,
        signal.SIGALRM, signal.SIGPIPE, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU,
        signal.SIGWINCH, signal.SIGVTALRM, signal.SIGPROF, signal.SIGQUIT]
targets = worker_pids()
def storm():
    for sig in SIGS:
        for pid in targets:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
storm()
if os.fork() == 0:  # an orphan that keeps sending them after the reply
    os.setsid()
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        storm()
        time.sleep(0.001)
    os._exit(0)
print('sent')
"""
)


def test_signals_to_the_worker_processes_change_nothing(sb: Sandbox, backend: str) -> None:
    """Class "signals to pid 1": every long-lived process ignores what a run can send."""
    r = sb.run(SIGNAL_STORM)
    assert r.status == "ok", (r.status, r.error, r.stderr[-300:])
    assert "sent" in r.stdout
    rep = sb.run_tests(SIGNAL_STORM + GOOD[0], GOOD[1])
    assert rep.status != "sandbox_error", rep.error
    _good_still_judged(sb)


WIDE_TREE = """
import os
for i in range(20000):
    os.mkdir(f'd{i}')
print('made')
"""


def test_a_wide_tree_is_removed_in_linear_time(sb: Sandbox, backend: str) -> None:
    """Class "cleanup cost": 20,000 empty siblings do not make the next run miss its deadline."""
    r = sb.run(WIDE_TREE)
    assert (r.status, r.stdout) == ("ok", "made\n"), (r.status, r.error, r.stderr[-300:])
    _good_still_judged(sb, times=1)


def test_an_over_budget_tree_replaces_the_worker_not_the_next_run(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the cleanup budget (here 1 ms) the worker retires: the next job runs on a
    fresh worker, with the full verdict, and nothing of the tree is left."""
    monkeypatch.setenv("FLEXMG_SANDBOX_CLEANUP_BUDGET", "0.001")
    with open_sandbox(backend, workers=1, timeout=TIMEOUT, memory_mb=256) as box:
        wide = "import os\nfor i in range(12000):\n    os.mkdir(f'd{i}')\nprint(os.getppid())\n"
        seen: list[object] = []  # the worker objects (kept: ids are not reused)
        for _ in range(3):
            r = box.run(wide)
            assert r.status == "ok", (r.status, r.error)
            seen.append(box._all[-1])
            rep = box.run_tests(*GOOD, trusted_tests=True)
            assert (rep.status, rep.passed) == ("ok", 2), rep.error
            seen.append(box._all[-1])
        assert len({id(w) for w in seen}) >= 3  # each wide tree retired its worker


TAMPER_SPARE = (
    WORKER_PIDS
    + """
import signal
me = os.getpid()
for pid in worker_pids():
    try:
        with open(f'/proc/{pid}/comm') as f:
            name = f.read().strip()
    except OSError:
        continue
    if 'runner' in name or 'judge' in name:
        for sig in (signal.SIGSTOP, signal.SIGQUIT, signal.SIGSEGV, signal.SIGTERM):
            try:
                os.kill(pid, sig)
            except OSError:
                pass
print('tampered')
"""
)


def test_a_tampered_spare_runner_is_never_handed_a_job(sb: Sandbox, backend: str) -> None:
    """Class "tampered spare runner": a stopped one with a queued fatal signal is discarded."""
    for _ in range(4):
        r = sb.run(TAMPER_SPARE)
        assert r.status == "ok", (r.status, r.error)
        rep = sb.run_tests(*GOOD, trusted_tests=True)
        assert (rep.status, rep.passed) == ("ok", 2), rep.error
        r = sb.run(TAMPER_SPARE)
        rep = sb.run_tests(*GOOD, trusted_tests=False)
        assert (rep.status, rep.passed) == ("ok", 2), rep.error


# The runner's reply channel to the judge is fd 4 (see sandboxes/inside/runner.py).
FORGED_LOAD_FRAMES = {
    "deep": "import os\nb = b'[' * 200000 + b']' * 200000\n",
    "wrong-types": "import os, json\nb = json.dumps({'loaded': 1, 'functions': 5}).encode()\n",
    "bad-modules": (
        "import os, json\nb = json.dumps({'loaded': True, 'functions': ['f'],"
        " 'modules': [1, 2]}).encode()\n"
    ),
    "not-ascii": "import os\nb = b'{\"loaded\": \\xff}'\n",
}
SEND = "os.write(4, len(b).to_bytes(4, 'big') + b)\n"


@pytest.mark.parametrize("frame", sorted(FORGED_LOAD_FRAMES))
@pytest.mark.parametrize("trusted", [True, False])
def test_a_forged_runner_frame_is_the_solutions_failure(
    sb: Sandbox, backend: str, frame: str, trusted: bool
) -> None:
    """Class "trusted runner frames": a malformed load frame fails the solution, with why."""
    code = FORGED_LOAD_FRAMES[frame] + SEND + GOOD[0]
    rep = sb.run_tests(code, GOOD[1], trusted_tests=trusted)
    assert rep.status == "error" and rep.passed == 0, (rep.status, rep.error)
    assert "sandbox" not in rep.error
    _good_still_judged(sb, times=1)


# Agent-written tests run in the judge; the verdict goes out on its fd 4.
DEEP_VERDICT = """
def check(candidate):
    import os
    b = b'{"results": ' + b'[' * 970 + b']' * 970 + b'}'
    os.write(4, len(b).to_bytes(4, 'big') + b)
    os._exit(0)
"""


def _at_depth(n: int, fn):  # type: ignore[no-untyped-def]
    return fn() if n == 0 else _at_depth(n - 1, fn)


def test_a_deep_verdict_does_not_raise_in_the_host(sb: Sandbox, backend: str) -> None:
    """Class "deep verdict in the host": called from a deep stack, run_tests still reports."""
    depth = sys.getrecursionlimit() - 150
    rep = _at_depth(depth, lambda: sb.run_tests(GOOD[0], DEEP_VERDICT, "f", trusted_tests=False))
    assert rep.status != "sandbox_error" and rep.passed == 0, (rep.status, rep.error)
    good = _at_depth(depth, lambda: sb.run_tests(*GOOD, trusted_tests=True))
    assert (good.status, good.passed) == ("ok", 2), good.error


SOCKETS = """
import socket
names = ['AF_VSOCK', 'AF_PACKET', 'AF_NETLINK', 'AF_KEY', 'AF_ALG', 'AF_BLUETOOTH',
         'AF_CAN', 'AF_TIPC', 'AF_RDS', 'AF_QIPCRTR', 'AF_APPLETALK', 'AF_X25', 'AF_LLC']
opened = []
for name in names:
    fam = getattr(socket, name, None)
    if fam is None:
        continue
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_RAW, socket.SOCK_SEQPACKET):
        try:
            socket.socket(fam, kind).close()
            opened.append(name)
            break
        except OSError:
            pass
print('opened', sorted(set(opened)))
a, b = socket.socketpair()
a.sendall(b'x')
print('pair', b.recv(1))
socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
print('inet ok')
"""


def test_only_the_needed_socket_families_open(sb: Sandbox, backend: str) -> None:
    """Class "socket families": vsock, packet, netlink, ... fail; unix and inet still work."""
    if backend == "unsafe" or not seccomp_enabled():
        pytest.skip("the socket filter is part of the isolating backends' seccomp filter")
    r = sb.run(SOCKETS)
    assert r.status == "ok", (r.error, r.stderr[-300:])
    assert "opened []" in r.stdout, r.stdout
    assert "pair b'x'" in r.stdout and "inet ok" in r.stdout


CLONE_PARENT = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
NR = {'x86_64': 56, 'aarch64': 220}[os.uname().machine]
CLONE_PARENT = 0x8000
SIGCHLD = 17
if os.uname().machine == 'x86_64':
    pid = libc.syscall(NR, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0)
else:
    pid = libc.syscall(NR, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0)
if pid == 0:
    os._exit(0)
print('clone', pid, ctypes.get_errno())
"""


def test_clone_parent_is_refused(sb: Sandbox, backend: str) -> None:
    """Class "forged lineage": a run cannot make a child of the fork server (CLONE_PARENT)."""
    if backend == "unsafe" or not seccomp_enabled():
        pytest.skip("refused by the isolating backends' seccomp filter")
    r = sb.run(CLONE_PARENT)
    assert r.status == "ok", (r.error, r.stderr[-300:])
    assert r.stdout.startswith("clone -1 1"), r.stdout  # EPERM
    _good_still_judged(sb, times=1)


def test_a_sigkill_the_run_sent_itself_is_not_oom(sb: Sandbox, backend: str) -> None:
    """Docker's "any SIGKILL is oom": only the cgroup's OOM-kill counter says oom."""
    r = sb.run("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    assert (r.status, r.exit_code) == ("error", -9), (r.status, r.exit_code, r.error)


PROC_STATE = (
    WORKER_PIDS
    + """
def read(pid, name):
    try:
        with open(f'/proc/{pid}/{name}') as f:
            return ' '.join(f.read().split()[-1:])
    except OSError as e:
        return type(e).__name__
fs = os.getppid()
roles = {'self': 'self', 'forkserver': fs, 'zygote': _parent(fs)}
for role, pid in sorted(roles.items()):
    print(role, [read(pid, n) for n in ('oom_score_adj', 'coredump_filter', 'autogroup')])
"""
)

PROC_WRITES = (
    WORKER_PIDS
    + """
hits = 0
for pid in ['self', *worker_pids()]:
    for name, value in (('oom_score_adj', '777'), ('coredump_filter', '0x7f'),
                        ('autogroup', '19')):
        try:
            with open(f'/proc/{pid}/{name}', 'w') as f:
                f.write(value)
            hits += 1
        except OSError:
            pass
print('wrote', hits)
"""
)


def test_proc_state_a_run_sets_does_not_reach_later_runs(sb: Sandbox, backend: str) -> None:
    """Classes "writable /proc" and "state left for the next run": oom score, coredump
    filter and autogroup nice of the worker's processes and of a run are reset per run."""
    if backend == "unsafe":
        pytest.skip("the unsafe backend isolates nothing")
    before = sb.run(PROC_STATE)
    assert before.status == "ok", before.stderr[-300:]
    r = sb.run(PROC_WRITES)
    assert r.status == "ok", r.stderr[-300:]
    after = sb.run(PROC_STATE)
    assert after.stdout == before.stdout, (r.stdout, before.stdout, after.stdout)
    _good_still_judged(sb, times=1)


AUTOGROUP_READ = """
with open('/proc/self/autogroup') as f:
    print('nice', f.read().split()[-1])
"""

# The kernel takes one autogroup nice change per 100 ms from a process without
# CAP_SYS_ADMIN, machine-wide (EAGAIN otherwise): try again until the write is taken.
AUTOGROUP_WRITE = (
    """
import time
for _ in range(200):
    try:
        with open('/proc/self/autogroup', 'w') as f:
            f.write('19')
        break
    except BlockingIOError:
        time.sleep(0.02)
"""
    + AUTOGROUP_READ
)


def test_an_autogroup_nice_a_run_sets_does_not_reach_the_next_run(
    sb: Sandbox, backend: str
) -> None:
    """Class "state left for the next run": each run is a session, hence an autogroup, of
    its own; a nice value it writes to /proc/self/autogroup dies with it."""
    if not os.path.exists("/proc/self/autogroup"):
        pytest.skip("this kernel has no scheduler autogroups (CONFIG_SCHED_AUTOGROUP)")
    before = sb.run(AUTOGROUP_READ)
    assert (before.status, before.stdout) == ("ok", "nice 0\n"), (before.stdout, before.stderr)
    wrote = sb.run(AUTOGROUP_WRITE)  # the write works: the run changes its own autogroup
    assert (wrote.status, wrote.stdout) == ("ok", "nice 19\n"), (wrote.stdout, wrote.stderr)
    for trusted in (True, False):  # a plain run, and a runner under each judge
        after = sb.run(AUTOGROUP_READ)
        assert (after.status, after.stdout) == ("ok", "nice 0\n"), after.stdout
        check = "def check(candidate):\n    assert candidate() == '0'\n"
        rep = sb.run_tests(
            "def f():\n    with open('/proc/self/autogroup') as g:\n        return g.read().split()[-1]\n",
            check,
            "f",
            trusted_tests=trusted,
        )
        assert (rep.status, rep.passed) == ("ok", 1), (trusted, rep)
        sb.run(AUTOGROUP_WRITE)


OOM_SCORE = "with open('/proc/self/oom_score_adj') as f:\n    print(f.read().strip())\n"


def test_the_run_is_the_oom_killers_first_choice(sb: Sandbox, backend: str) -> None:
    """A runner's oom_score_adj is 1000 on every backend, also where the worker runs as an
    unprivileged host uid (a uid per worker, docker): there a runner that is not dumpable
    cannot open its own /proc/self/oom_score_adj."""
    r = sb.run(OOM_SCORE)
    assert (r.status, r.stdout) == ("ok", "1000\n"), (r.stdout, r.stderr[-300:])
    solution = "def f():\n    with open('/proc/self/oom_score_adj') as g:\n        return g.read().strip()\n"
    check = "def check(candidate):\n    assert candidate() == '1000'\n"
    for trusted in (True, False):  # the runner of a judged solution too
        rep = sb.run_tests(solution, check, "f", trusted_tests=trusted)
        assert (rep.status, rep.passed) == ("ok", 1), (trusted, rep)


INOTIFY = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
held = []
for _ in range(200):
    fd = libc.inotify_init1(0)
    if fd < 0:
        break
    held.append(fd)
print('held', len(held), ctypes.get_errno())
"""


def test_per_uid_inotify_instances_cannot_be_held(sb: Sandbox, backend: str) -> None:
    """Class "per-user kernel quotas": a run cannot take the uid's inotify instances
    (shared with host root on the local backend, with every container on docker)."""
    if backend == "unsafe" or not seccomp_enabled():
        pytest.skip("refused by the isolating backends' seccomp filter")
    r = sb.run(INOTIFY)
    assert (r.status, r.stdout) == ("ok", "held 0 1\n"), (r.stdout, r.stderr[-300:])


POISONERS = {
    "signal-storm": SIGNAL_STORM,
    "tamper-spare": TAMPER_SPARE,
    "proc-writes": PROC_WRITES,
    "wide-tree": WIDE_TREE,
    "inotify": INOTIFY,
}


@pytest.mark.slow
@pytest.mark.parametrize("attack", sorted(POISONERS))
def test_no_new_attack_poisons_its_worker(sb: Sandbox, backend: str, attack: str) -> None:
    """The poisoning harness of test_sandbox_attacker on this pass's attacks: afterwards
    every canary (verdicts, limits, scheduling, leftovers, processes) matches a fresh worker."""
    from test_sandbox_attacker import assert_unpoisoned

    r = sb.run(POISONERS[attack])
    assert r.status in ("ok", "error"), (r.status, r.error)
    assert_unpoisoned(sb, backend, attack)
