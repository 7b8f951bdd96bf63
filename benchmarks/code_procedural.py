"""Size of the procedural code family's splits, and its oracle and wrong variants in the sandbox.

Prints, per difficulty level and for the default mix, how many distinct prompts
and distinct canonical forms (problems up to equivalence) the first N indices
of the train and eval splits hold, the time per ``get`` (noisy on a shared
machine), and, when the local sandbox runs here, the mean hidden-test score of
the reference solution (should be 1.0) and of one drawn wrong variant per task
(should be below 1.0) on a sample of every level.

Run: python benchmarks/code_procedural.py [--draws 3000] [--graded 20]
"""

from __future__ import annotations

import argparse
import random
import time

from tqdm import tqdm


def split_table(draws: int) -> list[str]:
    from flexmg.envs.code import ProceduralCodeTasks

    lines = [
        "| difficulty | split | distinct prompts | canonical forms | ms per get |",
        "|---|---|---|---|---|",
    ]
    for level in (1, 2, 3, 4, 5, None):
        for split in ("train", "eval"):
            src = ProceduralCodeTasks(difficulty=level, split=split)
            t0 = time.perf_counter()
            tasks = [
                src.get(i) for i in tqdm(range(draws), desc=f"{src.name} {split}", leave=False)
            ]
            ms = (time.perf_counter() - t0) / draws * 1e3
            label = "default mix " + str(src.levels) if level is None else str(level)
            prompts = len({t.prompt for t in tasks})
            forms = len({t.meta["canonical"] for t in tasks})
            lines.append(f"| {label} | {split} | {prompts} | {forms} | {ms:.2f} |")
    return lines


def sandbox_scores(graded: int) -> list[str]:
    from flexmg.envs.code import ProceduralCodeTasks, grade_many, wrong_solution
    from flexmg.sandboxes import make_sandbox

    try:
        sandbox = make_sandbox("local", timeout=10.0)
    except Exception as e:  # no bubblewrap here
        return [f"(local sandbox unavailable: {e}; scores skipped)"]
    lines = ["| difficulty | tasks | oracle score | wrong-variant score |", "|---|---|---|---|"]
    rng = random.Random(0)
    with sandbox:
        for level in (1, 2, 3, 4, 5):
            src = ProceduralCodeTasks(difficulty=level, split="all", seed=1)
            tasks = [src.get(i) for i in range(graded)]
            right = grade_many([f"```python\n{t.answer}```" for t in tasks], tasks, sandbox)
            wrong_code = [wrong_solution(t, rng) for t in tasks]
            wrong = grade_many([f"```python\n{c}```" for c in wrong_code], tasks, sandbox)
            mean_right = sum(g.reward for g in right) / graded
            mean_wrong = sum(g.reward for g in wrong) / graded
            lines.append(f"| {level} | {graded} | {mean_right:.3f} | {mean_wrong:.3f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=3000, help="indices drawn per split")
    parser.add_argument("--graded", type=int, default=20, help="tasks graded per level")
    args = parser.parse_args()
    print("\n".join(split_table(args.draws)))
    print()
    print("\n".join(sandbox_scores(args.graded)))


if __name__ == "__main__":
    main()
