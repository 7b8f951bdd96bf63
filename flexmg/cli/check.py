"""``flexmg check ENV``: run the conformance checker and print its verdict."""

from __future__ import annotations

import argparse
from typing import Any

from flexmg.cli.common import check_env, parse_kwargs


def add_command(sub: Any) -> None:
    """Add ``check`` to the ``flexmg`` sub-commands."""
    p = sub.add_parser("check", help="run the conformance checker on an env id")
    p.add_argument("env_id", help="a registered id or package.module:factory")
    p.add_argument("--cycles", type=int, default=20)
    p.add_argument("--kw", nargs="*", default=[], metavar="KEY=VALUE", help="env kwargs")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """0 when the env conforms, 1 otherwise."""
    from flexmg.test import api_test

    kwargs = parse_kwargs(args.kw)
    check_env(args.env_id, kwargs)
    print(f"checking {args.env_id} ...", flush=True)
    report = api_test(args.env_id, num_cycles=args.cycles, verbose=True, **kwargs)
    return 0 if report.passed else 1
