"""Per-uid kernel quotas (issue 25, item 8), run as root: local workers and docker
containers.

A run that exhausts a quota the kernel keeps per user (POSIX message queue bytes,
pipe buffer pages, pending signals) while it runs must not make another sandbox's
or the host's operations fail: each local worker, and each docker container, runs
as a host uid of its own. The run fills the quota, then stops itself; the test
finds it by a name it gives itself, checks the host and a second sandbox of the
same backend while the quota is held, then resumes it.
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator

import pytest

from flexmg.sandboxes import ExecResult, Sandbox
from flexmg.sandboxes.testing import open_sandbox, require_backend
from helpers import stopped_process


def _why_no_worker_uids() -> str | None:
    """Why this host gives the local workers no uids of their own (None: it does)."""
    if os.geteuid() != 0:
        return "per-worker host uids need root"
    from flexmg.sandboxes.local import probe_local, probe_worker_uids

    if probe_local() is not None:
        return f"the local backend does not work here: {probe_local()}"
    return probe_worker_uids()


_WHY = _why_no_worker_uids()
if _WHY is not None and os.environ.get("FLEXMG_REQUIRE_SANDBOX_UIDS") == "1":
    raise RuntimeError(f"FLEXMG_REQUIRE_SANDBOX_UIDS=1 but {_WHY}")
# where the kernel refuses unprivileged user namespaces the workers keep the caller's uid
# (a warning says so): the local tests then have nothing to test
local_uids = pytest.mark.skipif(_WHY is not None, reason=f"no per-worker uids: {_WHY}")
# the quota tests, on both backends
BACKENDS = pytest.mark.parametrize(
    "backend",
    [
        pytest.param("local", marks=local_uids, id="local"),
        pytest.param("docker", marks=pytest.mark.docker, id="docker"),
    ],
)


def _require_uids(backend: str) -> None:
    """Skip unless ``backend``'s workers get host uids of their own here."""
    if backend == "docker":
        require_backend("docker")  # fails instead under FLEXMG_REQUIRE_DOCKER=1
        from flexmg.sandboxes.docker_backend import container_uid_range

        if container_uid_range() is None:
            pytest.skip("containers share uid 65534 (not root, or FLEXMG_SANDBOX_UIDS=off)")


HOLD_TIMEOUT = 30.0

MQ_FILL = """
import ctypes, os, signal
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(15, TOKEN.encode(), 0, 0, 0)  # PR_SET_NAME: the test finds this process by it
held, err = [], 0
for i in range(200):
    fd = libc.mq_open(f"/fill{i}".encode(), os.O_CREAT | os.O_RDWR, 0o600, None)
    if fd < 0:
        err = ctypes.get_errno()
        break
    held.append(fd)
os.kill(os.getpid(), signal.SIGSTOP)  # hold the quota until the test resumes us
print(len(held), err)
"""

PIPE_FILL = """
import fcntl, os, signal
F_SETPIPE_SZ = 1031
left = 16384  # pipe-user-pages-soft: 64 MiB of pipe buffers per uid
kids = []
for k in range(8):
    pid = os.fork()
    if pid == 0:
        pipes = []
        try:
            for i in range(25):
                r, w = os.pipe()
                pipes.append((r, w))
                fcntl.fcntl(w, F_SETPIPE_SZ, 1 << 20)
        except OSError as e:
            os.write(1, f"child {k}: {len(pipes)} pipes, {e.errno}\\n".encode())
        signal.pause()
    kids.append(pid)
import ctypes
ctypes.CDLL(None).prctl(15, TOKEN.encode(), 0, 0, 0)
os.kill(os.getpid(), signal.SIGSTOP)
print("resumed")
"""

PIPE_CHECK = """
import fcntl, os
r, w = os.pipe()
print(fcntl.fcntl(w, 1032))  # F_GETPIPE_SZ
fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ: fails with EPERM past the uid's quota
print(fcntl.fcntl(w, 1032))
"""

MQ_CHECK = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.mq_open(b"/probe", os.O_CREAT | os.O_RDWR, 0o600, None)
print(fd >= 0, ctypes.get_errno() if fd < 0 else 0)
"""

SIG_FILL = """
import ctypes, os, resource, signal
ctypes.CDLL(None).prctl(15, TOKEN.encode(), 0, 0, 0)
rt = list(range(signal.SIGRTMIN, signal.SIGRTMIN + 8))
signal.pthread_sigmask(signal.SIG_BLOCK, rt)
limit = resource.getrlimit(resource.RLIMIT_SIGPENDING)[0]
for i in range(limit + 8):  # each queues one more (until the uid's quota is full)
    os.kill(os.getpid(), rt[i % 8])
with open('/proc/self/status') as f:
    sigq = [line.split()[1] for line in f if line.startswith('SigQ:')][0]
os.kill(os.getpid(), signal.SIGSTOP)
print(sigq)
"""

# Queue one realtime signal to itself (blocked): 0, or the errno (EAGAIN: the uid's quota is full).
SIG_CHECK = """
import ctypes, os, signal
libc = ctypes.CDLL(None, use_errno=True)
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
print(0 if libc.sigqueue(os.getpid(), int(signal.SIGRTMIN), 0) == 0 else ctypes.get_errno())
"""

_boxes: dict[str, Sandbox] = {}


@pytest.fixture(scope="module", autouse=True)
def _close_boxes() -> Iterator[None]:
    yield
    for sb in _boxes.values():
        sb.close()
    _boxes.clear()


def _box(name: str, timeout: float = HOLD_TIMEOUT, backend: str = "local") -> Sandbox:
    key = f"{backend}-{name}"
    if key not in _boxes:
        _require_uids(backend)
        _boxes[key] = open_sandbox(backend, workers=1, timeout=timeout, memory_mb=256)
    return _boxes[key]


def _find(token: str, deadline: float) -> int:
    """The pid of the stopped process named ``token``."""
    pid, _ = stopped_process(token, deadline, f"the attacking run ({token}) never held the quota")
    return pid


def _while_held(fill: str, check: Callable[[], object], backend: str) -> ExecResult:
    """Run ``fill`` in one sandbox of ``backend``; call ``check()`` while it holds the quota."""
    token = "fq" + uuid.uuid4().hex[:10]
    out: list[ExecResult] = []
    t = threading.Thread(
        target=lambda: out.append(
            _box("attacker", backend=backend).run(f"TOKEN = {token!r}\n" + fill)
        )
    )
    t.start()
    try:
        pid = _find(token, time.monotonic() + HOLD_TIMEOUT - 5)
        try:
            check()
        finally:
            os.kill(pid, signal.SIGCONT)
    finally:
        t.join()
    return out[0]


def _host_mq_open() -> int:
    """0 when this (host, root) process can create a default-size message queue, else errno."""
    libc = ctypes.CDLL(None, use_errno=True)
    name = f"/flexmg-test-{os.getpid()}".encode()
    fd = libc.mq_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600, None)
    if fd < 0:
        return ctypes.get_errno()
    libc.mq_close(fd)
    libc.mq_unlink(name)
    return 0


@BACKENDS
def test_a_run_filling_the_mqueue_quota_does_not_reach_the_host_or_other_sandboxes(
    backend: str,
) -> None:
    other = _box("other", timeout=5.0, backend=backend)
    host: list[int] = []
    seen: list[ExecResult] = []

    def check() -> None:
        host.append(_host_mq_open())
        seen.append(other.run(MQ_CHECK))

    attack = _while_held(MQ_FILL, check, backend)
    assert attack.status == "ok", (attack.status, attack.stderr)
    held, err = map(int, attack.stdout.split())
    assert 0 < held < 50 and err == 24, attack.stdout  # the run did exhaust its quota (EMFILE)
    assert host == [0], f"the host's mq_open failed: {os.strerror(host[0])}"
    r = seen[0]
    assert r.stdout.split() == ["True", "0"], (r.stdout, r.stderr)


@BACKENDS
def test_a_run_filling_the_pipe_quota_does_not_reach_other_sandboxes(backend: str) -> None:
    other = _box("other", timeout=5.0, backend=backend)
    seen: dict[str, ExecResult] = {}
    attack = _while_held(PIPE_FILL, lambda: seen.update(other=other.run(PIPE_CHECK)), backend)
    assert attack.status == "ok", (attack.status, attack.stderr)
    assert ", 1\n" in attack.stdout, attack.stdout  # a child hit the quota (EPERM)
    r = seen["other"]
    assert (r.status, r.stdout.split()) == ("ok", ["65536", "1048576"]), (r.stdout, r.stderr)


def _uids_of(pids: list[int]) -> set[int]:
    out: set[int] = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith(("Uid:", "Gid:")):
                        out.update(int(x) for x in line.split()[1:])
        except OSError:
            pass
    return out


def _start_workers(sb: Sandbox, n: int) -> None:
    """Have ``n`` workers running (``n`` runs at once)."""
    threads = [
        threading.Thread(target=sb.run, args=("import time; time.sleep(0.3)",)) for _ in range(n)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


@local_uids
def test_each_worker_runs_as_a_host_uid_of_its_own() -> None:
    from flexmg.sandboxes.local import CgroupWorker
    from flexmg.sandboxes.uids import uid_range

    first, count = uid_range() or (0, 0)
    with open_sandbox("local", workers=2, timeout=5.0) as sb:
        _start_workers(sb, 2)
        workers = [w for w in sb._all if isinstance(w, CgroupWorker)]
        assert len(workers) == 2
        held = []
        for w in workers:
            assert w.host_uid is not None and w.cgroup is not None
            uid = w.host_uid.uid
            assert first <= uid < first + count
            pids = w.cgroup.pids()
            assert pids, "the worker's processes are not in its cgroup"
            # every process of the worker (bubblewrap included): that uid and gid only
            assert _uids_of(pids) == {uid}, (uid, pids)
            held.append(uid)
        assert len(set(held)) == 2
        # the sandbox itself still sees uid 65534
        assert sb.run("import os; print(os.getuid(), os.getgroups())").stdout.split()[0] == "65534"


@local_uids
def test_a_uid_workers_run_is_the_oom_killers_first_choice() -> None:
    """As a host uid of its own the runner is not root in the kernel's eyes: it must be
    dumpable to raise its own oom_score_adj (as root it could anyway)."""
    sb = _box("other", timeout=5.0)
    r = sb.run("with open('/proc/self/oom_score_adj') as f:\n    print(f.read().strip())\n")
    assert (r.status, r.stdout) == ("ok", "1000\n"), (r.stdout, r.stderr[-300:])


@local_uids
def test_uids_off_keeps_the_callers_uid(monkeypatch: pytest.MonkeyPatch) -> None:
    from flexmg.sandboxes.local import CgroupWorker

    monkeypatch.setenv("FLEXMG_SANDBOX_UIDS", "off")
    with open_sandbox("local", workers=1, timeout=5.0) as sb:
        assert sb.run("print(6 * 7)").stdout == "42\n"
        (w,) = sb._all
        assert isinstance(w, CgroupWorker) and w.host_uid is None and w.cgroup is not None
        assert _uids_of(w.cgroup.pids()) == {0}


@local_uids
def test_a_malformed_uid_range_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLEXMG_SANDBOX_UIDS", "lots")
    with pytest.raises(ValueError, match="FIRST:COUNT"):
        open_sandbox("local", workers=1)


@BACKENDS
def test_a_run_filling_the_pending_signal_quota_does_not_reach_the_host_or_other_sandboxes(
    backend: str,
) -> None:
    import subprocess
    import sys

    other = _box("other", timeout=5.0, backend=backend)
    host: list[str] = []
    seen: list[ExecResult] = []

    def check() -> None:
        cmd = [sys.executable, "-I", "-S", "-c", SIG_CHECK]
        host.append(subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout)
        seen.append(other.run(SIG_CHECK))

    attack = _while_held(SIG_FILL, check, backend)
    assert attack.status == "ok", (attack.status, attack.stderr)
    count, limit = map(int, attack.stdout.split("/"))
    assert count > limit - 100, attack.stdout  # the run filled (nearly all of) the quota
    assert host == ["0\n"], f"the host could not queue a signal: {host}"
    assert seen[0].stdout == "0\n", (seen[0].stdout, seen[0].stderr)
