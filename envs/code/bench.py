"""Throughput of code extraction and grading (prints figures; asserts nothing).

Run:
    python -m flexmg.envs.code.bench                 # extraction + local sandbox grading
    python -m flexmg.envs.code.bench --backend unsafe --grades 40
    python -m flexmg.envs.code.bench --no-sandbox    # text processing only
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from .extract import extract_code
from .grading import grade_code, grade_many
from .loaders import builtin_tasks
from .program import build_program


def _rate(fn: Callable[[], object], min_seconds: float = 0.5) -> float:
    """Calls per second of ``fn`` over at least ``min_seconds``."""
    n, start = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return n / elapsed


def _messages() -> list[str]:
    tasks = builtin_tasks()
    chatter = "Let me think step by step about edge cases. " * 20
    return [f"{chatter}\n```python\n{t.answer}```\n{chatter}" for t in tasks]


def main(argv: list[str] | None = None) -> None:
    """Print extraction, program-building and grading throughput."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--backend", default="local", help="sandbox backend (default: local)")
    ap.add_argument("--grades", type=int, default=74, help="grade_code calls to time")
    ap.add_argument("--no-sandbox", action="store_true", help="skip the sandbox benchmark")
    args = ap.parse_args(argv)

    tasks = builtin_tasks()
    messages = _messages()
    avg_chars = sum(map(len, messages)) / len(messages)
    i = [0]

    def one_extract() -> None:
        extract_code(messages[i[0] % len(messages)])
        i[0] += 1

    def one_build() -> None:
        k = i[0] % len(tasks)
        build_program(tasks[k].answer, tasks[k])
        i[0] += 1

    print(f"extract_code: {_rate(one_extract):,.0f} messages/s (avg {avg_chars:,.0f} chars)")
    print(f"build_program: {_rate(one_build):,.0f} programs/s")
    huge = "```python\n" + "x = 1\n" * 200_000 + "```"
    t0 = time.perf_counter()
    extract_code(huge)
    print(f"extract_code on a {len(huge) / 1e6:.1f} MB message: {time.perf_counter() - t0:.3f} s")
    if args.no_sandbox:
        return

    from flexmg.sandboxes import make_sandbox

    with make_sandbox(args.backend, timeout=5.0) as sb:
        grade_code(messages[0], tasks[0], sb)  # warm-up (sandbox start)
        n = max(1, args.grades)
        t0 = time.perf_counter()
        rewards = [
            grade_code(messages[k % len(tasks)], tasks[k % len(tasks)], sb).reward for k in range(n)
        ]
        elapsed = time.perf_counter() - t0
        batch_tasks = [tasks[k % len(tasks)] for k in range(n)]
        batch_msgs = [messages[k % len(tasks)] for k in range(n)]
        t0 = time.perf_counter()
        many = grade_many(batch_msgs, batch_tasks, sb)
        elapsed_many = time.perf_counter() - t0
        workers = getattr(sb, "workers", "?")
    print(
        f"grade_code ({args.backend} sandbox, sequential): {n / elapsed:.1f} grades/s, "
        f"{1000 * elapsed / n:.1f} ms/grade, mean reward {sum(rewards) / n:.3f}"
    )
    print(
        f"grade_many ({args.backend} sandbox, {workers} workers): {n / elapsed_many:.1f} grades/s, "
        f"mean reward {sum(g.reward for g in many) / n:.3f}"
    )


if __name__ == "__main__":
    main()
