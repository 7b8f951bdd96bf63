"""scripts/collab_transcripts.py runs end to end and prints its table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "collab_transcripts.py"


def test_the_transcripts_script_prints_every_env_and_team() -> None:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--episodes", "3", "--split", "test"],
        capture_output=True, text=True, check=True, timeout=600,
    ).stdout  # fmt: skip
    for env_id in ("split-2agent", "check-2agent", "check-1agent", "code-testfirst"):
        assert f"| {env_id} | oracle |" in out or f"| {env_id} | alone |" in out
    assert "| split-2agent | oracle | 1.000" in out and "| code-testfirst | mute | 0.000" in out
    assert "[env on solver]: the expression" in out
