"""Helpers for tests that use sandboxes: availability checks with clear skip reasons.

Docker tests must never be skipped silently in CI: when the environment variable
``FLEXMG_REQUIRE_DOCKER`` is set (to anything but ``0``), a missing daemon or
image is a test *failure*.

Example:
    >>> from flexmg.sandboxes.testing import backend_params
    >>> [p.id for p in backend_params()]
    ['local', 'docker', 'unsafe']
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from .base import Sandbox
from .factory import make_sandbox

BACKENDS = ("local", "docker", "unsafe")


def docker_required() -> bool:
    """True when ``FLEXMG_REQUIRE_DOCKER`` asks for Docker tests to fail instead of skip."""
    return os.environ.get("FLEXMG_REQUIRE_DOCKER", "") not in ("", "0")


def require_backend(backend: str) -> None:
    """Skip the calling test when ``backend`` cannot run here (fail for Docker when required)."""
    import pytest

    if backend == "docker":
        from .docker_backend import probe_docker

        why = probe_docker()
        if why is not None:
            if docker_required():
                pytest.fail(
                    f"FLEXMG_REQUIRE_DOCKER is set but the docker backend is unavailable: {why}"
                )
            pytest.skip(
                f"docker backend unavailable (FLEXMG_REQUIRE_DOCKER=1 makes this fail): {why}"
            )
    elif backend == "local":
        from .local import probe_local

        why = probe_local()
        if why is not None:
            pytest.skip(f"local (bubblewrap) backend unavailable: {why}")


def open_sandbox(backend: str, **kwargs: Any) -> Sandbox:
    """A sandbox of ``backend``; skips the test when it cannot run here."""
    require_backend(backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the unsafe backend's warning is tested on its own
        return make_sandbox(backend, **kwargs)


def backend_params() -> list[Any]:
    """``pytest.param`` per backend; the Docker one carries the ``docker`` mark."""
    import pytest

    return [
        pytest.param(b, marks=[pytest.mark.docker] if b == "docker" else [], id=b) for b in BACKENDS
    ]
