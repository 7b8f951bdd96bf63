"""Your envs in every command: entry-point plugins, ``--import MODULE`` and ``module:factory``.

``examples/env_plugin`` is a complete env package (``flexmg_dice``): its
``pyproject.toml`` declares the ``flexmg.envs`` entry point that flexmg's registry
loads on its first lookup, the same way flexmg's own families are registered.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import flexmg
from flexmg.cli import main

PLUGIN = Path(__file__).resolve().parents[1] / "examples" / "env_plugin"


@pytest.fixture
def plugin_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(PLUGIN))


def test_flexmg_registers_its_own_families_through_the_entry_point() -> None:
    code = (
        "import sys, flexmg; before = [m for m in sys.modules if m.startswith('flexmg.envs')];"
        "flexmg.spec('math-2agent'); print(before, 'flexmg.envs.families' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[]", "True"], out  # lazily: no env family on `import flexmg`


def test_a_factory_spec_needs_no_registration(plugin_on_path: None, capsys) -> None:
    env = flexmg.make("flexmg_dice:make_env", horizon=2)
    assert env.possible_agents == ["caller", "checker"] and env.horizon == 2
    assert main(["check", "flexmg_dice:make_env", "--cycles", "2"]) == 0
    assert "verdict: CONFORMANT" in capsys.readouterr().out
    with pytest.raises(flexmg.UnknownEnvError, match="package.module:factory"):
        flexmg.make("no-such-env")


def test_import_flag_runs_a_module_that_registers_envs(
    plugin_on_path: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    (tmp_path / "register_dice_now.py").write_text(
        "import flexmg_dice\n\nflexmg_dice.register_envs()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert main(["check", "--import", "register_dice_now", "dice", "--cycles", "2"]) == 0
        assert "verdict: CONFORMANT" in capsys.readouterr().out
        assert main(["check", "--import", "no_such_module_xyz", "echo"]) == 2
        assert "--import no_such_module_xyz" in capsys.readouterr().err
    finally:
        flexmg.registry.pop("dice-v0", None)


@pytest.mark.slow
def test_an_installed_plugin_shows_in_every_command(tmp_path: Path) -> None:
    source = tmp_path / "src"
    shutil.copytree(PLUGIN, source, ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--target", str(target), str(source)],
        check=True, capture_output=True,
    )  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(target)}

    def flexmg_cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "flexmg.cli", *args],
            input=stdin, capture_output=True, text=True, env=env, timeout=300,
        )  # fmt: skip

    listed = flexmg_cli("list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {r["id"]: r for r in json.loads(listed.stdout)}
    assert rows["dice-v0"]["roles"] == "caller -> checker" and "math-2agent-v3" in rows
    checked = flexmg_cli("check", "dice", "--cycles", "2")
    assert checked.returncode == 0 and "CONFORMANT" in checked.stdout, checked.stderr
    played = flexmg_cli("play", "dice", "--seed", "1", stdin="3\n\n3\n\n")
    assert played.returncode == 0 and "episode over" in played.stdout, played.stderr


def test_the_example_plugin_from_a_dist_info_works_in_the_cli(tmp_path: Path) -> None:
    """What pip installs, by hand: the package and a ``.dist-info`` with its entry points."""
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((PLUGIN / "pyproject.toml").read_text())["project"]
    site = tmp_path / "site"
    shutil.copytree(PLUGIN / "flexmg_dice", site / "flexmg_dice")
    info = site / f"flexmg_dice-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    group = "flexmg.envs"
    points = project["entry-points"][group]
    (info / "entry_points.txt").write_text(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in points.items())
    )
    env = {**os.environ, "PYTHONPATH": str(site)}

    def flexmg_cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "flexmg.cli", *args],
            input=stdin, capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path,
        )  # fmt: skip

    listed = flexmg_cli("list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert {r["id"] for r in json.loads(listed.stdout)} >= {"dice-v0", "math-2agent-v3"}
    for spec in ("dice", "flexmg_dice:make_env"):
        checked = flexmg_cli("check", spec, "--cycles", "2")
        assert checked.returncode == 0 and "CONFORMANT" in checked.stdout, checked.stderr
    played = flexmg_cli("play", "dice", "--seed", "1", stdin="3\n3\n")
    assert played.returncode == 0 and "episode over" in played.stdout, played.stderr
    assert played.stdout.count("one line per turn") == 2  # one line each for caller, checker
    typo = flexmg_cli("check", "dice", "--kw", 'roles=["calller"]')
    assert typo.returncode == 2 and "did you mean 'caller'" in typo.stderr, typo.stderr
