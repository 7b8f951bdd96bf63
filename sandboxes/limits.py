"""Resource limits of a sandbox run, validated with clear messages.

Example:
    >>> lim = Limits(timeout=2.0, memory_mb=256)
    >>> lim.per_test_timeout
    2.0
    >>> Limits.from_kwargs(timeout=1, max_output_bytes=1000).max_output_bytes
    1000
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any


@dataclass(frozen=True)
class Limits:
    """Limits applied to every run.

    Attributes:
        timeout: wall-clock seconds for one ``run`` or one whole ``run_tests``
            (the process tree is SIGKILLed when it is up).
        test_timeout: seconds for one test inside ``run_tests`` (None: ``timeout``).
        memory_mb: address-space limit of the untrusted process, in MiB.
        max_output_bytes: stdout + stderr kept; more ends the run (``output_limit``).
        cpu_seconds: CPU-time limit (None: ``ceil(timeout) + 1``).
        max_file_mb: largest file the code may write, in MiB.
        max_open_files: open file descriptors per process.
        max_procs: processes and threads in the whole sandbox (cgroup ``pids.max``).
        tmp_mb: size of the sandbox's only writable place (a tmpfs at ``/tmp``).
    """

    timeout: float = 5.0
    test_timeout: float | None = None
    memory_mb: int = 512
    max_output_bytes: int = 65536
    cpu_seconds: float | None = None
    max_file_mb: int = 16
    max_open_files: int = 64
    max_procs: int = 64
    tmp_mb: int = 64

    def __post_init__(self) -> None:
        def positive(name: str, value: Any, kind: type = float) -> None:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"sandbox limit {name} must be a number, got {value!r}")
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"sandbox limit {name} must be > 0, got {value!r}")

        positive("timeout", self.timeout)
        if self.test_timeout is not None:
            positive("test_timeout", self.test_timeout)
        if self.cpu_seconds is not None:
            positive("cpu_seconds", self.cpu_seconds)
        for name in ("memory_mb", "max_output_bytes", "max_file_mb", "max_open_files", "tmp_mb"):
            positive(name, getattr(self, name))
        positive("max_procs", self.max_procs)
        if self.memory_mb < 32:
            raise ValueError(f"memory_mb={self.memory_mb} is too small for Python; use >= 32")
        if self.max_procs < 8:
            raise ValueError(
                f"max_procs={self.max_procs} is too small (the sandbox needs 6); use >= 8"
            )
        if self.max_open_files < 16:
            raise ValueError(f"max_open_files={self.max_open_files} is too small; use >= 16")

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> Limits:
        """Build from keyword arguments, naming the valid ones on a typo."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(kwargs) - names)
        if unknown:
            raise TypeError(f"unknown sandbox limit(s) {unknown}; valid limits are {sorted(names)}")
        return cls(**kwargs)

    def with_timeout(self, timeout: float | None) -> Limits:
        """A copy with another ``timeout`` (None keeps this one)."""
        return self if timeout is None else replace(self, timeout=timeout)

    @property
    def per_test_timeout(self) -> float:
        """The time budget of one test."""
        return min(self.test_timeout or self.timeout, self.timeout)

    @property
    def cpu_limit(self) -> int:
        """The RLIMIT_CPU value in whole seconds."""
        return int(math.ceil(self.cpu_seconds or (self.timeout + 1)))

    def rlimits(self, *, procs: bool = False) -> dict[str, int]:
        """The limits of the untrusted process, as sent into the sandbox."""
        out = {
            "memory_bytes": int(self.memory_mb) << 20,
            "cpu_seconds": self.cpu_limit,
            "file_bytes": int(self.max_file_mb) << 20,
            "open_files": int(self.max_open_files),
        }
        if procs:
            out["procs"] = int(self.max_procs)
        return out


def cleanup_budget() -> float:
    """Seconds a worker may spend removing a run's files before it retires (default 1).

    ``FLEXMG_SANDBOX_CLEANUP_BUDGET`` overrides it (read when a worker starts); past
    the budget the worker answers its next job "retire" and the host runs that job
    on a fresh worker instead of making it wait.

    >>> cleanup_budget() > 0
    True
    """
    import os

    try:
        value = float(os.environ.get("FLEXMG_SANDBOX_CLEANUP_BUDGET", "1.0"))
    except ValueError:
        value = 1.0
    return value if value > 0 else 1.0
