"""Pool the learning reports of several training seeds: the same prompts, one table.

Each run folder must hold ``report_<update>.episodes.json``, written by
``benchmarks/team_report.py`` with the same ``--prompts``, ``--phrasing-prompts``
and ``--samples`` (so every seed is evaluated on the same distinct prompts). For
each prompt set (the test split, the unseen phrasings) it writes
:func:`flexmg.report.seeds_report`: start, end and the paired gain, each the mean
over seeds with a 95% interval that resamples seeds and then prompts, and every
seed's own gain beside it.

Usage::

    python benchmarks/seeds_report.py runs/team-s0 runs/team-s1 runs/team-s2 \\
        --update 20 --out docs/results/team_seeds.md
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from flexmg.io import atomic_write_text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, nargs="+", help="run folders, one per seed")
    parser.add_argument("--update", type=int, required=True, help="the reported checkpoint")
    parser.add_argument("--out", type=Path, required=True, help="the Markdown file to write")
    parser.add_argument("--title", default=None)
    args = parser.parse_args(argv)

    from flexmg.report import render_seeds_report, seeds_report

    loaded = []
    for run in args.runs:
        path = run / f"report_{args.update}.episodes.json"
        if not path.is_file():
            print(f"seeds_report: error: {path} is missing; run benchmarks/team_report.py "
                  f"{run} first")  # fmt: skip
            return 2
        loaded.append(json.loads(path.read_text()))
    keys = {d["key"] for d in loaded}
    if len(keys) != 1:
        print(f"seeds_report: error: the runs were reported with different settings {sorted(keys)}"
              "; rerun team_report.py with the same --prompts/--phrasing-prompts/--samples")  # fmt: skip
        return 2
    seeds = [json.loads((run / "config.json").read_text()).get("train", {}).get("seed")
             for run in args.runs]  # fmt: skip
    text, out = [], {"runs": [str(r) for r in args.runs], "seeds": seeds, "update": args.update}
    for name in loaded[0]["end"]:
        report = seeds_report([(d["start"][name], d["end"][name]) for d in loaded], ks=(1, 2, 4))
        out[name] = report
        title = args.title or f"{len(loaded)} seeds ({seeds}): update 0 vs {args.update}"
        text.append(render_seeds_report(report, f"{title}, {name}"))
    atomic_write_text(args.out, "\n\n".join(text))
    atomic_write_text(args.out.with_suffix(".json"), json.dumps(out, indent=2))
    print("\n\n".join(text))
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
