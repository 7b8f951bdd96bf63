"""Means and 95% confidence intervals over seeds (Student's t, no scipy needed).

A leaderboard cell is one (entry, env, seed): its value is the mean over that
seed's episodes. The spread across seeds is what the confidence interval
describes, so every interval here is computed from per-seed means.

Example:
    >>> from flexmg.baselines.stats import mean_ci
    >>> s = mean_ci([0.5, 0.6, 0.7])
    >>> round(s.mean, 3), round(s.low, 3), round(s.high, 3), s.n
    (0.6, 0.352, 0.848, 3)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# Two-sided 95% quantiles t_{0.975, df} for df = 1..30 (standard tables).
_T975 = (
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
    2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
    2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
)  # fmt: skip
_Z975 = 1.959963984540054


def t_quantile_975(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom.

    Exact table values for ``df <= 30``, the Cornish-Fisher expansion (error
    below 1e-4) above.

    >>> t_quantile_975(2), round(t_quantile_975(60), 3)
    (4.3027, 2.0)
    """
    if not isinstance(df, int) or df < 1:
        raise ValueError(f"degrees of freedom must be an int >= 1, got {df!r}")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    return z + g1 / df + g2 / df**2 + g3 / df**3


@dataclass(frozen=True)
class MeanCI:
    """A mean with its 95% confidence interval (``low``/``high`` are None for n < 2)."""

    mean: float
    low: float | None
    high: float | None
    n: int
    std: float

    @property
    def half_width(self) -> float | None:
        """Half the interval's width (None when it is undefined)."""
        return None if self.high is None else self.high - self.mean

    def to_dict(self) -> dict[str, Any]:
        """``{"mean", "ci95": [low, high], "n", "std"}`` (the form results files hold)."""
        return {"mean": self.mean, "ci95": [self.low, self.high], "n": self.n, "std": self.std}

    def format(self, digits: int = 3) -> str:
        """``"0.600 ± 0.248"`` (or ``"0.600 (n=1)"`` when there is no interval).

        >>> mean_ci([1.0, 0.0]).format(2)
        '0.50 ± 6.35'
        """
        return format_mean_ci(self.mean, self.half_width, self.n, digits)


def format_mean_ci(mean: float, half_width: float | None, n: int, digits: int = 3) -> str:
    """``"0.600 ± 0.248"``, or ``"0.600 (n=1)"`` when there is no interval (``half_width`` None).

    >>> format_mean_ci(0.5, None, 1), format_mean_ci(0.5, 0.25, 3, digits=2)
    ('0.500 (n=1)', '0.50 ± 0.25')
    """
    if half_width is None:
        return f"{mean:.{digits}f} (n={n})"
    return f"{mean:.{digits}f} ± {half_width:.{digits}f}"


def mean_ci(values: Sequence[float]) -> MeanCI:
    """Mean and two-sided 95% t-interval of ``values`` (e.g. one value per seed).

    NaN values are an error (they would silently poison the mean); an empty
    sequence is an error too.

    >>> mean_ci([2.0]).low is None
    True
    """
    xs = [float(v) for v in values]
    if not xs:
        raise ValueError("mean_ci needs at least one value (got an empty sequence)")
    if any(math.isnan(x) for x in xs):
        raise ValueError(f"mean_ci got NaN among {xs}; drop or fix those values first")
    n = len(xs)
    mean = sum(xs) / n
    if n < 2:
        return MeanCI(mean=mean, low=None, high=None, n=n, std=0.0)
    var = sum((x - mean) ** 2 for x in xs) / (n - 1)
    std = math.sqrt(var)
    half = t_quantile_975(n - 1) * std / math.sqrt(n)
    return MeanCI(mean=mean, low=mean - half, high=mean + half, n=n, std=std)
