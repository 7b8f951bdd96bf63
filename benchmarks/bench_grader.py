"""Throughput of flexmg.envs.math.grade against raw math-verify, measured in the same run.

Usage:
    python benchmarks/bench_grader.py [--data DIR] [--workers 1] [--n 2000] [--quick]

Three corpora, every figure cold (nothing any cache holds helps):

* **symbolic**: every distinct non-integer MATH-500 gold (fractions, radicals,
  intervals and tuples, matrices, expressions, text answers, degrees, bases,
  decimals) with one model-style right variant (``\\dfrac``, ``x = ...``,
  ``\\left( \\right)``, a decimal to 12 digits, an expanded or factored
  polynomial, ``B`` for ``\\text{(B)}``, ``\\sqrt{12}`` for ``2\\sqrt{3}``, ...)
  and one wrong variant (a number off by one, a flipped sign or bracket, twice
  the value, another choice), in a completion of a few hundred characters;
* **plain numbers**: every distinct integer gold of MATH-500 and GSM8K with a
  right (``x = n``, ``n.0``, ``\\frac{2n}{2}``) and a wrong variant;
* **generators** (as before): procedural golds, half right and half wrong.

Cold means: each corpus is graded in two passes (right variants, then wrong
ones), each pass holding every gold once; before each pass flexmg's verdict
cache and in-process caches are cleared and its worker pool is restarted (so
math-verify's parse caches in the worker are empty). Raw math-verify
(``verify(parse(gold), parse(completion))`` in-process) grades the same pairs
in the same passes. The ratio of the two rates is the figure; on a shared
machine both rates are noisy, their ratio less so. Goals: >= 2x math-verify on
the symbolic corpus, >= 5x on plain numbers, and no call over 1 s.

The script also prints, per corpus, how often each grader's verdict matches the
variant's intent (right variants correct, wrong ones not).
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from math_verify import parse, verify

from flexmg.envs.math import (
    configure,
    evaluate,
    grade_detailed,
    grader,
    reading,
    shutdown,
)
from flexmg.envs.math.grader import _cache, get_pool
from flexmg.envs.math.loaders import load_file
from flexmg.tasks import task_source_factory, task_source_names

# FLEXMG_DATA overrides where the data is (e.g. a checkout outside the usual layout).
DATA = Path(
    os.environ.get("FLEXMG_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data"
)
DATA_FILES = ("math500_test.jsonl", "gsm8k_test.jsonl")
"""The corpora's files: without them the benchmark measures nothing and says so."""
REASONING = (
    "Let me work through this carefully. First I rewrite the expression, then I "
    "simplify step by step: combining like terms, checking each intermediate value, "
    "and making sure no sign errors creep in. "
)


@dataclass(frozen=True)
class Pair:
    """One graded completion: its corpus category, whether it is meant to be right."""

    category: str
    completion: str
    gold: str
    right: bool


# ------------------------------------------------------------------- the corpora
def category(gold: str) -> str:
    """A MATH-500 gold's kind of answer."""
    if "\\begin" in gold:
        return "matrix"
    bare = re.sub(r"\\(?:text|mbox)\{[^}]*\}", "", gold)
    if re.search(r"\\text|\\mbox", gold) and not re.search(r"\d", bare):
        return "text"
    if re.search(r"\\cup|\\infty", gold) or re.fullmatch(r"\s*(\\left)?[\[(].*,.*[\])]\s*", gold):
        return "interval/tuple"
    if "\\sqrt" in gold:
        return "radical"
    if re.search(r"(?<!\\)[a-zA-Z]", re.sub(r"\\[a-zA-Z]+", "", gold)):
        return "expression"
    if re.search(r"\\[dt]?frac|/", gold):
        return "fraction"
    if re.fullmatch(r"-?\d+", gold):
        return "integer"
    return "other"


def _sympy_of(gold: str) -> object | None:
    found = [p for p in parse("\\boxed{" + gold + "}") if not isinstance(p, str)]
    return found[0] if found else None


def _right_variants(gold: str, rng: random.Random) -> list[str]:
    """Model-style writings of the same answer (checked equal by construction)."""
    import sympy

    out: list[str] = []
    if "\\frac" in gold:
        out.append(gold.replace("\\frac", "\\dfrac"))
    match = re.fullmatch(r"(-?)\\[dt]?frac\{(\d+)\}\{(\d+)\}", gold)
    if match:
        out.append(f"{match[1]}{match[2]}/{match[3]}")
        out.append(f"{match[1]}\\frac{{{2 * int(match[2])}}}{{{2 * int(match[3])}}}")
    if re.fullmatch(r"\s*[\[(].*[\])]\s*", gold) and "\\left" not in gold:
        out.append(f"\\left{gold.strip()[0]} {gold.strip()[1:-1]} \\right{gold.strip()[-1]}")
    if "pmatrix" in gold:
        out.append(gold.replace("pmatrix", "bmatrix"))
    text = re.fullmatch(r"\\text\{\(?([A-Za-z ]+)\)?\}", gold)
    if text:
        out += [text[1], f"\\textbf{{{text[1]}}}"]
    degrees = re.fullmatch(r"(\d+)\^\\circ", gold)
    if degrees:
        out += [degrees[1], f"{degrees[1]}^{{\\circ}}"]
    if "=" not in gold and "," not in gold and category(gold) not in ("text", "matrix"):
        out.append(f"x = {gold}")
    expr = None if category(gold) == "text" or re.search("[A-Z]", gold) else _sympy_of(gold)
    if isinstance(expr, sympy.Expr) and not expr.free_symbols and expr.is_real:
        value = sympy.N(expr, 14)
        if value.is_Float and "." in str(value) and "_" not in gold:
            out.append(str(sympy.N(expr, 12)))
        radical = re.fullmatch(r"(\d+)\s*\\sqrt\{(\d+)\}", gold)
        if radical:
            out.append(f"\\sqrt{{{int(radical[1]) ** 2 * int(radical[2])}}}")
    elif isinstance(expr, sympy.Expr) and expr.free_symbols and "=" not in gold:
        out += [sympy.latex(sympy.expand(expr)), sympy.latex(sympy.factor(expr))]
    return [v for v in out if v.strip() != gold.strip()] or [gold + " "]


def _wrong_variants(gold: str, others: list[str], rng: random.Random) -> list[str]:
    """Model-style mistakes: a number off by one, a sign or a bracket flipped, another answer."""
    out: list[str] = []
    numbers = list(re.finditer(r"(?<![\\_^{a-zA-Z])\d+", gold))
    if numbers:
        last = numbers[-1]
        out.append(gold[: last.start()] + str(int(last.group()) + 1) + gold[last.end() :])
    if gold.startswith("-"):
        out.append(gold[1:])
    elif category(gold) in ("fraction", "radical", "expression", "other"):
        out.append("-" + gold if "=" not in gold else gold.replace("=", "= -", 1))
    if _is_interval(gold):
        flipped = {"(": "[", "[": "(", ")": "]", "]": ")"}
        stripped = re.sub(r"\\(?:left|right)", "", gold).strip()
        out.append(flipped[stripped[0]] + stripped[1:-1] + flipped[stripped[-1]])
    out.append(rng.choice([o for o in others if o != gold]))
    return out


def _is_interval(gold: str) -> bool:
    """An interval (not a point such as ``(8, -2)``): flipping a bracket makes it wrong."""
    import sympy

    return isinstance(_sympy_of(gold), sympy.Interval) and "\\cup" not in gold


def symbolic_pairs(data: Path, seed: int = 0) -> list[Pair]:
    """Each distinct non-integer MATH-500 gold with one right and one wrong variant."""
    rng = random.Random(seed)
    golds = list(dict.fromkeys(t.answer for t in load_file(data / "math500_test.jsonl")))
    golds = [g for g in golds if category(g) != "integer"]
    pairs: list[Pair] = []
    for gold in golds:
        kind = category(gold)
        same_kind = [g for g in golds if category(g) == kind] or golds
        for right, variants in (
            (True, _right_variants(gold, rng)),
            (False, _wrong_variants(gold, same_kind, rng)),
        ):
            pairs.append(
                Pair(kind, _completion(rng.choice(variants), rng, len(pairs)), gold, right)
            )
    return pairs


def number_pairs(data: Path, seed: int = 0) -> list[Pair]:
    """Each distinct integer gold of MATH-500 and GSM8K with one right and one wrong variant."""
    rng = random.Random(seed)
    golds: list[str] = []
    for file in ("math500_test.jsonl", "gsm8k_test.jsonl"):
        if (data / file).is_file():
            golds += [t.answer for t in load_file(data / file)]
    golds = [g for g in dict.fromkeys(golds) if re.fullmatch(r"-?\d+", g)]
    pairs: list[Pair] = []
    for gold in golds:
        value = int(gold)
        right = rng.choice([f"x = {value}", f"{value}.0", f"\\frac{{{2 * value}}}{{2}}", gold])
        wrong = rng.choice([str(value + 1), str(-value - 1), f"{value}.5", str(value * 2 + 1)])
        pairs.append(Pair("integer", _completion(right, rng, len(pairs)), gold, True))
        pairs.append(Pair("integer", _completion(wrong, rng, len(pairs)), gold, False))
    return pairs


def generator_pairs(n: int, seed: int = 0) -> list[Pair]:
    """Procedural golds, half written differently and right, half another gold."""
    rng = random.Random(seed)
    golds: list[str] = []
    for name in task_source_names("math"):
        for difficulty in (1, 3, 5):
            src = task_source_factory(name, "math")(difficulty=difficulty)
            golds += [src.get(i).answer for i in range(n // 10 + 1)]
    pairs, seen = [], set()
    while len(pairs) < n:
        gold = rng.choice(golds)
        right = rng.random() < 0.5
        answer = gold.replace("\\frac", "\\dfrac") if right else rng.choice(golds)
        if (answer, gold) in seen:
            continue
        seen.add((answer, gold))
        pairs.append(Pair("generated", _completion(answer, rng, len(pairs)), gold, right))
    return pairs


def _completion(answer: str, rng: random.Random, index: int) -> str:
    filler = REASONING * rng.randint(1, 4) + f"(draft {index})"
    return f"{filler}\nSo the final answer is $\\boxed{{{answer}}}$."


# ---------------------------------------------------------------- the measurement
@dataclass
class Run:
    """A timed pass: total seconds, per-call seconds, verdicts."""

    seconds: float
    calls: list[float]
    verdicts: list[bool]


def _cold() -> None:
    """Empty every cache flexmg's grader has, and restart its workers."""
    _cache.clear()
    grader._clean_gold.cache_clear()
    reading._read_gold.cache_clear()
    evaluate._shape.cache_clear()
    shutdown()
    get_pool().start()  # not timed: once per process in real use


def time_pairs(pairs: list[Pair], grade: Callable[[str, str], bool]) -> Run:
    calls: list[float] = []
    verdicts: list[bool] = []
    start = time.perf_counter()
    for pair in pairs:
        t0 = time.perf_counter()
        verdicts.append(grade(pair.completion, pair.gold))
        calls.append(time.perf_counter() - t0)
    return Run(time.perf_counter() - start, calls, verdicts)


def flexmg_grade(completion: str, gold: str) -> bool:
    return grade_detailed(completion, gold).score == 1.0


def math_verify_grade(completion: str, gold: str) -> bool:
    return bool(verify(parse("\\boxed{" + gold + "}"), parse(completion)))


def compare(name: str, pairs: list[Pair]) -> float:
    """Grade ``pairs`` cold with flexmg and raw math-verify; print rates and the ratio."""
    passes = [[p for p in pairs if p.right], [p for p in pairs if not p.right]]
    flex = Run(0.0, [], [])
    raw = Run(0.0, [], [])
    worker_calls = 0
    for group in passes:
        _cold()
        before = get_pool().calls
        run = time_pairs(group, flexmg_grade)
        worker_calls += get_pool().calls - before
        flex = Run(flex.seconds + run.seconds, flex.calls + run.calls, flex.verdicts + run.verdicts)
        run = time_pairs(group, math_verify_grade)
        raw = Run(raw.seconds + run.seconds, raw.calls + run.calls, raw.verdicts + run.verdicts)
    ordered = passes[0] + passes[1]
    n = len(ordered)
    flex_rate, raw_rate = n / flex.seconds, n / raw.seconds
    print(f"\n{name}: {n} pairs ({len(passes[0])} right, {len(passes[1])} wrong variants), cold")
    print(
        f"  flexmg:           {flex_rate:8.1f} grades/s   ({worker_calls / n:.0%} of calls reached a worker)"
    )
    print(f"  raw math-verify:  {raw_rate:8.1f} grades/s")
    print(f"  ratio:            {flex_rate / raw_rate:8.2f}x")
    slowest = sorted(flex.calls)
    print(
        f"  flexmg per call:  median {statistics.median(slowest) * 1e3:.2f} ms, "
        f"p99 {slowest[int(0.99 * (n - 1))] * 1e3:.1f} ms, max {slowest[-1] * 1e3:.1f} ms "
        f"({sum(c > 1.0 for c in slowest)} over 1 s)"
    )
    for label, run in (("flexmg", flex), ("math-verify", raw)):
        matches = sum(v == p.right for v, p in zip(run.verdicts, ordered, strict=True))
        print(f"  {label:<11} verdicts match the variant's intent: {matches}/{n}")
    categories = sorted({p.category for p in ordered})
    if len(categories) > 1:
        for kind in categories:
            index = [i for i, p in enumerate(ordered) if p.category == kind]
            f_time = sum(flex.calls[i] for i in index)
            r_time = sum(raw.calls[i] for i in index)
            print(f"    {kind:<15} {len(index):4d} pairs  ratio {r_time / f_time:6.2f}x")
    return flex_rate / raw_rate


def missing_data(data: Path) -> list[str]:
    """The corpus files missing from ``data`` (the benchmark refuses to run without them)."""
    return [name for name in DATA_FILES if not (data / name).is_file()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="generator completions to grade")
    parser.add_argument("--workers", type=int, default=1, help="grader worker processes")
    parser.add_argument("--data", type=Path, default=DATA, help="folder with the benchmark data")
    parser.add_argument("--quick", action="store_true", help="skip the generator and hostile runs")
    args = parser.parse_args(argv)
    missing = missing_data(args.data)
    if missing:
        print(
            f"bench_grader: error: {', '.join(missing)} not found in {args.data}: no figure "
            "without its corpus; pass --data DIR (or set FLEXMG_DATA) to the folder that holds "
            f"{' and '.join(DATA_FILES)}",
            file=sys.stderr,
        )
        return 2
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    logging.getLogger("latex2sympy2_extended").setLevel(logging.ERROR)
    configure(workers=args.workers)
    t0 = time.perf_counter()
    grade_detailed("\\boxed{\\log_2 8}", "3")  # start the pool (one-off cost)
    print(f"pool start: {time.perf_counter() - t0:.2f} s (once per process)")
    for warm in ("\\frac{1}{2}", "x^2+1", "(1, 2]"):  # import-time costs of both graders
        math_verify_grade("\\boxed{" + warm + "}", warm)
        flexmg_grade("\\boxed{" + warm + "}", warm + " ")

    ratios = {
        "symbolic": compare(
            "symbolic corpus (MATH-500, non-integer golds)", symbolic_pairs(args.data)
        ),
        "numbers": compare(
            "plain numbers (MATH-500 and GSM8K integer golds)", number_pairs(args.data)
        ),
    }
    print(
        f"\nsummary: symbolic {ratios['symbolic']:.2f}x (goal >= 2x), "
        f"plain numbers {ratios['numbers']:.2f}x (goal >= 5x)"
    )
    if args.quick:
        return 0
    compare("generator corpus", generator_pairs(args.n))
    pairs = generator_pairs(args.n)
    _cache.clear()
    time_pairs(pairs, flexmg_grade)
    warm = time_pairs(pairs, flexmg_grade)
    print(f"\nwarm (same pairs again, cached verdicts): {len(pairs) / warm.seconds:,.0f} grades/s")
    hostile = [("\\boxed{" * 10_000 + "1" + "}" * 10_000, "1"), ("x" * 100_000 + "\\boxed{2}", "2")]
    start = time.perf_counter()
    for completion, gold in hostile * 50:
        grade_detailed(completion, gold)
    print(f"hostile 100k-char completions: {100 / (time.perf_counter() - start):,.0f} grades/s")
    t0 = time.perf_counter()
    result = grade_detailed("\\boxed{(2^{2^{30}})!}", "5", timeout=1.0)
    print(
        f"\\boxed{{(2^{{2^{{30}}}})!}} with a 1 s CPU deadline: {result.reason} after "
        f"{time.perf_counter() - t0:.2f} s"
    )
    t0 = time.perf_counter()
    result = grade_detailed("\\boxed{9^{9^{9^9}}}", "5", timeout=1.0)
    print(f"\\boxed{{9^{{9^{{9^9}}}}}}: {result.reason} after {time.perf_counter() - t0:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
