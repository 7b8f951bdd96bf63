"""Typed settings: config dataclass fields that carry their help, checks and command-line flag.

A config class is a dataclass deriving from :class:`Settings` whose fields are
made with :func:`setting`: a default, one line of help, and where it applies
the accepted values (``choices``), a ``check`` and a ``flag``. From those
declarations alone:

* :func:`documented` lists the fields in the class docstring (``help(cls)``);
* ``__post_init__`` checks the values (a ``ValueError`` says what was expected);
* ``to_dict`` / ``from_dict`` write and read plain dicts (unknown keys are an error);
* :func:`add_flags` / :func:`flag_values` make and read ``argparse`` flags.

The learner's configs (:mod:`flexmg.agents.config`) are declared this way; the
module is torch-free and imports nothing of flexmg.

Example:
    >>> import argparse
    >>> from dataclasses import dataclass
    >>> @documented
    ... @dataclass
    ... class Demo(Settings):
    ...     '''A demo.'''
    ...
    ...     n: int = setting(1, "how many", flag="--n", check=(lambda v: v >= 1, ">= 1"))
    ...     mode: str = setting("a", "which mode", choices=("a", "b"))
    >>> Demo(0)
    Traceback (most recent call last):
    ...
    ValueError: Demo.n must be >= 1; got 0
    >>> Demo.from_dict({"mode": "b"}), Demo(2).to_dict()
    (Demo(n=1, mode='b'), {'n': 2, 'mode': 'a'})
    >>> Demo.from_dict({"m": 1})
    Traceback (most recent call last):
    ...
    ValueError: unknown Demo keys ['m']; known: ['mode', 'n']
    >>> parser = argparse.ArgumentParser()
    >>> add_flags(parser, Demo)
    >>> flag_values(parser.parse_args(["--n", "3"]), Demo)
    {'n': 3}
    >>> print(Demo.__doc__.splitlines()[-2].strip())
    n: how many
"""

from __future__ import annotations

import argparse
import json
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, asdict, field, fields
from typing import Any, TypeVar

__all__ = [
    "Check",
    "Settings",
    "add_flags",
    "documented",
    "flag_values",
    "flagged_fields",
    "setting",
]

T = TypeVar("T")
S = TypeVar("S", bound="Settings")

Check = tuple[Callable[[Any], bool], str]
"""A value check: a predicate and what it expects, e.g. ``(lambda v: v >= 1, ">= 1")``."""


def setting(
    default: Any = MISSING,
    help: str = "",
    *,
    factory: Callable[[], Any] | None = None,
    flag: str | None = None,
    choices: Sequence[Any] | Callable[[], Sequence[Any]] | None = None,
    check: Check | None = None,
) -> Any:
    """A dataclass field of a config: default, help, and optionally flag, choices and check.

    Args:
        default: the default value (or give ``factory`` for a mutable one).
        help: one line: what the field means (the docstring and ``--help`` show it).
        factory: builds the default (``dataclasses.field(default_factory=...)``).
        flag: the command-line flag that sets it (``"--lr"``); None: no flag. A
            bool field's flag stores the opposite of its default (a default-True
            field's help reads "don't <help>" there, e.g. ``--no-progress``).
        choices: the accepted values, or a function returning them (asked when used).
        check: ``(predicate, expected)``: the value must satisfy ``predicate``.
    """
    metadata = {"help": help, "flag": flag, "choices": choices, "check": check}
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


def _choices(f: Any) -> tuple[Any, ...] | None:
    choices = f.metadata.get("choices")
    if choices is None:
        return None
    return tuple(choices() if callable(choices) else choices)


class Settings:
    """What every config dataclass shares: checks on creation, ``to_dict``/``from_dict``."""

    def __post_init__(self) -> None:
        name = type(self).__name__
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            choices = _choices(f)
            if choices is not None and value not in choices:
                allowed = ", ".join(repr(c) for c in choices)
                raise ValueError(f"{name}.{f.name} must be one of {allowed}; got {value!r}")
            check = f.metadata.get("check")
            if check is not None:
                predicate, expected = check
                try:
                    ok = bool(predicate(value))
                except (TypeError, ValueError):
                    ok = False
                if not ok:
                    raise ValueError(f"{name}.{f.name} must be {expected}; got {value!r}")

    def to_dict(self) -> dict[str, Any]:
        """A plain JSON-friendly dict of the fields (tuples become lists)."""
        return json.loads(json.dumps(asdict(self)))  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls: type[S], data: Mapping[str, Any]) -> S:
        """Inverse of :meth:`to_dict`; unknown keys are a ``ValueError`` naming them."""
        known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        unknown = set(data) - known
        if unknown:
            raise ValueError(
                f"unknown {cls.__name__} keys {sorted(unknown)}; known: {sorted(known)}"
            )
        return cls(**data)


def documented(cls: type[T]) -> type[T]:
    """Append an ``Attributes:`` section, one line per field's help, to ``cls.__doc__``."""
    lines = [f"        {f.name}: {f.metadata['help']}" for f in fields(cls)]  # type: ignore[arg-type]
    cls.__doc__ = (cls.__doc__ or "").rstrip() + "\n\n    Attributes:\n" + "\n".join(lines) + "\n"
    return cls


def _comma_list(text: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list such as q_proj,v_proj")
    return items


def _parser_of(annotation: Any) -> Callable[[str], Any] | None:
    """How a flag's text becomes the field's type (None: kept as str)."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if args and typing.get_origin(annotation) is not list:  # X | None
        annotation = args[0]
    if typing.get_origin(annotation) is list:
        return _comma_list
    if annotation in (int, float):
        return annotation
    if annotation is str:
        return None
    raise TypeError(f"no command-line form for a field of type {annotation!r}")


def flagged_fields(cls: type) -> list[Any]:
    """The fields of the config class ``cls`` that have a ``flexmg train`` flag, in order."""
    return [f for f in fields(cls) if f.metadata.get("flag")]


def add_flags(parser: Any, cls: type) -> None:
    """Add one flag per flagged field of ``cls`` to ``parser`` (a parser or argument group).

    Every flag defaults to None (left out: the config's own default applies); a
    bool field's flag stores the opposite of its default.

    >>> from flexmg.agents.config import PPOConfig
    >>> p = argparse.ArgumentParser()
    >>> add_flags(p, PPOConfig)
    >>> flag_values(p.parse_args(["--lr", "0.5", "--level", "token"]), PPOConfig)
    {'level': 'token', 'lr_actor': 0.5}
    """
    hints = typing.get_type_hints(cls)
    for f in flagged_fields(cls):
        kwargs: dict[str, Any] = {"dest": f.name, "default": None, "help": f.metadata["help"]}
        if hints[f.name] is bool:  # the flag flips the default: --share-parameters, --no-progress
            kwargs.update(action="store_const", const=not f.default)
            if f.default:
                kwargs["help"] = f"don't {f.metadata['help']}"
        else:
            choices = _choices(f)
            if choices is not None:
                kwargs["choices"] = choices
            else:
                kwargs["metavar"] = f.metadata["flag"].lstrip("-").replace("-", "_").upper()
            parse = _parser_of(hints[f.name])
            if parse is not None:
                kwargs["type"] = parse
        parser.add_argument(f.metadata["flag"], **kwargs)


def flag_values(args: argparse.Namespace, cls: type) -> dict[str, Any]:
    """The fields of ``cls`` that ``args`` sets (flags left out are not included)."""
    out = {}
    for f in flagged_fields(cls):
        value = getattr(args, f.name, None)
        if value is not None:
            out[f.name] = value
    return out
