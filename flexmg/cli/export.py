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
    p.add_argument("--split", default="eval", help="task split: train, eval or all")
    p.add_argument(
        "--format",
        choices=("jsonl", "parquet"),
        default=None,
        help="default: from the --out suffix",
    )
    p.add_argument("--seed-start", type=int, default=0, help="first seed")
    p.add_argument("--agent-name", default="flexmg_agent", help="verl's agent_name column")
    add_kwargs_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write the rows and say where."""
    from flexmg.integrations.export import export_rows

    env_kwargs = parse_kwargs([*args.kw, *args.kw_opt])
    check_env(args.env_id, env_kwargs)
    fmt = args.format or ("parquet" if args.out.endswith(".parquet") else "jsonl")
    try:
        path = export_rows(
            args.env_id,
            args.out,
            n=args.n,
            fmt=fmt,
            split=args.split,
            seed_start=args.seed_start,
            env_kwargs=env_kwargs,
            agent_name=args.agent_name,
            progress=True,
        )
    except (ImportError, ValueError) as err:
        raise CommandError(str(err)) from err
    print(f"wrote {args.n} rows ({fmt}) to {path}")
    return 0
