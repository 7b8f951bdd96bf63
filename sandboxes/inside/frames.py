"""Length-prefixed JSON frames on pipes and sockets (ASCII-only, so any str survives)."""

from __future__ import annotations

import json
import os
import select
import struct
import time

TYPE_CHECKING = False  # typing is never imported in the sandbox; mypy reads True
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

MAX_FRAME = 64 << 20


def dump_frame(obj: object) -> bytes:
    """A length-prefixed JSON frame (ASCII-only, so any str survives)."""
    data = json.dumps(obj, ensure_ascii=True, allow_nan=True).encode("ascii")
    return struct.pack(">I", len(data)) + data


MAX_DEPTH = 256  # containers in containers: the codec's limit and a frame's own keys


def parse_frame_body(data: bytes) -> object:
    """A frame's JSON body -> its value; ``ValueError`` when malformed or nested too deeply.

    The result does not depend on the caller's stack: JSON nested beyond what
    the caller's remaining recursion allows is parsed again on a fresh stack,
    and anything nested more than :data:`MAX_DEPTH` deep is rejected.

    >>> parse_frame_body(b'[' * 300 + b']' * 300)
    Traceback (most recent call last):
    ...
    ValueError: frame nested more than 256 deep
    """
    text = data.decode("ascii")  # UnicodeDecodeError is a ValueError
    try:
        obj = json.loads(text)
    except RecursionError:
        obj = _on_fresh_stack(json.loads, text)
    # fewer brackets than the limit cannot nest past it (most frames: no walk at all)
    if data.count(b"[") + data.count(b"{") > MAX_DEPTH and _too_deep(obj, MAX_DEPTH):
        raise ValueError(f"frame nested more than {MAX_DEPTH} deep")
    return obj


def _on_fresh_stack(fn: Callable[[Any], Any], arg: object) -> Any:
    """``fn(arg)`` in a new thread (a fresh recursion count); RecursionError -> ValueError."""
    import threading

    out: list = []

    def target() -> None:
        try:
            out.append((True, fn(arg)))
        except BaseException as e:  # noqa: BLE001 - handed back to the caller below
            out.append((False, e))

    t = threading.Thread(target=target)
    t.start()
    t.join()
    ok, value = out[0] if out else (False, ValueError("could not parse the frame"))
    if ok:
        return value
    if isinstance(value, RecursionError):
        raise ValueError("frame nested too deeply") from None
    raise value


def _too_deep(obj: object, limit: int) -> bool:
    """True when lists and dicts in ``obj`` nest more than ``limit`` deep (no recursion)."""
    stack = [(obj, 0)]
    while stack:
        o, depth = stack.pop()
        if type(o) is list:
            items = o
        elif type(o) is dict:
            items = list(o.values())
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((x, depth + 1) for x in items if type(x) in (list, dict))
    return False


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def write_frame(fd: int, obj: object) -> None:
    write_all(fd, dump_frame(obj))


class FrameTimeout(Exception):
    """No complete frame arrived before the deadline."""


def read_exact(fd: int, n: int, deadline: float | None = None) -> bytes | None:
    """Read exactly ``n`` bytes; None on EOF; :class:`FrameTimeout` past ``deadline``."""
    chunks: list[bytes] = []
    while n > 0:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise FrameTimeout()
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                raise FrameTimeout()
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, deadline: float | None = None) -> object | None:
    head = read_exact(fd, 4, deadline)
    if head is None:
        return None
    (size,) = struct.unpack(">I", head)
    if size > MAX_FRAME:
        raise ValueError(f"frame of {size} bytes is over the {MAX_FRAME} byte limit")
    body = read_exact(fd, size, deadline)
    if body is None:
        return None
    return parse_frame_body(body)


def _frame_complete(buf: bytearray) -> bool:
    if len(buf) < 4:
        return False
    (size,) = struct.unpack(">I", bytes(buf[:4]))
    return len(buf) >= 4 + size
