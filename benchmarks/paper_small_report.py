"""The report of ``benchmarks/paper_small.py``: statistics over seeds and prompts, tables, chart.

Example:
    >>> format_outcome(None, "success", 5)
    'n/a'
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from paper_small_plan import (
    OUTCOMES,
    SINGLE,
    SINGLE_START,
    START,
    TITLES,
    TOKEN_TOLERANCE,
    VARIANTS,
    WARMSTART,
    Job,
    team_size,
)


def measured_budget(run_dir: Path) -> dict[str, int] | None:
    """A run's training updates, episodes, actions and generated tokens (``metrics.jsonl``).

    ``None`` when the run has no such records (not trained, or trained before the
    trainer counted actions and tokens).
    """
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        return None
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    train = [r for r in records if r.get("kind") == "train"]
    if not train or any("actions" not in r or "generated_tokens" not in r for r in train):
        return None
    total = {k: sum(int(r[k]) for r in train) for k in ("episodes", "actions", "generated_tokens")}
    return {"updates": len(train), **total}


def episodes_by_seed(results: Mapping[str, Any], entry: str, env: str) -> dict[int, list]:
    """The leaderboard's episode records of one entry on one env, per seed."""
    return {
        int(cell["seed"]): list(cell.get("episodes") or [])
        for cell in results.get("cells", {}).values()
        if cell.get("current", True) and cell.get("entry") == entry and cell.get("env") == env
    }


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def outcome_stats(episodes: Mapping[int, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """Success, correctness and format of one column of one row, from its seeds' episodes.

    Each outcome's ``mean`` is the mean over seeds of that seed's episode mean, its
    ``ci`` the two-level bootstrap interval (seeds, then prompts with their episodes);
    ``prompts`` counts the distinct prompts over all seeds.
    """
    from flexmg.metrics import bootstrap_ci_over_seeds, episode_mean, prompt_key, team_outcome

    seeds = sorted(episodes)
    keyed = [[(prompt_key(e["metrics"], i), e["metrics"]) for i, e in enumerate(episodes[s])]
             for s in seeds]  # fmt: skip
    out: dict[str, Any] = {
        "seeds": seeds,
        "episodes": sum(len(eps) for eps in keyed),
        "prompts": len({p for eps in keyed for p, _ in eps}),
    }
    for outcome in OUTCOMES:
        groups: list[dict[str, list[float]]] = []
        for eps in keyed:
            values: dict[str, list[float]] = {}
            for prompt, metrics in eps:
                values.setdefault(prompt, []).append(team_outcome(metrics)[outcome])
            groups.append(values)
        means = [m for g in groups if (m := episode_mean(g)) is not None]
        ci = bootstrap_ci_over_seeds(groups)
        out[outcome] = {"mean": _mean(means) if means else None, "ci": list(ci) if ci else None}
    return out


PAIRS = [
    ("marft", "ippo"), ("marft", "group"), ("ippo", "group"), ("marft", "marft-shared"),
    ("marft", SINGLE), ("ippo", SINGLE), ("group", SINGLE),
    ("marft", START), ("marft-shared", START), ("ippo", START), ("group", START),
    (SINGLE, SINGLE_START),
]  # fmt: skip
"""The paired differences reported (first minus second) where both columns ran; minus a
start: the gain from training (the single agent's from its own start, on its env)."""


def graded_answer(metrics: Mapping[str, Any]) -> str | None:
    """The graded role's extracted answer (``None`` when the record has none).

    >>> graded_answer({"graded_role": "v", "per_role": {"v": {"answer": "34"}}})
    '34'
    """
    role = (metrics.get("per_role") or {}).get(str(metrics.get("graded_role")))
    return None if not isinstance(role, Mapping) else role.get("answer")


def paired_difference(
    first: Mapping[int, Sequence[Mapping[str, Any]]],
    second: Mapping[int, Sequence[Mapping[str, Any]]],
    outcome: str = "success",
) -> dict[str, Any] | None:
    """``first`` minus ``second`` on the same held-out episodes (same seed, env seed, prompt).

    The leaderboard plays every column's seed-``s`` run on the same env seeds, so each
    episode of one column has a twin in the other. ``mean``: the mean over seeds of
    each seed's mean paired difference; ``ci``: the two-level bootstrap of those
    differences (seeds, then prompts); ``answers_differ``: the share of pairs whose
    graded answers differ (0.0 means the two columns answered alike everywhere, i.e.
    the comparison cannot separate them). ``None`` when no episode pairs up.

    >>> ep = lambda s, ok, a: {"seed": s, "metrics": {"prompt_id": f"p{s}", "success": ok,
    ...     "graded_role": "v", "per_role": {"v": {"answer": a}}}}
    >>> d = paired_difference({0: [ep(1, True, "3"), ep(2, True, "4")]},
    ...                       {0: [ep(1, False, "2"), ep(2, True, "4")]})
    >>> d["mean"], d["pairs"], d["answers_differ"]
    (0.5, 2, 0.5)
    """
    from flexmg.metrics import bootstrap_ci_over_seeds, episode_mean, prompt_key, team_outcome

    groups: list[dict[str, list[float]]] = []
    pairs = differ = 0
    for seed in sorted(set(first) & set(second)):
        twins = {(e.get("seed"), prompt_key(e["metrics"])): e for e in second[seed]}
        values: dict[str, list[float]] = {}
        for e in first[seed]:
            prompt = prompt_key(e["metrics"])
            twin = twins.get((e.get("seed"), prompt))
            if twin is None:
                continue
            a, b = team_outcome(e["metrics"])[outcome], team_outcome(twin["metrics"])[outcome]
            values.setdefault(prompt, []).append(a - b)
            pairs += 1
            differ += graded_answer(e["metrics"]) != graded_answer(twin["metrics"])
        if values:
            groups.append(values)
    if not pairs:
        return None
    means = [m for g in groups if (m := episode_mean(g)) is not None]
    ci = bootstrap_ci_over_seeds(groups)
    return {
        "mean": _mean(means),
        "ci": list(ci) if ci else None,
        "seeds": len(groups),
        "pairs": pairs,
        "answers_differ": differ / pairs,
    }


def budget_check(columns: Mapping[str, Mapping[str, Any]], planned: int) -> dict[str, Any]:
    """Are a row's budgets equal? Actions as planned in every run, tokens within tolerance.

    >>> budget_check({"a": {"actions": [8, 8], "tokens_mean": 100.0},
    ...               "b": {"actions": [8], "tokens_mean": 105.0}}, planned=8)["equal"]
    True
    """
    actions = [a for c in columns.values() for a in c["actions"]]
    tokens = [c["tokens_mean"] for c in columns.values() if c["tokens_mean"]]
    spread = max(tokens) / min(tokens) - 1 if tokens else None
    actions_ok = bool(actions) and all(a == planned for a in actions)
    tokens_ok = spread is not None and spread <= TOKEN_TOLERANCE
    return {
        "planned_actions": planned,
        "actions_as_planned": actions_ok,
        "token_spread": spread,
        "equal": actions_ok and tokens_ok,
    }


def row_report(
    row: str, jobs: Sequence[Job], results: Mapping[str, Any], args: argparse.Namespace
) -> dict[str, Any]:
    """One row of the tables: every column's outcomes and measured budget, and the check."""
    columns: dict[str, Any] = {}
    episodes: dict[str, dict[int, list]] = {}
    for column in VARIANTS:
        runs = [j for j in jobs if j.row == row and j.column == column]
        if not runs:
            continue
        budgets = [b for j in runs if (b := measured_budget(j.run_dir)) is not None]
        tokens = [b["generated_tokens"] for b in budgets]
        episodes[column] = episodes_by_seed(results, runs[0].variant, runs[0].env)
        columns[column] = {
            "entry": runs[0].variant,
            "env": runs[0].env,
            "runs": len(runs),
            **outcome_stats(episodes[column]),
            "actions": [b["actions"] for b in budgets],
            "tokens": tokens,
            "tokens_mean": _mean(tokens) if tokens else None,
        }
    planned = args.budget * args.episodes_per_update * team_size(row)
    budget = budget_check(columns, planned)
    start = episodes_by_seed(results, START, row)
    if any(start.values()):
        episodes[START] = start
        columns = {START: {"entry": START, "env": row, **outcome_stats(start)}, **columns}
    if SINGLE in columns:
        episodes[SINGLE_START] = episodes_by_seed(results, START, columns[SINGLE]["env"])
    paired = {
        f"{a} - {b}": diff
        for a, b in PAIRS
        if a in episodes and b in episodes
        and (diff := paired_difference(episodes[a], episodes[b])) is not None
    }  # fmt: skip
    return {
        "env": row, "agents": team_size(row), "columns": columns, "budget": budget,
        "paired": paired,
    }  # fmt: skip


# ------------------------------------------------------------------------ report
def model_note(jobs: Sequence[Job]) -> dict[str, Any]:
    """The model the runs trained (from a run's config) and the tiny model's weights sha."""
    model = "tiny"
    for job in jobs:
        path = job.run_dir / "config.json"
        if path.is_file():
            model = str(json.loads(path.read_text()).get("policy_config", {}).get("model", model))
            break
    sha = None
    if model == "tiny" and WARMSTART.is_file():
        sha = json.loads(WARMSTART.read_text()).get("weights_sha256")
    return {"model": model, "weights_sha256": sha}


def format_outcome(column: Mapping[str, Any] | None, outcome: str, seeds: int) -> str:
    """``0.420 [0.310, 0.530]`` (``*``: not every seed evaluated; ``n/a``: none).

    >>> format_outcome({"seeds": [0], "success": {"mean": 0.5, "ci": [0.25, 0.75]}}, "success", 2)
    '0.500 [0.250, 0.750]*'
    """
    if not column or column[outcome]["mean"] is None:
        return "n/a"
    value, ci = column[outcome], column[outcome]["ci"]
    text = f"{value['mean']:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")
    return text + ("*" if len(column["seeds"]) < seeds else "")


def shown_columns(rows: Sequence[Mapping[str, Any]], start: bool = True) -> list[str]:
    """The columns some row has, in table order (the untrained start first, if ``start``)."""
    order = [START, *VARIANTS] if start else VARIANTS
    return [c for c in order if any(c in r["columns"] for r in rows)]


def outcome_table(rows: Sequence[Mapping[str, Any]], outcome: str, seeds: int) -> list[str]:
    """A Markdown table of one outcome: a row per env, a column per variant."""
    columns = shown_columns(rows)
    lines = [
        "| env | prompts | " + " | ".join(TITLES[c] for c in columns) + " |",
        "|---|---|" + "---|" * len(columns),
    ]
    for r in rows:
        prompts = sorted({r["columns"][c]["prompts"] for c in columns if c in r["columns"]})
        cells = [format_outcome(r["columns"].get(c), outcome, seeds) for c in columns]
        lines.append(f"| {r['env']} | {'/'.join(map(str, prompts))} | " + " | ".join(cells) + " |")
    return lines


def budget_cell(column: Mapping[str, Any] | None) -> str:
    """``actions / tokens`` of a column's runs (distinct action counts, mean tokens).

    >>> budget_cell({"actions": [64, 64], "tokens_mean": 655.5})
    '64 / 656'
    """
    if not column or not column["actions"]:
        return "n/a"
    actions = "/".join(map(str, sorted(set(column["actions"]))))
    return f"{actions} / {column['tokens_mean']:.0f}"


def budget_table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """A Markdown table of the measured budgets: actions and mean generated tokens per run."""
    columns = shown_columns(rows, start=False)
    lines = [
        "| env | planned actions | " + " | ".join(TITLES[c] for c in columns)
        + " | token spread | equal |",
        "|---|---|" + "---|" * len(columns) + "---|---|",
    ]  # fmt: skip
    for r in rows:
        b = r["budget"]
        spread = "n/a" if b["token_spread"] is None else f"{100 * b['token_spread']:.1f}%"
        cells = [budget_cell(r["columns"].get(c)) for c in columns]
        cells += [spread, "yes" if b["equal"] else "NO"]
        lines.append(f"| {r['env']} | {b['planned_actions']} | " + " | ".join(cells) + " |")
    return lines


def paired_table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """A Markdown table of the paired differences in team success, a line per env and pair."""
    lines = [
        "| env | difference | team success, paired [95% CI] | seeds | paired episodes "
        "| graded answers differ |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        for name, d in (r.get("paired") or {}).items():
            a, b = name.split(" - ")
            ci = f" [{d['ci'][0]:+.3f}, {d['ci'][1]:+.3f}]" if d["ci"] else ""
            lines.append(
                f"| {r['env']} | {TITLES[a]} - {TITLES[b]} | {d['mean']:+.3f}{ci} | {d['seeds']} "
                f"| {d['pairs']} | {d['answers_differ']:.1%} |"
            )
    return lines


def report_markdown(report: Mapping[str, Any]) -> str:
    """``paper_small.md``: what was run, how it was measured, the tables."""
    s, model = report["settings"], report["model"]
    sha = model["weights_sha256"]
    titles = [TITLES[v] for v in VARIANTS if v in s["variants"]]
    names = " and ".join(filter(None, [", ".join(titles[:-1]), titles[-1]]))
    lines = [
        f"# {names} at equal budget (small scale)",
        "",
        f"Date: {report['date']}. Model: `{model['model']}`"
        + (f" (warm start weights_sha256 `{sha}`)." if sha else "."),
        "",
        f"Reproduce: `{report['command']}`",
        "",
        f"Budget per run: {s['budget']} PPO updates. A k-agent team plays "
        f"{s['episodes_per_update']} episodes per update (k actions each); the single agent "
        f"of the k-agent row plays k x {s['episodes_per_update']} one-action episodes per "
        "update on the family's 1-agent env: the same actions. Generated tokens are measured: "
        "a row is `equal` when every run sampled the planned actions and the columns' mean "
        f"tokens per run differ by at most {100 * s['token_tolerance']:.0f}% (max/min - 1).",
        "",
        f"Evaluation: {s['eval_episodes']} held-out episodes per run (eval split, greedy) for "
        f"training seeds {s['seeds']}; `prompts`: distinct held-out prompts over all seeds. "
        "Mean over seeds of each seed's episode mean, [95% CI]: two-level bootstrap (seeds "
        "resampled, then prompts within each seed, each with all its episodes). "
        "Correctness and format are the graded role's answer. `start (untrained)`: the "
        "model every run starts from, on the same episodes. `*`: not every seed "
        "evaluated; `n/a`: not run.",
        "",
    ]
    for outcome, title in OUTCOMES.items():
        lines += [f"## {title}", "", *outcome_table(report["rows"], outcome, len(s["seeds"])), ""]
    if any(r.get("paired") for r in report["rows"]):
        lines += [
            "## Paired differences",
            "",
            "First column minus second on the same held-out episodes (each seed's runs play "
            "the same env seeds): the mean over seeds of each seed's mean difference, with the "
            "two-level bootstrap interval. Minus a start: the gain from training (the single "
            "agent's from its own start on its env). `graded answers differ`: the share of "
            "those episodes where the two graded answers are not the same text; near 0% "
            "means the two ended with the same behaviour, whatever the interval says.",
            "",
            *paired_table(report["rows"]),
            "",
        ]
    lines += ["## Budget per run (measured: actions / mean generated tokens)", ""]
    lines += [*budget_table(report["rows"]), ""]
    if s["bounds"]:
        lines += [f"Scripted bounds ({', '.join(s['bounds'])}): `leaderboard/leaderboard.md`.", ""]
    failed = [t for t in report["training"] if t["status"].startswith("FAILED")]
    if failed:
        lines += ["Training failures:", "", *(f"- {t['job']}: {t['status']}" for t in failed), ""]
    return "\n".join(lines)


def write_chart(report: Mapping[str, Any], path: Path) -> None:
    """``paper_small.png``: team success per env and column, the 95% CI as error bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from flexmg.io import atomic_write_via

    rows = report["rows"]
    columns = shown_columns(rows)
    width = 0.8 / max(1, len(columns))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(rows)), 4))
    for i, column in enumerate(columns):
        xs, ys, low, high = [], [], [], []
        for x, r in enumerate(rows):
            value = (r["columns"].get(column) or {}).get("success") or {}
            if value.get("mean") is None:
                continue
            lo, hi = value["ci"] or (value["mean"], value["mean"])
            xs.append(x + (i - (len(columns) - 1) / 2) * width)
            ys.append(value["mean"])
            low.append(value["mean"] - lo)
            high.append(hi - value["mean"])
        ax.bar(xs, ys, width, yerr=[low, high], capsize=3, label=TITLES[column])
    ax.set_xticks(range(len(rows)), [r["env"] for r in rows])
    ax.set_ylabel("held-out team success")
    ax.set_ylim(0, 1.02)
    ax.set_title("equal budget; 95% CI over seeds and prompts")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    try:
        atomic_write_via(path, lambda fh: fig.savefig(fh, format="png", dpi=100))
    finally:
        plt.close(fig)


def build_report(
    args: argparse.Namespace,
    jobs: Sequence[Job],
    results: Mapping[str, Any],
    training: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """Everything ``paper_small.{md,json,png}`` show."""
    argv = args.command if args.command is not None else shlex.join(sys.argv[1:])
    settings = {
        k: getattr(args, k)
        for k in ("budget", "episodes_per_update", "seeds", "envs", "variants", "eval_episodes",
                  "train_eval_episodes", "bounds")
    }  # fmt: skip
    return {
        "command": f"python benchmarks/paper_small.py {argv}".strip(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "model": model_note(jobs),
        "settings": {**settings, "token_tolerance": TOKEN_TOLERANCE},
        "rows": [row_report(row, jobs, results, args) for row in args.envs],
        "training": list(training),
    }


def write_outputs(report: Mapping[str, Any], out: Path) -> list[Path]:
    """``OUT/paper_small.{md,json,png}`` (atomic writes)."""
    from flexmg.io import atomic_write_json, atomic_write_text

    paths = [out / "paper_small.md", out / "paper_small.json", out / "paper_small.png"]
    atomic_write_text(paths[0], report_markdown(report))
    atomic_write_json(paths[1], report, indent=2)
    write_chart(report, paths[2])
    return paths
