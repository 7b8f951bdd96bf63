"""Atomic file writes and the project's JSON encoding of non-JSON values.

A file written with these helpers is either the old file or the complete new
one, never half of it: the bytes go to a temp file in the same folder, are
flushed and fsynced, and the temp file is ``os.replace``-d over the target.
An error while writing removes the temp file and leaves the target as it was.
The file gets the mode a plain ``open(path, "w")`` would give it (0644 under
the usual umask 022), not the temp file's 0600.

Example:
    >>> import json, pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "out" / "results.json"
    >>> atomic_write_json(path, {"seeds": (0, 1), "where": pathlib.Path("/tmp")})
    >>> json.loads(path.read_text())
    {'seeds': [0, 1], 'where': '/tmp'}
    >>> sorted(p.name for p in path.parent.iterdir())  # no temp file left behind
    ['results.json']
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

__all__ = [
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "atomic_write_via",
    "json_default",
]

PathLike = str | os.PathLike[str]


def _umask() -> int:
    """The process's umask, read without changing it where Linux shows it (else set back)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_via(path: PathLike, write: Callable[[IO[bytes]], object]) -> None:
    """Call ``write(binary_file)`` on a temp file next to ``path``, then replace ``path`` with it.

    Use it for writers that want a file object (``fig.savefig(fh)``,
    ``torch.save(obj, fh)``). Missing parent folders are created.

    Args:
        path: the file to (re)place.
        write: called once with the open temp file (binary mode).

    Example:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "blob.bin"
        >>> atomic_write_via(path, lambda fh: fh.write(b"abc"))
        >>> path.read_bytes()
        b'abc'
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            if hasattr(os, "fchmod"):  # mkstemp makes 0600; a written file is 0666 & ~umask
                os.fchmod(fh.fileno(), 0o666 & ~_umask())
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def atomic_write_bytes(path: PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see the module docs).

    Example:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "x.bin"
        >>> atomic_write_bytes(path, b"\\x00\\x01")
        >>> path.read_bytes()
        b'\\x00\\x01'
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(
            f"atomic_write_bytes expects bytes, got {type(data).__name__}; "
            "use atomic_write_text for str"
        )
    atomic_write_via(path, lambda fh: fh.write(data))


def atomic_write_text(path: PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically (see the module docs).

    Example:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "table.md"
        >>> atomic_write_text(path, "| a |\\n")
        >>> path.read_text()
        '| a |\\n'
    """
    if not isinstance(text, str):
        raise TypeError(
            f"atomic_write_text expects str, got {type(text).__name__}; "
            "use atomic_write_bytes for bytes"
        )
    atomic_write_bytes(path, text.encode("utf-8"))


def json_default(value: Any) -> Any:
    """JSON form of values ``json`` cannot encode (pass as ``json.dumps(..., default=)``).

    Arrays and tensors (anything with ``tolist``) become lists, numpy scalars
    their Python value, sets and tuples lists (sets sorted when they can be),
    paths strings (tuples are lists already), anything else its ``repr``: a results file always gets
    written, and an odd value shows what it was.

    Example:
        >>> import json, pathlib
        >>> json.dumps({"s": {2, 1}, "p": pathlib.Path("a/b"), "o": object}, default=json_default)
        '{"s": [1, 2], "p": "a/b", "o": "<class \\'object\\'>"}'
    """
    if hasattr(value, "tolist"):  # numpy arrays and scalars, torch tensors
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, (set, frozenset)):
        try:
            return sorted(value)
        except TypeError:
            return list(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return repr(value)


def atomic_write_json(path: PathLike, data: Any, indent: int | None = 1) -> None:
    """Write ``data`` as JSON (UTF-8, :func:`json_default` for odd values) atomically.

    Example:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "c.json"
        >>> atomic_write_json(path, {"a": 1}, indent=None)
        >>> path.read_text()
        '{"a": 1}\\n'
    """
    text = json.dumps(data, indent=indent, default=json_default, ensure_ascii=False)
    atomic_write_text(path, text + "\n")
