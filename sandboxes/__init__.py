"""flexmg.sandboxes: run untrusted agent code safely and fast.

Backends: ``"local"`` (bubblewrap namespaces, the embedded default),
``"docker"`` (warm hardened containers) and ``"unsafe"`` (plain subprocess with
rlimits, by name only). ``"auto"`` picks Docker when a daemon answers and the
sandbox image exists, else local. Test verdicts are decided on the trusted side
from plain data, never from exit codes or printed text.

Example:
    >>> from flexmg.sandboxes import make_sandbox
    >>> with make_sandbox("auto", timeout=2.0, memory_mb=256) as sb:  # doctest: +SKIP
    ...     r = sb.run("print(1+1)")
    ...     rep = sb.run_tests("def add(a, b):\\n    return a + b", ["assert add(1, 2) == 3"])
    >>> r.status, r.stdout, rep.passed, rep.total  # doctest: +SKIP
    ('ok', '2\\n', 1, 1)
"""

from __future__ import annotations

from .base import Sandbox, SandboxUnavailable
from .factory import (
    BACKENDS,
    backend_status,
    hold_shared_sandbox,
    make_sandbox,
    release_shared_sandbox,
)
from .limits import Limits
from .results import STATUSES, ExecResult, Status, TestReport, TestResult
from .testspec import TestSpec, parse_tests


def __getattr__(name: str) -> object:  # lazy: importing docker is slow
    if name == "LocalSandbox":
        from .local import LocalSandbox

        return LocalSandbox
    if name == "DockerSandbox":
        from .docker_backend import DockerSandbox

        return DockerSandbox
    if name in ("UnsafeSandbox", "UnsafeSandboxWarning"):
        from . import unsafe

        return getattr(unsafe, name)
    raise AttributeError(f"module 'flexmg.sandboxes' has no attribute {name!r}")


__all__ = [
    "BACKENDS",
    "STATUSES",
    "DockerSandbox",
    "ExecResult",
    "Limits",
    "LocalSandbox",
    "Sandbox",
    "SandboxUnavailable",
    "Status",
    "TestReport",
    "TestResult",
    "TestSpec",
    "UnsafeSandbox",
    "UnsafeSandboxWarning",
    "backend_status",
    "hold_shared_sandbox",
    "make_sandbox",
    "parse_tests",
    "release_shared_sandbox",
]
