"""Typed settings: config dataclass fields that carry their help, checks and command-line flag.

A config class is a dataclass deriving from :class:`Settings` whose fields are
made with :func:`setting`: a default, one line of help, and where it applies
the accepted values (``choices``), a ``check``, a ``flag`` (with optional
``shortcuts``: more flags that set one value) and, for a field that holds
another config, the ``group`` its flags are listed under. From those
declarations alone:

* :func:`documented` lists the fields in the class docstring (``help(cls)``);
* ``__post_init__`` checks the values (a ``ValueError`` says what was expected);
* ``to_dict`` / ``from_dict`` write and read plain dicts, nested configs
  included (unknown keys are an error);
* :func:`add_flags` makes the ``argparse`` flags, :func:`from_flags` builds the
  config they set, and :func:`to_argv` writes a config back as flags.

The learner's configs (:mod:`flexmg.agents.config`) and the leaderboard's are
declared this way; the module is torch-free and imports nothing of flexmg.

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
    >>> from_flags(parser.parse_args(["--n", "3"]), Demo), to_argv(Demo(3))
    (Demo(n=3, mode='a'), ['--n', '3'])
    >>> print(Demo.__doc__.splitlines()[-2].strip())
    n: how many
"""

from __future__ import annotations

import argparse
import json
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, Field, asdict, field, fields, is_dataclass, replace
from typing import Any, TypeVar

__all__ = [
    "Check",
    "Settings",
    "add_flags",
    "documented",
    "flag_values",
    "flagged_fields",
    "from_flags",
    "key_values",
    "nested_fields",
    "setting",
    "to_argv",
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
    shortcuts: Mapping[str, Any] | None = None,
    choices: Sequence[Any] | Callable[[], Sequence[Any]] | None = None,
    check: Check | None = None,
    nargs: str | None = None,
    group: str | None = None,
) -> Any:
    """A dataclass field of a config: default, help, and optionally flags, choices and check.

    Args:
        default: the default value (or give ``factory`` for a mutable one).
        help: one line: what the field means (the docstring and ``--help`` show it).
        factory: builds the default (``dataclasses.field(default_factory=...)``).
        flag: the command-line flag that sets it (``"--lr"``); None: no flag. A
            bool field's flag stores the opposite of its default (a default-True
            field's help reads "don't <help>" there, e.g. ``--no-progress``).
        shortcuts: more flags, each setting one value (``{"--bf16": "bfloat16"}``).
        choices: the accepted values, or a function returning them (asked when used).
        check: ``(predicate, expected)``: the value must satisfy ``predicate``.
        nargs: a list field's flag takes several words (``"+"``) instead of one
            comma-separated word; a dict field's takes ``KEY=VALUE`` words.
        group: for a field holding another config: the title its flags are listed under.
    """
    metadata = {
        "help": help, "flag": flag, "shortcuts": dict(shortcuts or {}), "choices": choices,
        "check": check, "nargs": nargs, "group": group,
    }  # fmt: skip
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


def _choices(f: Any) -> tuple[Any, ...] | None:
    choices = f.metadata.get("choices")
    if choices is None:
        return None
    return tuple(choices() if callable(choices) else choices)


def nested_fields(cls: type) -> dict[str, type[Settings]]:
    """The fields of ``cls`` that hold another config, and that config's class."""
    hints = typing.get_type_hints(cls)
    return {
        f.name: hints[f.name]
        for f in fields(cls)
        if isinstance(hints[f.name], type) and issubclass(hints[f.name], Settings)
    }


class Settings:
    """What every config dataclass shares: checks on creation, ``to_dict``/``from_dict``."""

    def __post_init__(self) -> None:
        name = type(self).__name__
        for field_name, sub in nested_fields(type(self)).items():  # a dict of its fields
            value = getattr(self, field_name)
            if isinstance(value, Mapping):
                object.__setattr__(self, field_name, sub.from_dict(value))
            elif not isinstance(value, sub):
                raise ValueError(
                    f"{name}.{field_name} must be a {sub.__name__} (or a dict of its fields); "
                    f"got {type(value).__name__}"
                )
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
        """A plain JSON-friendly dict of the fields (nested configs as dicts, tuples as lists)."""
        return json.loads(json.dumps(asdict(self)))  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls: type[S], data: Mapping[str, Any]) -> S:
        """Inverse of :meth:`to_dict`; unknown keys (also of a nested config) are a ``ValueError``."""
        if not isinstance(data, Mapping):
            raise ValueError(
                f"{cls.__name__} settings must be a mapping, got {type(data).__name__}"
            )
        known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        unknown = set(data) - known
        if unknown:
            raise ValueError(
                f"unknown {cls.__name__} keys {sorted(unknown)}; known: {sorted(known)}"
            )
        values = dict(data)
        for name, sub in nested_fields(cls).items():
            if name in values and not isinstance(values[name], sub):
                values[name] = sub.from_dict(values[name])
        return cls(**values)


def documented(cls: type[T]) -> type[T]:
    """Append an ``Attributes:`` section, one line per field's help, to ``cls.__doc__``."""
    lines = [f"        {f.name}: {f.metadata['help']}" for f in fields(cls)]  # type: ignore[arg-type]
    cls.__doc__ = (cls.__doc__ or "").rstrip() + "\n\n    Attributes:\n" + "\n".join(lines) + "\n"
    return cls


def key_values(pairs: Sequence[str]) -> dict[str, Any]:
    """``["horizon=2", "tasks=gsm8k.jsonl"]`` -> ``{"horizon": 2, "tasks": "gsm8k.jsonl"}``.

    Values are read as JSON when they parse, else kept as strings.

    >>> key_values(["horizon=2", 'tasks={"name": "linear"}', "split=eval"])
    {'horizon': 2, 'tasks': {'name': 'linear'}, 'split': 'eval'}
    """
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"expected KEY=VALUE, got {pair!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def _comma_list(text: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list such as q_proj,v_proj")
    return items


def _key_value(text: str) -> tuple[str, Any]:
    try:
        return next(iter(key_values([text]).items()))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _parser_of(annotation: Any, nargs: str | None) -> Callable[[str], Any] | None:
    """How one word of a flag becomes (an item of) the field's value (None: kept as str)."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if args and origin not in (list, dict):  # X | None
        annotation = args[0]
        origin = typing.get_origin(annotation)
        args = list(typing.get_args(annotation))
    if origin is dict:
        return _key_value
    if origin is list:
        if nargs is None:
            return _comma_list
        annotation = args[0] if args else str
    if annotation in (int, float):
        return annotation
    if annotation is str or annotation is Any or hasattr(annotation, "parse"):
        return None  # kept as str (a type with ``parse`` reads its items itself)
    raise TypeError(f"no command-line form for a field of type {annotation!r}")


def flagged_fields(cls: type) -> list[Any]:
    """The fields of the config class ``cls`` that have a flag, in order (nested ones not)."""
    return [f for f in fields(cls) if f.metadata.get("flag")]


def add_flags(parser: Any, cls: type, title: str | None = None) -> None:
    """Add one flag per flagged field of ``cls`` (and of its nested configs) to ``parser``.

    Every flag defaults to None (left out: the config's own default applies); a
    bool field's flag stores the opposite of its default. ``cls``'s own flags go
    into an argument group titled ``title`` (none: the parser itself), a nested
    config's into one titled by its field's ``group``.

    >>> from flexmg.agents.config import PPOConfig
    >>> p = argparse.ArgumentParser()
    >>> add_flags(p, PPOConfig)
    >>> flag_values(p.parse_args(["--lr", "0.5", "--level", "token"]), PPOConfig)
    {'level': 'token', 'lr_actor': 0.5}
    """
    hints = typing.get_type_hints(cls)
    own = parser.add_argument_group(title) if title else parser
    for f in flagged_fields(cls):
        _add_flag(own, f, hints[f.name])
    nested = nested_fields(cls)
    for f in fields(cls):
        if f.name in nested:
            add_flags(parser, nested[f.name], f.metadata.get("group") or f.name)


def _add_flag(parser: Any, f: Field[Any], annotation: Any) -> None:
    kwargs: dict[str, Any] = {"dest": f.name, "default": None, "help": f.metadata["help"]}
    if annotation is bool:  # the flag flips the default: --share-parameters, --no-progress
        kwargs.update(action="store_const", const=not f.default)
        if f.default:
            kwargs["help"] = f"don't {f.metadata['help']}"
    else:
        choices = _choices(f)
        if choices is not None:
            kwargs["choices"] = choices
        else:
            kwargs["metavar"] = f.metadata["flag"].lstrip("-").replace("-", "_").upper()
        nargs = f.metadata.get("nargs")
        if typing.get_origin(annotation) is dict or dict in typing.get_args(annotation):
            nargs, kwargs["metavar"] = nargs or "*", "KEY=VALUE"
        parse = _parser_of(annotation, nargs)
        if parse is not None:
            kwargs["type"] = parse
        if nargs is not None:
            kwargs["nargs"] = nargs
    parser.add_argument(f.metadata["flag"], **kwargs)
    for flag, value in f.metadata.get("shortcuts", {}).items():
        parser.add_argument(
            flag, dest=f.name, action="store_const", const=value, default=None,
            help=f"{f.metadata['flag']} {value}",
        )  # fmt: skip


def flag_values(args: argparse.Namespace, cls: type) -> dict[str, Any]:
    """The fields of ``cls`` (not its nested configs) that ``args`` sets (flags left out: absent)."""
    out = {}
    for f in flagged_fields(cls):
        value = getattr(args, f.name, None)
        if value is not None:
            out[f.name] = dict(value) if isinstance(value, list) and _is_dict(cls, f) else value
    return out


def _is_dict(cls: type, f: Field[Any]) -> bool:
    annotation = typing.get_type_hints(cls)[f.name]
    return typing.get_origin(annotation) is dict or dict in typing.get_args(annotation)


def from_flags(args: argparse.Namespace, cls: type[S], base: S | None = None) -> S:
    """The config of class ``cls`` that the flags in ``args`` set over ``base`` (default ``cls()``).

    Nested configs are built the same way from their own flags.
    """
    start = base if base is not None else cls()
    changes: dict[str, Any] = flag_values(args, cls)
    for name, sub in nested_fields(cls).items():
        changes[name] = from_flags(args, sub, getattr(start, name))
    return replace(start, **changes)  # type: ignore[type-var]


def to_argv(config: Settings) -> list[str]:
    """The flags that make ``config`` from the defaults (fields without a flag must be defaults).

    Nested configs included. The inverse of :func:`from_flags`, for scripts that
    start ``flexmg`` commands from a config object.
    """
    cls = type(config)
    default = cls()
    hints = typing.get_type_hints(cls)
    argv: list[str] = []
    for f in fields(config):  # type: ignore[arg-type]
        value, usual = getattr(config, f.name), getattr(default, f.name)
        if is_dataclass(value) and isinstance(value, Settings):
            argv += to_argv(value)
            continue
        if value == usual:
            continue
        flag = f.metadata.get("flag")
        if not flag:
            raise ValueError(f"{cls.__name__}.{f.name} has no flag; it cannot be set to {value!r}")
        argv += _words(flag, value, hints[f.name], f.metadata.get("nargs"))
    return argv


def _words(flag: str, value: Any, annotation: Any, nargs: str | None) -> list[str]:
    if annotation is bool:
        return [flag]
    if isinstance(value, Mapping):
        return [flag, *(f"{k}={json.dumps(v)}" for k, v in value.items())]
    if isinstance(value, (list, tuple)):
        return [flag, *map(str, value)] if nargs else [flag, ",".join(map(str, value))]
    return [flag, str(value)]
