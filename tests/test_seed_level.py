"""Seed-level comparison: per-seed end figures read from the kept reports, Welch intervals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import load_benchmark

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"


def test_end_figures_match_the_reports_json() -> None:
    bench = load_benchmark("seed_level")
    for stem in ("smollm2_trl_grpo_seed0_step20", "smollm2_group_single_seed2_update20"):
        parsed = bench.end_figures(RESULTS / f"{stem}.md")
        report = json.loads((RESULTS / f"{stem}.json").read_text())
        for prompt_set in ("test", "unseen phrasings"):
            team = report[prompt_set]["team"]
            for figure in bench.FIGURES:
                mode = figure.split()[0]
                assert parsed[prompt_set][figure] == pytest.approx(
                    team[mode]["correct"]["end"], abs=6e-4
                )


def test_welch_interval_widens_with_spread_and_few_seeds() -> None:
    bench = load_benchmark("seed_level")
    d, lo, hi, df = bench.welch([0.6, 0.6, 0.6], [0.4, 0.5, 0.6])
    assert d == pytest.approx(0.1) and lo < 0 < hi and df == pytest.approx(2.0)
    d2, lo2, hi2, _ = bench.welch([0.6] * 3, [0.49, 0.5, 0.51])
    assert lo2 > 0 and hi2 - lo2 < hi - lo
    with pytest.raises(ValueError, match=">= 2 seeds"):
        bench.welch([0.5], [0.4, 0.6])


def test_the_cli_compares_learners_and_rejects_a_wrong_file(tmp_path, capsys) -> None:
    bench = load_benchmark("seed_level")
    trl = [str(RESULTS / f"smollm2_trl_grpo_seed{s}_step20.md") for s in (0, 2)]
    single = [str(RESULTS / f"smollm2_group_single_seed{s}_update20.md") for s in (0, 1, 2)]
    out = tmp_path / "seeds.md"
    assert (
        bench.main(["--learner", "TRL", *trl, "--learner", "single", *single, "--out", str(out)])
        == 0
    )
    text = out.read_text()
    assert "| TRL minus single |" in text and "## unseen phrasings" in text
    bad = tmp_path / "bad.md"
    bad.write_text("# nothing here, test\n")
    with pytest.raises(SystemExit):
        bench.main(["--learner", "a", str(bad), str(bad), "--learner", "b", *single])
    assert "no '## team' table" in capsys.readouterr().err
