"""``flexmg list``: every registered env id with its roles, graph and description."""

from __future__ import annotations

import argparse
import json
from typing import Any


def add_command(sub: Any) -> None:
    """Add ``list`` to the ``flexmg`` sub-commands."""
    p = sub.add_parser("list", help="list registered env ids with roles and graph")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def _describe(spec: Any) -> tuple[str, str]:
    """The roles (graph order) and edges of a registered env, or why it cannot be built."""
    try:
        env = spec.make()
        fixed = env._fixed_graph
        roles = " -> ".join(fixed.order()) if fixed else ", ".join(env.possible_agents)
        edges = str(fixed) if fixed else "per-round graph function"
        env.close()
    except Exception as err:  # still list it, with the reason
        return "?", f"(cannot build: {type(err).__name__}: {err})"
    return roles, edges


def run(args: argparse.Namespace) -> int:
    """Print the registry (plugins of the ``flexmg.envs`` entry-point group included)."""
    import flexmg

    rows = []
    for env_id in sorted(flexmg.registry):
        spec = flexmg.registry[env_id]
        rows.append((env_id, *_describe(spec), spec.description))
    if args.json:
        keys = ("id", "roles", "graph", "description")
        print(json.dumps([dict(zip(keys, r)) for r in rows], indent=2))
        return 0
    width = max(len(r[0]) for r in rows)
    for env_id, roles, edges, desc in rows:
        print(f"{env_id.ljust(width)}  {desc}")
        print(f"{' ' * width}  roles: {roles}")
        print(f"{' ' * width}  graph: {edges}")
    return 0
