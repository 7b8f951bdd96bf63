"""``flexmg train`` and ``flexmg eval``: the command line of the learners.

``add_commands(subparsers)`` adds both commands to an ``argparse`` sub-parser
set (the ``flexmg`` console script calls it); ``python -m flexmg.agents.cli
train ...`` works on its own too.

Examples::

    flexmg train --algo marft --env math-2agent          # the main job: tiny model, CPU
    flexmg train --algo ippo --env math-3agent --seed 1 --updates 60
    flexmg train --resume runs/math-2agent-marft-20250101-120000
    flexmg eval --run runs/math-2agent-marft-20250101-120000 --env math-2agent --episodes 200
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from flexmg.agents.config import PolicyConfig, PPOConfig, TrainConfig
from flexmg.agents.config_fields import add_flags, flag_values


def add_train_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of ``flexmg train``: one per flagged config field, plus three of the CLI's own.

    The config flags come from the fields of :class:`~flexmg.agents.config.TrainConfig`
    ("run"), :class:`~flexmg.agents.config.PolicyConfig` ("model") and
    :class:`~flexmg.agents.config.PPOConfig` ("PPO"); all default to None, so an unset
    flag keeps the config's default. ``--horizon`` (an env kwarg), ``--resume`` and
    ``--bf16`` (``dtype="bfloat16"``) are the CLI's own.
    """
    g = p.add_argument_group("run")
    add_flags(g, TrainConfig)
    g.add_argument("--horizon", type=int, help="rounds per episode (env kwarg)")
    g.add_argument("--resume", metavar="RUN_DIR", help="continue a run from its last checkpoint")
    m = p.add_argument_group("model")
    add_flags(m, PolicyConfig)
    m.add_argument("--bf16", action="store_const", const=True, help="bfloat16 weights")
    add_flags(p.add_argument_group("PPO"), PPOConfig)


def config_overrides(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The sections ``train``/``policy``/``ppo`` set by the given (non-None) flags."""
    out = {
        "train": flag_values(args, TrainConfig),
        "policy": flag_values(args, PolicyConfig),
        "ppo": flag_values(args, PPOConfig),
    }
    if getattr(args, "bf16", None):
        out["policy"]["dtype"] = "bfloat16"
    if getattr(args, "horizon", None) is not None:
        out["train"]["env_kwargs"] = {"horizon": args.horizon}
    return out


def cmd_train(args: argparse.Namespace) -> int:
    """Run (or resume) a training run and print its summary."""
    from flexmg.agents.trainer import Trainer

    ov = config_overrides(args)
    if args.resume:
        from flexmg.agents.checkpoint import CheckpointError

        if ov["policy"] or ov["ppo"] or set(ov["train"]) - {"updates", "progress", "eval_every"}:
            changed = sorted(set(ov["policy"]) | set(ov["ppo"]) | set(ov["train"]))
            print(
                f"flexmg train: --resume continues the saved configuration; only --updates, "
                f"--eval-every and --no-progress may change (got {changed})",
                file=sys.stderr,
            )
            return 2
        try:
            trainer = Trainer.resume(args.resume, **ov["train"])
        except CheckpointError as exc:
            print(f"flexmg train: {exc}", file=sys.stderr)
            return 1
    else:
        trainer = Trainer(TrainConfig(**ov["train"], policy=ov["policy"], ppo=ov["ppo"]))
    print(f"run folder: {trainer.run_dir}", file=sys.stderr)
    try:
        summary = trainer.run()
    except FileExistsError as exc:
        print(f"flexmg train: {exc}", file=sys.stderr)
        return 2
    keys = ("eval_start", "eval_end", "correct_start", "correct_end", "format_start",
            "format_end", "eval_prompts", "updates", "wall_seconds", "run_dir")  # fmt: skip
    print(json.dumps({k: summary.get(k) for k in keys}, indent=2))
    return 0


def add_eval_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of ``flexmg eval``."""
    p.add_argument("--run", required=True, metavar="RUN_DIR", help="a training run folder")
    p.add_argument("--env", help="env id (default: the run's env)")
    p.add_argument("--episodes", type=int, default=200, help="episodes (default 200)")
    p.add_argument("--checkpoint", help="checkpoint file (default: the run's newest)")
    p.add_argument("--split", choices=["eval", "train", "all"], default="eval")
    p.add_argument("--seed", type=int, default=0, help="first episode seed (default 0)")
    p.add_argument("--sample", action="store_true", help="sample instead of greedy decoding")
    p.add_argument("--device", help="override the run's device")
    p.add_argument("--output", help="JSON file to write (default RUN_DIR/evals/...)")


def cmd_eval(args: argparse.Namespace) -> int:
    """Evaluate a run's checkpoint on an env and print/write the results."""
    from dataclasses import replace

    from flexmg.agents.checkpoint import CheckpointError, latest_checkpoint, load_checkpoint
    from flexmg.agents.config import RunConfig, RunConfigError
    from flexmg.agents.evaluation import evaluate_policy
    from flexmg.agents.policy import TeamPolicy
    from flexmg.agents.trainer import env_roles
    from flexmg.io import atomic_write_text

    run = Path(args.run)
    try:
        saved = RunConfig.read(run)
        ckpt = Path(args.checkpoint) if args.checkpoint else latest_checkpoint(run / "checkpoints")
        if ckpt is None:
            raise CheckpointError(f"no checkpoint in {run / 'checkpoints'}")
        state = load_checkpoint(ckpt)
    except (OSError, RunConfigError, CheckpointError) as exc:
        print(f"flexmg eval: cannot load run {run}: {exc}", file=sys.stderr)
        return 1
    env_id = args.env or saved.train.env
    env_kwargs = dict(saved.train.env_kwargs)
    roles = env_roles(env_id, env_kwargs)
    if roles != saved.roles:
        print(
            f"flexmg eval: env {env_id!r} has roles {roles} but the run was trained with "
            f"{saved.roles}; pick an env with the same roles",
            file=sys.stderr,
        )
        return 2
    pcfg = saved.policy_config
    if args.device:
        pcfg = replace(pcfg, device=args.device)
    policy = TeamPolicy(roles, pcfg)
    policy.load_trainable_state(state["policy"])
    policy.eval()
    t0 = time.monotonic()
    result = evaluate_policy(
        policy,
        env_id,
        args.episodes,
        seed=args.seed,
        env_kwargs=env_kwargs,
        split=args.split,
        greedy=not args.sample,
    )
    result.update(
        env=env_id,
        split=args.split,
        seed=args.seed,
        greedy=not args.sample,
        checkpoint=str(ckpt),
        updates=int(state["counters"]["updates_done"]),
        seconds=time.monotonic() - t0,
    )
    out = (
        Path(args.output)
        if args.output
        else (run / "evals" / f"{env_id}-{args.split}-n{args.episodes}-s{args.seed}.json")
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0


def add_commands(subparsers: Any) -> None:
    """Add ``train`` and ``eval`` to an ``argparse`` sub-parser set."""
    train = subparsers.add_parser(
        "train",
        help="train MARFT or IPPO on an env (tiny model on CPU by default)",
        description="Train a team of LoRA agents with MARFT or IPPO and write a run folder.",
    )
    add_train_arguments(train)
    train.set_defaults(func=cmd_train)
    ev = subparsers.add_parser(
        "eval",
        help="evaluate a training run's checkpoint",
        description="Evaluate a run's checkpoint on held-out episodes (greedy by default).",
    )
    add_eval_arguments(ev)
    ev.set_defaults(func=cmd_eval)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m flexmg.agents.cli``."""
    from flexmg.cli import standalone_main

    return standalone_main(add_commands, "python -m flexmg.agents.cli", argv)


if __name__ == "__main__":
    sys.exit(main())
