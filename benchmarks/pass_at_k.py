"""Held-out greedy success/format/correctness and pass@k of a team, with 95% CIs over prompts.

Plays ``--prompts`` distinct eval-split prompts of a registered env (real grader,
real sandbox): one greedy episode and ``--k`` sampled episodes each. The team
is the warm-started tiny model at step 0 (default), another base checkpoint
(``--model PATH``), or a training run's newest checkpoint (``--run RUN_DIR``).

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


def run_actor(run_dir: Path, seed: int) -> tuple[Any, dict[str, Any]]:
    """An actor from a training run's newest checkpoint (``TeamPolicy.act``) and its env kwargs."""
    import torch

    from flexmg.agents.checkpoint import latest_checkpoint, load_checkpoint
    from flexmg.agents.config import RunConfig
    from flexmg.agents.policy import TeamPolicy

    cfg = RunConfig.read(run_dir)
    ckpt = latest_checkpoint(run_dir / "checkpoints")
    if ckpt is None:
        raise SystemExit(f"pass_at_k: no checkpoint in {run_dir / 'checkpoints'}")
    policy = TeamPolicy(cfg.roles, cfg.policy_config)
    policy.load_trainable_state(load_checkpoint(ckpt)["policy"])
    policy.eval()
    torch.manual_seed(seed)

    def act(role: str, observations: Any, greedy: bool) -> list[str]:
        return list(policy.act(role, list(observations), greedy=greedy).texts)

    return act, {"env": cfg.train.env, "env_kwargs": dict(cfg.train.env_kwargs),
                 "checkpoint": str(ckpt)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default=None, help="env id (default math-2agent or the run's)")
    parser.add_argument("--model", default="tiny", help="'tiny' or a checkpoint folder")
    parser.add_argument("--run", type=Path, default=None, help="a training run folder")
    parser.add_argument("--tasks", default=None, help="the env's tasks= as JSON (default: env's)")
    parser.add_argument("--prompts", type=int, default=300, help="distinct eval prompts")
    parser.add_argument("--k", type=int, default=8, help="samples per prompt (0: greedy only)")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=None, help="JSON file to write")
    args = parser.parse_args(argv)

    import torch

    from flexmg.agents.pass_at_k import ModelActor, measure

    torch.set_num_threads(1)
    env_kwargs: dict[str, Any] = {}
    info: dict[str, Any] = {}
    if args.run is not None:
        actor, info = run_actor(args.run, args.seed)
        env_kwargs = dict(info.pop("env_kwargs"))
        env_id = args.env or info["env"]
        info["run"] = str(args.run)
    else:
        from flexmg.agents.tiny_model import load_tiny

        model, tok = load_tiny(None if args.model == "tiny" else args.model)
        actor = ModelActor(model, tok, max_new_tokens=args.max_new_tokens, seed=args.seed)
        env_id = args.env or "math-2agent"
        info["model"] = args.model
    if args.tasks is not None:
        env_kwargs["tasks"] = json.loads(args.tasks)
    t0 = time.monotonic()
    result = measure(
        env_id,
        actor,
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
            lo, hi = value["ci95"]
            print(f"  {key:>22}: {value['mean']:.3f}  (95% CI {lo:.3f}-{hi:.3f})")
    if args.output is not None:
        atomic_write_json(args.output, result, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
