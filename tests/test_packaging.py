"""The built wheel holds the real package tree (symlinked folders included) and its plugins."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_wheel_holds_every_layer_the_assets_and_the_entry_points(tmp_path: Path) -> None:
    source = tmp_path / "src"  # a copy: setuptools builds inside the source tree
    junk = (".venv*", ".git", ".cache", "build", "dist", "*.egg-info", "__pycache__", "runs")
    shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(*junk))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(tmp_path), str(source)],
        check=True, capture_output=True, cwd=tmp_path,
    )  # fmt: skip
    (wheel,) = tmp_path.glob("flexmg-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = next(n for n in names if n.endswith("dist-info/entry_points.txt"))
        declared = archive.read(entry_points).decode()
    for name in (
        "flexmg/env.py",
        "flexmg/cli/train.py",
        "flexmg/envs/families/math.py",
        "flexmg/envs/code/builtin_tasks.jsonl",
        "flexmg/sandboxes/inside/zygote.py",
        "flexmg/agents/ppo.py",
        "flexmg/models/tiny/assets/model.safetensors",
        "flexmg/baselines/leaderboard.py",
        "flexmg/py.typed",
        "flexmg_verifiers/__init__.py",
    ):
        assert name in names, name
    assert "[flexmg.envs]\nflexmg = flexmg.envs.families:register_envs" in declared
    assert "flexmg = flexmg.cli:main" in declared
