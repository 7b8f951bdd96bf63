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

from flexmg.cli.common import CommandError, check_env
from flexmg.settings import add_flags, flag_values


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
    """The flags of ``flexmg leaderboard``: one per flagged field of its config, plus two.

    The flags come from :class:`~flexmg.baselines.leaderboard.LeaderboardConfig` and
    override the config file's values; ``--config`` and ``--redo`` are the command's own.
    """
    from flexmg.baselines.leaderboard import LeaderboardConfig

    p.add_argument(
        "--config", metavar="FILE.yaml", help="leaderboard config (see docs/leaderboard.md)"
    )
    p.add_argument("--redo", action="store_true", help="ignore saved cells and rerun everything")
    add_flags(p, LeaderboardConfig, title="leaderboard")


def build_config(args: argparse.Namespace) -> Any:
    """The :class:`LeaderboardConfig` of ``--config`` (if given) with the flags on top."""
    from flexmg.baselines.leaderboard import LeaderboardConfig

    flags = flag_values(args, LeaderboardConfig)
    if args.config:
        base = LeaderboardConfig.from_yaml(args.config)
        data, config_dir = base.to_dict(), base.config_dir
    elif not flags.get("entries") or not flags.get("envs"):
        raise ValueError("give --config FILE.yaml, or both --entries and --envs")
    else:
        data, config_dir = {}, None
    if "env_kwargs" in flags:
        flags["env_kwargs"] = {**data.get("env_kwargs", {}), **flags["env_kwargs"]}
    return LeaderboardConfig.from_dict({**data, **flags}, config_dir=config_dir)


def check_config(config: Any) -> None:
    """Fail before any cell runs on what cannot work: an env, its kwargs, a model, a run folder.

    A ``run:`` entry whose folder is missing for every cell is a mistake (a
    templated path missing for some ``{seed}`` only is a cell the table skips).
    """
    from flexmg.baselines.entries import Entry, search_path

    for env in config.envs:
        check_env(env.id, config.env_kwargs_for(env))
    for spec in config.entries:
        if spec.kind == "hf":
            from flexmg.models.names import model_problem

            problem = model_problem(spec.value)
            if problem:
                raise CommandError(f"entry {spec.name!r}: {problem}")
        if spec.kind != "run":
            continue
        entry = Entry(spec, search_path(config.config_dir))
        paths = {entry.run_path(env.name, seed) for env in config.envs for seed in config.seeds}
        if not any((path / "config.json").is_file() for path in paths):
            shown = sorted(str(p) for p in paths)
            raise CommandError(
                f"entry {spec.name!r}: no run folder at {shown[0]}"
                + (f" (nor {len(shown) - 1} more)" if len(shown) > 1 else "")
                + ": a run folder is what `flexmg train` writes (config.json + checkpoints/)"
            )


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
        raise CommandError(str(exc)) from exc
    check_config(config)
    try:
        results = run_leaderboard(config, redo=args.redo, echo=True)
    except (EntryError, CellError, ValueError) as exc:
        raise CommandError(str(exc), code=1) from exc
    print(
        f"ran {len(results['ran'])} cell(s), skipped {len(results.get('skipped') or [])}; "
        f"wrote {config.out}/{RESULTS_FILE}, {TABLE_FILE}, {CHART_FILE}",
        file=sys.stderr,
    )
    return 0
