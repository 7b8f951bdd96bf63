"""What the commands share: env kwargs on the command line, ``--import``, one-line errors.

Example:
    >>> parse_kwargs(["horizon=2", "tasks={\\"name\\": \\"linear\\"}", "split=eval"])
    {'horizon': 2, 'tasks': {'name': 'linear'}, 'split': 'eval'}
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import json
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = [
    "CommandError",
    "add_kwargs_arguments",
    "check_env",
    "check_role_names",
    "error_line",
    "exit_code",
    "import_modules",
    "parse_kwargs",
]


class CommandError(Exception):
    """A mistake a command found: ``main`` prints it as one line and exits with ``code``.

    ``code`` is 2 (the default) for a mistake on the command line, 1 for a failure
    of what the command ran.

    >>> CommandError("no such run", code=1).code
    1
    """

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


# errors whose message says it all: no exception type in the line
_PLAIN = (CommandError, ValueError, TypeError, OSError, ImportError, LookupError)


def error_line(command: str, err: BaseException) -> str:
    """The one line ``flexmg`` prints for an error of ``command`` (without ``--debug``).

    Newlines of the message are folded; an exception outside the usual kinds
    carries its type and the hint that ``--debug`` shows the traceback.

    >>> error_line("check", ValueError("bad\\nvalue"))
    'flexmg check: error: bad value (--debug shows the traceback)'
    >>> error_line("train", RuntimeError("boom"))
    'flexmg train: error: RuntimeError: boom (--debug shows the traceback)'
    """
    message = " ".join(str(err).split())
    if isinstance(err, KeyError) and len(err.args) == 1 and isinstance(err.args[0], str):
        message = " ".join(err.args[0].split())  # KeyError's str() quotes its message
    from flexmg.registration import MissingDependencyError, UnknownEnvError

    if isinstance(err, (CommandError, UnknownEnvError, MissingDependencyError)):
        return f"flexmg {command}: error: {message}"
    if not isinstance(err, _PLAIN) or not message:
        message = f"{type(err).__name__}: {message}" if message else type(err).__name__
    return f"flexmg {command}: error: {message} (--debug shows the traceback)"


def exit_code(err: BaseException) -> int:
    """The exit status of an error: a :class:`CommandError`'s code, 2 for an unknown env, else 1.

    >>> exit_code(CommandError("x")), exit_code(RuntimeError("x"))
    (2, 1)
    """
    from flexmg.registration import UnknownEnvError

    if isinstance(err, CommandError):
        return err.code
    return 2 if isinstance(err, UnknownEnvError) else 1


def parse_kwargs(pairs: Sequence[str]) -> dict[str, Any]:
    """``["horizon=2", "tasks=gsm8k.jsonl"]`` -> ``{"horizon": 2, "tasks": "gsm8k.jsonl"}``.

    Values are read as JSON when they parse, else kept as strings.

    >>> parse_kwargs(["nope"])
    Traceback (most recent call last):
    ...
    flexmg.cli.common.CommandError: --kw expects KEY=VALUE, got 'nope'
    """
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CommandError(f"--kw expects KEY=VALUE, got {pair!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def add_kwargs_arguments(p: argparse.ArgumentParser) -> None:
    """Env kwargs as trailing ``KEY=VALUE`` words or after ``--kw``."""
    p.add_argument("kw", nargs="*", metavar="KEY=VALUE", help="env kwargs (JSON values)")
    p.add_argument("--kw", dest="kw_opt", nargs="*", default=[], metavar="KEY=VALUE")


def import_modules(names: Sequence[str]) -> None:
    """Import each module (``--import``): e.g. one whose import registers envs.

    >>> import_modules(["no_such_module_here"])
    Traceback (most recent call last):
    ...
    flexmg.cli.common.CommandError: --import no_such_module_here: No module named 'no_such_module_here'
    """
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise CommandError(f"--import {name}: {exc}") from exc


def check_env(env_id: str, kwargs: dict[str, Any] | None = None) -> list[str]:
    """Build the env once and close it, so that a bad id or kwarg fails before any work.

    Returns the env's roles (``possible_agents``).

    The env's own error (an unknown keyword with the accepted ones, a missing
    task file, an unknown sandbox backend, ...) becomes a :class:`CommandError`.

    >>> check_env("echo", {"horizn": 2})
    Traceback (most recent call last):
    ...
    flexmg.cli.common.CommandError: echo got unexpected keyword(s) ['horizn'] (did you mean 'horizon'?); accepted: [...]
    """
    import flexmg

    try:
        env = flexmg.make(env_id, **(kwargs or {}))
    except (TypeError, ValueError, OSError, ImportError, LookupError) as exc:
        from flexmg.registration import MissingDependencyError, UnknownEnvError

        if isinstance(exc, (UnknownEnvError, MissingDependencyError)):
            raise
        raise CommandError(" ".join(str(exc).split()), code=2) from exc
    try:
        return list(env.possible_agents)
    finally:
        env.close()


def check_role_names(flag: str, names: Iterable[str], roles: Sequence[str]) -> None:
    """Raise a :class:`CommandError` for a name in ``names`` that is not one of ``roles``.

    >>> check_role_names("--role-temperature", ["solvr"], ["solver", "verifier"])
    Traceback (most recent call last):
    ...
    flexmg.cli.common.CommandError: --role-temperature names unknown role 'solvr' (did you mean 'solver'?); the env's roles: ['solver', 'verifier']
    """
    for name in names:
        if name not in roles and name != "*":
            close = difflib.get_close_matches(name, list(roles), n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise CommandError(
                f"{flag} names unknown role {name!r}{hint}; the env's roles: {list(roles)}"
            )
