"""benchmarks/role_ablation.py regenerates docs/roles.md's table from a leaderboard config."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CONFIG = """
out: {out}
seeds: [0, 1]
episodes: 3
num_envs: 3
progress: false
entries: [scripted:oracle, scripted:empty]
envs:
  - {{id: math-2agent, name: default}}
  - {{id: math-2agent, name: swapped order, kwargs: {{roles: [verifier, solver]}}}}
"""


def test_the_ablation_script_writes_paired_differences(tmp_path: Path) -> None:
    config = tmp_path / "ablation.yaml"
    config.write_text(CONFIG.format(out=tmp_path / "board"))
    out = tmp_path / "ablation.md"
    done = subprocess.run(
        [sys.executable, "benchmarks/role_ablation.py", "--config", str(config), "--out", str(out)],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in out.read_text().splitlines() if line.startswith("| scripted")]
    assert len(rows) == 4
    oracle = [r for r in rows if r.startswith("| scripted:oracle | swapped order")][0]
    assert "| 1.000" in oracle and "0.000" in oracle
