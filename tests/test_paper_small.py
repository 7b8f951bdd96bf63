"""The paper_small grid script: which run folders it trains, resumes or restarts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import load_benchmark


@pytest.fixture(scope="module")
def paper_small():
    return load_benchmark("paper_small")


def test_run_states(paper_small, tmp_path: Path) -> None:
    run = tmp_path / "math-2agent-marft-s0"
    assert paper_small.run_state(run, 10) == "new"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "step_000003.ckpt").write_bytes(b"x")
    assert paper_small.run_state(run, 10) == "partial"
    (run / "summary.json").write_text(json.dumps({"updates": 10}))
    assert paper_small.run_state(run, 10) == "done"
    assert paper_small.run_state(run, 12) == "partial"


def test_a_run_interrupted_before_its_first_checkpoint_is_restarted(
    paper_small, tmp_path: Path
) -> None:
    run = tmp_path / "code-2agent-marft-s0"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.json").write_text("{}")
    (run / "metrics.jsonl").write_text('{"kind": "eval", "update": 0}\n')
    assert paper_small.clear_unstarted(run) is True
    assert not run.exists()
    assert paper_small.clear_unstarted(run) is False  # nothing there: nothing to do


def test_a_run_with_a_checkpoint_is_kept_for_resume(paper_small, tmp_path: Path) -> None:
    run = tmp_path / "code-2agent-marft-s1"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.json").write_text("{}")
    (run / "checkpoints" / "step_000001.ckpt").write_bytes(b"x")
    assert paper_small.clear_unstarted(run) is False
    assert run.exists()


def test_training_children_share_the_cores(paper_small, monkeypatch) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(paper_small.os, "sched_getaffinity", lambda _pid: {0, 1, 2, 3})
    assert paper_small.child_env(2)["OMP_NUM_THREADS"] == "2"
    assert paper_small.child_env(8)["OMP_NUM_THREADS"] == "1"
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert paper_small.child_env(2)["OMP_NUM_THREADS"] == "3"  # the caller's choice wins
