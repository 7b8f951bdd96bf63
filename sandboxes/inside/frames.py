"""Length-prefixed JSON frames on pipes and sockets (ASCII-only, so any str survives)."""

from __future__ import annotations

import json
import os
import select
import struct
import time

MAX_FRAME = 64 << 20


def dump_frame(obj: object) -> bytes:
    """A length-prefixed JSON frame (ASCII-only, so any str survives)."""
    data = json.dumps(obj, ensure_ascii=True, allow_nan=True).encode("ascii")
    return struct.pack(">I", len(data)) + data


def parse_frame_body(data: bytes) -> object:
    return json.loads(data.decode("ascii"))


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
