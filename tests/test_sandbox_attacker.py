"""A determined attacker against every backend (issue 14): no process outlives its run, no
run changes a later one, wrong code cannot pass by shadowing, no answer crashes the judge
or makes itself "unjudged".

Each attack is a program an agent could write. The poisoning harness runs every attack,
then a fixed set of canary programs (known good, known bad, and a fingerprint of what a
run sees) in the same worker, and compares them with the canaries on a fresh worker.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

from flexmg.sandboxes import Sandbox, TestReport
from flexmg.sandboxes.seccomp import seccomp_enabled
from flexmg.sandboxes.testing import backend_params, open_sandbox

TIMEOUT = 3.0
pytestmark = pytest.mark.parametrize("backend", backend_params())
_boxes: dict[tuple[str, str], Sandbox] = {}


@pytest.fixture(scope="module", autouse=True)
def _close_boxes() -> Iterator[None]:
    yield
    for sb in _boxes.values():
        sb.close()
    _boxes.clear()


def _box(backend: str, name: str = "shared") -> Sandbox:
    """One warm single-worker sandbox per (backend, name), shared by the module's tests."""
    key = (backend, name)
    if key not in _boxes:
        _boxes[key] = open_sandbox(
            backend, workers=1, timeout=TIMEOUT, memory_mb=256, max_output_bytes=1 << 16
        )
    return _boxes[key]


@pytest.fixture
def sb(backend: str) -> Sandbox:
    return _box(backend)


# A run's scratch directory: /tmp in the isolating backends, the worker's own
# directory (TMPDIR) in the unsafe one, which shares the host's /tmp.
TMP = "import os\nTMP = os.environ.get('TMPDIR', '/tmp')\n"

# The worker's processes other than the run's own: its parent (the fork server), the
# fork server's parent (the zygote) and their children. Never wider than the worker, so
# the attacks stay inside it even on the unsafe backend.
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

# ---------------------------------------------------------------------------- attacks

ZOMBIE_SURVIVOR = (
    TMP
    + """
import ctypes, threading, time
SYS_EXIT = {'x86_64': 60, 'aarch64': 93}[os.uname().machine]
if os.fork() == 0:
    def watch():
        while True:
            try:
                with open(os.path.join(TMP, 'survivor'), 'a') as f:
                    f.write('x')
            except OSError:
                pass
            time.sleep(0.02)
    threading.Thread(target=watch).start()
    ctypes.CDLL(None).syscall(SYS_EXIT, 0)  # the main thread exits; the process shows 'Z'
time.sleep(0.1)
print('parent done')
"""
)

PRLIMIT_POISON = (
    WORKER_PIDS
    + """
import resource
hits = 0
for pid in worker_pids():
    for res, value in ((resource.RLIMIT_AS, 1 << 24), (resource.RLIMIT_NOFILE, 8),
                       (resource.RLIMIT_STACK, 1 << 16), (resource.RLIMIT_NPROC, 1)):
        try:
            resource.prlimit(pid, res, (value, value))
            hits += 1
        except (OSError, ValueError):
            pass
print('set', hits)
"""
)

COVERT_SOFT_LIMIT = (
    WORKER_PIDS
    + """
import resource
for pid in worker_pids():
    try:
        soft, hard = resource.prlimit(pid, resource.RLIMIT_MSGQUEUE)
        resource.prlimit(pid, resource.RLIMIT_MSGQUEUE, (12345, hard))
    except (OSError, ValueError):
        pass
"""
)

AUTOGROUP_NICE = (
    WORKER_PIDS
    + """
for pid in ['self', *worker_pids()]:
    try:
        with open(f'/proc/{pid}/autogroup', 'w') as f:
            f.write('19')
    except OSError:
        pass
"""
)

AFFINITY_AND_PRIORITY = (
    WORKER_PIDS
    + """
cpus = sorted(os.sched_getaffinity(0))
for pid in worker_pids():
    try:
        os.sched_setaffinity(pid, {cpus[-1]})
    except OSError:
        pass
    try:
        os.setpriority(os.PRIO_PROCESS, pid, 19)
    except OSError:
        pass
"""
)

DEEP_DIRECTORIES = """
import os
for _ in range(3000):
    os.mkdir('d')
    os.chdir('d')
print('deep')
"""

UNREMOVABLE_FILES = """
import os
os.makedirs('a/b/c')
open('a/b/c/f', 'w').close()
os.chmod('a/b/c', 0)
os.chmod('a/b', 0o100)
os.symlink('/', 'a/root')
print('locked')
"""

ATTACKS = {
    "zombie-survivor": ZOMBIE_SURVIVOR,
    "prlimit": PRLIMIT_POISON,
    "covert-soft-limit": COVERT_SOFT_LIMIT,
    "autogroup": AUTOGROUP_NICE,
    "affinity-priority": AFFINITY_AND_PRIORITY,
    "deep-directories": DEEP_DIRECTORIES,
    "unremovable-files": UNREMOVABLE_FILES,
}

# ---------------------------------------------------------------------------- canaries

FINGERPRINT = (
    TMP
    + """
import resource, time
time.sleep(0.15)  # long enough for a survivor to show itself
names = [n for n in dir(resource) if n.startswith('RLIMIT_')]
limits = {n: resource.getrlimit(getattr(resource, n)) for n in sorted(names)}
try:
    with open('/proc/self/autogroup') as f:
        autogroup = f.read().split()[-1]
except OSError:
    autogroup = 'none'
print(limits)
print('nice', os.getpriority(os.PRIO_PROCESS, 0), 'autogroup', autogroup)
print('cpus', sorted(os.sched_getaffinity(0)))
print('scratch', sorted(n for n in os.listdir(TMP) if not os.getcwd().endswith(n)))
"""
)
GOOD = ("def f(x):\n    return 2 * x\n", ["assert f(2) == 4", "assert f(3) == 6"])
BAD = ("def f(x):\n    return 0\n", ["assert f(2) == 4", "assert f(3) == 6"])
CPU_BOUND = "print(sum(i * i for i in range(300_000)))\n"


def _autogroups_inert(sb: Sandbox) -> bool:
    """The worker has a cpu cgroup of its own (docker, local as root): the scheduler's
    autogroups do not apply there, so an autogroup's nice value changes nothing."""
    if sb.backend == "docker":
        return True
    groups = [getattr(w, "cgroup", None) for w in sb._all]
    return any(g is not None and g.has_cpu_group for g in groups)


def fingerprint(sb: Sandbox) -> tuple[str, str, str]:
    """What a run sees of its limits, scheduling and scratch directory (comparable)."""
    fp = sb.run(FINGERPRINT)  # the autogroup nice too: each run has a session of its own
    return fp.status, fp.stdout, fp.stderr[-300:]


def _report_key(rep: TestReport) -> tuple[Any, ...]:
    return rep.status, rep.passed, tuple((r.status, r.message) for r in rep.results)


def canaries(sb: Sandbox) -> dict[str, Any]:
    """What the canaries see in ``sb``'s (single) worker: comparable across workers."""
    out: dict[str, Any] = {}
    out["fingerprint"] = fingerprint(sb)
    for trusted in (True, False):
        out[f"good-{trusted}"] = _report_key(sb.run_tests(*GOOD, trusted_tests=trusted))
        out[f"bad-{trusted}"] = _report_key(sb.run_tests(*BAD, trusted_tests=trusted))
    hello = sb.run("print(6 * 7)")
    out["hello"] = (hello.status, hello.stdout)
    t0 = time.monotonic()
    cpu = sb.run(CPU_BOUND)
    out["cpu"] = (cpu.status, cpu.stdout)
    out["_cpu_seconds"] = time.monotonic() - t0
    out["_procs"] = sb.process_count()
    return out


_fresh: dict[str, dict[str, Any]] = {}


def fresh_canaries(backend: str) -> dict[str, Any]:
    """The canaries on a worker that never ran an attack (measured once per backend)."""
    if backend not in _fresh:
        with open_sandbox(
            backend, workers=1, timeout=TIMEOUT, memory_mb=256, max_output_bytes=1 << 16
        ) as fresh:
            canaries(fresh)  # warm-up: the first run of a worker pays for its start
            _fresh[backend] = canaries(fresh)
    return _fresh[backend]


def assert_unpoisoned(sb: Sandbox, backend: str, after: str) -> None:
    """The canaries in ``sb`` equal those on a fresh worker (timing within a generous bound)."""
    got, want = canaries(sb), fresh_canaries(backend)
    for key in want:
        if not key.startswith("_"):
            assert got[key] == want[key], f"after {after}: canary {key} changed"
    assert got["_procs"] == 0, f"after {after}: {got['_procs']} processes left over"
    bound = 5 * want["_cpu_seconds"] + 1.0  # a shared machine: only a gross slowdown counts
    assert got["_cpu_seconds"] < bound, (after, got["_cpu_seconds"], want["_cpu_seconds"])


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_no_attack_poisons_its_worker(sb: Sandbox, backend: str, attack: str) -> None:
    r = sb.run(ATTACKS[attack])
    assert r.status in ("ok", "error"), r  # scored like any program, never a sandbox error
    assert_unpoisoned(sb, backend, attack)


# ---------------------------------------------------------------------------- one per class


def test_a_zombie_main_thread_does_not_survive(sb: Sandbox, backend: str) -> None:
    r = sb.run(ZOMBIE_SURVIVOR)
    assert (r.status, r.stdout) == ("ok", "parent done\n"), r
    assert sb.process_count() == 0
    probe = (
        TMP + "import time\ntime.sleep(0.3)\nprint(os.path.exists(os.path.join(TMP, 'survivor')))"
    )
    assert sb.run(probe).stdout == "False\n"


SHADOWED = [
    ("def abs(x):\n    return 0\n", "assert abs(f(1.5) - 0.5) < 1e-6"),
    ("def sorted(x, **k):\n    return [1, 2, 3]\n", "assert sorted(f([3, 1, 2])) == [1, 2, 3]"),
    ("def len(x):\n    return 3\n", "assert len(f([3, 1, 2])) == 3"),
    ("def set(x=()):\n    return {1}\n", "assert set(f([1, 1])) == {1}"),
    ("import random as abs\n", "assert abs(f(-2)) == 2"),
]


@pytest.mark.parametrize("trusted", [False, True], ids=["fresh-judge", "judge-server"])
@pytest.mark.parametrize("shadow,test", SHADOWED, ids=["abs", "sorted", "len", "set", "module"])
def test_tests_see_the_real_builtins(
    sb: Sandbox, backend: str, trusted: bool, shadow: str, test: str
) -> None:
    wrong = shadow + "def f(x):\n    return 100\n"
    rep = sb.run_tests(wrong, [test], trusted_tests=trusted)
    assert rep.passed == 0, rep
    check = "def check(candidate):\n    f = candidate\n    " + test + "\n"
    rep = sb.run_tests(wrong, check, "f", trusted_tests=trusted)
    assert rep.passed == 0, rep


@pytest.mark.parametrize("trusted", [False, True], ids=["fresh-judge", "judge-server"])
def test_task_helpers_come_from_the_task(sb: Sandbox, backend: str, trusted: bool) -> None:
    task = "def encode(s: str) -> str:\n    return s[::-1]\n\n\ndef decode(s: str) -> str:\n    '''Undo encode.'''\n"
    check = "def check(candidate):\n    assert candidate(encode('abc')) == 'abc'\n"
    cheat = "def encode(s):\n    return s\n\n\ndef decode(s):\n    return s\n"
    rep = sb.run_tests(cheat, check, "decode", trusted_tests=trusted, task_code=task)
    assert rep.passed == 0, rep
    honest = task + "    return s[::-1]\n"
    rep = sb.run_tests(honest, check, "decode", trusted_tests=trusted, task_code=task)
    assert rep.all_passed, rep


HUGE_INT = "def f():\n    return 1 << 20000\n"


@pytest.mark.parametrize("trusted", [False, True], ids=["fresh-judge", "judge-server"])
def test_a_huge_int_answer_is_a_plain_failure(sb: Sandbox, backend: str, trusted: bool) -> None:
    rep = sb.run_tests(
        HUGE_INT, ["assert f() == 5", "assert f() == 1 << 20000"], trusted_tests=trusted
    )
    assert rep.status == "ok" and rep.passed == 1, rep
    assert rep.results[0].status == "fail" and len(rep.results[0].message) < 400, rep
    check = "def check(candidate):\n    assert candidate() == 5\n"
    rep = sb.run_tests(HUGE_INT, check, "f", trusted_tests=trusted)
    assert rep.status == "ok" and rep.passed == 0, rep


def test_one_bad_completion_does_not_change_the_batch(sb: Sandbox, backend: str) -> None:
    good = "def f():\n    return 5\n"
    jobs = [
        (good, ["assert f() == 5"]),
        (HUGE_INT, ["assert f() == 5"]),
        (good, ["assert f() == 5"]),
    ]
    reps = sb.map_tests(jobs, trusted_tests=True)
    assert [r.passed for r in reps] == [1, 0, 1], reps
    assert reps[1].status == "ok", reps[1]


@pytest.mark.parametrize("trusted", [False, True], ids=["fresh-judge", "judge-server"])
def test_an_oversize_verdict_is_a_failure(sb: Sandbox, backend: str, trusted: bool) -> None:
    big = "def f():\n    return 'x' * (36 << 20)\n"
    rep = sb.run_tests(
        big, ["assert f() == 'y'", "assert f() == 'z'"], timeout=20, trusted_tests=trusted
    )
    assert rep.status in ("ok", "error") and rep.passed == 0, rep
    assert all(len(r.message) < 400 for r in rep.results), rep
    assert sb.run("print(6 * 7)").stdout == "42\n"


def test_a_deep_directory_chain_does_not_break_the_next_run(sb: Sandbox, backend: str) -> None:
    r = sb.run(DEEP_DIRECTORIES, timeout=20)
    assert (r.status, r.stdout) == ("ok", "deep\n"), r
    r = sb.run("print(6 * 7)")
    assert (r.status, r.stdout) == ("ok", "42\n"), r


def test_autogroup_and_scheduling_writes_stay_in_the_run(sb: Sandbox, backend: str) -> None:
    for attack in (AUTOGROUP_NICE, AFFINITY_AND_PRIORITY):
        sb.run(attack)
        fp, want = fingerprint(sb)[1], fresh_canaries(backend)["fingerprint"][1]
        assert fp.splitlines()[1:3] == want.splitlines()[1:3], fp


def test_limits_set_on_the_worker_do_not_reach_later_runs(sb: Sandbox, backend: str) -> None:
    if seccomp_enabled():  # the filter (every backend) denies prlimit64 on another pid
        assert sb.run(PRLIMIT_POISON).stdout == "set 0\n"
    for attack in (PRLIMIT_POISON, COVERT_SOFT_LIMIT):
        sb.run(attack)
        assert fingerprint(sb) == fresh_canaries(backend)["fingerprint"]
        rep = sb.run_tests(*GOOD, trusted_tests=True)
        assert rep.all_passed, rep


def test_run_directories_do_not_count_runs(sb: Sandbox, backend: str) -> None:
    names = {sb.run("import os\nprint(os.path.basename(os.getcwd()))").stdout for _ in range(3)}
    assert len(names) == 3 and not any(n.strip().removeprefix("run").isdigit() for n in names)


def test_the_local_worker_has_a_cpu_cgroup(backend: str) -> None:
    if backend != "local" or os.geteuid() != 0:
        pytest.skip("the cpu cgroup is the local backend's, as root")
    sb = _box(backend)
    sb.run("pass")
    cgroup = sb._all[0].cgroup
    assert cgroup is not None and cgroup.has_cpu_group, cgroup


# ---------------------------------------------------------------------------- fuzz

FUZZ_HEADER = TMP + WORKER_PIDS + "import signal, sys, threading, time, resource\n"
FUZZ_PIECES = [
    "for _ in range({n} % 4 + 1):\n    if os.fork() == 0:\n        time.sleep(30)\n        os._exit(0)\n",
    "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        time.sleep(30)\n    os._exit(0)\n",
    "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n",
    "with open(os.path.join(TMP, 'f{n}'), 'w') as f:\n    f.write('x' * {n})\n",
    "for _ in range({n} * 40):\n    os.mkdir('d')\n    os.chdir('d')\n",
    "os.chmod(os.getcwd(), 0)\n",
    "print('x' * ({n} * 1000))\n",
    "raise ValueError('\\udcff' * {n})\n",
    "sys.exit({n})\n",
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n",
    "x = bytearray(({n} % 3) << 20)\n",
    "os.kill(os.getppid(), signal.SIGSTOP)\n",
    "os.kill(os.getppid(), signal.SIGKILL)\n",
    "while True:\n    pass\n",
    "sys.setrecursionlimit(10 ** 6)\ndef r(k):\n    return r(k + 1)\nr(0)\n",
    "print(1 << (3000 * {n}), end='')\n",
]
FUZZ_PIECES += [ATTACKS[name] for name in sorted(ATTACKS) if name != "deep-directories"]


@pytest.mark.slow
def test_fuzz_random_hostile_programs_do_not_poison(backend: str) -> None:
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies
    sb = _box(backend, "fuzz")
    want = fresh_canaries(backend)

    @hypothesis.settings(
        max_examples=12,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(hypothesis.HealthCheck),
        database=None,
    )
    @hypothesis.given(
        st.lists(st.tuples(st.sampled_from(FUZZ_PIECES), st.integers(1, 9)), min_size=1, max_size=4)
    )
    def attack(pieces: list[tuple[str, int]]) -> None:
        program = FUZZ_HEADER + "".join(p.replace("{n}", str(n)) for p, n in pieces)
        r = sb.run(program, timeout=1.0)
        assert r.status != "sandbox_error", (program, r)
        got = canaries(sb)
        for key in want:
            if not key.startswith("_"):
                assert got[key] == want[key], (program, key, got[key], want[key])
        assert got["_procs"] == 0, program

    attack()


def test_without_a_cpu_cgroup_each_run_has_its_own_autogroup(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if backend != "unsafe":
        pytest.skip("the unsafe backend runs without a cgroup when none can be made")
    from flexmg.sandboxes import cgroups

    def unavailable(*args: object, **kwargs: object) -> None:
        raise cgroups.CgroupUnavailable("no cgroup in this test")

    monkeypatch.setattr(cgroups.WorkerCgroup, "create", unavailable)
    with open_sandbox(backend, workers=1, timeout=TIMEOUT) as box:
        assert not _autogroups_inert(box)
        box.run(AUTOGROUP_NICE)
        # its own session, so its own autogroup at nice 0 (the worker's session may be
        # slowed: a known gap of a worker without a cpu cgroup, hence the long timeout)
        fp = box.run(FINGERPRINT, timeout=30)
        assert "autogroup 0\n" in fp.stdout, fp


def test_code_env_grading_uses_the_task_helpers_and_isolates_bad_answers(sb: Sandbox) -> None:
    from flexmg.envs.code import grade_code, grade_many
    from flexmg.tasks import Task

    prompt = "def encode(s: str) -> str:\n    return s[::-1]\n\n\ndef decode(s: str) -> str:\n    '''Undo encode.'''\n"
    check = "def check(candidate):\n    assert candidate(encode('abc')) == 'abc'\n"
    task = Task("helpers", prompt, meta={"tests": check, "entry_point": "decode"})
    cheat = "```python\ndef encode(s):\n    return s\n\n\ndef decode(s):\n    return s\n```"
    honest = "```python\ndef decode(s):\n    return s[::-1]\n```"
    assert grade_code(cheat, task, sb).reward == 0.0
    assert grade_code(honest, task, sb).reward == 1.0
    huge = "```python\ndef decode(s):\n    return 1 << 20000\n```"
    grades = grade_many([honest, huge, honest], [task] * 3, sb)
    assert [g.reward for g in grades] == [1.0, 0.0, 1.0], grades
    assert not any(g.sandbox_error for g in grades), grades
