"""The entry point the boot code calls: start the role named on the command line."""

from __future__ import annotations

import json
import sys

from .forkserver import forkserver_main
from .procs import _rebind_stdio, _reset_signals
from .runner import runner_main
from .zygote import zygote_main


def main() -> None:
    """Start the role named on the command line (``BOOT SOURCES ROLE CONFIG``)."""
    role = sys.argv[2]
    config = json.loads(sys.argv[3])
    if role == "zygote":
        zygote_main(config)
    elif role == "forkserver":
        forkserver_main(config)
    elif role == "runner":
        _reset_signals()
        _rebind_stdio()
        runner_main(config)
    else:
        raise SystemExit(f"unknown role {role!r}")
