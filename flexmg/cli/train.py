"""``flexmg train``: train a team with MARFT or IPPO (or resume a run) and print its summary.

Examples::

    flexmg train --algo marft --env math-2agent          # the main job: tiny model, CPU
    flexmg train --algo ippo --env math-3agent --seed 1 --updates 60
    flexmg train --resume runs/math-2agent-marft-20250101-120000

Ctrl-C finishes the update under way, saves a checkpoint, prints where and how to
resume, and exits with status 130; a second Ctrl-C aborts at once (the newest
complete checkpoint stays).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from flexmg.agents.config import TrainConfig
from flexmg.agents.stop import TrainingInterrupted
from flexmg.cli.common import CommandError, check_env, check_role_names
from flexmg.settings import add_flags, flag_values, from_flags, nested_fields


def add_command(sub: Any) -> None:
    """Add ``train`` to the ``flexmg`` sub-commands."""
    p = sub.add_parser(
        "train",
        help="train MARFT or IPPO on an env (tiny model on CPU by default)",
        description="Train a team of LoRA agents with MARFT or IPPO and write a run folder. "
        "Ctrl-C finishes the update under way, saves a checkpoint and exits (status 130); "
        "--resume RUN_DIR continues exactly. A second Ctrl-C aborts at once.",
    )
    add_train_arguments(p)
    p.set_defaults(func=run)


def add_train_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of ``flexmg train``: one per flagged field of the run's config, plus two.

    The config flags come from the fields of :class:`~flexmg.agents.config.TrainConfig`
    ("run"), its :class:`~flexmg.agents.config.PolicyConfig` ("model") and its
    :class:`~flexmg.agents.config.PPOConfig` ("PPO"), shortcuts such as ``--bf16``
    included; all default to None, so an unset flag keeps the config's default.
    ``--horizon N`` (short for ``--kw horizon=N``) and ``--resume`` are the command's own.
    """
    add_flags(p, TrainConfig, title="run")
    p.add_argument("--horizon", type=int, help="rounds per episode (the env kwarg horizon)")
    p.add_argument("--resume", metavar="RUN_DIR", help="continue a run from its last checkpoint")


def train_config(args: argparse.Namespace) -> TrainConfig:
    """The run's :class:`TrainConfig`: its defaults with the flags given on top."""
    config = from_flags(args, TrainConfig)
    if getattr(args, "horizon", None) is not None:
        config = replace(config, env_kwargs={**config.env_kwargs, "horizon": args.horizon})
    return config


def given_flags(args: argparse.Namespace) -> list[str]:
    """The config fields the flags set (every section)."""
    classes: list[type] = [TrainConfig, *nested_fields(TrainConfig).values()]
    found = [name for cls in classes for name in flag_values(args, cls)]
    return sorted({*found, *(["env_kwargs"] if getattr(args, "horizon", None) else [])})


def check_model(name: str) -> None:
    """Raise a :class:`CommandError` when ``--model`` names nothing that loads here."""
    from flexmg.models.names import model_problem

    problem = model_problem(name)
    if problem:
        raise CommandError(problem)


INTERRUPTED = 130
"""The exit status after Ctrl-C (128 + SIGINT), as shells report it."""


def aborted_line(run_dir: Path) -> str:
    """What a second Ctrl-C leaves: the newest complete checkpoint, and how to go on from it."""
    from flexmg.agents.checkpoint import latest_checkpoint

    last = latest_checkpoint(run_dir / "checkpoints")
    if last is None:
        return f"aborted: no checkpoint saved yet in {run_dir}; start the run again"
    return (
        f"aborted: the newest checkpoint {last} is intact; continue with: "
        f"flexmg train --resume {run_dir}"
    )


RESUME_MAY_CHANGE = {"updates", "progress", "eval_every", "transcripts"}
"""What ``--resume`` lets the flags change: how long the run goes on and how it reports."""


def run(args: argparse.Namespace) -> int:
    """Run (or resume) a training run and print its summary."""
    from flexmg.agents.trainer import Trainer

    if args.resume:
        from flexmg.agents.checkpoint import CheckpointError

        changed = given_flags(args)
        if set(changed) - RESUME_MAY_CHANGE:
            raise CommandError(
                f"--resume continues the saved configuration; only --updates, "
                f"--eval-every, --transcripts and --no-progress may change (got {changed})"
            )
        if not (Path(args.resume) / "config.json").is_file():
            raise CommandError(
                f"--resume {args.resume}: no run folder there (no config.json): a run folder "
                "is what `flexmg train` writes"
            )
        try:
            trainer = Trainer.resume(args.resume, **flag_values(args, TrainConfig))
        except CheckpointError as exc:
            raise CommandError(str(exc), code=1) from exc
    else:
        config = train_config(args)
        roles = check_env(config.env, config.env_kwargs)  # a bad env or kwarg: before the model
        for name in ("role_temperature", "role_max_new_tokens"):
            check_role_names(f"--{name.replace('_', '-')}", getattr(config.policy, name), roles)
        check_model(config.policy.model)
        trainer = Trainer(config)
    print(f"run folder: {trainer.run_dir}", file=sys.stderr)
    try:
        summary = trainer.run()
    except FileExistsError as exc:
        raise CommandError(str(exc)) from exc
    except TrainingInterrupted as stop:
        # the run is saved and over: a Ctrl-C from now on (while the interpreter shuts down,
        # e.g. joining the TensorBoard writer) must not turn exit 130 into death by SIGINT
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        print(
            f"stopped after update {stop.update} of {trainer.config.updates}: saved "
            f"{stop.checkpoint}; continue with: flexmg train --resume {stop.run_dir}",
            file=sys.stderr,
        )
        return INTERRUPTED
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        print(aborted_line(trainer.run_dir), file=sys.stderr)
        return INTERRUPTED
    keys = ("eval_start", "eval_end", "correct_start", "correct_end", "format_start",
            "format_end", "eval_prompts", "updates", "wall_seconds", "run_dir")  # fmt: skip
    print(json.dumps({k: summary.get(k) for k in keys}, indent=2))
    return 0
