"""Means and 95% confidence intervals over seeds."""

from __future__ import annotations

import math
import random

import pytest

from flexmg.metrics import mean_ci, t_quantile_975


@pytest.mark.parametrize(
    ("df", "expected"),
    [(1, 12.7062), (2, 4.3027), (9, 2.2622), (30, 2.0423), (40, 2.0211), (60, 2.0003),
     (120, 1.9799), (10_000, 1.9604)],
)  # fmt: skip
def test_t_quantiles_match_tables(df: int, expected: float) -> None:
    assert t_quantile_975(df) == pytest.approx(expected, abs=2e-4)


def test_t_quantile_rejects_bad_df() -> None:
    for bad in (0, -1, 2.5):
        with pytest.raises(ValueError, match="degrees of freedom"):
            t_quantile_975(bad)  # type: ignore[arg-type]


def test_mean_ci_known_values() -> None:
    s = mean_ci([0.2, 0.4, 0.6, 0.8])
    sd = math.sqrt(sum((x - 0.5) ** 2 for x in (0.2, 0.4, 0.6, 0.8)) / 3)
    half = 3.1824 * sd / 2
    assert s.mean == pytest.approx(0.5)
    assert (s.low, s.high) == (pytest.approx(0.5 - half), pytest.approx(0.5 + half))
    assert s.std == pytest.approx(sd) and s.n == 4
    assert s.to_dict()["ci95"] == [s.low, s.high]
    assert mean_ci([0.3, 0.3, 0.3]).to_dict()["ci95"] == [pytest.approx(0.3), pytest.approx(0.3)]


def test_single_value_has_no_interval() -> None:
    s = mean_ci([0.7])
    assert (s.mean, s.low, s.high, s.half_width) == (0.7, None, None, None)
    assert s.format() == "0.700 (n=1)"


def test_bad_inputs_are_errors() -> None:
    with pytest.raises(ValueError, match="at least one value"):
        mean_ci([])
    with pytest.raises(ValueError, match="NaN"):
        mean_ci([0.1, float("nan")])


def test_interval_covers_the_true_mean_about_95_percent_of_the_time() -> None:
    rng = random.Random(0)
    trials, covered = 4000, 0
    for _ in range(trials):
        s = mean_ci([rng.gauss(1.0, 2.0) for _ in range(3)])
        covered += s.low <= 1.0 <= s.high
    assert 0.93 < covered / trials < 0.97
