"""``flexmg eval --run RUN_DIR``: score a run's checkpoint on held-out episodes.

Writes the figures to ``--output`` (default ``RUN_DIR/evals/ENV-SPLIT-nN-sSEED.json``)
and a seeded sample of the episodes' transcripts next to it
(``...transcripts.jsonl``, ``--transcripts N``, default 64, 0: none) for ``flexmg view``.

Example::

    flexmg eval --run runs/math-2agent-marft-20250101-120000 --env math-2agent --episodes 200
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from flexmg.cli.common import CommandError, check_env
from flexmg.tasks import SPLITS


def add_command(sub: Any) -> None:
    """Add ``eval`` to the ``flexmg`` sub-commands."""
    p = sub.add_parser(
        "eval",
        help="evaluate a training run's checkpoint",
        description="Evaluate a run's checkpoint on held-out episodes (greedy by default).",
    )
    add_eval_arguments(p)
    p.set_defaults(func=run)


def add_eval_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of ``flexmg eval``."""
    p.add_argument("--run", required=True, metavar="RUN_DIR", help="a training run folder")
    p.add_argument("--env", help="env id (default: the run's env)")
    p.add_argument("--episodes", type=int, default=200, help="episodes (default 200)")
    p.add_argument("--checkpoint", help="checkpoint file (default: the run's newest)")
    p.add_argument(
        "--split",
        choices=list(SPLITS),
        default="eval",
        help="the task split to draw from (default eval; test: the held-out prompts nothing was tuned on)",
    )
    p.add_argument("--seed", type=int, default=0, help="first episode seed (default 0)")
    p.add_argument("--sample", action="store_true", help="sample instead of greedy decoding")
    p.add_argument("--device", help="override the run's device")
    p.add_argument("--output", help="JSON file to write (default RUN_DIR/evals/...)")
    p.add_argument(
        "--transcripts",
        type=_count,
        default=DEFAULT_TRANSCRIPTS,
        metavar="N",
        help=f"episodes whose transcripts are saved next to the output for flexmg view "
        f"(default {DEFAULT_TRANSCRIPTS}; 0: none)",
    )


DEFAULT_TRANSCRIPTS = 64
"""Episodes whose transcripts ``flexmg eval`` saves by default."""


def _count(text: str) -> int:
    """An integer >= 0 (argparse prints the error as one line)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0 (0: none), got {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    """Evaluate a run's checkpoint on an env and print/write the results."""
    from flexmg.agents.checkpoint import CheckpointError, restore_policy
    from flexmg.agents.config import RunConfig, RunConfigError
    from flexmg.agents.evaluation import evaluate_episodes
    from flexmg.agents.run_transcripts import keep_batches
    from flexmg.agents.trainer import env_roles
    from flexmg.evaluation import evaluation_record
    from flexmg.io import atomic_write_text
    from flexmg.transcripts import TranscriptSample, eval_transcripts_path, save_sample

    run = Path(args.run)
    try:
        saved = RunConfig.read(run)
    except RunConfigError as exc:
        raise CommandError(f"cannot load run {run}: {exc}") from exc
    env_id = args.env or saved.train.env
    env_kwargs = dict(saved.train.env_kwargs)
    check_env(env_id, env_kwargs)
    roles = env_roles(env_id, env_kwargs)
    if roles != saved.roles:
        raise CommandError(
            f"env {env_id!r} has roles {roles} but the run was trained with "
            f"{saved.roles}; pick an env with the same roles"
        )
    try:
        restored = restore_policy(run, args.checkpoint, args.device)
    except (OSError, RunConfigError, CheckpointError) as exc:
        raise CommandError(f"cannot load run {run}: {exc}", code=1) from exc
    policy = restored.policy
    out = (
        Path(args.output)
        if args.output
        else (run / "evals" / f"{env_id}-{args.split}-n{args.episodes}-s{args.seed}.json")
    )
    sample = TranscriptSample(limit=args.transcripts, keep="sample", seed=args.seed)
    source = {"kind": "flexmg eval", "label": out.stem, "update": restored.updates}
    t0 = time.monotonic()
    episodes = evaluate_episodes(
        policy,
        env_id,
        args.episodes,
        seed=args.seed,
        env_kwargs=env_kwargs,
        split=args.split,
        greedy=not args.sample,
        on_batch=keep_batches(sample, env_id, source),
    )
    result = evaluation_record(episodes)
    result.update(
        env=env_id,
        split=args.split,
        seed=args.seed,
        greedy=not args.sample,
        checkpoint=str(restored.checkpoint),
        updates=restored.updates,
        seconds=time.monotonic() - t0,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    written = save_sample(eval_transcripts_path(out), sample)
    result["transcripts"] = str(written) if written else None
    atomic_write_text(out, json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0
