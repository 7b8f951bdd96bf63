"""Hostile code against every available sandbox backend: exact outcomes, host untouched.

The ``unsafe`` backend gives no isolation by design; cases that test isolation
(or that would harm the host, like ``kill(-1)`` as root) skip it with that reason.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from flexmg.sandboxes import Sandbox
from flexmg.sandboxes.seccomp import seccomp_enabled
from flexmg.sandboxes.testing import backend_params, open_sandbox
from helpers import FORGE_FRAME

REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 2.0
MAX_OUT = 65536
NO_ISOLATION = "the unsafe backend gives no isolation by design"

pytestmark = pytest.mark.parametrize("backend", backend_params())

_boxes: dict[str, Sandbox] = {}


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
            backend, workers=1, timeout=TIMEOUT, memory_mb=256, max_output_bytes=MAX_OUT
        )
    return _boxes[backend]


# Tests an agent wrote run in a fresh judge per run; a task's own tests in the
# sandbox's long-lived judge server: hostile solutions get both.
BOTH_JUDGES = pytest.mark.parametrize("trusted", [False, True], ids=["fresh-judge", "judge-server"])


def _isolating(backend: str) -> None:
    if backend == "unsafe":
        pytest.skip(NO_ISOLATION)


# Caches the test tools write at the top level, maybe mid-test from another xdist
# worker (hypothesis makes .hypothesis/ on a fresh clone's first run).
TOOL_CACHES = {".hypothesis", ".pytest_cache", ".ruff_cache", ".mypy_cache"}


def _top_level() -> list[str]:
    return sorted(p.name for p in REPO.iterdir() if p.name not in TOOL_CACHES)


@pytest.fixture(autouse=True)
def _host_untouched(backend: str) -> Iterator[None]:
    """Every case: the repo's top level and a canary file are unchanged afterwards."""
    canary = REPO / "pyproject.toml"
    before = (_top_level(), canary.read_bytes())
    yield
    after = (_top_level(), canary.read_bytes())
    assert after == before, "the sandboxed code changed the host repository"


def _clean_after(sb: Sandbox) -> None:
    """After a run: no process of it is left, and the next run works."""
    assert sb.process_count() == 0
    r = sb.run("print('next run ok')")
    assert (r.status, r.stdout) == ("ok", "next run ok\n"), r


@BOTH_JUDGES
def test_infinite_loop(sb: Sandbox, backend: str, trusted: bool) -> None:
    r = sb.run("while True:\n    pass\n")
    assert r.status == "timeout" and r.exit_code is None
    assert r.duration < TIMEOUT + 1.0
    rep = sb.run_tests(
        "def f(x):\n    while True:\n        pass\n", ["assert f(1) == 1"], trusted_tests=trusted
    )
    assert rep.status == "timeout" and rep.passed == 0
    assert rep.results[0].status == "timeout"
    _clean_after(sb)


def test_sleep_past_timeout_and_ignore_sigterm(sb: Sandbox, backend: str) -> None:
    code = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(100)\n"
    t0 = time.monotonic()
    r = sb.run(code)
    assert r.status == "timeout" and r.exit_code is None
    assert time.monotonic() - t0 < TIMEOUT + 3.0
    _clean_after(sb)


@BOTH_JUDGES
def test_per_test_timeout_keeps_other_tests(sb: Sandbox, backend: str, trusted: bool) -> None:
    code = "import time\ndef f(x):\n    if x == 0:\n        time.sleep(100)\n    return x\n"
    rep = sb.run_tests(
        code,
        ["assert f(1) == 1", "assert f(0) == 0", "assert f(2) == 2"],
        timeout=3.0,
        trusted_tests=trusted,
    )
    assert [r.status for r in rep.results] == ["pass", "timeout", "timeout"] or [
        r.status for r in rep.results
    ] == ["pass", "timeout", "pass"]
    assert rep.status == "timeout"


def test_fork_bomb(sb: Sandbox, backend: str) -> None:
    _isolating(backend)
    code = (
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    )
    r = sb.run(code)
    assert r.status == "timeout"
    _clean_after(sb)
    if backend == "local":
        # on the host: bwrap, zygote, fork server, judge server, idle runner and judge
        for w in sb._all:
            counts = []
            for _ in range(50):  # the fork server's short-lived helper may still be exiting
                counts.append(len(w.cgroup.pids()))  # type: ignore[attr-defined]
                if counts[-1] <= 6:
                    break
                time.sleep(0.05)
            assert counts[-1] <= 6, counts


def test_thread_bomb(sb: Sandbox, backend: str) -> None:
    _isolating(backend)
    code = (
        "import threading, time\n"
        "while True:\n"
        "    threading.Thread(target=time.sleep, args=(100,), daemon=True).start()\n"
    )
    r = sb.run(code)
    assert r.status == "error", r
    assert "can't start new thread" in r.stderr
    _clean_after(sb)


@BOTH_JUDGES
def test_memory_bomb(sb: Sandbox, backend: str, trusted: bool) -> None:
    r = sb.run("x = bytearray(10 ** 10)\n")
    assert r.status == "oom" and "MemoryError" in r.stderr
    r = sb.run("chunks = []\nwhile True:\n    chunks.append(bytearray(10 ** 6))\n")
    assert r.status == "oom"
    rep = sb.run_tests(
        "def f():\n    return bytearray(10 ** 10)\n", ["assert f() == 0"], trusted_tests=trusted
    )
    assert rep.status == "oom" and rep.passed == 0 and rep.results[0].status == "oom"
    _clean_after(sb)


@BOTH_JUDGES
def test_infinite_stdout(sb: Sandbox, backend: str, trusted: bool) -> None:
    r = sb.run("while True:\n    print('x' * 1000)\n")
    assert r.status == "output_limit" and r.truncated
    assert 0 < len(r.stdout) + len(r.stderr) <= MAX_OUT
    rep = sb.run_tests(
        "def f():\n    while True:\n        print('y' * 1000)\n",
        ["assert f() == 1"],
        trusted_tests=trusted,
    )
    assert rep.status == "output_limit" and rep.passed == 0
    _clean_after(sb)


def test_huge_file(sb: Sandbox, backend: str) -> None:
    code = "with open('big', 'wb') as f:\n    for _ in range(200):\n        f.write(b'x' * (1 << 20))\n"
    r = sb.run(code)
    assert r.status == "error" and "File too large" in r.stderr
    r = sb.run("import os\nprint(os.listdir('.'))")
    assert r.stdout == "[]\n"
    _clean_after(sb)


def test_cannot_read_host_secrets(sb: Sandbox, backend: str, tmp_path: Path) -> None:
    _isolating(backend)
    token = secrets.token_hex(16)
    secret = tmp_path / "secret.txt"
    secret.write_text(token)
    code = f"""
import os
for path in [{str(secret)!r}, '/etc/shadow', {str(REPO / "pyproject.toml")!r}]:
    try:
        print(open(path).read())
    except OSError as e:
        print('denied', path, type(e).__name__)
for d in ['/root', {str(REPO)!r}, {str(tmp_path)!r}, '/home']:
    try:
        print(d, os.listdir(d))
    except OSError as e:
        print('denied', d, type(e).__name__)
"""
    r = sb.run(code)
    assert r.status == "ok", r
    assert token not in r.stdout and "flexmg" not in r.stdout
    assert r.stdout.count("denied") == 7, r.stdout
    assert secret.read_text() == token


def test_cannot_write_outside_tmp(sb: Sandbox, backend: str) -> None:
    _isolating(backend)
    targets = [
        "/x",
        "/opt/python/x",
        "/opt/python/lib/x",
        "/etc/x",
        "/dev/x",
        "/dev/shm/x",
        "/proc/x",
        "/lib/x",
    ]
    code = f"""
ok = 0
for path in {targets!r}:
    try:
        open(path, 'w').write('pwned')
        print('WROTE', path)
    except OSError:
        ok += 1
print(ok)
"""
    r = sb.run(code)
    assert r.status == "ok" and r.stdout.strip() == str(len(targets)), r
    assert not Path(os.path.realpath(sys.executable)).with_name("x").exists()


def test_no_network(sb: Sandbox, backend: str) -> None:
    _isolating(backend)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    code = f"""
import socket
for host in ['127.0.0.1', '10.0.0.1', '1.1.1.1']:
    try:
        socket.create_connection((host, {port}), timeout=0.5)
        print('CONNECTED', host)
    except OSError as e:
        print('blocked', host)
"""
    try:
        r = sb.run(code)
        assert r.status == "ok" and r.stdout.count("blocked") == 3, r
        with pytest.raises(BlockingIOError):
            listener.accept()
    finally:
        listener.close()


def test_environment_is_cleared(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    token = secrets.token_hex(16)
    monkeypatch.setenv("FLEXMG_TEST_SECRET", token)
    with open_sandbox(backend, workers=1, timeout=TIMEOUT) as fresh:
        r = fresh.run(
            "import os\nprint(dict(os.environ))\nprint(open('/proc/self/environ').read())"
        )
    assert r.status == "ok", r
    assert token not in r.stdout and "FLEXMG_TEST_SECRET" not in r.stdout


@BOTH_JUDGES
def test_kill_parent_and_every_pid(sb: Sandbox, backend: str, trusted: bool) -> None:
    if backend == "unsafe":
        pytest.skip("kill(-1) from the unsafe backend would hit the host: " + NO_ISOLATION)
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        code = (
            "import os, signal\n"
            "for pid in (os.getppid(), 1):\n"
            "    try:\n"
            "        os.kill(pid, signal.SIGKILL)\n"
            "    except OSError:\n"
            "        pass\n"
            "try:\n"
            "    os.kill(-1, signal.SIGKILL)\n"
            "except ProcessLookupError:\n"
            "    pass\n"
            "print('still here')\n"
        )
        r = sb.run(code)
        assert (r.status, r.stdout) == ("ok", "still here\n"), r
        _clean_after(sb)
        rep = sb.run_tests(
            code.replace("print('still here')", "def f():\n    return 1"),
            ["assert f() == 1"],
            trusted_tests=trusted,
        )
        assert rep.passed == 0 and rep.status == "error", rep
        _clean_after(sb)
        assert bystander.poll() is None, "a host process was killed"
    finally:
        bystander.kill()
        bystander.wait()


def test_daemon_does_not_outlive_the_run(sb: Sandbox, backend: str) -> None:
    code = """
import os, time
tmp = os.environ.get('TMPDIR', '/tmp')
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(0.5)
        while True:
            open(os.path.join(tmp, 'daemon_was_here'), 'w').write('x')
            time.sleep(0.05)
    os._exit(0)
print('parent done')
"""
    r = sb.run(code)
    assert (r.status, r.stdout) == ("ok", "parent done\n"), r
    assert sb.process_count() == 0
    time.sleep(1.0)
    r = sb.run(
        "import os\nprint(os.path.exists(os.path.join(os.environ.get('TMPDIR', '/tmp'), "
        "'daemon_was_here')))"
    )
    assert r.stdout == "False\n", r


def test_deep_recursion(sb: Sandbox, backend: str) -> None:
    r = sb.run("def f(n):\n    return f(n + 1)\nf(0)\n")
    assert r.status == "error" and "RecursionError" in r.stderr
    # Recursing through C (map/list) with no recursion limit overflows the C stack.
    code = "import sys\nsys.setrecursionlimit(10 ** 8)\ndef f(n):\n    return list(map(f, [n + 1]))\nf(0)\n"
    r = sb.run(code)
    assert (r.status, r.exit_code, r.error) == ("error", -11, "killed by SIGSEGV"), r
    _clean_after(sb)


def test_invalid_utf8_output(sb: Sandbox, backend: str) -> None:
    code = "import sys\nsys.stdout.buffer.write(b'ok \\xff\\xfe \\xc3')\nsys.stderr.buffer.write(b'\\x80')"
    r = sb.run(code)
    assert r.status == "ok"
    assert r.stdout.startswith("ok ") and "\ufffd" in r.stdout and r.stderr == "\ufffd"


def test_no_nested_user_namespace(sb: Sandbox, backend: str) -> None:
    _isolating(backend)
    code = (
        "import ctypes\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print(libc.unshare(0x10000000), libc.unshare(0x20000))\n"  # CLONE_NEWUSER, CLONE_NEWNS
    )
    r = sb.run(code)
    assert (r.status, r.stdout) == ("ok", "-1 -1\n"), r


def test_files_do_not_survive_to_the_next_run(sb: Sandbox, backend: str) -> None:
    write = """
import os
tmp = os.environ.get('TMPDIR', '/tmp')
for path in [os.path.join(tmp, 'left.txt'), 'left_in_workdir.txt', os.path.join(tmp, '.hidden')]:
    open(path, 'w').write('leak')
os.makedirs(os.path.join(tmp, 'locked', 'sub'))
os.chmod(os.path.join(tmp, 'locked'), 0)
print(len(os.listdir(tmp)) >= 3)
"""
    r = sb.run(write)
    assert (r.status, r.stdout) == ("ok", "True\n"), r
    r = sb.run(
        "import os\ntmp = os.environ.get('TMPDIR', '/tmp')\nprint(len(os.listdir(tmp)), os.listdir('.'))"
    )
    assert r.stdout == "1 []\n", r  # only this run's own fresh working directory


def test_ipc_does_not_survive_to_the_next_run(sb: Sandbox, backend: str) -> None:
    _isolating(backend)
    r = sb.run(
        "import ctypes\nlibc = ctypes.CDLL(None)\n"
        "print(libc.shmget(0x1234, 4096, 0o1000 | 0o600) >= 0)\n"  # IPC_CREAT
    )
    assert (r.status, r.stdout) == ("ok", "True\n"), r
    r = sb.run("import ctypes\nlibc = ctypes.CDLL(None)\nprint(libc.shmget(0x1234, 0, 0))\n")
    assert r.stdout == "-1\n", r


TRACE_ME = (
    "import ctypes, os, signal\n"
    "traced = ctypes.CDLL(None, use_errno=True).ptrace(0, 0, 0, 0) == 0\n"  # PTRACE_TRACEME
    "os.kill(os.getpid(), signal.SIGUSR2)\n"  # a traced process stops here, the rest dies
)


@BOTH_JUDGES
def test_a_run_that_makes_itself_traced_is_scored(sb: Sandbox, backend: str, trusted: bool) -> None:
    # Where ptrace is allowed (the seccomp filter off), the fork server becomes the tracer
    # and sees the runner's stops: the run is killed and scored, never a sandbox error.
    # The filter (every backend) denies ptrace; the signal then ends the run.
    filtered = seccomp_enabled()
    r = sb.run(TRACE_ME + "print('still here')\n")
    assert r.status == "error" and r.stdout == "", r
    if filtered:  # ptrace denied: SIGUSR2's default action ends the run
        assert r.exit_code == -12, r
    else:
        assert r.exit_code == -9 and "traced" in r.error, r
    rep = sb.run_tests(
        TRACE_ME + "def add(a, b):\n    return a + b\n",
        ["assert add(1, 2) == 3"],
        trusted_tests=trusted,
    )
    assert rep.status == "error" and rep.passed == 0, rep
    assert filtered or "traced" in rep.error, rep
    assert sb.run("print(1 + 1)").stdout == "2\n"


@BOTH_JUDGES
def test_os_exit_before_tests_scores_zero(sb: Sandbox, backend: str, trusted: bool) -> None:
    cases = [  # (early exit, the test's status when it happens inside the function)
        ("import os\nos._exit(0)\n", "crash"),
        ("import sys\nsys.exit(0)\n", "error"),
        ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", "crash"),
    ]
    for early, inside_status in cases:
        rep = sb.run_tests(
            early + "def add(a, b):\n    return a + b\n",
            ["assert add(1, 2) == 3"],
            trusted_tests=trusted,
        )
        assert rep.passed == 0 and rep.status == "error", (early, rep)
        assert rep.results[0].status == "not_run"
        rep = sb.run_tests(
            "def add(a, b):\n" + "".join("    " + line + "\n" for line in early.splitlines()),
            "def check(candidate):\n    assert candidate(1, 2) == 3\n",
            entry_point="add",
            trusted_tests=trusted,
        )
        assert rep.passed == 0 and rep.results[0].status == inside_status, (early, rep)


@BOTH_JUDGES
def test_forged_argument_write_back_is_a_crash(sb: Sandbox, backend: str, trusted: bool) -> None:
    # The solution writes its own reply frame (fd 4) with a malformed write-back of
    # the arguments: the judge treats the runner as broken, never crashes or passes.
    code = FORGE_FRAME + (
        "def f(xs):\n"
        "    forge({'ok': 1, 'mutable': ({'0': ['zz']}, [1], {'0': ['l', ['q']]})[xs[0]]})\n"
        "    os._exit(0)\n"
    )
    tests = [f"xs = [{i}]\nassert f(xs) == 1" for i in range(3)]
    rep = sb.run_tests(code, tests, trusted_tests=trusted)
    assert rep.passed == 0 and rep.total == 3, rep
    assert {r.status for r in rep.results} <= {"crash", "error"}, rep
    assert sb.run("print(3)").stdout == "3\n"


@BOTH_JUDGES
def test_forged_callbacks_are_a_crash(sb: Sandbox, backend: str, trusted: bool) -> None:
    # The solution asks the judge to run functions it was never given, or sends
    # malformed arguments: the runner is treated as broken; the judge never crashes.
    code = FORGE_FRAME + (
        "def f(g, k):\n"
        "    forge(({'callback': 5, 'args': ['l'], 'kwargs': ['d']},\n"
        "           {'callback': 0, 'args': ['zz'], 'kwargs': ['d']},\n"
        "           {'callback': '0', 'args': ['l'], 'kwargs': ['d']},\n"
        "           {'callback': 0, 'args': ['l', ['F', 0]], 'kwargs': ['d']})[k])\n"
        "    os.read(3, 1 << 20)\n"
        "    return 1\n"
        "def spin(g):\n"
        "    while True:\n"
        "        g(1)\n"
    )
    tests = [f"assert f(len, {k}) == 1" for k in range(4)] + ["spin(abs)"]
    rep = sb.run_tests(code, tests, trusted_tests=trusted)
    assert rep.passed == 0 and rep.total == 5, rep
    assert {r.status for r in rep.results[:4]} <= {"crash", "error"}, rep
    assert rep.results[4].status == "timeout", rep
    assert sb.run("print(4)").stdout == "4\n"


@BOTH_JUDGES
def test_eq_spoofing_fails(sb: Sandbox, backend: str, trusted: bool) -> None:
    code = """
class Anything:
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
class SneakyInt(int):
    def __eq__(self, other):
        return True
def add(a, b):
    return Anything()
def sub(a, b):
    return SneakyInt(0)
"""
    rep = sb.run_tests(
        code,
        ["assert add(1, 2) == 3", "assert sub(5, 2) == 3", "assert 3 == add(1, 2)"],
        trusted_tests=trusted,
    )
    assert rep.passed == 0 and rep.total == 3, rep
    assert all("not plain data" in r.message for r in rep.results), rep
    rep = sb.run_tests(
        code,
        "def check(candidate):\n    assert candidate(1, 2) == 3\n",
        "add",
        trusted_tests=trusted,
    )
    assert rep.passed == 0, rep


@BOTH_JUDGES
def test_fake_results_fail(sb: Sandbox, backend: str, trusted: bool) -> None:
    code = """
import json, os, struct, sys
fake = json.dumps({"results": [{"status": "pass"}] * 3, "load_error": None}).encode()
frame = struct.pack('>I', len(fake)) + fake
print('3 passed, 0 failed'); print(fake.decode()); sys.stdout.flush()
for fd in range(0, 30):
    try:
        os.write(fd, frame)
    except OSError:
        pass
def add(a, b):
    print('PASS'); return a - b
"""
    rep = sb.run_tests(
        code,
        ["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(0, 5) == 5"],
        trusted_tests=trusted,
    )
    assert rep.passed == 0, rep


def test_zz_fork_server_survives_the_suite(sb: Sandbox, backend: str) -> None:
    """After every hostile case above, the fork server is still the one started first
    (except where a case killed it on purpose: kill(-1))."""
    _isolating(backend)
    starts = [w.request({"op": "ping"}, 10.0)["fs_starts"] for w in sb._all]
    assert all(1 <= s <= 8 for s in starts), starts  # 1 + the cases that kill it


_PID_CHECK = (
    "def check(candidate):\n    import os\n    print('judge', os.getpid())\n"
    "    assert candidate(2) == 4\n"
)


def _judge_pid(sb: Sandbox, trusted: bool) -> str:
    rep = sb.run_tests("def sq(x):\n    return x * x\n", _PID_CHECK, "sq", trusted_tests=trusted)
    assert rep.all_passed, rep
    return rep.stdout.split("judge", 1)[1].strip()


def test_trusted_tests_reuse_the_judge_server_and_agent_tests_do_not(
    sb: Sandbox, backend: str
) -> None:
    first, second = _judge_pid(sb, True), _judge_pid(sb, True)
    assert first == second  # one judge process serves the task's own tests
    fresh = {_judge_pid(sb, False) for _ in range(3)}
    assert len(fresh) == 3 and first not in fresh  # an agent's tests: a new judge each run


def test_agent_tests_cannot_change_later_verdicts(sb: Sandbox, backend: str) -> None:
    """Tests written by an agent patch builtins and the proxy class in their judge;
    the next runs (either judge) are unaffected."""
    hostile = [
        "import builtins\nbuiltins.AssertionError = type('Nope', (Exception,), {})",
        "import sys\nsys.modules['__main__'].Judge = None",
        "assert f(1) == 1",
    ]
    sb.run_tests("def f(x):\n    return x\n", hostile)
    for trusted in (False, True):
        rep = sb.run_tests("def f(x):\n    return 0\n", ["assert f(1) == 1"], trusted_tests=trusted)
        assert rep.passed == 0 and rep.results[0].status == "fail", rep


def test_a_killed_judge_server_is_replaced(sb: Sandbox, backend: str) -> None:
    _isolating(backend)
    before = _judge_pid(sb, True)
    code = (
        "import os, signal\n"
        "for name in os.listdir('/proc'):\n"
        "    if name.isdigit() and int(name) != os.getpid():\n"
        "        try:\n"
        "            os.kill(int(name), signal.SIGKILL)\n"
        "        except OSError:\n"
        "            pass\n"
        "def sq(x):\n"
        "    return x * x\n"
    )
    rep = sb.run_tests(code, _PID_CHECK, "sq", trusted_tests=True)
    assert rep.passed == 0, rep  # its own judge is gone: the run scores 0
    _clean_after(sb)
    after = _judge_pid(sb, True)
    assert after != before  # a new judge server took over, and judges correctly
    assert _judge_pid(sb, True) == after  # the very next run: it serves from then on


def test_the_run_after_the_judge_server_dies_has_a_new_one(sb: Sandbox, backend: str) -> None:
    """An agent's run kills only the judge server; the next trusted run is served
    by its replacement, not by a one-off judge."""
    _isolating(backend)
    before = _judge_pid(sb, True)
    code = f"import os, signal\nos.kill({before}, signal.SIGKILL)\ndef sq(x):\n    return x * x\n"
    rep = sb.run_tests(code, ["assert sq(3) == 9"], trusted_tests=False)
    assert rep.all_passed, rep
    after = _judge_pid(sb, True)
    assert after != before
    assert _judge_pid(sb, True) == after


def test_a_stopped_judge_server_is_resumed(sb: Sandbox, backend: str) -> None:
    _isolating(backend)
    before = _judge_pid(sb, True)
    code = f"import os, signal\nos.kill({before}, signal.SIGSTOP)\ndef sq(x):\n    return x * x\n"
    rep = sb.run_tests(code, ["assert sq(3) == 9"], trusted_tests=False)
    assert rep.all_passed, rep  # an agent's tests: a fresh judge, unaffected
    assert _judge_pid(sb, True) == before  # resumed (SIGCONT) and still serving
