"""``flexmg sandbox ...`` commands: ``build-image`` and ``status``.

The coordinator wires :func:`add_commands` into the ``flexmg`` console script;
``python -m flexmg.sandboxes`` runs the same commands.

Example:
    >>> import argparse
    >>> ap = argparse.ArgumentParser(prog="flexmg")
    >>> add_commands(ap.add_subparsers(dest="command"))
    >>> ap.parse_args(["sandbox", "status"]).sandbox_command
    'status'
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def _status(args: argparse.Namespace) -> int:
    from .factory import backend_status

    status = backend_status()
    if args.json:
        print(json.dumps(status, indent=2))
    else:
        for name, why in status.items():
            if name == "unsafe":
                print(f"{name:7} works (no isolation: only when asked for by name)")
            elif name == "local" and why is None:
                print(f"{name:7} works ({_seccomp_state()}; {_uid_state()})")
            elif name == "docker" and why is None:
                print(f"{name:7} works ({_docker_uid_state()})")
            else:
                print(f"{name:7} {'works' if why is None else 'unavailable: ' + why}")
        auto = "docker" if status["docker"] is None else "local"
        print(f"auto    -> {auto}")
    return 0 if status["local"] is None or status["docker"] is None else 1


def _seccomp_state() -> str:
    import platform

    from .seccomp import seccomp_enabled

    if seccomp_enabled():
        return f"seccomp filter on, {platform.machine()}"
    return "seccomp filter OFF (FLEXMG_SANDBOX_SECCOMP=0 or no syscall table for this machine)"


def _uid_state() -> str:
    from .local import probe_worker_uids
    from .uids import uid_range

    try:
        rng = uid_range()
    except ValueError as e:
        return str(e)
    why = probe_worker_uids() if rng is not None else "switched off (FLEXMG_SANDBOX_UIDS=off)"
    if why is None and rng is not None:
        return f"each worker a host uid of its own from {rng[0]}"
    return f"workers share the caller's uid: {why}"


def _docker_uid_state() -> str:
    from .docker_backend import SHARED_UID, container_uid_range

    try:
        rng = container_uid_range()
    except ValueError as e:
        return str(e)
    if rng is not None:
        return f"each container a host uid of its own from {rng[0]}"
    return (
        f"containers share uid {SHARED_UID} (not root, FLEXMG_SANDBOX_UIDS=off or a remote daemon)"
    )


def _build(args: argparse.Namespace) -> int:
    from .image import main as image_main

    return image_main(["build"])


def add_commands(subparsers: Any) -> None:
    """Add the ``sandbox`` command (subcommands ``build-image``, ``status``) to ``subparsers``."""
    p = subparsers.add_parser(
        "sandbox",
        help="sandboxes for untrusted code",
        description="Manage the sandboxes that run agent code.",
    )
    sub = p.add_subparsers(dest="sandbox_command", required=True)
    b = sub.add_parser("build-image", help="build the Docker sandbox image offline")
    b.set_defaults(func=_build)
    s = sub.add_parser("status", help="which backends work here, and why not")
    s.add_argument("--json", action="store_true", help="print a JSON object")
    s.set_defaults(func=_status)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m flexmg.sandboxes``."""
    ap = argparse.ArgumentParser(prog="python -m flexmg.sandboxes")
    sub = ap.add_subparsers(dest="command", required=True)
    add_commands(sub)
    # Allow both `python -m flexmg.sandboxes status` and `... sandbox status`.
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] != "sandbox" and not argv[0].startswith("-"):
        argv = ["sandbox", *argv]
    args = ap.parse_args(argv)
    return int(args.func(args))
