"""Pool the learning reports of several training seeds: the same prompts, one table.

Each run folder must hold ``report_<update>.episodes.json``, written by
``benchmarks/team_report.py`` with the same ``--prompts``, ``--phrasing-prompts``
and ``--samples`` (so every seed is evaluated on the same distinct prompts). A run
may also be given as such a file itself, gzipped or not (the copies kept in
``docs/results/*.episodes.json.gz``), so a reported figure can be recomputed after its
run folder is gone. For
each prompt set (the test split, the unseen phrasings) it writes
:func:`flexmg.report.seeds_report`: start, end and the paired gain, each the mean
over seeds with a 95% interval that resamples seeds and then prompts, and every
seed's own gain beside it. ``--against RUN...`` (as many runs, seed for seed) adds
the paired difference of the end checkpoints on the same prompts: these runs' end
minus the others' end (e.g. the team against the single agent).

Usage::

    python benchmarks/seeds_report.py runs/team-s0 runs/team-s1 runs/team-s2 \\
        --update 20 --out docs/results/team_seeds.md \
        --against runs/single-s0 runs/single-s1 runs/single-s2
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

from flexmg.io import atomic_write_text


def load_episodes(run: Path, update: int) -> dict | None:
    """The report episodes of ``run`` (a run folder, or the episodes file itself); None if absent."""
    path = run / f"report_{update}.episodes.json" if run.is_dir() else run
    if not path.is_file():
        return None
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)


def run_seed(run: Path) -> object:
    """The training seed in a run folder's config, else the file's name as its label."""
    config = run / "config.json"
    if run.is_dir() and config.is_file():
        return json.loads(config.read_text()).get("train", {}).get("seed")
    return run.name.removesuffix(".gz").removesuffix(".json").removesuffix(".episodes")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, nargs="+", help="run folders, one per seed")
    parser.add_argument("--update", type=int, required=True, help="the reported checkpoint")
    parser.add_argument("--out", type=Path, required=True, help="the Markdown file to write")
    parser.add_argument("--title", default=None)
    parser.add_argument("--against", type=Path, nargs="*", default=[],
                        help="runs to compare the end checkpoints with, seed for seed")  # fmt: skip
    args = parser.parse_args(argv)

    from flexmg.report import render_seeds_report, seeds_report

    if args.against and len(args.against) != len(args.runs):
        print(f"seeds_report: error: --against needs one run per run ({len(args.runs)}), "
              f"got {len(args.against)}")  # fmt: skip
        return 2
    loaded = []
    for run in [*args.runs, *args.against]:
        episodes = load_episodes(run, args.update)
        if episodes is None:
            print(f"seeds_report: error: {run} holds no report_{args.update}.episodes.json; "
                  f"run benchmarks/team_report.py {run} first")  # fmt: skip
            return 2
        loaded.append(episodes)
    loaded, others = loaded[: len(args.runs)], loaded[len(args.runs) :]
    keys = {d["key"] for d in loaded + others}
    if len(keys) != 1:
        print(f"seeds_report: error: the runs were reported with different settings {sorted(keys)}"
              "; rerun team_report.py with the same --prompts/--phrasing-prompts/--samples")  # fmt: skip
        return 2
    seeds = [run_seed(run) for run in args.runs]
    text: list[str] = []
    out: dict = {"runs": [str(r) for r in args.runs], "seeds": seeds, "update": args.update,
                 "against": [str(r) for r in args.against]}  # fmt: skip
    for name in loaded[0]["end"]:
        report = seeds_report([(d["start"][name], d["end"][name]) for d in loaded], ks=(1, 2, 4))
        out[name] = report
        title = args.title or f"{len(loaded)} seeds ({seeds}): update 0 vs {args.update}"
        text.append(render_seeds_report(report, f"{title}, {name}"))
        if others:
            versus = seeds_report([(o["end"][name], d["end"][name])
                                   for d, o in zip(loaded, others)], ks=(1, 2, 4))  # fmt: skip
            out[f"{name} against"] = versus
            names = ", ".join(r.name for r in args.against)
            text.append(render_seeds_report(
                versus, f"update {args.update}: {args.runs[0].name}... against {names}, {name}",
                columns=(args.against[0].name + "...", args.runs[0].name + "..."),
            ))  # fmt: skip
    atomic_write_text(args.out, "\n\n".join(text))
    atomic_write_text(args.out.with_suffix(".json"), json.dumps(out, indent=2))
    print("\n\n".join(text))
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
