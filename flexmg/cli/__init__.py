"""The ``flexmg`` command line: one module per command, each with ``add_command`` and ``run``.

Commands: ``list`` (registered envs), ``check ENV`` (conformance verdict), ``play
ENV`` (type each role's message by hand), ``serve ENV`` (an OpenEnv server),
``export ENV`` (one dataset row per episode seed), ``sandbox ...`` (sandbox image
and status), ``train`` / ``eval`` (the MARFT and IPPO learners), ``leaderboard``
(compare agents), ``models`` (the models ``--model`` takes by name), ``view PATH`` (an HTML page of episodes). Every command takes ``--import MODULE`` (import a module that
registers your envs before the command runs), and an ``ENV`` may be a registered
id or ``package.module:factory``. A mistake is one line on stderr, ``flexmg CMD:
error: ...``, with a non-zero exit (2: the command line, 1: what it ran); ``--debug``
(before or after the command) shows the traceback instead.

Example:
    $ flexmg list
    $ flexmg check math-2agent
    $ flexmg play echo --seed 3
    $ flexmg check --import my_envs my-env
    $ flexmg train --algo marft --env math-2agent
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from flexmg.cli import check, eval, export, leaderboard, models, play, serve, train, view
from flexmg.cli import list as list_envs
from flexmg.cli.common import CommandError, error_line, exit_code, import_modules, parse_kwargs

__all__ = ["CommandError", "build_parser", "main", "parse_kwargs"]

COMMANDS = (list_envs, check, play, serve, export, train, eval, leaderboard, models, view)
"""The command modules, in the order ``flexmg --help`` lists them (``sandbox`` after ``export``)."""


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command; each sub-parser's ``func`` runs it."""
    import flexmg

    parser = argparse.ArgumentParser(
        prog="flexmg", description="Flex-MG environments for teams of LLM agents."
    )
    parser.add_argument("--version", action="version", version=f"flexmg {flexmg.__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS[:5]:
        module.add_command(sub)
    from flexmg.sandboxes.cli import add_commands as add_sandbox_commands

    add_sandbox_commands(sub)
    for module in COMMANDS[5:]:
        module.add_command(sub)
    for command in sub.choices.values():
        command.add_argument(
            "--import",
            dest="imports",
            action="append",
            default=[],
            metavar="MODULE",
            help="import MODULE before the command runs (e.g. one that registers your envs); "
            "repeatable",
        )
        command.add_argument(  # SUPPRESS: an unset sub-command flag keeps `flexmg --debug CMD`
            "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
        )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``flexmg`` console script (and ``python -m flexmg.cli``)."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # KEY=VALUE env kwargs may follow options (``flexmg serve ID --port 1 k=v``)
        if not hasattr(args, "kw_opt") or any(a.startswith("-") or "=" not in a for a in extra):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.kw = [*args.kw, *extra]
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        import_modules(args.imports)
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as err:
        if args.debug:
            raise
        print(error_line(args.command, err), file=sys.stderr)
        return exit_code(err)


if __name__ == "__main__":
    sys.exit(main())
