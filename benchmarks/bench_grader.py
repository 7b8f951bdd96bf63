"""Throughput of flexmg.envs.math.grade on typical completions (prints grades/s).

Usage:
    python benchmarks/bench_grader.py [--n 2000] [--workers 1] [--data DIR]

Completions look like model output: a few hundred characters of reasoning,
then one boxed answer, half correct (often written differently from the gold:
``\\dfrac``, ``x = ...``, decimals) and half wrong. Gold answers come from the
generators and, when present, from MATH-500 and GSM8K in ../shared/data.
Every (completion, gold) pair is unique, so the verdict cache never helps in
the "cold" figures; "warm" repeats the same pairs. One worker process does
all math-verify work, so cold grades/s is the per-core rate.

Reference, measured in the same run: raw math-verify (``verify(parse(gold),
parse(completion))``, in-process, no cache) on the same non-integer-gold
pairs. Target: flexmg at least 5x that rate. On a shared machine both
figures are noisy; the ratio, measured back to back, less so.
"""

from __future__ import annotations

import argparse
import logging
import random
import time
from pathlib import Path

from math_verify import parse, verify

from flexmg.envs.math import configure, grade_detailed
from flexmg.envs.math.grader import _cache, get_pool
from flexmg.envs.math.loaders import load_file
from flexmg.tasks import task_source_factory, task_source_names

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
REASONING = (
    "Let me work through this carefully. First I rewrite the expression, then I "
    "simplify step by step: combining like terms, checking each intermediate value, "
    "and making sure no sign errors creep in. "
)


def variants(gold: str, rng: random.Random) -> str:
    """A correct answer written differently from the gold, when possible."""
    choice = rng.random()
    if "\\frac" in gold and choice < 0.5:
        return gold.replace("\\frac", "\\dfrac")
    if gold.lstrip("-").isdigit():
        value = int(gold)
        return rng.choice([f"x = {value}", f"{value}.0", f"\\frac{{{2 * value}}}{{2}}", gold])
    return gold if choice < 0.8 else f"{gold} "


def build_pairs(n: int, seed: int = 0, data: Path = DATA) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    golds: list[str] = []
    for name in task_source_names("math"):
        for difficulty in (1, 3, 5):
            src = task_source_factory(name, "math")(difficulty=difficulty)
            golds += [src.get(i).answer for i in range(n // 10 + 1)]
    for file in ("math500_test.jsonl", "gsm8k_test.jsonl"):
        if (data / file).is_file():
            golds += [t.answer for t in load_file(data / file)]
    rng.shuffle(golds)
    pairs, seen = [], set()
    while len(pairs) < n:
        gold = rng.choice(golds)
        if rng.random() < 0.5:
            answer = variants(gold, rng)
        else:
            answer = rng.choice(golds)
        filler = REASONING * rng.randint(1, 4) + f"(draft {len(pairs)})"
        completion = f"{filler}\nSo the final answer is $\\boxed{{{answer}}}$."
        key = (answer, gold)
        if key in seen:
            continue
        seen.add(key)
        pairs.append((completion, gold))
    return pairs


def run(pairs: list[tuple[str, str]]) -> tuple[float, dict[str, int]]:
    reasons: dict[str, int] = {}
    start = time.perf_counter()
    for completion, gold in pairs:
        reason = grade_detailed(completion, gold).reason
        reasons[reason] = reasons.get(reason, 0) + 1
    return len(pairs) / (time.perf_counter() - start), reasons


def run_math_verify(pairs: list[tuple[str, str]]) -> float:
    """Grades/s of raw math-verify on the same pairs (the reference)."""
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    start = time.perf_counter()
    for completion, gold in pairs:
        verify(parse("\\boxed{" + gold + "}"), parse(completion))
    return len(pairs) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="completions to grade")
    parser.add_argument("--workers", type=int, default=1, help="grader worker processes")
    parser.add_argument("--data", type=Path, default=DATA, help="folder with the benchmark data")
    args = parser.parse_args()
    configure(workers=args.workers)

    t0 = time.perf_counter()
    grade_detailed("\\boxed{x+1}", "1+x")  # start the pool (one-off cost; not a plain number)
    print(f"pool start: {time.perf_counter() - t0:.2f} s (once per process)")

    pairs = build_pairs(args.n, data=args.data)
    calls_before = get_pool().calls
    cold, reasons = run(pairs)
    share = (get_pool().calls - calls_before) / len(pairs)
    print(f"cold (every pair new), {args.workers} worker(s): {cold:,.0f} grades/s")
    print(f"  verdicts: {dict(sorted(reasons.items()))}")
    print(f"  {share:.0%} went to math-verify (the rest: same writing or plain numbers)")
    mv_pairs = [
        (c, g)
        for c, g in build_pairs(args.n, seed=1, data=args.data)
        if not g.lstrip("-").isdigit()
    ]
    _cache.clear()  # cold verdict cache (parsed golds stay cached in the worker, by design)
    mv_rate, _ = run(mv_pairs)
    print(f"cold, non-integer golds only ({len(mv_pairs)} pairs): {mv_rate:,.0f} grades/s")
    raw_rate = run_math_verify(mv_pairs)
    print(
        f"raw math-verify on the same pairs: {raw_rate:,.1f} grades/s"
        f" -> flexmg is {mv_rate / raw_rate:.1f}x faster (target >= 5x)"
    )
    warm, _ = run(pairs)
    print(f"warm (same pairs again, cached verdicts): {warm:,.0f} grades/s")

    hostile = [("\\boxed{" * 10_000 + "1" + "}" * 10_000, "1"), ("x" * 100_000 + "\\boxed{2}", "2")]
    hostile_rate, _ = run(hostile * 50)
    print(f"hostile 100k-char completions: {hostile_rate:,.0f} grades/s")

    t0 = time.perf_counter()
    result = grade_detailed("\\boxed{9^{9^{9^9}}}", "5", timeout=1.0)
    print(
        f"\\boxed{{9^{{9^{{9^9}}}}}} with a 1 s deadline: {result.reason} after "
        f"{time.perf_counter() - t0:.2f} s"
    )


if __name__ == "__main__":
    main()
