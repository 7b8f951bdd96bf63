"""How much of the return's variance could any critic of the prompt explain?

A value function V(s) that sees only the prompt (or anything fixed before the graded
action is sampled) can at best predict each prompt's success probability p(x). Its
explained variance on fresh episodes is then at most

    Var_x(p(x)) / Var(R),   Var(R) = mean(p) * (1 - mean(p))   (a 0/1 return)

the share of the return's variance that lies *between* prompts; the rest is the luck
of the sampled action, which no V(s) can see. With k samples per prompt the between-
prompt part is estimated without bias as ``Var(R) - E[p_hat (1 - p_hat)] * k / (k - 1)``.

It reads the rows of ``benchmarks/majority_vote.py`` (k sampled answers per prompt)
and prints that ceiling with a 95% bootstrap interval over prompts.

Usage::

    python benchmarks/critic_ceiling.py ../docs/results/smollm2_majority_vote_k8.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path


def between_prompt_share(rates: Sequence[float], k: int) -> float:
    """The share of a 0/1 return's variance explained by each prompt's true success rate.

    ``rates`` holds each prompt's observed success rate over ``k`` samples.

    >>> round(between_prompt_share([0.0, 0.0, 1.0, 1.0], k=8), 3)
    1.0
    >>> round(between_prompt_share([0.5, 0.5, 0.5, 0.5], k=8), 3)
    0.0
    """
    if k < 2 or not rates:
        raise ValueError(f"need k >= 2 samples per prompt and some prompts, got k={k}")
    mean = sum(rates) / len(rates)
    total = mean * (1.0 - mean)
    if total <= 0.0:
        return 0.0
    within = sum(p * (1.0 - p) for p in rates) / len(rates) * k / (k - 1)
    return max(0.0, min(1.0, (total - within) / total))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("votes", type=Path, help="a benchmarks/majority_vote.py JSON file")
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    data = json.loads(args.votes.read_text())
    if "rows" not in data or "k" not in data:
        print(f"critic_ceiling: error: {args.votes} has no 'rows'/'k'; expected the JSON "
              "that benchmarks/majority_vote.py writes")  # fmt: skip
        return 2
    k = int(data["k"])
    rates = [float(r["sampled_correct"]) for r in data["rows"]]
    share = between_prompt_share(rates, k)
    rng = random.Random(args.seed)
    boots = sorted(
        between_prompt_share([rng.choice(rates) for _ in rates], k) for _ in range(args.resamples)
    )
    lo, hi = boots[int(0.025 * len(boots))], boots[int(0.975 * len(boots)) - 1]
    mean = sum(rates) / len(rates)
    print(f"{len(rates)} prompts x {k} samples, success {mean:.3f}; prompts with no success "
          f"{sum(r == 0 for r in rates)}")  # fmt: skip
    print(f"explained-variance ceiling of a critic of the prompt: {share:.3f} "
          f"[{lo:.3f}, {hi:.3f}]")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
