"""Held-out greedy success/format/correctness and pass@k of a team, with 95% CIs over prompts.

Plays ``--prompts`` distinct eval-split prompts of a registered env (real grader,
real sandbox): one greedy episode and ``--k`` sampled episodes each, through the
library's one evaluation path (:func:`flexmg.evaluation.measure_pass_at_k`) and
the learner's own decoder. The team is a model at step 0 (``--model``: the
warm-started tiny model by default, a zoo name, a Hugging Face id or a folder;
every role plays it) or a training run's newest checkpoint (``--run RUN_DIR``).

Usage::

    python benchmarks/pass_at_k.py                                  # tiny model, math-2agent
    python benchmarks/pass_at_k.py --tasks '{"name": "arithmetic", "difficulty": 2}'
    python benchmarks/pass_at_k.py --run runs/math-2agent-marft-... --k 0
    python benchmarks/pass_at_k.py --env code-2agent --max-new-tokens 64
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from flexmg.io import atomic_write_json


def run_teams(run_dir: Path) -> tuple[Any, Any, dict[str, Any]]:
    """A run's newest checkpoint as a greedy and a sampling team, and what it was trained on."""
    from flexmg.agents.checkpoint import restore_policy
    from flexmg.agents.llm_agent import LLMAgent

    restored = restore_policy(run_dir)
    info = {"env": restored.config.train.env, "env_kwargs": dict(restored.config.train.env_kwargs),
            "checkpoint": str(restored.checkpoint)}  # fmt: skip
    greedy = LLMAgent(restored.policy, greedy=True)
    return greedy, LLMAgent(restored.policy, greedy=False), info


def model_teams(name: str, env_id: str, max_new_tokens: int | None, seed: int) -> tuple[Any, Any]:
    """A model as a greedy and a sampling team (every role), with the env's token budget."""
    from flexmg.family import family_of, token_budget
    from flexmg.models.actor import ModelActor
    from flexmg.models.zoo import model_kind

    budget = max_new_tokens or token_budget(family_of(env_id), model_kind(name))
    greedy = ModelActor.load(name, max_new_tokens=budget, greedy=True)
    model, tokenizer = greedy.decoder.model, greedy.decoder.tokenizer
    sampled = ModelActor(model, tokenizer, budget, prompt_style=greedy.decoder.prompts.style,
                         seed=seed)  # fmt: skip
    return greedy, sampled


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default=None, help="env id (default math-2agent or the run's)")
    parser.add_argument("--model", default="tiny", help="tiny, a zoo name, a HF id or a folder")
    parser.add_argument("--run", type=Path, default=None, help="a training run folder")
    parser.add_argument("--tasks", default=None, help="the env's tasks= as JSON (default: env's)")
    parser.add_argument("--prompts", type=int, default=300, help="distinct eval prompts")
    parser.add_argument("--k", type=int, default=8, help="samples per prompt (0: greedy only)")
    parser.add_argument(
        "--max-new-tokens",
        type=int,
        default=None,
        help="tokens per action (default: the env family's for the model)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=None, help="JSON file to write")
    args = parser.parse_args(argv)
    if args.run is not None and not (args.run / "config.json").is_file():
        parser.error(f"--run {args.run}: no run folder there (no config.json)")
    if args.run is None:
        from flexmg.models.names import model_problem

        problem = model_problem(args.model)
        if problem:
            parser.error(problem)

    import torch

    from flexmg.evaluation import measure_pass_at_k

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    env_kwargs: dict[str, Any] = {}
    info: dict[str, Any] = {}
    if args.run is not None:
        greedy, sampled, info = run_teams(args.run)
        env_kwargs = dict(info.pop("env_kwargs"))
        env_id = args.env or info["env"]
        info["run"] = str(args.run)
    else:
        env_id = args.env or "math-2agent"
        greedy, sampled = model_teams(args.model, env_id, args.max_new_tokens, args.seed)
        info["model"] = args.model
    if args.tasks is not None:
        env_kwargs["tasks"] = json.loads(args.tasks)
    t0 = time.monotonic()
    result = measure_pass_at_k(
        greedy,
        sampled,
        env_id,
        prompts=args.prompts,
        k=args.k,
        seed=args.seed,
        env_kwargs=env_kwargs,
        progress=lambda msg: print(msg, file=sys.stderr, flush=True),
    )
    result.update(info, env_kwargs=env_kwargs, seconds=round(time.monotonic() - t0, 1))
    print(f"{env_id}: {result['prompts']} distinct held-out prompts, k={args.k}")
    for key, value in result.items():
        if isinstance(value, dict) and "mean" in value:
            ci = value["ci95"]
            interval = f"  (95% CI {ci[0]:.3f}-{ci[1]:.3f})" if ci else ""
            print(f"  {key:>22}: {value['mean']:.3f}{interval}")
    if args.output is not None:
        atomic_write_json(args.output, result, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
