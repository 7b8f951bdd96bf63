"""What the commands share: env kwargs on the command line, ``--import``, one-line errors.

Example:
    >>> parse_kwargs(["horizon=2", "tasks={\\"name\\": \\"linear\\"}", "split=eval"])
    {'horizon': 2, 'tasks': {'name': 'linear'}, 'split': 'eval'}
"""

from __future__ import annotations

import argparse
import importlib
import json
from collections.abc import Sequence
from typing import Any

__all__ = ["CommandError", "add_kwargs_arguments", "import_modules", "parse_kwargs"]


class CommandError(Exception):
    """A mistake on the command line: ``main`` prints it as one line and exits with 2."""


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
