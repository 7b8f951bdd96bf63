"""benchmarks/critic_ev.py: held-out explained variance per role from runs' metrics."""

from __future__ import annotations

import json
import math
from pathlib import Path

from helpers import load_benchmark

critic_ev = load_benchmark("critic_ev")
KEPT = Path(__file__).resolve().parents[1] / "docs" / "results"


def test_flat_updates_and_nan_are_left_out_and_seeds_pool(tmp_path: Path) -> None:
    for seed, evs in ((0, [0.2, -94.0, math.nan]), (1, [0.4, 0.1, 0.0])):
        rows = [{"kind": "eval", "update": 0}]
        rows += [{"kind": "train", "update": u + 1, "flat_rewards": float(u == 1),
                  "explained_variance/solver": ev, "critic_steps_kept": float(u)}
                 for u, ev in enumerate(evs)]  # fmt: skip
        run = tmp_path / f"math-2agent-marft-s{seed}"
        run.mkdir()
        (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = critic_ev.summarise(sorted(tmp_path.iterdir()))["math-2agent-marft"]
    assert got.updates == 6 and got.flat == 2
    assert got.ev == {"solver": (0.2, 0.0, 0.4)}  # -94 (flat) and NaN dropped
    assert got.steps_kept == (1.0, 0.5)  # kept 0, 2, 0, 2 on the mixed updates


def test_the_published_holdout_figures_recompute_from_the_kept_metrics() -> None:
    files = sorted((KEPT / "paper_small_hold_td0_metrics").glob("*.metrics.jsonl.gz"))
    assert len(files) == 20
    got = critic_ev.summarise(files)
    assert round(got["math-2agent-marft"].ev["solver"][0], 2) == 0.60
    assert got["relay-2agent-marft"].steps_kept == (8.0, 10 / 60)
