"""The codec: plain data (numbers, str, bool, None, bytes, containers) <-> JSON-able tagged form.

Example:
    >>> decode(encode({"a": (1, 2.5, None), "b": {3, 4}})) == {"a": (1, 2.5, None), "b": {3, 4}}
    True
"""

from __future__ import annotations

import json
from collections.abc import Callable

TYPE_CHECKING = False  # typing is never imported in the sandbox; mypy reads True
if TYPE_CHECKING:
    from typing import Any

_MAX_ITEMS = 1_000_000
_MAX_DEPTH = 200
_BIG_INT = 1 << 4000


class NotPlainData(TypeError):
    """A value is not plain data (numbers, str, bool, None, bytes, containers of those)."""


def encode(value: object, functions: list | None = None) -> object:
    """Plain data -> a JSON-able tagged form (containers become ``[tag, ...]`` lists).

    With ``functions`` (the judge's side only), a callable is appended to it and
    sent as a reference ``["F", index]``: the solution can call it back, never see it.

    >>> encode([1, (2, "x")])
    ['l', 1, ['t', 2, 'x']]
    >>> fns = []
    >>> encode([len], fns), fns == [len]
    (['l', ['F', 0]], True)
    """
    budget = [_MAX_ITEMS]
    return _enc(value, 0, budget, functions)


def _enc(v: Any, depth: int, budget: list[int], fns: list | None = None) -> object:
    budget[0] -= 1
    if budget[0] < 0:
        raise NotPlainData("value too large (more than 1,000,000 items)")
    if depth > _MAX_DEPTH:
        raise NotPlainData("value nested too deeply (or contains itself)")
    t = type(v)
    if v is None or t is bool or t is str or t is float:
        return v
    if t is int:
        return ["x", hex(v)] if abs(v) >= _BIG_INT else v
    d = depth + 1
    if t is list:
        return ["l", *(_enc(x, d, budget, fns) for x in v)]
    if t is tuple:
        return ["t", *(_enc(x, d, budget, fns) for x in v)]
    if t is set:
        return ["s", *(_enc(x, d, budget, fns) for x in v)]
    if t is frozenset:
        return ["f", *(_enc(x, d, budget, fns) for x in v)]
    if t is dict:
        return ["d", *([_enc(k, d, budget, fns), _enc(x, d, budget, fns)] for k, x in v.items())]
    if t is bytes:
        return ["b", v.hex()]
    if t is bytearray:
        return ["B", v.hex()]
    if t is complex:
        return ["c", v.real, v.imag]
    if fns is not None and callable(v):
        fns.append(v)
        return ["F", len(fns) - 1]
    raise NotPlainData(f"not plain data: a value of type {t.__name__}")


def decode(obj: object, function: Callable[[int], object] | None = None) -> object:
    """Inverse of :func:`encode`; raises ``ValueError`` on malformed input.

    ``function(index)`` turns a function reference into a callable (the
    runner's side only; elsewhere a reference is malformed input).

    >>> decode(['s', 1, 2]) == {1, 2}
    True
    """
    return _dec(obj, 0, function)


def _dec(o: Any, depth: int, fn: Callable[[int], object] | None = None) -> object:
    if depth > _MAX_DEPTH + 2:
        raise ValueError("encoded value nested too deeply")
    t = type(o)
    if o is None or t in (bool, int, float, str):
        return o
    if t is not list or not o or type(o[0]) is not str:
        raise ValueError(f"malformed encoded value of type {t.__name__}")
    tag, rest, d = o[0], o[1:], depth + 1
    try:
        if tag == "l":
            return [_dec(x, d, fn) for x in rest]
        if tag == "t":
            return tuple(_dec(x, d, fn) for x in rest)
        if tag == "s":
            return {_dec(x, d, fn) for x in rest}
        if tag == "f":
            return frozenset(_dec(x, d, fn) for x in rest)
        if tag == "d":
            out = {}
            for pair in rest:
                if type(pair) is not list or len(pair) != 2:
                    raise ValueError("malformed dict item")
                out[_dec(pair[0], d, fn)] = _dec(pair[1], d, fn)
            return out
        if tag == "x" and len(rest) == 1:
            return int(rest[0], 16)
        if tag == "b" and len(rest) == 1:
            return bytes.fromhex(rest[0])
        if tag == "B" and len(rest) == 1:
            return bytearray.fromhex(rest[0])
        if tag == "c" and len(rest) == 2:
            return complex(rest[0], rest[1])
        if tag == "F" and fn is not None and len(rest) == 1 and type(rest[0]) is int:
            return fn(rest[0])
    except TypeError as e:  # e.g. an unhashable key
        raise ValueError(f"malformed encoded value: {e}") from None
    raise ValueError(f"malformed encoded value with tag {tag!r}")


def safe_repr(value: object, limit: int = 140) -> str:
    """A bounded ``repr`` that never raises (huge ints, huge or self-containing values).

    >>> safe_repr(1 << 20000)
    '<int of 20001 bits>'
    >>> len(safe_repr("x" * 10_000)) <= 140
    True
    """
    import reprlib

    class Bounded(reprlib.Repr):
        def repr_int(self, x: int, level: int) -> str:
            if x.bit_length() > 4000:
                return f"<{type(x).__name__} of {x.bit_length()} bits>"
            return super().repr_int(x, level)

    shown = Bounded()
    shown.maxstring = shown.maxother = limit
    shown.maxlong = limit
    try:
        text = shown.repr(value)
    except BaseException:  # e.g. a RecursionError deep inside
        text = f"<{type(value).__name__} that cannot be shown>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def encoded_size(obj: object) -> int:
    """Bytes ``obj`` (an :func:`encode` result) takes in a frame."""
    return len(json.dumps(obj, ensure_ascii=True, allow_nan=True))
