"""The learning report: what changed between two evaluations of a team on the same prompts.

A single success rate hides what a policy learned. :func:`learning_report` takes
two evaluations of a team on the same distinct prompts (one greedy episode and
``n`` sampled episodes per prompt, e.g. at the start and the end of training)
and reports, for the team (its graded role) and for each role:

* correctness and format, greedy and sampled, start and end, with 95% bootstrap
  intervals over prompts, and the paired gain (end minus start on the same
  prompts) with its interval;
* pass@k for ``k`` in ``ks`` (the unbiased estimator over the ``n`` samples);
* transitions of the greedy answer over the same prompts (wrong -> right,
  right -> wrong);
* what the answers are (``answer_kind`` of the env's credit info: right, off by
  one, sign, no answer, repeating an earlier role, other);
* copying: how often a role's answer equals one an earlier role gave
  (``copies_earlier``), and how often the copied answer is wrong.

Metrics an env does not report (``format_ok``, ``answer_kind``, ...) are left
out, never shown as 0. :func:`render_report` writes it as Markdown.

Example:
    >>> def ep(right, kind):
    ...     role = {"answer_correct": right, "format_ok": True, "answer_kind": kind}
    ...     return {"graded_role": "s", "success": right, "per_role": {"s": role}}
    >>> start = {"greedy": [ep(False, "off_by_one"), ep(True, "right")],
    ...          "sampled": [[ep(False, "other")] * 2, [ep(True, "right"), ep(False, "sign")]]}
    >>> end = {"greedy": [ep(True, "right"), ep(True, "right")],
    ...        "sampled": [[ep(True, "right")] * 2, [ep(True, "right")] * 2]}
    >>> r = learning_report(start, end, ks=(1, 2))
    >>> r["team"]["greedy"]["correct"]["start"], r["team"]["greedy"]["correct"]["end"]
    (0.5, 1.0)
    >>> r["team"]["transitions"], r["team"]["pass@2"]["start"]
    ({'wrong_to_right': 1, 'right_to_wrong': 0, 'right_to_right': 1, 'wrong_to_wrong': 0}, 0.5)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from flexmg.metrics import (
    bootstrap_ci_over_seeds,
    pass_at_k,
    per_prompt_ci,
    role_correct,
    role_format_ok,
)

__all__ = [
    "DEFAULT_KS",
    "learning_report",
    "render_report",
    "render_seeds_report",
    "seeds_report",
]

DEFAULT_KS = (1, 4, 8)
"""The ``k`` of pass@k the report gives (each needs at least ``k`` samples per prompt)."""

Episode = Mapping[str, Any]
Evaluation = Mapping[str, Any]
"""``{"greedy": [metrics per prompt], "sampled": [[metrics] * n per prompt]}``, prompts aligned."""

TEAM = "team"


def _role_metrics(m: Episode, role: str) -> Mapping[str, Any] | None:
    per_role = m.get("per_role") or {}
    name = m.get("graded_role") if role == TEAM else role
    found = per_role.get(name) if isinstance(per_role, Mapping) else None
    return found if isinstance(found, Mapping) else None


def _value(m: Episode, role: str, key: str) -> float | None:
    """``correct`` / ``format`` of one role (or the team) in one episode; None if unreported."""
    info = _role_metrics(m, role)
    if info is None:
        return None
    if key == "correct":
        if "answer_correct" not in info and "own_correct" not in info:
            return None
        return float(role_correct(info))
    if "format_ok" not in info and "format_error" not in info:
        return None
    return float(role_format_ok(info))


def _per_prompt(evaluation: Evaluation, mode: str, role: str, key: str) -> list[float] | None:
    """One value per prompt: the greedy episode's, or the mean over the sampled ones."""
    rows = evaluation.get(mode) or []
    out: list[float] = []
    for row in rows:
        episodes = [row] if mode == "greedy" else list(row)
        values = [v for v in (_value(e, role, key) for e in episodes) if v is not None]
        if not values:
            return None
        out.append(sum(values) / len(values))
    return out or None


def _compare(start: Sequence[float], end: Sequence[float]) -> dict[str, Any]:
    """Start, end and the paired gain over the same prompts, each with its interval."""
    if len(start) != len(end):
        raise ValueError(
            f"the two evaluations must cover the same prompts in the same order; got "
            f"{len(start)} and {len(end)} prompts"
        )
    gains = [b - a for a, b in zip(start, end)]
    mean = lambda xs: round(sum(xs) / len(xs), 4)  # noqa: E731
    return {
        "start": mean(start),
        "start_ci": per_prompt_ci(start),
        "end": mean(end),
        "end_ci": per_prompt_ci(end),
        "gain": mean(gains),
        "gain_ci": per_prompt_ci(gains),
    }


def _pass_at(evaluation: Evaluation, role: str, k: int) -> list[float] | None:
    out = []
    for row in evaluation.get("sampled") or []:
        values = [v for v in (_value(e, role, "correct") for e in row) if v is not None]
        if len(values) < k:
            return None
        out.append(pass_at_k(len(values), int(sum(values)), k))
    return out or None


def _transitions(start: Sequence[float], end: Sequence[float]) -> dict[str, int]:
    names = {(0, 1): "wrong_to_right", (1, 0): "right_to_wrong", (1, 1): "right_to_right",
             (0, 0): "wrong_to_wrong"}  # fmt: skip
    counts = Counter(names[(int(a >= 0.5), int(b >= 0.5))] for a, b in zip(start, end))
    return {name: counts.get(name, 0) for name in names.values()}


def _shares(evaluation: Evaluation, role: str, key: str) -> dict[str, dict[str, float]] | None:
    """Share of each value of ``key`` (e.g. ``answer_kind``) over greedy and sampled episodes."""
    out: dict[str, dict[str, float]] = {}
    for mode in ("greedy", "sampled"):
        rows = evaluation.get(mode) or []
        episodes = rows if mode == "greedy" else [e for row in rows for e in row]
        values = [info.get(key) for e in episodes if (info := _role_metrics(e, role))]
        values = [v for v in values if v is not None]
        if values:
            counts = Counter(str(v) for v in values)
            out[mode] = {k: round(c / len(values), 4) for k, c in sorted(counts.items())}
    return out or None


def _copying(evaluation: Evaluation, role: str) -> dict[str, float] | None:
    """Greedy share of episodes where the role copies an earlier answer, and a wrong one."""
    flags = []
    for e in evaluation.get("greedy") or []:
        info = _role_metrics(e, role)
        if info is not None and "copies_earlier" in info:
            flags.append((bool(info["copies_earlier"]), not role_correct(info)))
    if not flags:
        return None
    return {
        "copies": round(sum(c for c, _ in flags) / len(flags), 4),
        "copies_wrong": round(sum(c and w for c, w in flags) / len(flags), 4),
    }


def _section(start: Evaluation, end: Evaluation, role: str, ks: Sequence[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mode in ("greedy", "sampled"):
        figures = {}
        for key in ("correct", "format"):
            a, b = _per_prompt(start, mode, role, key), _per_prompt(end, mode, role, key)
            if a is not None and b is not None:
                figures[key] = _compare(a, b)
        if figures:
            out[mode] = figures
    for k in ks:
        a, b = _pass_at(start, role, k), _pass_at(end, role, k)
        if a is not None and b is not None:
            out[f"pass@{k}"] = _compare(a, b)
    a, b = (
        _per_prompt(start, "greedy", role, "correct"),
        _per_prompt(end, "greedy", role, "correct"),
    )
    if a is not None and b is not None:
        out["transitions"] = _transitions(a, b)
    kinds = {"start": _shares(start, role, "answer_kind"), "end": _shares(end, role, "answer_kind")}
    if any(kinds.values()):
        out["answer_kinds"] = kinds
    copying = {"start": _copying(start, role), "end": _copying(end, role)}
    if any(copying.values()):
        out["copying"] = copying
    return out


def learning_report(
    start: Evaluation,
    end: Evaluation,
    ks: Sequence[int] = DEFAULT_KS,
    critic_ev: Mapping[str, Mapping[str, float]] | None = None,
) -> dict[str, Any]:
    """The report of ``start`` vs ``end`` (see the module docstring).

    Args:
        start: the first evaluation (e.g. before training).
        end: the second, on the same prompts in the same order.
        ks: the ``k`` of pass@k (skipped where there are fewer samples).
        critic_ev: optional explained variance of the critic per role at start/end.
    """
    greedy = start.get("greedy") or []
    for mode in ("greedy", "sampled"):
        a, b = len(start.get(mode) or []), len(end.get(mode) or [])
        if a != b:
            raise ValueError(
                f"the two evaluations must cover the same prompts in the same order; got "
                f"{a} and {b} {mode} prompts"
            )
    roles: list[str] = []
    for m in greedy:
        for role in m.get("per_role") or {}:
            if role not in roles:
                roles.append(role)
    sampled = start.get("sampled") or []
    report: dict[str, Any] = {
        "prompts": len(greedy),
        "samples_per_prompt": min((len(r) for r in sampled), default=0),
        TEAM: _section(start, end, TEAM, ks),
        "roles": {role: _section(start, end, role, ks) for role in roles},
    }
    if critic_ev:
        report["critic_ev"] = {r: dict(v) for r, v in critic_ev.items()}
    return report


def _figure(f: Mapping[str, Any]) -> str:
    def ci(v: Any) -> str:
        return f" [{v[0]:.3f}, {v[1]:.3f}]" if v else ""

    return (
        f"{f['start']:.3f}{ci(f['start_ci'])} | {f['end']:.3f}{ci(f['end_ci'])} | "
        f"{f['gain']:+.3f}{ci(f['gain_ci'])}"
    )


def render_report(report: Mapping[str, Any], title: str = "Learning report") -> str:
    """The report as Markdown: one table of figures per role, then answers and copying.

    >>> print(render_report({"prompts": 0, "samples_per_prompt": 0, "team": {}, "roles": {}}))
    # Learning report
    <BLANKLINE>
    0 distinct prompts, 0 samples per prompt. Intervals: 95% bootstrap over prompts.
    <BLANKLINE>
    """
    lines = [
        f"# {title}",
        "",
        f"{report['prompts']} distinct prompts, {report['samples_per_prompt']} samples per "
        "prompt. Intervals: 95% bootstrap over prompts.",
        "",
    ]
    sections = [("team (graded role)", report.get(TEAM) or {})]
    sections += [(f"role `{r}`", s) for r, s in (report.get("roles") or {}).items()]
    for name, section in sections:
        rows = [
            f"| {mode} {key} | {_figure(fig)} |"
            for mode in ("greedy", "sampled")
            for key, fig in (section.get(mode) or {}).items()
        ]
        rows += [
            f"| {key} | {_figure(fig)} |" for key, fig in section.items() if key.startswith("pass@")
        ]
        if not rows:
            continue
        lines += [f"## {name}", "", "| figure | start | end | gain (paired) |", "|---|---|---|---|"]
        lines += rows + [""]
        if "transitions" in section:
            t = section["transitions"]
            lines.append(
                f"Greedy answers, same prompts: {t['wrong_to_right']} wrong -> right, "
                f"{t['right_to_wrong']} right -> wrong, {t['right_to_right']} stayed right, "
                f"{t['wrong_to_wrong']} stayed wrong."
            )
        for when in ("start", "end"):
            kinds = ((section.get("answer_kinds") or {}).get(when) or {}).get("greedy")
            if kinds:
                text = ", ".join(f"{k} {v:.3f}" for k, v in kinds.items())
                lines.append(f"Greedy answers at the {when}: {text}.")
            copying = (section.get("copying") or {}).get(when)
            if copying:
                lines.append(
                    f"Copying at the {when}: {copying['copies']:.3f} of answers repeat an earlier "
                    f"role's ({copying['copies_wrong']:.3f} a wrong one)."
                )
        lines.append("")
    if report.get("critic_ev"):
        lines += ["## critic", "", "| role | explained variance |", "|---|---|"]
        for role, ev in report["critic_ev"].items():
            lines.append(f"| {role} | " + ", ".join(f"{k} {v:.3f}" for k, v in ev.items()) + " |")
        lines.append("")
    return "\n".join(lines)


# ----------------------------------------------------------------- several seeds
def _prompt_ids(evaluation: Evaluation) -> list[Any]:
    return [m.get("prompt_id", m.get("task_id")) for m in evaluation.get("greedy") or []]


def _over_seeds(start: list[list[float]], end: list[list[float]]) -> dict[str, Any]:
    """Means over seeds and prompts, with two-level intervals (seeds, then shared prompts)."""

    def table(rows: list[list[float]]) -> list[dict[str, list[float]]]:
        return [{str(i): [v] for i, v in enumerate(row)} for row in rows]

    def interval(rows: list[list[float]]) -> list[float] | None:
        ci = bootstrap_ci_over_seeds(table(rows), shared_prompts=True)
        return [round(x, 4) for x in ci] if ci else None

    gains = [[b - a for a, b in zip(sa, sb)] for sa, sb in zip(start, end)]
    mean = lambda rows: round(sum(sum(r) / len(r) for r in rows) / len(rows), 4)  # noqa: E731
    return {
        "start": mean(start),
        "start_ci": interval(start),
        "end": mean(end),
        "end_ci": interval(end),
        "gain": mean(gains),
        "gain_ci": interval(gains),
        "gain_per_seed": [round(sum(g) / len(g), 4) for g in gains],
    }


def _seeds_section(
    pairs: Sequence[tuple[Evaluation, Evaluation]], role: str, ks: Sequence[int]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mode in ("greedy", "sampled"):
        figures = {}
        for key in ("correct", "format"):
            a = [_per_prompt(s, mode, role, key) for s, _ in pairs]
            b = [_per_prompt(e, mode, role, key) for _, e in pairs]
            if all(x is not None for x in a + b):
                figures[key] = _over_seeds(a, b)  # type: ignore[arg-type]
        if figures:
            out[mode] = figures
    for k in ks:
        a = [_pass_at(s, role, k) for s, _ in pairs]
        b = [_pass_at(e, role, k) for _, e in pairs]
        if all(x is not None for x in a + b):
            out[f"pass@{k}"] = _over_seeds(a, b)  # type: ignore[arg-type]
    moved: Counter[str] = Counter()
    for s, e in pairs:
        was = _per_prompt(s, "greedy", role, "correct")
        now = _per_prompt(e, "greedy", role, "correct")
        if was is not None and now is not None:
            moved.update(_transitions(was, now))
    if moved:
        out["transitions"] = dict(moved)
    return out


def seeds_report(
    pairs: Sequence[tuple[Evaluation, Evaluation]], ks: Sequence[int] = DEFAULT_KS
) -> dict[str, Any]:
    """Start vs end of several training seeds, all evaluated on the same prompts.

    ``pairs[s]`` is seed ``s``'s ``(start, end)`` (as for :func:`learning_report`).
    Each figure is the mean over seeds of the mean over prompts; its 95% interval
    resamples the seeds, then one shared set of prompts (so a gain some seeds do not
    repeat widens it); ``gain_per_seed`` lists each seed's own paired gain;
    transitions of the greedy answers are summed over seeds.

    >>> def ev(*right):
    ...     ep = lambda r: {"graded_role": "s", "prompt_id": None,
    ...                     "per_role": {"s": {"answer_correct": r}}}
    ...     return {"greedy": [ep(r) for r in right], "sampled": [[ep(r)] for r in right]}
    >>> r = seeds_report([(ev(0, 0, 1), ev(1, 1, 1)), (ev(0, 0, 0), ev(1, 0, 0))], ks=(1,))
    >>> r["team"]["greedy"]["correct"]["gain_per_seed"], r["team"]["transitions"]["wrong_to_right"]
    ([0.6667, 0.3333], 3)
    """
    if not pairs:
        raise ValueError("seeds_report needs at least one (start, end) pair of evaluations")
    first = _prompt_ids(pairs[0][0])
    for k, (s, e) in enumerate(pairs):
        for name, ev in (("start", s), ("end", e)):
            if _prompt_ids(ev) != first:
                raise ValueError(
                    f"seed {k}'s {name} evaluation covers other prompts than seed 0's start: "
                    "evaluate every seed on the same prompts (same env, split and prompt count)"
                )
    roles: list[str] = []
    for m in pairs[0][0].get("greedy") or []:
        for role in m.get("per_role") or {}:
            if role not in roles:
                roles.append(role)
    return {
        "seeds": len(pairs),
        "prompts": len(first),
        "samples_per_prompt": min((len(r) for r in pairs[0][0].get("sampled") or []), default=0),
        TEAM: _seeds_section(pairs, TEAM, ks),
        "roles": {role: _seeds_section(pairs, role, ks) for role in roles},
    }


def render_seeds_report(
    report: Mapping[str, Any],
    title: str = "Learning over seeds",
    columns: tuple[str, str] = ("start", "end"),
) -> str:
    """:func:`seeds_report` as Markdown: one table per role, each seed's gain beside the mean.

    ``columns`` names the two sides (e.g. ``("single agent", "team")`` when the
    pairs are two runs' ends rather than a start and an end).

    >>> print(render_seeds_report({"seeds": 0, "prompts": 0, "samples_per_prompt": 0,
    ...                            "team": {}, "roles": {}}).splitlines()[2])
    0 training seeds, each on the same 0 distinct prompts (0 samples per prompt). Intervals: 95% bootstrap over seeds, then prompts.
    """
    lines = [
        f"# {title}",
        "",
        f"{report['seeds']} training seeds, each on the same {report['prompts']} distinct "
        f"prompts ({report['samples_per_prompt']} samples per prompt). Intervals: 95% "
        "bootstrap over seeds, then prompts.",
        "",
    ]
    sections = [("team (graded role)", report.get(TEAM) or {})]
    sections += [(f"role `{r}`", s) for r, s in (report.get("roles") or {}).items()]
    for name, section in sections:
        named = [
            (f"{mode} {key}", fig)
            for mode in ("greedy", "sampled")
            for key, fig in (section.get(mode) or {}).items()
        ]
        named += [(key, fig) for key, fig in section.items() if key.startswith("pass@")]
        if not named:
            continue
        lines += [
            f"## {name}",
            "",
            f"| figure | {columns[0]} | {columns[1]} | difference (paired) | per seed |",
            "|---|---|---|---|---|",
        ]
        for label, fig in named:
            per_seed = ", ".join(f"{g:+.3f}" for g in fig["gain_per_seed"])
            lines.append(f"| {label} | {_figure(fig)} | {per_seed} |")
        lines.append("")
        if "transitions" in section:
            t = section["transitions"]
            lines.append(
                f"Greedy answers, same prompts, all seeds: {t['wrong_to_right']} wrong -> right, "
                f"{t['right_to_wrong']} right -> wrong, {t['right_to_right']} stayed right, "
                f"{t['wrong_to_wrong']} stayed wrong."
            )
            lines.append("")
    return "\n".join(lines)
