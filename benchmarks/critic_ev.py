"""The critics' held-out explained variance per role, read from training runs' metrics.

Explained variance is logged on each fresh rollout before the critic trains on it, so
it is a held-out figure. This pools the ``train`` records of several runs (their
``metrics.jsonl``) by run name without the seed suffix (``math-2agent-marft-s3`` ->
``math-2agent-marft``) and prints, per group and role, the median over updates with
mixed rewards (flat-reward updates measure nothing and are left out), the range, and,
with ``--critic-steps``/``--critic-holdout``, how many critic-only steps were kept.

``python benchmarks/critic_ev.py OUT/runs/*`` (paper_small's run folders), or the
metrics files themselves (``docs/results/paper_small_hold_metrics/*.metrics.jsonl.gz``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import re
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path


def _group(path: Path) -> str:
    name = (
        path.name.removesuffix(".gz").removesuffix(".metrics.jsonl")
        if path.is_file()
        else path.name
    )
    return re.sub(r"-s\d+$", "", name)


def _records(path: Path) -> list[dict]:
    file = path if path.is_file() else path / "metrics.jsonl"
    opener = gzip.open if file.suffix == ".gz" else open
    with opener(file, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [r for r in rows if r.get("kind") == "train"]


@dataclass(frozen=True)
class CriticEV:
    """One group of runs: its updates, the flat ones, EV per role, the kept critic steps."""

    updates: int
    flat: int
    ev: dict[str, tuple[float, float, float]]  # role -> (median, min, max)
    steps_kept: tuple[float, float] | None  # (median, share of updates at 0)


def summarise(paths: list[Path]) -> dict[str, CriticEV]:
    """Per group of runs: EV per role over the mixed-reward updates, and the kept steps."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for p in paths:
        groups[_group(p)] += _records(p)
    out: dict[str, CriticEV] = {}
    for name, rows in sorted(groups.items()):
        mixed = [r for r in rows if not r.get("flat_rewards")]
        ev: dict[str, list[float]] = defaultdict(list)
        for r in mixed:
            for k, x in r.items():
                if (
                    k.startswith("explained_variance/")
                    and isinstance(x, float)
                    and math.isfinite(x)
                ):
                    ev[k.split("/", 1)[1]].append(x)
        kept = [r["critic_steps_kept"] for r in mixed if "critic_steps_kept" in r]
        out[name] = CriticEV(
            updates=len(rows),
            flat=len(rows) - len(mixed),
            ev={k: (statistics.median(v), min(v), max(v)) for k, v in ev.items()},
            steps_kept=(statistics.median(kept), sum(k == 0 for k in kept) / len(kept))
            if kept
            else None,
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path, help="run folders or *.metrics.jsonl[.gz] files")
    args = ap.parse_args()
    print(
        "| runs | updates (flat) | role: EV median [min, max] | critic steps kept: median (share at 0) |"
    )
    print("|---|---|---|---|")
    for name, s in summarise(args.runs).items():
        ev = "; ".join(f"{k}: {m:+.2f} [{lo:+.2f}, {hi:+.2f}]" for k, (m, lo, hi) in s.ev.items())
        kept = f"{s.steps_kept[0]:g} ({s.steps_kept[1]:.0%})" if s.steps_kept else "-"
        print(f"| {name} | {s.updates} ({s.flat}) | {ev} | {kept} |")


if __name__ == "__main__":
    main()
