"""Shared fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Any]:
    """The embedded (bubblewrap) sandbox, one per test module."""
    from flexmg.sandboxes import make_sandbox

    try:
        sb = make_sandbox("local", timeout=10.0, memory_mb=512)
    except Exception as e:  # e.g. bubblewrap missing on this machine
        pytest.skip(f"the local sandbox cannot run here: {e}")
    with sb:
        yield sb
