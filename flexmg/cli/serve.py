"""``flexmg serve ENV``: serve an env with OpenEnv's HTTP/WebSocket API."""

from __future__ import annotations

import argparse
from typing import Any

from flexmg.cli.common import CommandError, add_kwargs_arguments, check_env, parse_kwargs


def add_command(sub: Any) -> None:
    """Add ``serve`` to the ``flexmg`` sub-commands."""
    p = sub.add_parser("serve", help="serve an env with OpenEnv's HTTP/WebSocket API")
    p.add_argument("env_id", help="a registered id or package.module:factory")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument(
        "--max-sessions", type=int, default=64, help="concurrent WebSocket sessions per worker"
    )
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        help="server processes on the port (concurrent sessions spread over them)",
    )
    p.add_argument(
        "--openenv-ws",
        action="store_true",
        help="serve /ws with OpenEnv's own endpoint (default: flexmg's lean one, same answers)",
    )
    p.add_argument("--log-level", default="info", help="uvicorn's: info, warning, error, ...")
    add_kwargs_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted."""
    try:
        from flexmg.integrations.openenv import serve
    except ImportError as err:
        raise CommandError(str(err)) from err
    kwargs = parse_kwargs([*args.kw, *args.kw_opt])
    if args.workers < 1:
        raise CommandError(f"--workers must be >= 1, got {args.workers}")
    check_env(args.env_id, kwargs)
    serve(
        args.env_id,
        kwargs,
        host=args.host,
        port=args.port,
        max_sessions=args.max_sessions,
        workers=args.workers,
        log_level=args.log_level,
        lean=not args.openenv_ws,
    )
    return 0
