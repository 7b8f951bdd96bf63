"""The boxed-answer grader: equivalence, format errors, strict numbers, hostile text, deadlines."""

from __future__ import annotations

import doctest
import importlib
import os
import threading
import time

import pytest
import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flexmg.envs.math import (
    REASONS,
    GradeResult,
    _pool,
    _worker,
    extract_boxed,
    grade,
    grade_detailed,
)
from flexmg.envs.math.boxed import canonical_box, sanitize
from flexmg.envs.math.grader import get_pool
from flexmg.envs.math.strict import decimals_written, judge_numbers, numbers_agree

BOX = "\\boxed{{{}}}"


def boxed(answer: str) -> str:
    return BOX.format(answer)


# ------------------------------------------------------------------ extract_boxed
def test_extract_boxed_basic_nested_and_escaped() -> None:
    assert extract_boxed(r"x \boxed{12} y") == ["12"]
    assert extract_boxed(r"\boxed{\frac{1}{2}} and \fbox{3}") == [r"\frac{1}{2}", "3"]
    assert extract_boxed(r"\boxed {a{b}c}") == ["a{b}c"]
    assert extract_boxed(r"\boxed{\{1,2\}}") == [r"\{1,2\}"]
    assert extract_boxed(r"\boxed{\boxed{5}}") == [r"\boxed{5}"]
    assert extract_boxed(r"\boxed{\}}") == [r"\}"]


def test_extract_boxed_unbalanced_and_stray() -> None:
    assert extract_boxed(r"\boxed{1") == []
    assert extract_boxed(r"}}} \boxed{2} {{{") == ["2"]
    assert extract_boxed(r"\boxed{1 \boxed{2}") == []  # outer never closes
    assert extract_boxed(r"\boxed") == []
    assert extract_boxed("") == []


def test_extract_boxed_deep_nesting_is_linear_and_safe() -> None:
    deep = "\\boxed{" * 10_000 + "7" + "}" * 10_000
    out = extract_boxed(deep)
    assert len(out) == 1 and out[0].endswith("7" + "}" * 9_999)
    assert extract_boxed("\\boxed{" * 10_000) == []


def test_extract_boxed_rejects_non_str() -> None:
    with pytest.raises(TypeError, match="expects a str"):
        extract_boxed(None)  # type: ignore[arg-type]


def test_sanitize_and_canonical() -> None:
    assert sanitize("a\x00b\x1fc\ud800") == "abc?"
    assert sanitize("１２") == "12"  # full-width digits (NFKC)
    assert canonical_box(r"\left( 1, 2 \right)") == canonical_box("(1,2)")
    assert canonical_box(r"\dfrac{1}{2}.") == r"\frac{1}{2}"


# -------------------------------------------------------------------- equivalence
@pytest.mark.parametrize(
    ("answer", "gold"),
    [
        ("12", "12"),
        ("0012", "12"),
        (r"\frac{6}{8}", "0.75"),
        (r"\dfrac{3}{4}", r"\frac34"),
        ("3/4", r"\frac{3}{4}"),
        ("x=5", "5"),
        ("x = 5", "x=5"),
        (r"50\%", "50"),
        ("1,000", "1000"),
        ("0.333333", r"\frac{1}{3}"),
        (r"2^{-99}", r"\frac{1}{2^{99}}"),
        (r"\frac{1}{2004!}", r"\frac{1}{2004!}"),
        (r"\sqrt{8}", r"2\sqrt{2}"),
        (r"\left( 3, \frac{\pi}{2} \right)", r"(3, \pi/2)"),
        (r"15\frac{39}{40}", r"\frac{639}{40}"),
        ("-7", "-7"),
    ],
)
def test_equivalent_answers_score_one(answer: str, gold: str) -> None:
    result = grade_detailed(f"Working... so the answer is {boxed(answer)}.", gold)
    assert result == GradeResult(1.0, False, "correct", result.extracted, result.detail)
    assert grade(boxed(answer), gold) == 1.0


@pytest.mark.parametrize(
    ("answer", "gold"),
    [
        ("13", "12"),
        ("-12", "12"),
        (r"\frac{3}{5}", r"\frac{3}{4}"),
        ("0.33", r"\frac{1}{3}"),
        ("x=6", "5"),
        (r"\pi", "3"),
    ],
)
def test_different_answers_score_zero(answer: str, gold: str) -> None:
    result = grade_detailed(boxed(answer), gold)
    assert (result.score, result.format_error, result.reason) == (0.0, False, "wrong")


# Regression: math-verify 0.9.0 alone accepts each of these pairs.
@pytest.mark.parametrize(
    ("answer", "gold"),
    [
        (r"\frac{1}{2^{99}}", r"\frac{1}{2^{98}}"),
        (r"\frac{1}{2004!}", r"\frac{1}{2006!}"),
        ("0.1234567", "0.1234571"),
    ],
)
def test_math_verify_false_accepts_are_rejected(answer: str, gold: str) -> None:
    from math_verify import parse, verify

    assert verify(parse(boxed(gold)), parse(boxed(answer)))  # the known false accept ...
    result = grade_detailed(boxed(answer), gold)  # ... which we reject, in-process or not
    assert (result.score, result.reason) == (0.0, "wrong")
    assert "differ" in result.detail or "round" in result.detail
    assert grade(boxed(answer), gold) == 0.0
    assert grade(boxed(gold), gold) == 1.0
    # the worker alone decides the same way (its strict check on numbers)
    assert _worker.verify_boxed(answer, gold)[:2] == (0.0, "wrong")


def test_strict_module_directly() -> None:
    assert not numbers_agree(sympy.Rational(1, 2**98), sympy.Rational(1, 2**99), "", "")
    assert numbers_agree(sympy.sqrt(8), 2 * sympy.sqrt(2), "", "")
    assert numbers_agree(sympy.Rational(1, 3), sympy.Float("0.333333"), "1/3", "0.333333")
    assert not numbers_agree(sympy.Float("0.5"), sympy.Float("0.56"), "0.5", "0.56")
    # a decimal gold is known to its places: an answer that rounds to it agrees
    assert numbers_agree(sympy.Float("0.5"), sympy.Float("0.5000001"), "0.5", "0.5000001")
    assert numbers_agree(sympy.Symbol("x"), sympy.Symbol("y"), "x", "y")  # no opinion
    tuple_a = sympy.Tuple(1, sympy.Rational(1, 2**99))
    tuple_b = sympy.Tuple(1, sympy.Rational(1, 2**98))
    assert not numbers_agree(tuple_a, tuple_b, "", "")
    assert decimals_written("1.25 and 3.5") == 2 and decimals_written("7") is None
    # a float repr of a decimal gold rounds to it; math-verify's rounding alone refuses it
    assert judge_numbers(
        sympy.Float("0.33"), sympy.Float("0.3333333333333333"), "0.33", "0.3333333333333333"
    )[0]


def test_fast_paths_agree_with_math_verify() -> None:
    # Integer pairs and identical text are answered in-process; math-verify must agree.
    for a, b in [
        ("12", "12"),
        ("007", "7"),
        ("12", "13"),
        ("-3", "3"),
        (r"\frac{1}{2}", r"\frac{1}{2}"),
    ]:
        fast = grade_detailed(boxed(a), b).score
        assert _worker.verify_boxed(a, b)[0] == fast


def test_gold_is_parsed_once_and_cached() -> None:
    _worker._parse_gold.cache_clear()
    _worker.verify_boxed(r"\frac{2}{4}", r"\frac{1}{2}")
    _worker.verify_boxed(r"\frac{3}{6}", r"\frac{1}{2}")
    info = _worker._parse_gold.cache_info()
    assert info.misses == 1 and info.hits == 1


# --------------------------------------------------------------------- format
def test_no_box_is_a_format_error() -> None:
    result = grade_detailed("The answer is 12.", "12")
    assert result == GradeResult(0.0, True, "no_boxed", None, result.detail)


def test_several_distinct_boxes_are_a_format_error() -> None:
    result = grade_detailed(r"\boxed{12} or maybe \boxed{13}", "12")
    assert (result.score, result.format_error, result.reason) == (0.0, True, "multiple_boxed")
    many = " ".join(boxed(str(i)) for i in range(50))
    assert grade_detailed(many, "1").reason == "multiple_boxed"


def test_repeated_or_equivalent_boxes_are_fine() -> None:
    assert grade(r"\boxed{12} ... so \boxed{ 12 }.", "12") == 1.0
    assert grade(r"\boxed{\frac{1}{2}} i.e. \boxed{0.5}", "0.5") == 1.0


def test_empty_and_too_long_boxes() -> None:
    assert grade_detailed(r"\boxed{}", "1").reason == "empty_boxed"
    assert grade_detailed(r"\boxed{   }", "1").format_error
    long = grade_detailed(boxed("1+" * 2000 + "1"), "4001")
    assert (long.reason, long.format_error) == ("too_long", True)


def test_nested_boxes_are_unwrapped() -> None:
    assert grade(r"\boxed{\boxed{\boxed{4}}}", "4") == 1.0


def test_gold_may_be_boxed_or_dollared() -> None:
    assert grade(boxed("4"), r"\boxed{4}") == 1.0
    assert grade(boxed("4"), "$4$") == 1.0


def test_programmer_errors_have_clear_messages() -> None:
    with pytest.raises(TypeError, match="completion must be a str"):
        grade(None, "1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="gold must be a str"):
        grade(boxed("1"), 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="gold answer is empty"):
        grade(boxed("1"), "  ")
    with pytest.raises(ValueError, match="timeout must be a positive"):
        grade(boxed("1"), "1", timeout=0)


# -------------------------------------------------------------------- hostile
HOSTILE = [
    "x" * 100_000 + boxed("3"),
    boxed("3") + "\ud800\udfff\x00\x07" * 1000,
    "\\boxed{" * 10_000 + "3" + "}" * 10_000,
    "\\boxed{" * 10_000,
    "}" * 10_000 + "{" * 10_000,
    boxed("\\frac{" * 300 + "}" * 300),
    boxed("\\left(" * 200),
    boxed("\ud800"),
    boxed("\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}"),
    boxed("import os; os.system('rm -rf /')"),
    boxed("\\x \\y \\z ^^^ ___ ///"),
    boxed("𝟛 ٣ ३"),
    boxed("9" * 900),
    boxed("1e999999999"),
    boxed(r"\int_0^\infty e^{-x^2} dx"),
    boxed(r"\lim_{n\to\infty} (1+1/n)^n"),
    boxed(r"\sum_{k=1}^{10^{100}} k"),
]


@pytest.mark.parametrize("completion", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_completions_never_raise(completion: str) -> None:
    result = grade_detailed(completion, "3")
    assert result.reason in REASONS and result.score in (0.0, 1.0)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.text(
        alphabet=st.sampled_from(
            list("\\boxed{}frac0123456789+-*/^_()[]=x., $%!") + ["\ud800", "\x00"]
        ),
        max_size=200,
    )
)
def test_fuzzed_completions_never_raise(completion: str) -> None:
    result = grade_detailed(completion, r"\frac{1}{2}", timeout=2.0)
    assert result.reason in REASONS and result.score in (0.0, 1.0)


# -------------------------------------------------------------------- deadline
@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (r"9^{9^{9^9}}", "wrong"),  # beyond 2^4000: decided in-process, in no time
        (r"10^{10^{10^{10}}}", "wrong"),
        (r"(2^{2^{30}})!", "timeout"),  # a factorial goes to the worker, which runs out of time
        (r"\sqrt{(2^{2^{30}})!}", "timeout"),
    ],
)
def test_explosive_answers_end_and_grading_recovers(answer: str, reason: str) -> None:
    result = grade_detailed(boxed(answer), "5", timeout=1.0)
    assert (result.score, result.reason) == (0.0, reason)
    assert grade(boxed(r"\frac{10}{2}"), "5") == 1.0  # a fresh worker took over


def test_deadline_holds_off_the_main_thread() -> None:
    results: list[GradeResult] = []
    worker = threading.Thread(
        target=lambda: results.append(grade_detailed(boxed("(2^{2^{30}})!"), "5"))
    )
    worker.start()
    worker.join()
    assert results and results[0].reason == "timeout"


def test_stuck_worker_is_killed_and_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    # Make the worker's own alarm fire far after the parent's deadline, so only
    # the parent's kill can end the call.
    monkeypatch.setattr(_pool, "_SOFT_FRACTION", 50.0)
    pool = _pool.GraderPool(workers=1)
    try:
        verdict = pool.grade(r"9^{9^{9^9}}", "5", timeout=0.5)
        assert verdict[1] == "timeout" and "killed" in verdict[2]
        assert pool.restarts == 1
        assert pool.grade(r"\frac{10}{2}", "5", timeout=5.0)[:2] == (1.0, "correct")
    finally:
        pool.close()


def test_a_stale_reply_never_grades_another_answer() -> None:
    # A request whose reply was never read (the failure mode of any lost
    # request/reply pairing): its "correct" must not become the verdict of the
    # hack that follows on the same worker.
    pool = _pool.GraderPool(workers=1)
    try:
        pool.start()
        worker = pool._idle.get()
        worker.conn.send((10**9, r"\frac{7}{1}", "7", 5.0, _pool.DEFAULT_OPTIONS))
        pool._idle.put(worker)
        time.sleep(0.5)  # let the stray reply arrive first
        verdict = pool.grade(r"\infty\frac{7}{1}", "7", timeout=5.0)
        assert verdict[:2] == (0.0, "error") and "not" in verdict[2]
        assert pool.restarts == 1
        assert pool.grade(r"\infty\frac{7}{1}", "7", timeout=5.0)[:2] == (0.0, "wrong")
    finally:
        pool.close()


def test_a_worker_whose_comparison_raised_is_replaced() -> None:
    pool = _pool.GraderPool(workers=1)
    try:
        first = pool.grade("7", "7", timeout=5.0)
        pid = pool._idle.queue[0].pid
        broken = pool.grade("7", "7", timeout=5.0, options=("not", "options"))  # type: ignore[arg-type]
        assert broken[:2] == (0.0, "error") and "ValueError" in broken[2]
        assert pool.restarts == 1 and pool._idle.queue[0].pid != pid
        assert pool.grade("7", "7", timeout=5.0) == first
    finally:
        pool.close()


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ")[1].startswith("Z")  # zombie: dead, unreaped
    except FileNotFoundError:
        return True


def test_close_leaves_no_process_behind() -> None:
    pool = _pool.GraderPool(workers=2)
    assert pool.grade(r"\frac{1}{2}", "0.5", timeout=5.0)[0] == 1.0
    workers = [pool._idle.queue[i].pid for i in range(2)]
    assert pool._zygote is not None
    zygote = pool._zygote.pid
    pool.close()
    for _ in range(200):
        if all(_gone(pid) for pid in [*workers, zygote]):
            break
        time.sleep(0.05)
    assert all(_gone(pid) for pid in [*workers, zygote])
    with pytest.raises(RuntimeError, match="closed"):
        pool.start()


def test_many_threads_share_the_pool() -> None:
    golds = [str(i) for i in range(40)]
    results: dict[int, float] = {}

    def work(i: int) -> None:
        results[i] = grade(boxed(rf"\frac{{{2 * i}}}{{2}}"), golds[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {i: 1.0 for i in range(40)}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_gets_its_own_pool() -> None:
    get_pool().grade(r"\frac{1}{2}", "0.5", timeout=5.0)  # parent pool is running
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            score = grade(boxed(r"\frac{3}{6}"), "0.5")
            os.write(write_fd, b"1" if score == 1.0 else b"0")
        finally:
            os._exit(0)
    os.close(write_fd)
    answer = os.read(read_fd, 1)
    os.waitpid(pid, 0)
    os.close(read_fd)
    assert answer == b"1"
    assert get_pool().grade(r"\frac{2}{4}", "0.5", timeout=5.0)[0] == 1.0  # parent unaffected


# -------------------------------------------------------------------- doctests
@pytest.mark.parametrize(
    "name",
    [
        "flexmg.envs.math",
        "flexmg.envs.math.boxed",
        "flexmg.envs.math.grader",
        "flexmg.envs.math.strict",
        "flexmg.envs.math._worker",
        "flexmg.envs.math._pool",
        "flexmg.envs.math.generators",
        "flexmg.envs.math.word",
        "flexmg.envs.math.loaders",
        "flexmg.envs.math.sources",
    ],
)
def test_module_doctests(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"


def test_processes_end_when_the_caller_is_killed() -> None:
    import signal
    import subprocess
    import sys

    script = (
        "import os, signal\n"
        "from flexmg.envs.math.grader import get_pool\n"
        "pool = get_pool()\n"
        "assert pool.grade('\\\\frac{1}{2}', '0.5', 5.0)[0] == 1.0\n"
        "print(pool._zygote.pid, *[w.pid for w in pool._idle.queue], flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    pids = [int(p) for p in proc.stdout.split()]
    assert len(pids) == 2
    for _ in range(200):
        if all(_gone(pid) for pid in pids):
            break
        time.sleep(0.05)
    assert all(_gone(pid) for pid in pids)
