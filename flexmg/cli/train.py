"""``flexmg train``: train a team with MARFT or IPPO (or resume a run) and print its summary.

Examples::

    flexmg train --algo marft --env math-2agent          # the main job: tiny model, CPU
    flexmg train --algo ippo --env math-3agent --seed 1 --updates 60
    flexmg train --resume runs/math-2agent-marft-20250101-120000
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from flexmg.agents.config import PolicyConfig, PPOConfig, TrainConfig
from flexmg.settings import add_flags, flag_values


def add_command(sub: Any) -> None:
    """Add ``train`` to the ``flexmg`` sub-commands."""
    p = sub.add_parser(
        "train",
        help="train MARFT or IPPO on an env (tiny model on CPU by default)",
        description="Train a team of LoRA agents with MARFT or IPPO and write a run folder.",
    )
    add_train_arguments(p)
    p.set_defaults(func=run)


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


def run(args: argparse.Namespace) -> int:
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
