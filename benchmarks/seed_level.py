"""Compare learners at the level of training seeds: is a gap larger than seed-to-seed spread?

A paired interval over prompts (``seeds_report.py --against``) compares two *runs*;
it does not say whether another training seed would land elsewhere. This script
reads one learning report per training seed (the Markdown a run's report writes:
``team_report.py``, ``trl_grpo_baseline.py --evaluate``; every report scores the same
held-out prompts), takes each seed's end figure for the graded role (greedy and
sampled correctness, on each prompt set), and prints per learner the seeds' values
and mean, and against the first learner the difference of means with a Welch 95%
interval over seeds (Student t at Welch's degrees of freedom). With 3 seeds a side the
interval is wide on purpose: that is what 3 seeds can tell.

Usage::

    python benchmarks/seed_level.py \\
        --learner team docs/results/smollm2_group_team_seed{0,1,2}_update20.md \\
        --learner TRL docs/results/smollm2_trl_grpo_seed{0,1,2}_step20.md \\
        --out docs/results/smollm2_seed_level.md
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from flexmg.io import atomic_write_text

FIGURES = ("greedy correct", "sampled correct")


def t975(df: float) -> float:
    """The 97.5% quantile of Student's t at a fractional ``df`` (3 decimals).

    :func:`flexmg.metrics.t_quantile_975` at the two neighbouring whole degrees of
    freedom, interpolated linearly in ``1 / df`` (Welch's ``df`` is fractional).

    >>> t975(4), t975(1e9)
    (2.776, 1.96)
    """
    from flexmg.metrics import t_quantile_975

    if df <= 1:
        return round(t_quantile_975(1), 3)
    lo, hi = math.floor(df), math.ceil(df)
    if lo == hi:
        return round(t_quantile_975(lo), 3)
    w = (1 / lo - 1 / df) / (1 / lo - 1 / hi)
    return round(t_quantile_975(lo) + w * (t_quantile_975(hi) - t_quantile_975(lo)), 3)


def welch(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float, float]:
    """``mean(a) - mean(b)``, its Welch 95% interval and degrees of freedom.

    >>> d, lo, hi, df = welch([0.5, 0.6, 0.7], [0.4, 0.5, 0.6])
    >>> round(d, 3), round(lo, 3), round(hi, 3), round(df, 1)
    (0.1, -0.127, 0.327, 4.0)
    """
    if len(a) < 2 or len(b) < 2:
        raise ValueError(
            f"each learner needs >= 2 seeds for an interval, got {len(a)} and {len(b)}"
        )
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    va = sum((x - ma) ** 2 for x in a) / (len(a) - 1) / len(a)
    vb = sum((x - mb) ** 2 for x in b) / (len(b) - 1) / len(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return ma - mb, ma - mb, ma - mb, math.inf
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = t975(df) * se
    return ma - mb, ma - mb - half, ma - mb + half, df


def end_figures(report: Path) -> dict[str, dict[str, float]]:
    """``{prompt set: {figure: end}}`` of the graded role in a per-seed learning report (Markdown)."""
    figures: dict[str, dict[str, float]] = {}
    current, in_team = None, False
    for line in report.read_text().splitlines():
        if line.startswith("# "):
            current = line.rsplit(",", 1)[-1].strip()
            figures[current] = {}
            in_team = False
        elif line.startswith("## "):
            in_team = line.startswith("## team")
        elif in_team and current is not None and line.startswith("| "):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if cells[0] in FIGURES and len(cells) >= 3:
                match = re.match(r"[-+]?\d*\.\d+", cells[2])
                if match:
                    figures[current][cells[0]] = float(match.group(0))
    if not any(figures.values()):
        raise ValueError(
            f"{report}: no '## team' table with {FIGURES} found; expected a per-seed learning "
            "report (team_report.py or trl_grpo_baseline.py --evaluate writes one)"
        )
    return figures


def compare(learners: Sequence[tuple[str, Sequence[Path]]]) -> str:
    """The Markdown report: per learner the seeds' ends, then each against the first."""
    ends = {name: [end_figures(p) for p in paths] for name, paths in learners}
    sets = [s for s in ends[learners[0][0]][0] if all(s in e for r in ends.values() for e in r)]
    lines = ["# Seed-level comparison of end correctness (graded role)", "",
             "Each value: one training seed's end figure on the report's held-out prompts. "
             "Intervals: Welch 95% over seeds (difference of means).", ""]  # fmt: skip
    first = learners[0][0]
    for s in sets:
        lines += [f"## {s}", "", "| learner | seeds | " + " | ".join(FIGURES) + " |",
                  "|---|---|" + "---|" * len(FIGURES)]  # fmt: skip
        for name, reports in ends.items():
            cells = []
            for f in FIGURES:
                vals = [r[s][f] for r in reports]
                cells.append(f"{sum(vals) / len(vals):.3f} ({', '.join(f'{v:.3f}' for v in vals)})")
            lines.append(f"| {name} | {len(reports)} | " + " | ".join(cells) + " |")
        for name, reports in list(ends.items())[1:]:
            cells = []
            for f in FIGURES:
                a = [r[s][f] for r in ends[first]]
                b = [r[s][f] for r in reports]
                d, lo, hi, df = welch(a, b)
                cells.append(f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}] (df {df:.1f})")
            lines.append(f"| {first} minus {name} | | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learner", nargs="+", action="append", required=True,
                        metavar=("NAME", "REPORT"),
                        help="a learner's name, then one report per training seed (repeat)")  # fmt: skip
    parser.add_argument("--out", type=Path, default=None, help="also write the Markdown here")
    args = parser.parse_args(argv)
    learners = []
    for name, *paths in args.learner:
        if len(paths) < 2:
            parser.error(f"--learner {name}: give >= 2 per-seed reports, got {len(paths)}")
        missing = [p for p in paths if not Path(p).is_file()]
        if missing:
            parser.error(f"--learner {name}: no such report: {missing[0]}")
        learners.append((name, [Path(p) for p in paths]))
    if len(learners) < 2:
        parser.error("give at least two --learner groups to compare")
    try:
        text = compare(learners)
    except ValueError as exc:
        parser.error(str(exc))
    print(text)
    if args.out is not None:
        atomic_write_text(args.out, text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
