"""What a math run learned: the solver's greedy answers as offsets from the right value.

For distinct held-out (and training) prompts of the default arithmetic task, the
solver role answers greedily in the compact prompt format (``Q:<problem>\\n[solver]:``)
and each boxed value is classed as **right** (offset 0), the warm-start teacher's
**slip** (``gold + 1``) or **other** (any other value, or none). Run it on the
base model (``--base``) and on a run's checkpoint to see whether RL unlearned the
slip, taught new arithmetic, or neither.

Usage::

    python benchmarks/answer_offsets.py --base                      # the shipped warm start
    python benchmarks/answer_offsets.py runs/RUN/checkpoints/step_0000030.ckpt
    python benchmarks/answer_offsets.py CKPT --prompts 500 --json out.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

_BOXED = re.compile(r"\\boxed\{(-?\d+)\}")


def distinct_tasks(split: str, n: int) -> list[Any]:
    """The first ``n`` distinct prompts of the default arithmetic task's ``split``."""
    from flexmg.envs.math import make_math_source

    source = make_math_source({"name": "arithmetic"}, split=split)
    tasks, seen, index = [], set(), 0
    while len(tasks) < n and index < 100 * n:
        task = source.get(index)
        index += 1
        if task.prompt not in seen:
            seen.add(task.prompt)
            tasks.append(task)
    return tasks


def offsets(actor: Any, tasks: list[Any]) -> Counter:
    """Counter of (answer - gold) over ``tasks`` (``"none"``: no boxed integer).

    ``actor`` is the solver (greedy): it sees each task as a lone solver does.
    """
    observations = [{"task": t.prompt, "role": "solver"} for t in tasks]  # Q:...\n[solver]:
    counts: Counter = Counter()
    for task, text in zip(tasks, actor.act(observations), strict=True):
        found = _BOXED.search(text)
        counts[int(found.group(1)) - int(task.answer) if found else "none"] += 1
    return counts


def classes(counts: Counter) -> dict[str, float]:
    """Shares of right (0), slip (+1) and other.

    >>> classes(Counter({0: 2, 1: 1, -1: 1}))
    {'right': 0.5, 'slip': 0.25, 'other': 0.25}
    """
    n = max(1, sum(counts.values()))
    right, slip = counts.get(0, 0) / n, counts.get(1, 0) / n
    return {"right": right, "slip": slip, "other": 1.0 - right - slip}


def load_solver(checkpoint: Path | None) -> Any:
    """The greedy solver: the shipped tiny model, or the solver of a run's ``checkpoint``.

    Both decode with the learner's own decoder (the tiny model's token budget for math).
    """
    if checkpoint is None:
        from flexmg.family import family_of, token_budget
        from flexmg.models.actor import ModelActor

        budget = token_budget(family_of("math-1agent"), "tiny")
        return ModelActor.load("tiny", max_new_tokens=budget, greedy=True, device="cpu")
    from flexmg.agents.checkpoint import load_checkpoint
    from flexmg.agents.config import PolicyConfig
    from flexmg.agents.llm_agent import LLMAgent
    from flexmg.agents.policy import TeamPolicy

    state = load_checkpoint(checkpoint)["policy"]
    config = state["config"]
    config = PolicyConfig.from_dict(config) if isinstance(config, dict) else config
    if "solver" not in state["roles"]:
        raise SystemExit(f"{checkpoint}: no solver role (roles: {state['roles']})")
    policy = TeamPolicy(state["roles"], config)
    policy.load_trainable_state(state)
    policy.eval()
    return LLMAgent(policy, role="solver", greedy=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=Path, nargs="?", help="a run's step_*.ckpt")
    parser.add_argument("--base", action="store_true", help="the shipped warm start alone")
    parser.add_argument("--prompts", type=int, default=300, help="distinct prompts per split")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    if (args.checkpoint is None) == (not args.base):
        parser.error("pass a checkpoint or --base (one of them)")
    if args.checkpoint is not None and not args.checkpoint.is_file():
        parser.error(f"no checkpoint file {args.checkpoint}: pass a run's step_*.ckpt")
    solver = load_solver(None if args.base else args.checkpoint)
    result: dict[str, Any] = {"checkpoint": str(args.checkpoint or "base")}
    for split in ("eval", "train"):
        tasks = distinct_tasks(split, args.prompts)
        counts = offsets(solver, tasks)
        shares = classes(counts)
        common = ", ".join(f"{k:+}: {v}" if k != "none" else f"none: {v}"
                           for k, v in counts.most_common(6))  # fmt: skip
        print(f"{split:>5} ({len(tasks)} prompts): right {shares['right']:.3f}  slip "
              f"{shares['slip']:.3f}  other {shares['other']:.3f}   offsets {common}")  # fmt: skip
        result[split] = {"prompts": len(tasks), **shares,
                         "offsets": {str(k): v for k, v in counts.items()}}  # fmt: skip
    if args.json:
        from flexmg.io import atomic_write_text

        atomic_write_text(args.json, json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
