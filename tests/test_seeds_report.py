"""Learning over training seeds: pooled paired gains with two-level intervals, end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from family_models import build_small_tiny_model
from flexmg.report import seeds_report

ROOT = Path(__file__).resolve().parents[1]


def _ev(right: list[int], pid: str = "p") -> dict:
    ep = lambda i, r: {"graded_role": "s", "prompt_id": f"{pid}{i}",  # noqa: E731
                       "per_role": {"s": {"answer_correct": bool(r), "format_ok": True}}}  # fmt: skip
    return {"greedy": [ep(i, r) for i, r in enumerate(right)],
            "sampled": [[ep(i, r)] * 2 for i, r in enumerate(right)]}  # fmt: skip


def test_seeds_that_disagree_widen_the_gain_interval_and_every_seed_is_shown() -> None:
    start = _ev([0] * 8)
    agree = seeds_report([(start, _ev([1] * 4 + [0] * 4))] * 3, ks=(1,))
    disagree = seeds_report(
        [(start, _ev([1] * 8)), (start, _ev([0] * 8)), (start, _ev([1] * 4 + [0] * 4))], ks=(1,)
    )
    a, d = agree["team"]["greedy"]["correct"], disagree["team"]["greedy"]["correct"]
    assert a["gain"] == d["gain"] == 0.5
    assert d["gain_per_seed"] == [1.0, 0.0, 0.5] and a["gain_per_seed"] == [0.5] * 3
    width = lambda ci: ci[1] - ci[0]  # noqa: E731
    assert width(d["gain_ci"]) > width(a["gain_ci"])
    assert disagree["team"]["transitions"]["wrong_to_right"] == 12
    assert agree["team"]["greedy"]["format"]["gain"] == 0.0


def test_seeds_on_different_prompts_are_refused() -> None:
    with pytest.raises(ValueError, match="other prompts"):
        seeds_report([(_ev([0, 1]), _ev([1, 1])), (_ev([0, 1], pid="q"), _ev([1, 1], pid="q"))])
    with pytest.raises(ValueError, match="at least one"):
        seeds_report([])


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)  # fmt: skip


@pytest.mark.slow
def test_team_report_then_seeds_report_on_two_trained_seeds(tmp_path: Path) -> None:
    model = build_small_tiny_model(tmp_path / "model")
    runs = []
    for seed in (0, 1):
        run = tmp_path / f"run-s{seed}"
        out = _run("-m", "flexmg.cli", "train", "--env", "math-2agent", "--algo", "group",
                   "--group-size", "2", "--model", model, "--seed", str(seed), "--updates", "1",
                   "--episodes-per-update", "4", "--eval-episodes", "0", "--max-new-tokens", "4",
                   "--device", "cpu", "--no-progress", "--run-dir", str(run))  # fmt: skip
        assert out.returncode == 0, out.stderr[-2000:]
        out = _run("benchmarks/team_report.py", str(run), "--prompts", "4",
                   "--phrasing-prompts", "3", "--samples", "2")  # fmt: skip
        assert out.returncode == 0, out.stderr[-2000:]
        runs.append(run)
    dest = tmp_path / "seeds.md"
    out = _run("benchmarks/seeds_report.py", *map(str, runs), "--update", "1", "--out", str(dest))
    assert out.returncode == 0, out.stderr[-2000:]
    pooled = json.loads(dest.with_suffix(".json").read_text())
    assert pooled["seeds"] == [0, 1] and set(pooled) >= {"test", "unseen phrasings"}
    team = pooled["test"]["team"]["greedy"]["correct"]
    assert len(team["gain_per_seed"]) == 2 and pooled["test"]["prompts"] == 4
    assert "| greedy correct |" in dest.read_text()
    # the end checkpoints against other runs, seed for seed, on the same prompts
    out = _run("benchmarks/seeds_report.py", str(runs[0]), "--update", "1", "--out", str(dest),
               "--against", str(runs[1]))  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    versus = json.loads(dest.with_suffix(".json").read_text())["test against"]["team"]
    ends = [json.loads((r / "report_1.json").read_text())["test"]["team"] for r in runs]
    greedy = [e["greedy"]["correct"]["end"] for e in ends]
    assert versus["greedy"]["correct"]["gain"] == pytest.approx(greedy[0] - greedy[1], abs=1e-3)
    out = _run("benchmarks/seeds_report.py", *map(str, runs), "--update", "1", "--out", str(dest),
               "--against", str(runs[1]))  # fmt: skip
    assert out.returncode == 2 and "one run per run" in out.stdout
    # a run reported with other settings cannot be pooled
    out = _run("benchmarks/team_report.py", str(runs[1]), "--prompts", "3",
               "--phrasing-prompts", "0", "--samples", "1")  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    out = _run("benchmarks/seeds_report.py", *map(str, runs), "--update", "1", "--out", str(dest))
    assert out.returncode == 2 and "different settings" in out.stdout


def test_the_published_single_vs_trl_difference_recomputes_from_the_kept_episodes(
    tmp_path: Path,
) -> None:
    """The README's paired single-agent-minus-TRL figure, from docs/results' episode files."""
    results = ROOT / "docs" / "results"
    single = results / "smollm2_group_single_seed2_update20.episodes.json.gz"
    trl = results / "smollm2_trl_grpo_seed0_step20.episodes.json.gz"
    dest = tmp_path / "versus.md"
    out = _run("benchmarks/seeds_report.py", str(single), "--update", "20", "--out", str(dest),
               "--against", str(trl))  # fmt: skip
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    pooled = json.loads(dest.with_suffix(".json").read_text())
    assert pooled["seeds"] == ["smollm2_group_single_seed2_update20"]
    versus = pooled["test against"]["team"]
    assert versus["sampled"]["correct"]["gain"] == pytest.approx(-0.142, abs=1e-3)
    assert versus["greedy"]["correct"]["gain"] == pytest.approx(-0.117, abs=1e-3)
    missing = _run("benchmarks/seeds_report.py", str(tmp_path), "--update", "20",
                   "--out", str(dest))  # fmt: skip
    assert missing.returncode == 2 and "holds no report_20.episodes.json" in missing.stdout
