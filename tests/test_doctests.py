"""Run the examples in the docstrings of every module of the ``flexmg`` package.

The modules are found, not listed: every module under ``flexmg/`` (its
``envs``, ``sandboxes``, ``models``, ``agents`` and ``baselines`` folders are
symlinks to the top-level folders, so each module has its real name) whose
source holds a ``>>>`` example is one test.

A module whose import needs an optional extra that is not installed (torch,
transformers, ray, matplotlib, ...) is skipped with the missing package named.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import io
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "flexmg"
OPTIONFLAGS = doctest.ELLIPSIS
# modules whose examples build a model or start a worker pool (over ~10 s on a CI core):
# run with the slow tests (`pytest -m "slow or not slow"`, as .ci/run does)
SLOW = {
    "flexmg.agents.checkpoint",
    "flexmg.agents.llm_agent",
    "flexmg.agents.policy",
    "flexmg.envs.math.grader",
}
# modules whose examples use a framework of an optional extra -> (its package, the variable
# that makes its absence a failure): skipped without it. CI sets FLEXMG_REQUIRE_EXTRAS=1 for
# the main venv's extras; verifiers and verl are tested in venvs of their own.
NEEDS = {
    "flexmg.integrations.openenv": ("openenv", "FLEXMG_REQUIRE_EXTRAS"),
    "flexmg.integrations.trl": ("trl", "FLEXMG_REQUIRE_EXTRAS"),
    "flexmg.integrations.verifiers": ("verifiers", "FLEXMG_REQUIRE_VERIFIERS"),
    "flexmg.integrations.verl": ("verl", "FLEXMG_REQUIRE_VERL"),
    "flexmg.integrations.verl.reward": ("verl", "FLEXMG_REQUIRE_VERL"),
}


def modules_with_examples() -> list[str]:
    """Every module of the package tree whose source contains ``>>>``, sorted."""
    found: set[str] = set()
    for folder, _, names in os.walk(ROOT / PACKAGE, followlinks=True):
        for name in names:
            path = Path(folder, name)
            if not name.endswith(".py") or "__pycache__" in path.parts:
                continue
            parts = [PACKAGE, *path.relative_to(ROOT / PACKAGE).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            if parts[-1] != "__main__" and ">>>" in path.read_text(
                encoding="utf-8", errors="replace"
            ):
                found.add(".".join(parts))
    return sorted(found)


def import_or_skip(name: str) -> object:
    """Import ``name``; skip when an optional third-party package it needs is missing."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        missing = (exc.name or "").split(".")[0]
        if not missing or missing == PACKAGE:
            raise
        pytest.skip(f"{name} needs the optional package {missing!r} (pip install flexmg[all])")


MODULES = modules_with_examples()


def test_discovery_finds_every_layer_of_the_package() -> None:
    assert SLOW <= set(MODULES), sorted(SLOW - set(MODULES))
    tops = {m.split(".")[1] for m in MODULES if m.count(".") >= 1}
    assert {"envs", "agents", "baselines", "sandboxes"} <= tops, tops
    assert len(MODULES) >= 40, MODULES


@pytest.mark.parametrize(
    "name", [pytest.param(m, marks=[pytest.mark.slow] if m in SLOW else []) for m in MODULES]
)
def test_module_examples(name: str) -> None:
    needed, flag = NEEDS.get(name, (None, ""))
    if needed and importlib.util.find_spec(needed) is None:
        if os.environ.get(flag) == "1":
            pytest.fail(f"{name}'s examples need {needed!r}, and {flag}=1")
        pytest.skip(f"{name}'s examples need the optional package {needed!r}")
    module = import_or_skip(name)
    tests = doctest.DocTestFinder(exclude_empty=True).find(module, name)
    tests = [t for t in tests if t.examples]
    assert tests, f"{name}'s source has '>>>' but doctest finds no example in it"
    out = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=OPTIONFLAGS)
    for test in sorted(tests, key=lambda t: t.name):
        runner.run(test, out=out.write)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} example(s) failed in {name}:\n{out.getvalue()}"
