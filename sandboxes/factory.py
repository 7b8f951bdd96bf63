"""Choosing a backend: :func:`make_sandbox` and :func:`backend_status`.

Example:
    >>> from flexmg.sandboxes import make_sandbox
    >>> sb = make_sandbox("auto", timeout=2.0)  # doctest: +SKIP
    >>> sb.backend in ("docker", "local")  # doctest: +SKIP
    True
"""

from __future__ import annotations

import os
import threading
from typing import Any

from .base import Sandbox, SandboxUnavailable

BACKENDS = ("auto", "local", "docker", "unsafe")


def backend_status() -> dict[str, str | None]:
    """Backend name -> None when it works here, else why not.

    >>> sorted(backend_status())  # doctest: +SKIP
    ['docker', 'local', 'unsafe']
    """
    from .docker_backend import probe_docker
    from .local import probe_local

    return {"local": probe_local(), "docker": probe_docker(), "unsafe": None}


def make_sandbox(backend: str = "auto", *, workers: int | None = None, **limits: Any) -> Sandbox:
    """Create a sandbox.

    Args:
        backend: ``"auto"`` (Docker when a daemon answers and the sandbox image
            exists, else ``"local"``), ``"local"`` (bubblewrap, the default),
            ``"docker"``, or ``"unsafe"`` (plain subprocess; only by name, warns).
        workers: runs in parallel (default: the usable CPU cores).
        **limits: fields of :class:`flexmg.sandboxes.Limits` (``timeout``,
            ``memory_mb``, ``max_output_bytes``, ...).

    Raises:
        SandboxUnavailable: the backend cannot work here; the message says what to install.
        ValueError: an unknown backend name.

    >>> with make_sandbox("local", timeout=2.0, memory_mb=256) as sb:  # doctest: +SKIP
    ...     sb.run("print(1+1)").stdout
    '2\\n'
    """
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"unknown sandbox backend {backend!r}; choose one of {list(BACKENDS)}")
    if backend == "auto":
        from .docker_backend import probe_docker

        backend = "docker" if probe_docker() is None else "local"
    if backend == "local":
        from .local import LocalSandbox

        return LocalSandbox(workers=workers, **limits)
    if backend == "docker":
        from .docker_backend import DockerSandbox

        return DockerSandbox(workers=workers, **limits)
    from .unsafe import UnsafeSandbox

    return UnsafeSandbox(workers=workers, **limits)


class _Shared:
    """A sandbox and how many holders it has."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.holders = 0


_shared: dict[tuple[int, str, float], _Shared] = {}
_shared_lock = threading.Lock()


def hold_shared_sandbox(backend: str = "auto", *, timeout: float = 5.0) -> Sandbox:
    """The process's shared sandbox for ``(backend, timeout)``, made on first hold.

    Envs that judge code hold one sandbox per process instead of one each: its warm
    workers serve every env (one run per worker at a time, as always), so a vector
    env of 128 code envs starts a worker per CPU, not 128. Every hold must be
    matched by :func:`release_shared_sandbox`; the last release closes it.

    >>> sb = hold_shared_sandbox("unsafe", timeout=2.0)  # doctest: +SKIP
    >>> sb is hold_shared_sandbox("unsafe", timeout=2.0)  # doctest: +SKIP
    True
    >>> release_shared_sandbox(sb); release_shared_sandbox(sb)  # doctest: +SKIP
    """
    key = (os.getpid(), backend, float(timeout))
    with _shared_lock:
        entry = _shared.get(key)
        if entry is None or entry.sandbox.closed:
            entry = _shared[key] = _Shared(make_sandbox(backend, timeout=timeout))
        entry.holders += 1
        return entry.sandbox


def release_shared_sandbox(sandbox: Sandbox) -> None:
    """Drop one hold of a sandbox from :func:`hold_shared_sandbox`; the last closes it."""
    with _shared_lock:
        for key, entry in list(_shared.items()):
            if entry.sandbox is sandbox:
                entry.holders -= 1
                if entry.holders <= 0:
                    del _shared[key]
                    sandbox.close()
                return
    raise ValueError("release_shared_sandbox: this sandbox is not held (or already released)")


__all__ = [
    "make_sandbox",
    "backend_status",
    "hold_shared_sandbox",
    "release_shared_sandbox",
    "BACKENDS",
    "SandboxUnavailable",
]
