"""Choosing a backend: :func:`make_sandbox` and :func:`backend_status`.

Example:
    >>> from flexmg.sandboxes import make_sandbox
    >>> sb = make_sandbox("auto", timeout=2.0)  # doctest: +SKIP
    >>> sb.backend in ("docker", "local")  # doctest: +SKIP
    True
"""

from __future__ import annotations

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


__all__ = ["make_sandbox", "backend_status", "BACKENDS", "SandboxUnavailable"]
