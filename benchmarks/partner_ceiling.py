"""Can a model's graded role use a perfect partner? The step-0 ceiling of a collaboration task.

A group learner (``--algo group``) learns only from prompts whose episodes score
differently; if the graded role almost never succeeds at step 0, every group is
flat and nothing trains (``flexmg train`` says so: "flat rewards at update 1").
For a collaboration env (docs/collaboration.md) this script separates the two
reasons a model's team can score 0: the supporting role does not pass on what
it has, or the graded role cannot use it even when it is passed on. The graded
role is the model (greedy, and sampled at ``--temperature``); its partner is

* ``oracle``: a scripted supporter that does its job from its own observation
  (split: the holder states ``A = <its number>``; check: the solver writes the
  problem's ``Expression:`` line; code-testfirst: the tester asserts the spec's
  examples, each round);
* ``model``: the same model (the untrained team, as training starts);
* ``mute``: a supporter that says nothing (what the graded role does alone).

Printed per partner: the graded role's success rate on ``--episodes`` held-out
(test split) episodes with a 95% bootstrap interval over episodes, greedy and
sampled, the mean team score (code-testfirst: the share of hidden tests passed)
and the first transcripts.

Usage::

    python benchmarks/partner_ceiling.py --env split-2agent --episodes 48 \\
        --kw 'tasks={"low": 0, "high": 40, "ops": "+"}' --json split_ceiling.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

PARTNERS = ("oracle", "model", "mute")


def _split_holder(obs: Mapping[str, Any]) -> str:
    return str(obs["task"])  # "A = <number>": the holder's whole part, stated


def _check_solver(obs: Mapping[str, Any]) -> str:
    from flexmg.envs.families.check import solver_from

    return solver_from(obs["task"])


def _testfirst_tester(obs: Mapping[str, Any]) -> str:
    from flexmg.envs.families.testfirst import tester_from

    return tester_from(obs["task"])


#: env id -> (supporting role, its oracle from its own observation)
SUPPORTERS: dict[str, tuple[str, Callable[[Mapping[str, Any]], str]]] = {
    "split-2agent": ("holder", _split_holder),
    "check-2agent": ("solver", _check_solver),
    "code-testfirst": ("tester", _testfirst_tester),
}


def interval(values: Sequence[float]) -> tuple[float, float]:
    """95% bootstrap interval of the mean over episodes (:func:`flexmg.metrics.per_prompt_ci`).

    >>> interval([1.0, 1.0])
    (1.0, 1.0)
    """
    from flexmg.metrics import per_prompt_ci

    ci = per_prompt_ci(values)
    mean = sum(values) / len(values)
    return (ci[0], ci[1]) if ci else (mean, mean)


class _Batched:
    """A batched ``observations -> texts`` function as an actor (``act``)."""

    def __init__(self, act: Callable[[list[dict]], list[str]]) -> None:
        self.act = act


def play(
    envs: Sequence[Any], seeds: Sequence[int], partner: str, supporter: str,
    oracle: Callable[[Mapping[str, Any]], str], model_act: Callable[[list[dict]], list[str]],
) -> list[dict[str, Any]]:  # fmt: skip
    """Play one episode per env (seeded) with :func:`flexmg.episodes.play_batch`; per episode its result.

    The supporter is the oracle, mute (``""``) or the model (``partner``); every
    other role is the model, each role's turn one batched ``model_act`` call.
    """
    from flexmg.episodes import play_batch
    from flexmg.vector import SyncVectorEnv

    model = _Batched(model_act)
    support = {"oracle": oracle, "mute": lambda obs: "", "model": model}[partner]
    team = {r: support if r == supporter else model for r in envs[0].possible_agents}
    vec = SyncVectorEnv([lambda env=env: env for env in envs])
    return [
        {"success": ep.success, "score": float(ep.metrics.get("score") or 0.0),
         "turns": [(t.role, t.action, t.info.get("annotation", "")) for t in ep.transcript]}
        for ep in play_batch(vec, team, list(seeds))
    ]  # fmt: skip


def run(env_id: str, model: str, episodes: int, temperature: float, max_new_tokens: int,
        env_kwargs: dict[str, Any], seed: int) -> dict[str, Any]:  # fmt: skip
    import torch

    import flexmg
    from flexmg.models.actor import ModelActor
    from flexmg.models.config import SamplingConfig
    from flexmg.models.loading import load_model

    if env_id not in SUPPORTERS:
        raise ValueError(
            f"no scripted supporter for {env_id!r}; choose one of {sorted(SUPPORTERS)}"
        )
    supporter, oracle = SUPPORTERS[env_id]
    lm, tokenizer = load_model(model, device="cpu", dtype="float32")
    actors = {
        "greedy": ModelActor(lm, tokenizer, max_new_tokens, greedy=True),
        "sampled": ModelActor(lm, tokenizer, max_new_tokens, seed=seed,
                              sampling=SamplingConfig(temperature=temperature)),
    }  # fmt: skip
    envs = [flexmg.make(env_id, split="test", **env_kwargs) for _ in range(episodes)]
    seeds = list(range(seed * 100_000, seed * 100_000 + episodes))
    result: dict[str, Any] = {"env": env_id, "model": model, "episodes": episodes,
                              "temperature": temperature, "max_new_tokens": max_new_tokens,
                              "env_kwargs": env_kwargs, "supporter": supporter, "partners": {}}  # fmt: skip
    torch.manual_seed(seed)
    for partner in PARTNERS:
        row: dict[str, Any] = {}
        for mode, actor in actors.items():
            played = play(envs, seeds, partner, supporter, oracle, actor.act)
            wins = [float(p["success"]) for p in played]
            lo, hi = interval(wins)
            score = sum(p["score"] for p in played) / len(played)
            row[mode] = {"success": sum(wins) / len(wins), "ci": [lo, hi], "score": score,
                         "examples": [p["turns"] for p in played[:3]]}  # fmt: skip
            print(f"{env_id} partner={partner:6s} {mode:7s} success {row[mode]['success']:.3f} "
                  f"[{lo:.3f}, {hi:.3f}]  mean score {score:.3f}", flush=True)  # fmt: skip
        result["partners"][partner] = row
    for env in envs:
        env.close()
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="split-2agent", choices=sorted(SUPPORTERS))
    parser.add_argument("--model", default="smollm2-135m", help="a zoo name, folder or HF id")
    parser.add_argument("--episodes", type=int, default=48, help="held-out episodes per cell")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--max-new-tokens", type=int, default=48, help="tokens per model turn")
    parser.add_argument("--kw", default="{}", help="env keywords as one JSON object")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args(argv)
    try:
        kwargs = json.loads(args.kw)
    except json.JSONDecodeError as exc:
        parser.error(f"--kw must be one JSON object, e.g. '{{\"tasks\": {{...}}}}': {exc}")
    if not isinstance(kwargs, dict):
        parser.error("--kw must be a JSON object")
    if args.episodes < 1:
        parser.error("--episodes must be >= 1")
    from flexmg.models.names import model_problem

    problem = model_problem(args.model)
    if problem:
        parser.error(problem)
    result = run(args.env, args.model, args.episodes, args.temperature, args.max_new_tokens,
                 kwargs, args.seed)  # fmt: skip
    if args.json is not None:
        from flexmg.io import atomic_write_json

        atomic_write_json(args.json, result, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
