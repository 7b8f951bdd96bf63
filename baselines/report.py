"""Leaderboard reports: the Markdown tables and the PNG bar chart.

Example:
    >>> row = {"entry": "oracle", "env": "math-2agent", "seeds": [0, 1], "episodes": 8,
    ...        "score": {"mean": 1.0, "ci95": [1.0, 1.0], "n": 2},
    ...        "success_rate": {"mean": 1.0, "ci95": [1.0, 1.0], "n": 2},
    ...        "rounds": 1.0, "format_error": {"verifier": 0.0}, "graded_role": "verifier"}
    >>> print(score_table([row], ["oracle"], ["math-2agent"]).splitlines()[2])
    | oracle | 1.000 ± 0.000 |
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flexmg.io import atomic_write_text, atomic_write_via
from flexmg.metrics import format_mean_ci

if TYPE_CHECKING:  # type only: leaderboard imports this module at run time
    from flexmg.baselines.leaderboard import LeaderboardConfig

CELL_MISSING = "n/a"
TABLE_FILE = "leaderboard.md"
CHART_FILE = "leaderboard.png"


def fmt_ci(stat: Mapping[str, Any], digits: int = 3) -> str:
    """``"0.600 ± 0.248"`` from ``{"mean", "ci95": [lo, hi], "n"}`` (``(n=1)`` without a CI).

    >>> fmt_ci({"mean": 0.5, "ci95": [None, None], "n": 1})
    '0.500 (n=1)'
    """
    mean = float(stat["mean"])
    low, high = (stat.get("ci95") or [None, None])[:2]
    half = None if high is None or low is None else float(high) - mean
    return format_mean_ci(mean, half, int(stat.get("n", 1)), digits)


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def score_table(
    rows: Sequence[Mapping[str, Any]], entries: Sequence[str], envs: Sequence[str]
) -> str:
    """Entries x envs table of the mean score ± 95% CI half-width over seeds."""
    by = {(r["entry"], r["env"]): r for r in rows}
    lines = [
        "| entry | " + " | ".join(_md_escape(e) for e in envs) + " |",
        "|---|" + "---|" * len(envs),
    ]
    for entry in entries:
        cells = []
        for env in envs:
            row = by.get((entry, env))
            cells.append(
                CELL_MISSING
                if row is None
                else fmt_ci(row["score"]) + ("" if row.get("complete", True) else " *")
            )
        lines.append(f"| {_md_escape(entry)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def detail_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """One line per entry x env: seeds, episodes, score, success, rounds, format errors."""
    lines = [
        "| entry | env | seeds | episodes | score | success rate | rounds | "
        "format errors (per role) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        fmt = (
            ", ".join(
                f"{role}{'*' if role == r.get('graded_role') else ''} {rate:.2f}"
                for role, rate in r["format_error"].items()
            )
            or "-"
        )
        lines.append(
            f"| {_md_escape(r['entry'])} | {_md_escape(r['env'])} | {len(r['seeds'])} | "
            f"{r['episodes']} | {fmt_ci(r['score'])} | {fmt_ci(r['success_rate'])} | "
            f"{r['rounds']:.2f} | {fmt} |"
        )
    return "\n".join(lines)


def markdown_report(config: LeaderboardConfig, results: Mapping[str, Any]) -> str:
    """The whole ``leaderboard.md``: score table, details, skipped cells, how it was made."""
    rows = results.get("summary", [])
    entries = [e.name for e in config.entries]
    envs = [e.name for e in config.envs]
    parts = [
        "## Score (mean ± 95% CI half-width over seeds)",
        "",
        score_table(rows, entries, envs),
        "",
        f"Seeds {config.seeds}, {config.episodes} episodes per seed, split `{config.split}`. "
        "Score: the final team score (1 = solved; code: fraction of hidden tests passed). "
        "The CI is Student's t over per-seed means. `*`: not every seed finished; "
        f"`{CELL_MISSING}`: not run or skipped.",
        "",
        "## Details",
        "",
        detail_table(rows),
        "",
        "Format errors: share of episodes whose role wrote no single parseable answer "
        "(`*` = graded role).",
    ]
    skipped = results.get("skipped") or []
    if skipped:
        parts += ["", "## Skipped cells", ""]
        parts += [f"- {s['entry']} | {s['env']} | seed {s['seed']}: {s['reason']}" for s in skipped]
    return "\n".join(parts) + "\n"


def write_chart(
    config: LeaderboardConfig, rows: Sequence[Mapping[str, Any]], path: Path
) -> Path | None:
    """Grouped bar chart (envs on x, one bar per entry, 95% CI error bars); None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    entries = [e.name for e in config.entries]
    envs = [e.name for e in config.envs]
    by = {(r["entry"], r["env"]): r for r in rows}
    width = 0.8 / max(1, len(entries))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(envs) * max(1, len(entries)) * 0.6), 4.0))
    for i, entry in enumerate(entries):
        xs, ys, lo, hi = [], [], [], []
        for j, env in enumerate(envs):
            row = by.get((entry, env))
            if row is None:
                continue
            mean = float(row["score"]["mean"])
            low, high = row["score"]["ci95"]
            xs.append(j - 0.4 + width * (i + 0.5))
            ys.append(mean)
            lo.append(0.0 if low is None else mean - float(low))
            hi.append(0.0 if high is None else float(high) - mean)
        if xs:
            ax.bar(xs, ys, width=width, yerr=[lo, hi], capsize=3, label=entry)
    ax.set_xticks(range(len(envs)))
    ax.set_xticklabels(envs, rotation=20, ha="right")
    ax.set_ylabel("score (mean, 95% CI over seeds)")
    ax.set_ylim(0.0, 1.05)
    ax.legend(fontsize=8, loc="best")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    atomic_write_via(path, lambda fh: fig.savefig(fh, format="png", dpi=120))
    plt.close(fig)
    return path


def write_reports(config: LeaderboardConfig, results: Mapping[str, Any], out: Path) -> str:
    """Write ``leaderboard.md`` and ``leaderboard.png`` into ``out``; return the Markdown."""
    text = markdown_report(config, results)
    atomic_write_text(out / TABLE_FILE, text)
    write_chart(config, results.get("summary", []), out / CHART_FILE)
    return text
