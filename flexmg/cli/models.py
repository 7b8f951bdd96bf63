"""``flexmg models``: the models that ``--model`` takes by name, offline.

Each zoo model comes from an installed package or from the repository, never
from a download; a packaged one is converted once into the model cache
(``$FLEXMG_MODEL_CACHE``, default ``~/.cache/flexmg/models``). Any Hugging Face
id in the local cache, or a folder, works as ``--model`` too.
"""

from __future__ import annotations

import argparse
import json
from typing import Any


def add_command(sub: Any) -> None:
    """Add ``models`` to the ``flexmg`` sub-commands."""
    p = sub.add_parser("models", help="list the models --model takes by name (offline zoo)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def _status(entry: Any) -> str:
    """Where the model stands here: in the repository, cached, installed, or what to install."""
    from flexmg.models import zoo

    if entry.package is None:
        return "in the repository"
    if (zoo.cache_dir() / entry.name / "config.json").is_file():
        return f"cached in {zoo.cache_dir() / entry.name}"
    try:
        zoo.package_file(entry)
    except zoo.MissingModelPackageError:
        return f"not installed: {entry.install}"
    return "installed (converted to the cache on first use)"


def run(args: argparse.Namespace) -> int:
    """Print the zoo: name, size, licence, where each comes from and its state here."""
    from flexmg.models.zoo import ZOO

    rows = [
        {"name": m.name, "title": m.title, "parameters": m.parameters, "licence": m.licence,
         "source": m.source, "kind": m.kind, "status": _status(m)}
        for m in ZOO.values()
    ]  # fmt: skip
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        print(f"{r['name'].ljust(width)}  {r['title']} ({r['parameters']} parameters)")
        for key in ("licence", "source", "status"):
            print(f"{' ' * width}  {key}: {r[key]}")
    return 0
