"""Held-out evaluation: a team's episodes over seeds, their figures with intervals, pass@k.

The one evaluation path, torch-free. :func:`evaluate` plays one held-out episode
per seed (``split="eval"``) with the episode driver (:func:`flexmg.episodes.play_batch`)
and returns each episode's metrics; :func:`evaluation_record` is their summary
(:mod:`flexmg.metrics`: success, format and correctness told apart, the team's
being the graded role's) with 95% bootstrap intervals over distinct prompts.
:func:`measure_pass_at_k` plays ``prompts`` distinct held-out prompts once
greedily and ``k`` times sampled. A training run's evaluations, ``flexmg eval``,
leaderboards, the warm start's step-0 figures and ``benchmarks/pass_at_k.py`` all
go through here; an LLM team decodes with the learner's own decoder
(:mod:`flexmg.models.sampling`), so what is measured is what trains.

Example:
    >>> m = [{"task_id": "t1", "success": True, "graded_role": "s",
    ...       "per_role": {"s": {"own_correct": True, "format_error": False}}},
    ...      {"task_id": "t2", "success": False, "graded_role": "s",
    ...       "per_role": {"s": {"own_correct": None, "format_error": False}}}]
    >>> out = evaluation_record(m)
    >>> out["prompts"], out["success_rate"], out["format_rate"], out["per_role"]["s"]["correct"]
    (2, 0.5, 0.5, 0.5)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from flexmg.episodes import play_batch
from flexmg.metrics import (
    bootstrap_ci,
    pass_at_k,
    prompt_intervals,
    summarize_episodes,
    team_outcome,
)
from flexmg.protocols import VectorEnv

__all__ = [
    "IDENTITY_META",
    "distinct_prompt_seeds",
    "distinct_seed_plan",
    "drop_unreported",
    "BatchPlayer",
    "evaluate",
    "evaluate_batches",
    "evaluation_record",
    "measure_pass_at_k",
    "play_prompts",
    "task_key",
]


def evaluation_record(metrics: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The evaluation's figures: :func:`flexmg.metrics.summarize_episodes` with intervals.

    Returns ``episodes``, ``prompts`` (distinct prompts), ``team_reward`` (and its
    ``team_reward_ci``), ``rounds`` (= ``mean_rounds``: rounds played per episode),
    ``success_rate``, ``format_rate``, ``correct_rate`` (team = graded role) and their
    ``*_ci`` (:func:`flexmg.metrics.prompt_intervals`), ``per_role`` (``success``,
    ``format``, ``correct``, ``truncated``) and ``format_error_rate`` per role when
    the env reports it. A rate no episode's metrics report is absent, not 0.0
    (:func:`drop_unreported`).
    """
    s = summarize_episodes(metrics)
    ci = prompt_intervals(metrics)
    out: dict[str, Any] = {
        "episodes": s["episodes"],
        "prompts": s["prompts"],
        "team_reward": s["team_reward"],
        "team_reward_ci": ci["team_reward"],
        "rounds": s["rounds"],
        "mean_rounds": s["mean_rounds"],
    }
    for name in ("success_rate", "format_rate", "correct_rate"):
        out[name] = s[name]
        out[f"{name}_ci"] = ci[name]
    out["per_role"] = {role: dict(rates) for role, rates in s["per_role"].items()}
    if s["format_error"]:
        out["format_error_rate"] = s["format_error"]
    return drop_unreported(out, metrics)


def _reports(role_metrics: Any, keys: tuple[str, ...]) -> bool:
    return isinstance(role_metrics, Mapping) and any(k in role_metrics for k in keys)


FORMAT_KEYS = ("format_ok", "own_correct")
"""Per-role metrics a format rate comes from (:func:`flexmg.metrics.role_format_ok`)."""
CORRECT_KEYS = ("answer_correct", "own_correct")
"""Per-role metrics a correctness rate comes from (:func:`flexmg.metrics.role_correct`)."""


def drop_unreported(
    record: dict[str, Any], episodes: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """``record`` (an evaluation's) without the rates no episode's metrics report.

    The team's ``format_rate``/``correct_rate`` (and ``_ci``) go when the graded
    role of no episode reports them, each role's ``format``/``correct`` when that
    role never does: an env that does not say whether an answer was well-formed
    has no format rate, rather than a rate of 0.0.

    >>> rec = {"format_rate": 0.0, "format_rate_ci": None, "correct_rate": 1.0,
    ...        "per_role": {"a": {"format": 0.0, "correct": 1.0}}}
    >>> drop_unreported(rec, [{"graded_role": "a", "per_role": {"a": {"answer_correct": True}}}])
    {'correct_rate': 1.0, 'per_role': {'a': {'correct': 1.0}}}
    """
    out = dict(record)
    graded = [
        (m.get("per_role") or {}).get(m.get("graded_role"))
        for m in episodes
        if isinstance(m.get("per_role"), Mapping)
    ]
    for name, keys in (("format", FORMAT_KEYS), ("correct", CORRECT_KEYS)):
        if not any(_reports(rm, keys) for rm in graded):
            out.pop(f"{name}_rate", None)
            out.pop(f"{name}_rate_ci", None)
    if isinstance(out.get("per_role"), Mapping):
        per_role = {}
        for role, rates in out["per_role"].items():
            said = [(m.get("per_role") or {}).get(role) for m in episodes]
            per_role[role] = {
                k: v
                for k, v in dict(rates).items()
                if k not in ("format", "correct")
                or any(_reports(rm, FORMAT_KEYS if k == "format" else CORRECT_KEYS) for rm in said)
            }
        out["per_role"] = per_role
    return out


IDENTITY_META = frozenset({"index"})
"""Task fields that name a task without changing its episode."""


def task_key(task: Any) -> str:
    """What makes two drawn tasks the same episode for an actor that acts the same each time.

    Prompt, answer and ``meta`` (hidden tests, difficulty, ...) count; the task's
    name does not (``id``, ``meta["index"]``): generated families draw one problem
    under many names.

    >>> from flexmg.tasks import Task
    >>> a = Task("gen/1", "What is 2 + 3?", "5", {"index": 1, "difficulty": 1})
    >>> b = Task("gen/9", "What is 2 + 3?", "5", {"index": 9, "difficulty": 1})
    >>> task_key(a) == task_key(b), task_key(a) == task_key(Task("gen/1", "What is 2 + 3?", "6"))
    (True, False)
    """
    meta = {k: v for k, v in task.meta.items() if k not in IDENTITY_META}
    return json.dumps([task.prompt, task.answer, meta], sort_keys=True, default=repr)


def distinct_seed_plan(
    env_id: str, seeds: Sequence[int], env_kwargs: Mapping[str, Any] | None = None
) -> tuple[list[int], list[int]]:
    """Which seeds draw a task not drawn before, and which of those each seed repeats.

    Resets one env of ``env_id`` with every seed (no action is taken) and returns
    ``(played, copy_of)``: ``played`` are the seeds whose task is new, in order, and
    ``copy_of[i]`` is the index in ``played`` of the seed that drew ``seeds[i]``'s task.

    >>> played, copy_of = distinct_seed_plan("echo", [0, 1, 2])
    >>> len(copy_of), all(played[j] <= s for j, s in zip(copy_of, [0, 1, 2]))
    (3, True)
    """
    import flexmg

    env = flexmg.make(env_id, **dict(env_kwargs or {}))
    played: list[int] = []
    first: dict[str, int] = {}
    copy_of: list[int] = []
    try:
        for s in seeds:
            env.reset(seed=int(s))
            key = task_key(env.task)
            if key not in first:
                first[key] = len(played)
                played.append(int(s))
            copy_of.append(first[key])
    finally:
        env.close()
    return played, copy_of


def distinct_prompt_seeds(
    env_id: str, prompts: int, seed: int = 0, env_kwargs: Mapping[str, Any] | None = None,
    max_draws: int | None = None,
) -> list[int]:  # fmt: skip
    """The first seeds from ``seed`` on whose tasks are distinct, ``prompts`` of them.

    An env with fewer distinct tasks gives all it finds in ``max_draws`` seeds
    (default ``max(1000, 50 * prompts)``).

    >>> len(distinct_prompt_seeds("math-2agent", 5, env_kwargs={"split": "eval"}))
    5
    """
    import flexmg

    draws = max_draws if max_draws is not None else max(1000, 50 * prompts)
    env = flexmg.make(env_id, **dict(env_kwargs or {}))
    seen: set[str] = set()
    found: list[int] = []
    try:
        for s in range(seed, seed + draws):
            if len(found) >= prompts:
                break
            env.reset(seed=s)
            key = task_key(env.task)
            if key not in seen:
                seen.add(key)
                found.append(s)
    finally:
        env.close()
    return found


BatchPlayer = Callable[[VectorEnv, list[int]], list[dict[str, Any]]]
"""``play(vec, seeds) -> metrics``: one episode per env of ``vec`` (env ``i`` seeded ``seeds[i]``)."""


def evaluate(
    team: Mapping[str, Any] | Any,
    env_id: str,
    seeds: Sequence[int],
    **options: Any,
) -> list[dict[str, Any]]:
    """The metrics of one episode per seed (in seed order), played by ``team``.

    ``team`` is ``{role: actor}`` or one actor for every role (``flexmg.protocols.Actor``);
    ``options`` are those of :func:`evaluate_batches`.

    >>> echo = {"a": lambda o: o["task"][5:], "b": lambda o: o["context"][5:]}
    >>> m = evaluate(echo, "echo", [0, 1])
    >>> [e["success"] for e in m]
    [True, True]
    """

    def play(vec: VectorEnv, chunk: list[int]) -> list[dict[str, Any]]:
        return [dict(ep.metrics) for ep in play_batch(vec, team, chunk)]

    return evaluate_batches(play, env_id, seeds, **options)


def evaluate_batches(
    play: BatchPlayer,
    env_id: str,
    seeds: Sequence[int],
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    split: str = "eval",
    batch_size: int = 64,
    vectorization: str = "sync",
    replay_repeats: bool = False,
) -> list[dict[str, Any]]:
    """The metrics of one episode per seed (in seed order), each batch played by ``play``.

    Args:
        play: plays one batch (:data:`BatchPlayer`): a team through the episode driver
            (:func:`evaluate`), or the learner's rollout, which also flags actions cut
            at the token limit (``flexmg.agents.evaluation``).
        env_id: a registered env id (or ``module:factory``).
        seeds: the episode seeds.
        env_kwargs: ``flexmg.make`` keywords (``split`` is set from ``split``).
        split: the task split (``"eval"``: held out from training).
        batch_size: envs played at once (the actors' batch).
        vectorization: ``"sync"``, ``"async"`` or ``"ray"``.
        replay_repeats: the team acts the same on the same observation (greedy
            decoding): a task drawn by several seeds is played once and its episode
            (the same dict) counted once per seed. An episode of a flexmg env draws
            nothing after its task, so the figures equal playing them all.
    """
    import flexmg

    kwargs = {**dict(env_kwargs or {}), "split": split}
    seeds = [int(s) for s in seeds]
    if replay_repeats and seeds:
        played, copy_of = distinct_seed_plan(env_id, seeds, kwargs)
    else:
        played, copy_of = seeds, list(range(len(seeds)))
    metrics: list[dict[str, Any]] = []
    vec = None
    try:
        for start in range(0, len(played), batch_size):
            chunk = played[start : start + batch_size]
            if vec is None or vec.num_envs != len(chunk):
                if vec is not None:
                    vec.close()
                vec = flexmg.make_vec(
                    env_id, num_envs=len(chunk), vectorization=vectorization, **kwargs
                )
            metrics += play(vec, chunk)
    finally:
        if vec is not None:
            vec.close()
    return [metrics[j] for j in copy_of]


def measure_pass_at_k(
    greedy: Mapping[str, Any] | Any,
    sampled: Mapping[str, Any] | Any,
    env_id: str,
    prompts: int = 300,
    k: int = 8,
    seed: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Greedy and sampled figures and pass@k of a team on ``prompts`` distinct held-out prompts.

    ``greedy`` and ``sampled`` are the team decoding greedily and sampling (e.g. one
    model's two actors). Each prompt is played once by ``greedy`` and ``k`` times by
    ``sampled``; every figure is the mean over prompts of a per-prompt value with its
    95% bootstrap interval over prompts (:func:`flexmg.metrics.bootstrap_ci`):
    ``greedy_success``/``_format_ok``/``_correct``, ``sampled_*`` (the share of the ``k``
    samples), ``pass@k_success``/``_correct`` (the unbiased estimator,
    :func:`flexmg.metrics.pass_at_k`).
    """
    played = play_prompts(
        greedy, sampled, env_id, prompts, k, seed=seed, env_kwargs=env_kwargs, progress=progress
    )
    return {"env": env_id, **_pass_at_k_figures(played["greedy"], played["sampled"], k)}


def play_prompts(
    greedy: Mapping[str, Any] | Any,
    sampled: Mapping[str, Any] | Any,
    env_id: str,
    prompts: int = 300,
    n: int = 8,
    *,
    seed: int = 0,
    split: str = "eval",
    env_kwargs: Mapping[str, Any] | None = None,
    batch_size: int = 64,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """One greedy and ``n`` sampled episodes on each of ``prompts`` distinct prompts of ``split``.

    Returns ``{"seeds", "greedy": [metrics per prompt], "sampled": [[metrics] * n per
    prompt]}``, prompts in the same order every time for the same arguments, so two
    calls (before and after training) pair up prompt by prompt
    (:func:`flexmg.report.learning_report`). Asking for more prompts than the split
    has gives all it has.

    >>> echo = {"a": lambda o: o["task"][5:], "b": lambda o: o["context"][5:]}
    >>> out = play_prompts(echo, echo, "echo", prompts=3, n=2)
    >>> len(out["greedy"]), [len(row) for row in out["sampled"]]
    (3, [2, 2, 2])
    """
    kwargs = {**dict(env_kwargs or {}), "split": split}
    seeds = distinct_prompt_seeds(env_id, prompts, seed, kwargs)
    if progress:
        progress(f"{env_id}: {len(seeds)} distinct {split} prompts; greedy")
    first = evaluate(greedy, env_id, seeds, env_kwargs=kwargs, batch_size=batch_size)
    samples: list[list[dict[str, Any]]] = [[] for _ in seeds]
    if n > 0:
        if progress:
            progress(f"{env_id}: {n} samples per prompt")
        repeated = [s for s in seeds for _ in range(n)]
        flat = evaluate(sampled, env_id, repeated, env_kwargs=kwargs, batch_size=batch_size)
        for i, m in enumerate(flat):
            samples[i // n].append(m)
    return {"seeds": seeds, "greedy": first, "sampled": samples}


def _pass_at_k_figures(
    greedy: Sequence[Mapping[str, Any]], samples: Sequence[Sequence[Mapping[str, Any]]], k: int
) -> dict[str, Any]:
    """Per-prompt rates with intervals (see :func:`measure_pass_at_k`)."""
    out: dict[str, Any] = {"prompts": len(greedy), "k": k}

    def add(name: str, per_prompt: list[float]) -> None:
        by_prompt = {str(i): [v] for i, v in enumerate(per_prompt)}
        ci = bootstrap_ci(by_prompt)
        mean = sum(per_prompt) / len(per_prompt)
        out[name] = {"mean": round(mean, 4), "ci95": [round(x, 4) for x in ci] if ci else None}

    names = {"success": "success", "format": "format_ok", "correct": "correct"}
    outcomes = [[team_outcome(m) for m in row] for row in samples]
    for key, name in names.items():
        add(f"greedy_{name}", [team_outcome(m)[key] for m in greedy])
        if k > 0:
            add(f"sampled_{name}", [sum(o[key] for o in row) / len(row) for row in outcomes])
    for key in ("success", "correct"):
        if k > 0:
            passes = [pass_at_k(len(row), int(sum(o[key] for o in row)), k) for row in outcomes]
            add(f"pass@{k}_{key}", passes)
    out["greedy_mean_score"] = round(
        sum(float(m.get("score", 0.0)) for m in greedy) / len(greedy), 4
    )
    out["greedy_mean_rounds"] = round(
        sum(float(m.get("rounds", 1)) for m in greedy) / len(greedy), 3
    )
    return out
