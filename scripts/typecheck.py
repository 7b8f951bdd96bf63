"""Type-check the ``flexmg`` package with mypy (settings: ``[tool.mypy]`` in pyproject.toml).

mypy finds modules by folder, but ``envs/``, ``agents/``, ``baselines/`` and
``sandboxes/`` are ``flexmg.envs`` ... only through setuptools' ``package-dir``
mapping. This script lays that mapping out as a tree of symlinks under
``build/typecheck/`` (rebuilt on every run), runs ``mypy -p flexmg`` on it and
prints mypy's report with the paths turned back into the repository's own.

Usage::

    .venv/bin/python scripts/typecheck.py            # what CI runs
    .venv/bin/python scripts/typecheck.py --strict   # extra mypy flags pass through
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "build" / "typecheck"
PACKAGE = "flexmg"


def package_dirs() -> dict[str, str]:
    """``[tool.setuptools.package-dir]``: package name -> folder (relative to the root)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return dict(config["tool"]["setuptools"]["package-dir"])


def build_tree() -> dict[str, str]:
    """Symlink the mapped folders into ``TREE``; return tree prefix -> real folder (for output)."""
    shutil.rmtree(TREE, ignore_errors=True)
    top = TREE / PACKAGE
    top.mkdir(parents=True)
    mapping = package_dirs()
    real_top = ROOT / mapping[PACKAGE]
    for entry in sorted(real_top.iterdir()):
        if entry.name != "__pycache__":
            (top / entry.name).symlink_to(entry)
    rewrites = {}
    for name, folder in sorted(mapping.items()):
        parts = name.split(".")
        if name == PACKAGE or parts[0] != PACKAGE or len(parts) != 2:
            continue
        link = top / parts[1]
        if link.is_symlink() or link.exists():
            raise SystemExit(
                f"typecheck: {name} is both a folder of flexmg/ and mapped to {folder}"
            )
        link.symlink_to(ROOT / folder)
        rewrites[os.path.relpath(link, ROOT)] = folder
    rewrites[os.path.relpath(top, ROOT)] = mapping[PACKAGE]
    return rewrites


def main(argv: list[str]) -> int:
    """Build the tree, run mypy, print its report with real paths; mypy's exit status."""
    from mypy import api

    rewrites = build_tree()
    env_path = os.environ.get("MYPYPATH")
    os.environ["MYPYPATH"] = str(TREE) + (os.pathsep + env_path if env_path else "")
    os.chdir(ROOT)
    stdout, stderr, status = api.run(["-p", PACKAGE, *argv])
    for prefix, real in sorted(rewrites.items(), key=lambda kv: -len(kv[0])):
        stdout = stdout.replace(prefix + os.sep, real.rstrip("/") + os.sep)
    sys.stdout.write(stdout)
    sys.stderr.write(stderr)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
