"""The in-process evaluator: it decides what it reads as math-verify plus the strict check would,
faster, and never slowly."""

from __future__ import annotations

import itertools
import random
import time

import pytest

from flexmg.envs.math import _worker, grade_detailed
from flexmg.envs.math.evaluate import compare
from flexmg.envs.math.grader import get_pool
from flexmg.envs.math.latex_expr import Ambiguous, read_shape

GOLDS = [
    r"\frac{3}{4}", r"2\sqrt{5}", r"\frac{\sqrt{3}}{2}", r"12\pi", r"(-\infty, 0]", r"[2, 5)",
    r"(1, 2)", r"(3, \frac{\pi}{2})", r"x^3+3x-6", r"6r^2-4r-24", r"(a+5)(b+2)",
    r"\begin{pmatrix} 1/5 \\ -18/5 \end{pmatrix}", r"\begin{pmatrix} -1 & 0 \\ 0 & -1 \end{pmatrix}",
    r"1+2i", r"\frac{11+9a}{20}", r"(0,9) \cup (9,36)", r"\{1, 2, 3\}", r"1, 2",
    r"3 \pm 2\sqrt{2}", r"0.35625", r"4.5", r"\sqrt[3]{2}", r"e^{2}", r"\frac{\pi^2}{8}", r"2^{10}",
    r"1\frac{4}{5}", r"-\frac{24}{25}", r"\sin^2(x) + \cos^2(x)", r"\ln(2)",
]  # fmt: skip
ANSWERS = [
    r"\dfrac{3}{4}", "0.75", "3/4", r"\sqrt{20}", r"4.472135955", r"\frac{1}{2}\sqrt{3}", "0.866025",
    r"37.69911184", r"(-\infty,0]", r"[2,5)", r"(1,2)", r"(3, 1.5707963)", r"-6+3x+x^{3}",
    r"2(3r^2-2r-12)", r"ab+2a+5b+10", r"\begin{bmatrix} 0.2 \\ -3.6 \end{bmatrix}",
    r"\begin{pmatrix} -1 & 0 \\ 0 & 1 \end{pmatrix}", r"2i+1", r"\frac{9a+11}{20}",
    r"(9,36)\cup(0,9)", r"\{3,2,1\}", "2, 1", r"3+2\sqrt2, 3-2\sqrt2", ".35625", r"\frac92",
    r"2^{1/3}", r"e^2", r"1.2337", "1024", r"\frac95", "-0.96", "1", r"0.693147", "7",
    r"\frac{4}{3}", r"x^3 + 3x + 6",
]  # fmt: skip
PAIRS = list(itertools.product(GOLDS, ANSWERS))


def _agrees_with_the_worker(pairs: list[tuple[str, str]]) -> int:
    decided = 0
    for gold, answer in pairs:
        decision = compare(answer, gold)
        if decision is None:
            continue
        decided += 1
        verdict = _worker.verify_boxed(answer, gold)
        assert (verdict[0] == 1.0) == (decision.verdict == "correct"), (
            gold,
            answer,
            decision,
            verdict,
        )
    return decided


def test_in_process_verdicts_agree_with_the_worker_on_a_sample() -> None:
    sample = random.Random(0).sample(PAIRS, 120)
    assert _agrees_with_the_worker(sample) >= 60  # most are decided in-process


@pytest.mark.slow
def test_in_process_verdicts_agree_with_the_worker_on_every_pair() -> None:
    assert _agrees_with_the_worker(PAIRS) >= len(PAIRS) // 2


@pytest.mark.parametrize(
    ("answer", "gold", "verdict"),
    [
        (r"\frac{\sqrt{3}}{2}", r"\frac{1}{2}\sqrt{3}", "correct"),
        (r"\sqrt{x^2}", "x", "wrong"),  # not equal for negative (or complex) x
        (r"\sin^2(x)+\cos^2(x)", "1", "correct"),
        (r"\frac{1}{2^{99}}", r"\frac{1}{2^{98}}", "wrong"),
        ("0.3333333333333333", r"\frac{1}{3}", "correct"),
        ("1.4142135623730951", r"\sqrt{2}", "correct"),  # a float repr, within 1e-9
        ("3.14159", r"\pi", "wrong"),  # 5 places: fewer than the precision setting's 6
        (r"(9,36) \cup (0,9)", r"(0,9) \cup (9,36)", "correct"),
        (r"[0, 1]", r"(0, 1)", "wrong"),
        ("5", r"(1, 5)", "wrong"),
        (r"1\frac{4}{5}", r"\frac{9}{5}", "correct"),  # a mixed number
        ("52_{8}", "52_8", "correct"),
    ],
)
def test_decisions(answer: str, gold: str, verdict: str) -> None:
    decision = compare(answer, gold)
    assert decision is not None and decision.verdict == verdict, decision
    assert decision.detail


@pytest.mark.parametrize(
    "text",
    [r"2^10", r"3/4x", r"x(x+1)", r"\sin x", r"\log 8", r"5!", "|x|", "E", "f'(x)"],
)
def test_what_could_be_read_two_ways_is_left_to_math_verify(text: str) -> None:
    with pytest.raises(Ambiguous):
        read_shape(text)
    assert compare(text, "1") is None


@pytest.mark.parametrize(
    "answer", [r"10^{10^{10^{10}}}", r"9^{9^{9^9}}", r"2^{2^{100}}", r"\sin(10^{100})", "9" * 399]
)
def test_huge_values_are_left_to_the_worker_quickly(answer: str) -> None:
    start = time.perf_counter()
    compare(answer, "5")
    assert time.perf_counter() - start < 1.0  # bounded magnitudes: never slow (generous bound)


def test_symbolic_answers_never_reach_the_worker() -> None:
    pool = get_pool()
    before = pool.calls
    assert grade_detailed(r"\boxed{\frac{1}{2}\sqrt{3}}", r"\frac{\sqrt{3}}{2}").reason == "correct"
    assert grade_detailed(r"\boxed{(x+1)^2}", "x^2+2x+1").reason == "correct"
    assert grade_detailed(r"\boxed{[2, 5]}", "[2, 5)").reason == "wrong"
    assert (
        grade_detailed(
            r"\boxed{\begin{bmatrix}1\\2\end{bmatrix}}", r"\begin{pmatrix}1\\2\end{pmatrix}"
        ).score
        == 1.0
    )
    assert pool.calls == before
