"""The flexmg.sandboxes API: results, limits, test parsing, codec, pool, fork safety, CLI."""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from flexmg.sandboxes import (
    ExecResult,
    Limits,
    Sandbox,
    TestReport,
    hold_shared_sandbox,
    make_sandbox,
    parse_tests,
    release_shared_sandbox,
)
from flexmg.sandboxes.cli import add_commands
from flexmg.sandboxes.inside import codec as inside
from flexmg.sandboxes.testing import backend_params, open_sandbox

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

_boxes: dict[str, Sandbox] = {}


@pytest.fixture(scope="module", autouse=True)
def _close_boxes() -> Iterator[None]:
    yield
    for sb in _boxes.values():
        sb.close()
    _boxes.clear()


@pytest.fixture(params=backend_params())
def sb(request: pytest.FixtureRequest) -> Sandbox:
    backend = request.param
    if backend not in _boxes:
        _boxes[backend] = open_sandbox(backend, workers=2, timeout=5.0, memory_mb=256)
    return _boxes[backend]


# ---------------------------------------------------------------- codec and parsing


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        0,
        -5,
        2**5000,
        1.5,
        -0.0,
        math.inf,
        "",
        "héllo \ud800 \x00",
        b"\x00\xff",
        bytearray(b"ab"),
        3 + 4j,
        [1, [2, (3, {4: "x"})]],
        {1, (2, 3)},
        frozenset({"a"}),
        {"k": [None, {"n": ()}]},
        {(1, 2): frozenset({3})},
    ],
)
def test_codec_roundtrip(value: object) -> None:
    out = inside.decode(json.loads(json.dumps(inside.encode(value))))
    assert out == value and type(out) is type(value)


def test_codec_nan_and_rejections() -> None:
    assert math.isnan(inside.decode(inside.encode(math.nan)))  # type: ignore[arg-type]

    class Sneaky(int):
        pass

    for bad in [Sneaky(1), object(), print, [1, object()], (x for x in [])]:
        with pytest.raises(inside.NotPlainData):
            inside.encode(bad)
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(inside.NotPlainData):
        inside.encode(loop)
    for malformed in [["zz", 1], [1, 2], {"a": 1}, ["d", [1]], ["s", ["l"]]]:
        with pytest.raises(ValueError):
            inside.decode(malformed)


def test_parse_tests_humaneval_split() -> None:
    tests = (
        "METADATA = {}\n"
        "def check(candidate):\n"
        "    import math\n"
        "    assert True, 'not a test'\n"
        "    assert candidate(2) == 4\n"
        "    for x in range(3):\n"
        "        assert candidate(x) == x * x\n"
        "    assert math.isclose(candidate(0.5), 0.25)\n"
    )
    spec = parse_tests(tests, "sq")
    assert spec.total == 3
    assert [u["kind"] for u in spec.units] == ["setup", "test", "test", "test"]
    assert spec.units[1]["eq"] == ["candidate(2)", "4"]
    assert spec.candidate_name == "candidate"
    # the units are check's body: the judge's setup keeps what is around it only
    assert spec.setup == "METADATA = {}\ndef check(candidate):\n    pass\n"


def test_parse_tests_setup_keeps_a_check_that_can_be_called() -> None:
    body = "def check(candidate):\n    assert candidate(2) == 4\n"
    for tests in [
        body + "check(abs)\n",  # called by the setup itself
        "HELP = 'see check'\n" + body,  # named elsewhere, even in a string
        "def check(candidate): assert candidate(2) == 4\n",  # body on the def's line
        body.replace("\n", "\r\n"),  # other line ends than the parser's \n
        body + "\uff43\uff48\uff45\uff43\uff4b(abs)\n",  # check in full-width letters (NFKC)
    ]:
        spec = parse_tests(tests, "sq")
        assert spec.total == 1 and spec.setup == tests


def test_parse_tests_fallback_and_errors() -> None:
    spec = parse_tests(
        "def check(c):\n    if c(1) != 1:\n        return\n    assert c(2) == 2\n", "f"
    )
    assert spec.total == 1 and spec.names == ["check(candidate)"]
    with pytest.raises(ValueError, match="entry_point"):
        parse_tests("def check(candidate):\n    assert candidate() == 1\n")
    with pytest.raises(ValueError, match="define `def check"):
        parse_tests("assert f() == 1", "f")
    with pytest.raises(ValueError, match="not valid Python"):
        parse_tests("def check(:", "f")
    with pytest.raises(TypeError, match="must be a str"):
        parse_tests([1])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="no tests"):
        parse_tests([])
    assert parse_tests(["assert f(1) == (", "assert f(2)"]).total == 2  # broken text is scored


def test_limits_validation() -> None:
    assert Limits(timeout=3).per_test_timeout == 3
    assert Limits(timeout=3, test_timeout=10).per_test_timeout == 3
    assert Limits(timeout=1.5).cpu_limit == 3
    with pytest.raises(ValueError, match="timeout must be > 0"):
        Limits(timeout=0)
    with pytest.raises(TypeError, match="must be a number"):
        Limits(memory_mb="big")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="too small"):
        Limits(memory_mb=8)
    with pytest.raises(TypeError, match="valid limits are"):
        Limits.from_kwargs(timout=1)


def test_make_sandbox_errors() -> None:
    with pytest.raises(ValueError, match="unknown sandbox backend"):
        make_sandbox("firecracker")
    with warnings.catch_warnings(), pytest.raises(TypeError, match="valid limits are"):
        warnings.simplefilter("ignore")
        make_sandbox("unsafe", memory=5)


def test_unsafe_warns() -> None:
    with pytest.warns(UserWarning, match="does not isolate"):
        make_sandbox("unsafe").close()


# ---------------------------------------------------------------- run


def test_run_basics(sb: Sandbox) -> None:
    r = sb.run("import sys\nprint(sys.stdin.read().upper())", stdin="héllo")
    assert isinstance(r, ExecResult)
    assert (r.status, r.exit_code, r.stdout, r.stderr) == ("ok", 0, "HÉLLO\n", "")
    assert r.duration > 0
    r = sb.run("import sys\nprint('x')\nsys.exit(3)")
    assert (r.status, r.exit_code, r.stdout) == ("error", 3, "x\n")
    r = sb.run("raise ValueError('boom')")
    assert r.status == "error" and r.exit_code == 1
    assert r.stderr.startswith("Traceback") and "ValueError: boom" in r.stderr
    assert "ValueError: boom" in r.error
    r = sb.run("def (:")
    assert r.status == "error" and "SyntaxError" in r.stderr
    r = sb.run("x = '\x00'\0")
    assert r.status == "error" and "null bytes" in r.stderr
    r = sb.run("print('\ud800')")  # a lone surrogate in the source
    assert r.status in ("ok", "error")


def test_run_hostile_text_never_raises(sb: Sandbox) -> None:
    for text in [
        "",
        "\n" * 10000,
        "💥" * 5000,
        "\r\n\t\x0b",
        "a" * 200_000,
        "import sys; sys.exit('bye')",
    ]:
        r = sb.run(text)
        assert r.status in ("ok", "error"), (text[:20], r)
    r = sb.run("import sys; sys.exit('bye')")
    assert (r.exit_code, r.stderr) == (1, "bye\n")


def test_run_type_errors(sb: Sandbox) -> None:
    with pytest.raises(TypeError, match="code must be a str"):
        sb.run(b"print(1)")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="stdin must be"):
        sb.run("pass", stdin=b"x")  # type: ignore[arg-type]


def test_run_sees_only_its_sandbox(sb: Sandbox) -> None:
    r = sb.run("import os, sys\nprint(sys.flags.isolated, sys.flags.no_site, os.getcwd() != '/')")
    assert r.stdout == "1 1 True\n", r


# ---------------------------------------------------------------- run_tests


def test_run_tests_mbpp(sb: Sandbox) -> None:
    code = "def add(a, b):\n    print('adding')\n    return a + b\n"
    rep = sb.run_tests(
        code, ["assert add(1, 2) == 3", "assert add(2, 2) == 5", "assert add('a', 1)"]
    )
    assert isinstance(rep, TestReport)
    assert (rep.status, rep.passed, rep.total) == ("ok", 1, 3)
    assert [r.status for r in rep.results] == ["pass", "fail", "error"]
    assert rep.results[1].message == "expected 5, got 4"
    assert "TypeError" in rep.results[2].message
    assert "adding" in rep.stdout and rep.backend == sb.backend
    assert rep.fraction == pytest.approx(1 / 3) and not rep.all_passed


def test_run_tests_humaneval(sb: Sandbox) -> None:
    code = "import math\ndef helper(x):\n    return x * x\ndef sq(x):\n    return helper(x)\n"
    tests = (
        "def check(candidate):\n"
        "    assert candidate(3) == 9\n"
        "    assert helper(2) == 4\n"
        "    assert math.isclose(candidate(0.5), 0.25)\n"
        "    assert candidate(2) == 5, 'wrong'\n"
    )
    rep = sb.run_tests(code, tests, entry_point="sq")
    assert (rep.status, rep.passed, rep.total) == ("ok", 3, 4), rep
    assert rep.results[3].status == "fail"


def test_run_tests_types_survive(sb: Sandbox) -> None:
    code = "def f():\n    return (1, [2.5, None], {'a': {3}}, b'x', True)\n"
    rep = sb.run_tests(
        code,
        [
            "assert f() == (1, [2.5, None], {'a': {3}}, b'x', True)",
            "assert f() == [1, [2.5, None], {'a': {3}}, b'x', True]",
            "assert f()[4] is True",
            "assert type(f()[0]) is int",
        ],
    )
    assert [r.passed for r in rep.results] == [True, False, True, True], rep


def test_run_tests_see_in_place_changes_to_arguments(sb: Sandbox) -> None:
    # Arguments are copied to the solution's process; its changes to list, dict, set
    # and bytearray arguments are copied back, as one process would see them.
    code = (
        "def sort_in_place(xs):\n    xs.sort()\n"
        "def tag(d, key=None, seen=None):\n    d[key] = 1\n    seen.add(key)\n"
        "def pure(xs):\n    return sorted(xs)\n"
        "def leaky(xs):\n    xs.append(len)\n    return 1\n"
        "def fail_after(buf):\n    buf.extend(b'!')\n    raise ValueError('late')\n"
    )
    tests = [
        "lst = [3, 1, 2]\nsort_in_place(lst)\nassert lst == [1, 2, 3]",
        "d, s = {}, set()\ntag(d, key='a', seen=s)\nassert d == {'a': 1} and s == {'a'}",
        "xs = [2, 1]\nassert pure(xs) == [1, 2] and xs == [2, 1]",
        "xs = [2, 1]\nsort_in_place(xs)\nassert xs == [2, 1]",  # a wrong test must fail
        "xs = [1]\nassert leaky(xs) == 1 and xs == [1]",  # not plain data: the copy stays
        "b = bytearray(b'x')\ntry:\n    fail_after(b)\nexcept ValueError:\n    pass\n"
        "assert b == b'x!'",
    ]
    rep = sb.run_tests(code, tests)
    assert [r.passed for r in rep.results] == [True, True, True, False, True, True], rep


def test_run_tests_exceptions_keep_their_type(sb: Sandbox) -> None:
    code = "def f(x):\n    if x < 0:\n        raise ValueError('neg')\n    return x\n"
    test = "try:\n    f(-1)\n    assert False\nexcept ValueError:\n    pass"
    rep = sb.run_tests(code, [test, "assert f(2) == 2"])
    assert rep.passed == 2, rep


def test_run_tests_solution_type_errors_keep_their_type(sb: Sandbox) -> None:
    code = "def f(x):\n    return x + 1\n"
    test = "try:\n    f(None)\n    assert False\nexcept TypeError as e:\n    assert 'NoneType' in str(e)"
    rep = sb.run_tests(code, [test, "assert f(1) == 2"])
    assert rep.passed == 2, rep


def test_run_tests_can_pass_functions_to_the_solution(sb: Sandbox) -> None:
    # A test's function goes to the solution by reference; the solution calls it back
    # and it runs on the judge's side, with plain data in and out.
    code = (
        "def apply_twice(f, x):\n    return f(f(x))\n"
        "def sort_by(xs, key=None):\n    return sorted(xs, key=key)\n"
        "def safe(f, x):\n    try:\n        return f(x)\n    except ZeroDivisionError:\n"
        "        return 'div'\n"
        "def helper(x):\n    return x * 10\n"
        "def give_back(f):\n    return f\n"
        "def pass_own(f):\n    return f(helper)\n"
    )
    tests = [
        "assert apply_twice(lambda x: x + 1, 3) == 5",
        "assert sort_by(['bb', 'a', 'ccc'], key=len) == ['a', 'bb', 'ccc']",
        "assert safe(lambda x: 1 / x, 0) == 'div'",  # the test's exception reaches the solution
        "assert apply_twice(lambda x: helper(x), 2) == 200",  # the callback calls the solution
        "assert apply_twice(int, '7') == 7",
        "give_back(len)",  # a function is not plain data on the way back
        "assert pass_own(lambda g: 1) == 1",  # nor is the solution's own function
        "assert apply_twice(lambda x: 1, 0) == 2",  # a wrong test still fails
    ]
    rep = sb.run_tests(code, tests)
    assert [r.passed for r in rep.results] == [True] * 5 + [False] * 3, rep
    assert "not plain data" in rep.results[5].message
    assert "not plain data" in rep.results[6].message


def test_run_tests_load_failures(sb: Sandbox) -> None:
    rep = sb.run_tests("def f(:\n", ["assert f() == 1"])
    assert (rep.status, rep.passed, rep.total) == ("error", 0, 1)
    assert "SyntaxError" in rep.error and rep.results[0].status == "not_run"
    rep = sb.run_tests(
        "def g():\n    return 1\n", "def check(candidate):\n    assert candidate() == 1\n", "f"
    )
    assert rep.status == "error" and "does not define a function named 'f'" in rep.error
    rep = sb.run_tests("raise RuntimeError('at import')\n", ["assert f() == 1"])
    assert rep.status == "error" and "RuntimeError: at import" in rep.error


def test_run_tests_crash_mid_way_restarts(sb: Sandbox) -> None:
    code = "import os\ndef f(x):\n    if x == 0:\n        os._exit(0)\n    return x\n"
    rep = sb.run_tests(code, ["assert f(1) == 1", "assert f(0) == 0", "assert f(2) == 2"])
    assert [r.status for r in rep.results] == ["pass", "crash", "pass"], rep
    assert rep.passed == 2 and rep.status == "ok"


def test_map_tests_in_order(sb: Sandbox) -> None:
    jobs = [
        (f"def f():\n    return {i}\n", [f"assert f() == {i}", "assert f() == -1"])
        for i in range(12)
    ]
    jobs.append(
        {
            "code": "def g(x):\n    return x\n",
            "tests": "def check(c):\n    assert c(1) == 1\n",
            "entry_point": "g",
        }
    )
    reps = sb.map_tests(jobs)
    assert [r.passed for r in reps] == [1] * 13 and [r.total for r in reps] == [2] * 12 + [1]
    assert sb.map_tests([]) == []
    with pytest.raises(TypeError, match="job 0 must be"):
        sb.map_tests(["nope"])  # type: ignore[list-item]


def test_map_run(sb: Sandbox) -> None:
    outs = sb.map_run([f"print({i} * 2)" for i in range(6)])
    assert [o.stdout for o in outs] == [f"{i * 2}\n" for i in range(6)]


def test_closed_sandbox_raises() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = make_sandbox("unsafe")
    s.close()
    with pytest.raises(RuntimeError, match="closed"):
        s.run("pass")


@pytest.mark.parametrize("backend", backend_params())
def test_sandbox_survives_fork(backend: str) -> None:
    """A sandbox inherited through fork starts its own workers and leaves the parent's alone."""
    with open_sandbox(backend, workers=1, timeout=5.0) as box:
        assert box.run("print(1)").stdout == "1\n"
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            try:
                out = box.run("print(2)").stdout
                os.write(w, out.encode())
                box.close()  # the child's own workers; the parent's are left alone
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        assert os.read(r, 100) == b"2\n"
        assert box.run("print(3)").stdout == "3\n"


def test_humaneval_sample(sb: Sandbox) -> None:
    """A few real HumanEval canonical solutions pass; a wrong one does not."""
    path = DATA / "HumanEval.jsonl.gz"
    if not path.exists():
        pytest.skip(f"HumanEval data not found at {path}")
    import gzip

    with gzip.open(path, "rt") as f:
        tasks = [json.loads(line) for line in f][:6]
    reps = sb.map_tests(
        [(t["prompt"] + t["canonical_solution"], t["test"], t["entry_point"]) for t in tasks]
    )
    assert all(r.all_passed for r in reps), [r for r in reps if not r.all_passed]
    t = tasks[0]
    rep = sb.run_tests(t["prompt"] + "    return True\n", t["test"], t["entry_point"])
    assert not rep.all_passed


# ---------------------------------------------------------------- CLI


def test_cli_add_commands() -> None:
    ap = argparse.ArgumentParser(prog="flexmg")
    add_commands(ap.add_subparsers(dest="command"))
    args = ap.parse_args(["sandbox", "build-image"])
    assert args.sandbox_command == "build-image" and callable(args.func)
    assert ap.parse_args(["sandbox", "status", "--json"]).json


def test_cli_status_runs() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "flexmg.sandboxes", "status", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    status = json.loads(out.stdout)
    assert set(status) == {"local", "docker", "unsafe"} and status["unsafe"] is None
    if status["local"] is None:  # the text form says whether the seccomp filter is on
        for env_value, state in (("1", "seccomp filter on"), ("0", "seccomp filter OFF")):
            text = subprocess.run(
                [sys.executable, "-m", "flexmg.sandboxes", "status"],
                capture_output=True,
                text=True,
                timeout=120,
                env={**os.environ, "FLEXMG_SANDBOX_SECCOMP": env_value},
            ).stdout
            assert state in text.splitlines()[0], text
    if status["docker"] is None:  # and whether containers get host uids of their own
        for env_value, state in (("off", "containers share uid 65534"), ("", "each container")):
            if env_value == "" and os.geteuid() != 0:
                continue
            text = subprocess.run(
                [sys.executable, "-m", "flexmg.sandboxes", "status"],
                capture_output=True,
                text=True,
                timeout=120,
                env={**os.environ, "FLEXMG_SANDBOX_UIDS": env_value, "DOCKER_HOST": ""},
            ).stdout
            assert state in text.splitlines()[1], text


# ---------------------------------------------------------------- CPU pinning

_AFFINITY = "import os\nprint(sorted(os.sched_getaffinity(0)))"


@pytest.mark.parametrize("backend", [p for p in backend_params() if p.id != "unsafe"])
def test_workers_are_pinned_to_distinct_cpus(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two workers: each one's processes share one CPU of their own; off with the env var."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs two CPUs")
    with open_sandbox(backend, workers=2, timeout=5.0) as sb:
        seen = {r.stdout.strip() for r in sb.map_run([_AFFINITY] * 8)}
        assert sorted(w.cpu for w in sb._all) == cpus[:2]
        assert seen <= {f"[{c}]" for c in cpus[:2]} and seen, seen
    with open_sandbox(backend, workers=1, timeout=5.0) as sb:  # one worker: not pinned
        assert sb.run(_AFFINITY).stdout.strip() == str(cpus)
    monkeypatch.setenv("FLEXMG_SANDBOX_PIN", "0")
    with open_sandbox(backend, workers=2, timeout=5.0) as sb:
        assert {r.stdout.strip() for r in sb.map_run([_AFFINITY] * 4)} == {str(cpus)}


@pytest.mark.parametrize("name", ["flexmg.sandboxes.inside", "flexmg.sandboxes.inside.codec"])
def test_inside_doctests(name: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0, name


def test_the_inside_package_ships_as_one_argument_the_kernel_accepts() -> None:
    """Every module listed in ``procs.MODULES`` travels as one argv string (no file is read
    inside the sandbox); Linux refuses a single argument over 32 pages (E2BIG)."""
    from pathlib import Path

    from flexmg.sandboxes import inside

    here = Path(inside.__file__).parent
    assert {p.stem for p in here.glob("*.py")} - {"__init__"} == set(inside.MODULES)
    size = len(inside.sources().encode())
    assert size < 32 * 4096, f"inside's sources are {size} bytes: over one argument's limit"


def test_a_shared_sandbox_is_one_per_backend_and_timeout_and_the_last_release_closes_it():
    a = hold_shared_sandbox("local", timeout=3.0)
    b = hold_shared_sandbox("local", timeout=3.0)
    other = hold_shared_sandbox("local", timeout=4.0)
    try:
        assert a is b and other is not a
        release_shared_sandbox(a)
        assert not b._closed
    finally:
        release_shared_sandbox(b)
        release_shared_sandbox(other)
    assert a._closed and other._closed
    with pytest.raises(ValueError, match="not held"):
        release_shared_sandbox(a)
    fresh = hold_shared_sandbox("local", timeout=3.0)
    assert fresh is not a and not fresh._closed
    release_shared_sandbox(fresh)
