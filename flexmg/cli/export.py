"""``flexmg export ENV``: one dataset row per episode seed (jsonl or parquet)."""

from __future__ import annotations

import argparse
from typing import Any

from flexmg.cli.common import CommandError, add_kwargs_arguments, check_env, parse_kwargs


def add_command(sub: Any) -> None:
    """Add ``export`` to the ``flexmg`` sub-commands."""
    p = sub.add_parser("export", help="write one dataset row per episode seed (jsonl/parquet)")
    p.add_argument("env_id", help="a registered id or package.module:factory")
    p.add_argument("--out", required=True, help="output file (.jsonl or .parquet)")
    p.add_argument("--n", type=int, default=1000, help="number of episodes (seeds)")
    p.add_argument(
        "--split",
        default=None,
        help="task split: train, eval or all (default: the split=KEY=VALUE kwarg, else eval)",
    )
    p.add_argument(
        "--allow-repeats",
        action="store_true",
        help="take seeds as they come, repeated episodes included (default: skip seeds "
        "whose episode is already in the file, so the N rows are distinct)",
    )
    p.add_argument(
        "--format",
        choices=("jsonl", "parquet"),
        default=None,
        help="default: from the --out suffix",
    )
    p.add_argument("--seed-start", type=int, default=0, help="first seed")
    p.add_argument(
        "--max-draws",
        type=int,
        default=None,
        help="seeds to try for N distinct episodes (default: max(20 N, 1000))",
    )
    p.add_argument("--agent-name", default="flexmg_agent", help="verl's agent_name column")
    add_kwargs_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write the rows and say where."""
    from flexmg.integrations.export import export_rows, resolve_split

    env_kwargs = parse_kwargs([*args.kw, *args.kw_opt])
    check_env(args.env_id, env_kwargs)
    fmt = args.format or ("parquet" if args.out.endswith(".parquet") else "jsonl")
    try:
        env_kwargs = parse_kwargs([*args.kw, *args.kw_opt])
        split = resolve_split(args.split, env_kwargs)
        path = export_rows(
            args.env_id,
            args.out,
            n=args.n,
            fmt=fmt,
            split=split,
            seed_start=args.seed_start,
            env_kwargs=env_kwargs,
            agent_name=args.agent_name,
            progress=True,
            allow_repeats=args.allow_repeats,
            max_draws=args.max_draws,
        )
    except (ImportError, ValueError) as err:
        raise CommandError(str(err)) from err
    kind = "rows, repeats allowed" if args.allow_repeats else "distinct episodes"
    print(f"wrote {args.n} rows ({fmt}) of split {split!r} to {path} ({kind})")
    return 0
