"""One source of truth for extras: `[all]` holds every extra that shares the main venv, and
every missing-dependency message names the extra that installs it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import flexmg
from flexmg.registration import MissingDependencyError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parent.parent
# verifiers (mcp==2.0.0) and verl (transformers<5.11) conflict with the main venv: their own
# venvs, scripts/setup_verifiers.sh and scripts/setup_verl.sh
OWN_VENV = {"verifiers", "verl"}


def extras() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return project["optional-dependencies"]


def test_all_holds_every_extra_but_those_with_their_own_venv():
    table = extras()
    (entry,) = table["all"]
    named = set(re.fullmatch(r"flexmg\[(.*)\]", entry).group(1).split(","))
    assert named == set(table) - {"all"} - OWN_VENV
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert '".[all]"' in setup  # the README's setup installs all of it
    for extra in OWN_VENV:
        assert extra in table and (ROOT / f"scripts/setup_{extra}.sh").is_file()


def test_every_extra_the_docs_name_exists():
    table = extras()
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for path in docs:
        for names in re.findall(r"flexmg\[([a-z,]+)\]", path.read_text(encoding="utf-8")):
            for name in names.split(","):
                assert name in table, f"{path.name} names the extra [{name}], which is not one"


@pytest.mark.parametrize(
    ("module", "hint"),
    [
        ("datasets", "flexmg[export]"),
        ("openenv", "flexmg[openenv]"),
        ("ray", "flexmg[ray]"),
        ("some_unheard_of_package", "pip install some_unheard_of_package"),
    ],
)
def test_missing_dependency_names_the_right_extra(tmp_path, monkeypatch, module, hint):
    mod = tmp_path / f"needs_{module}.py"
    mod.write_text(f"import {module}\nEnv = None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    flexmg.register(f"needs-{module.replace('_', '-')}-v0", f"needs_{module}:Env")
    with pytest.raises(MissingDependencyError, match=re.escape(hint)):
        flexmg.make(f"needs-{module.replace('_', '-')}")
