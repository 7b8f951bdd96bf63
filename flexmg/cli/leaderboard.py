"""``flexmg leaderboard``: compare agents on envs over seeds (resumable).

Examples::

    flexmg leaderboard --config configs/leaderboard.yaml
    flexmg leaderboard --entries scripted:oracle scripted:empty mymod:make_agent \\
        --envs math-2agent --seeds 0 1 2 --episodes 20 --out leaderboards/quick
    flexmg leaderboard --config configs/leaderboard.yaml --seeds 0 1 2 3   # adds seed 3 only
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from flexmg.cli.common import parse_kwargs


def add_command(sub: Any) -> None:
    """Add ``leaderboard`` to the ``flexmg`` sub-commands."""
    p = sub.add_parser(
        "leaderboard",
        help="compare agents (scripted, trained runs, HF models, your own) on envs",
        description="Evaluate entries on envs over seeds; writes results.json, leaderboard.md "
        "and leaderboard.png; re-running resumes and skips finished cells.",
    )
    add_leaderboard_arguments(p)
    p.set_defaults(func=run)


def add_leaderboard_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of ``flexmg leaderboard`` (flags override the config file's values)."""
    p.add_argument(
        "--config", metavar="FILE.yaml", help="leaderboard config (see docs/leaderboard.md)"
    )
    p.add_argument(
        "--entries",
        nargs="+",
        metavar="SPEC",
        help="entries: scripted:oracle|empty|random, run:PATH, hf:MODEL, module:callable",
    )
    p.add_argument("--envs", nargs="+", metavar="ENV_ID", help="env ids")
    p.add_argument(
        "--seeds", nargs="+", type=int, metavar="S", help="leaderboard seeds (default 0 1 2)"
    )
    p.add_argument("--episodes", type=int, help="episodes per seed (default 20)")
    p.add_argument("--out", metavar="DIR", help="output folder (default leaderboards/default)")
    p.add_argument("--num-envs", type=int, help="vector env size / generation batch (default 8)")
    p.add_argument("--vectorization", choices=["sync", "async", "ray"], help="vector env kind")
    p.add_argument("--split", choices=["eval", "train", "all"], help="task split (default eval)")
    p.add_argument(
        "--kw",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="kwargs for every env (JSON values), e.g. horizon=2",
    )
    p.add_argument("--redo", action="store_true", help="ignore saved cells and rerun everything")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def build_config(args: argparse.Namespace) -> Any:
    """The :class:`LeaderboardConfig` from ``--config`` and/or the quick flags."""
    from flexmg.baselines.leaderboard import LeaderboardConfig

    if args.config:
        base = LeaderboardConfig.from_yaml(args.config)
        data = base.to_dict()
        config_dir = base.config_dir
    else:
        if not args.entries or not args.envs:
            raise ValueError("give --config FILE.yaml, or both --entries and --envs")
        data = {"entries": [], "envs": []}
        config_dir = None
    overrides = {
        "entries": args.entries,
        "envs": args.envs,
        "seeds": args.seeds,
        "episodes": args.episodes,
        "out": args.out,
        "num_envs": args.num_envs,
        "vectorization": args.vectorization,
        "split": args.split,
    }
    data.update({k: v for k, v in overrides.items() if v is not None})
    if args.kw:
        data["env_kwargs"] = {**data.get("env_kwargs", {}), **parse_kwargs(args.kw)}
    data["progress"] = not args.no_progress
    return LeaderboardConfig.from_dict(data, config_dir=config_dir)


def run(args: argparse.Namespace) -> int:
    """Run or resume the leaderboard; print the table and where the files are."""
    from flexmg.baselines.entries import EntryError
    from flexmg.baselines.leaderboard import (
        CHART_FILE,
        RESULTS_FILE,
        TABLE_FILE,
        CellError,
        run_leaderboard,
    )

    try:
        config = build_config(args)
    except ValueError as exc:
        print(f"flexmg leaderboard: {exc}", file=sys.stderr)
        return 2
    try:
        results = run_leaderboard(config, redo=args.redo, echo=True)
    except (EntryError, CellError, ValueError) as exc:
        print(f"flexmg leaderboard: {exc}", file=sys.stderr)
        return 1
    print(
        f"ran {len(results['ran'])} cell(s), skipped {len(results.get('skipped') or [])}; "
        f"wrote {config.out}/{RESULTS_FILE}, {TABLE_FILE}, {CHART_FILE}",
        file=sys.stderr,
    )
    return 0
