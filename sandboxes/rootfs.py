"""What the sandboxed interpreter needs from this machine: one manifest for both backends.

The local backend bind-mounts these paths read-only; the Docker image builder
copies them into a tarball. Inside a sandbox the interpreter always lives at
``/opt/python`` (the host's ``/root/...`` or venv paths are never visible).

Example:
    >>> m = python_manifest()
    >>> m.python.startswith("/opt/python/bin/")
    True
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

SANDBOX_PREFIX = "/opt/python"

# Standard-library parts that untrusted solutions never need (big, or GUI/test only).
_STDLIB_SKIP = {
    "site-packages",
    "test",
    "idlelib",
    "tkinter",
    "turtledemo",
    "ensurepip",
    "lib2to3",
    "pydoc_data",
}
_LDD_LINE = re.compile(r"=>\s*(/\S+)|^\s*(/\S+)\s+\(")


@dataclass(frozen=True)
class Manifest:
    """Host paths and where they appear in the sandbox.

    Attributes:
        files: (host file, sandbox path) pairs: the interpreter, libpython, shared libs.
        stdlib: (host dir, sandbox dir) of the standard library.
        skip: stdlib subdirectories left out (the local backend hides them).
        python: the interpreter's path in the sandbox.
        version: ``major.minor``.
        lib_dirs: sandbox directories searched for shared libraries.
    """

    files: list[tuple[str, str]] = field(default_factory=list)
    stdlib: tuple[str, str] = ("", "")
    skip: tuple[str, ...] = ()
    python: str = ""
    version: str = ""
    lib_dirs: tuple[str, ...] = ()

    def env(self) -> dict[str, str]:
        """The allowlisted environment of sandboxed processes."""
        return {
            "PATH": f"{SANDBOX_PREFIX}/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "LD_LIBRARY_PATH": ":".join(self.lib_dirs),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONIOENCODING": "utf-8",
            "HOME": "/tmp",
            "TMPDIR": "/tmp",
        }


def _ldd(paths: list[str]) -> set[str]:
    """Shared libraries (absolute paths) needed by ``paths``."""
    out: set[str] = set()
    for chunk in range(0, len(paths), 64):
        try:
            text = subprocess.run(
                ["ldd", *paths[chunk : chunk + 64]],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            ).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        for line in text.splitlines():
            m = _LDD_LINE.search(line)
            lib = m and (m.group(1) or m.group(2))
            if lib and os.path.exists(lib):
                out.add(lib)
    return out


@functools.lru_cache(maxsize=1)
def python_manifest() -> Manifest:
    """The manifest of this machine's Python (cached; runs ``ldd`` once)."""
    exe = os.path.realpath(sys.executable)
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    stdlib = sysconfig.get_paths()["stdlib"]
    stdlib = os.path.realpath(stdlib)
    dynload = Path(stdlib) / "lib-dynload"
    ext_modules = (
        sorted(str(p) for p in dynload.glob("*.so") if not p.name.startswith("_tkinter"))
        if dynload.is_dir()
        else []
    )
    sb_python = f"{SANDBOX_PREFIX}/bin/python{version}"
    files: list[tuple[str, str]] = [(exe, sb_python)]
    libs = _ldd([exe, *ext_modules])
    libpython_dir = f"{SANDBOX_PREFIX}/lib"
    lib_dirs: list[str] = [libpython_dir]
    for lib in sorted(libs):
        name = os.path.basename(lib)
        if name.startswith("libpython"):
            files.append((os.path.realpath(lib), f"{libpython_dir}/{name}"))
            continue
        files.append((os.path.realpath(lib), lib))
        d = os.path.dirname(lib)
        if d not in lib_dirs:
            lib_dirs.append(d)
    return Manifest(
        files=files,
        stdlib=(stdlib, f"{SANDBOX_PREFIX}/lib/python{version}"),
        skip=tuple(sorted(n for n in _STDLIB_SKIP if (Path(stdlib) / n).exists())),
        python=sb_python,
        version=version,
        lib_dirs=tuple(lib_dirs),
    )
