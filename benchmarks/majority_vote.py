"""Majority vote over k samples of the untrained model: the no-training peer at equal samples.

The base model (``--model``, default SmolLM2-135M-Instruct) plays ``math-1agent``'s
solver with flexmg's own decoder and the main job's solver instructions
(``--solver-prompt``, as in ``scripts/train.sh``) on ``--prompts`` distinct prompts of the
**test** split, ``--k`` times each at temperature 1.0 (no top-k/top-p), at most
``--max-new-tokens`` tokens (the training budget). Each sample's answer is the value
the env says it committed to (its one boxed answer, else its last number); the
majority answer is the value most samples committed to (equal values count as one:
``12`` and ``12.0``; a tie goes to the value given first; samples with no answer do
not vote), and it is graded by the env itself (the chosen value, boxed, played as
the solver's turn on the same prompt).

Printed and written with ``--json``, each a mean over prompts with its 95% bootstrap
interval over prompts: ``majority_correct`` (the majority answer is right),
``sampled_correct`` (mean correctness of a single sample), ``pass@k`` (some sample is
right), ``no_answer`` (no sample committed to a value); and the wall time.

Usage::

    python benchmarks/majority_vote.py                      # SmolLM2, 300 test prompts, k = 8
    python benchmarks/majority_vote.py --prompts 100 --k 4 --json majority.json
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from equal_budget import ENV, SOLVER_PROMPT, resolve_device, tasks_option
from flexmg.io import atomic_write_json
from flexmg.metrics import per_prompt_ci


def majority(answers: Sequence[str | None]) -> tuple[str | None, int]:
    """The answer most samples gave and its votes (equal values count as one; ties: first given).

    >>> majority(["12", "7", "12.0", None, None, None])
    ('12', 2)
    >>> majority(["7", "12"]), majority([None, None])
    (('7', 1), (None, 0))
    """
    from flexmg.envs.math.answers import same_answer

    groups: list[list[str]] = []
    for a in answers:
        if a is None:
            continue
        for g in groups:
            if same_answer(g[0], a):
                g.append(a)
                break
        else:
            groups.append([a])
    if not groups:
        return None, 0
    best = max(groups, key=len)  # max keeps the first of equal lengths
    return best[0], len(best)


def graded(env: Any, seed: int, value: str | None) -> bool:
    """Whether ``value``, boxed and played as the solver's answer on the prompt of ``seed``, is right."""
    if value is None:
        return False
    env.reset(seed=int(seed))
    env.step(f"\\boxed{{{value}}}")
    return bool(env.episode_metrics["answer_correct"])


def solver_info(metrics: Mapping[str, Any]) -> Mapping[str, Any]:
    """The solver's credit info of one episode."""
    return metrics["per_role"]["solver"]


def vote(
    seeds: Sequence[int], samples: Sequence[Sequence[Mapping[str, Any]]], env_kwargs: dict
) -> list[dict[str, Any]]:
    """Per prompt: the samples' answers, the majority answer and whether it (and they) are right."""
    import flexmg
    from flexmg.metrics import pass_at_k

    env = flexmg.make(ENV, **env_kwargs)
    rows = []
    try:
        for seed, episodes in zip(seeds, samples, strict=True):
            answers = [solver_info(m).get("answer") for m in episodes]
            right = [bool(solver_info(m).get("answer_correct")) for m in episodes]
            choice, votes = majority(answers)
            k = len(episodes)
            rows.append({
                "seed": int(seed), "task": episodes[0].get("task_id"), "answers": answers,
                "majority": choice, "votes": votes, "majority_correct": graded(env, seed, choice),
                "sampled_correct": sum(right) / k, f"pass@{k}": pass_at_k(k, sum(right), k),
                "no_answer": float(choice is None),
            })  # fmt: skip
    finally:
        env.close()
    return rows


def figures(rows: Sequence[Mapping[str, Any]], k: int) -> dict[str, dict[str, Any]]:
    """Mean and interval over prompts of each per-prompt figure."""
    out = {}
    for key in ("majority_correct", "sampled_correct", f"pass@{k}", "no_answer"):
        values = [float(r[key]) for r in rows]
        out[key] = {"mean": round(sum(values) / len(values), 4), "ci95": per_prompt_ci(values)}
    return out


def run(
    model: str, prompts: int, k: int, max_new_tokens: int, tasks: dict[str, Any],
    temperature: float = 1.0, seed: int = 0, device: str = "cpu", batch_size: int = 64,
    solver_prompt: str = SOLVER_PROMPT,
) -> dict[str, Any]:  # fmt: skip
    """Sample, vote and grade (see the module docstring); the summary with every prompt's row."""
    import torch

    from flexmg.evaluation import distinct_prompt_seeds, evaluate
    from flexmg.models.actor import ModelActor
    from flexmg.models.config import SamplingConfig

    env_kwargs = {"tasks": dict(tasks), "prompts": {"solver": solver_prompt}, "split": "test"}
    t0 = time.monotonic()
    torch.manual_seed(seed)
    actor = ModelActor.load(model, max_new_tokens, device=device, dtype="float32",
                            sampling=SamplingConfig(temperature=temperature), seed=seed)  # fmt: skip
    load_s = time.monotonic() - t0
    seeds = distinct_prompt_seeds(ENV, prompts, seed, env_kwargs)
    t1 = time.monotonic()
    flat = evaluate(actor, ENV, [s for s in seeds for _ in range(k)], env_kwargs=env_kwargs,
                    split="test", batch_size=batch_size)  # fmt: skip
    samples = [flat[i * k : (i + 1) * k] for i in range(len(seeds))]
    rows = vote(seeds, samples, env_kwargs)
    sample_s = time.monotonic() - t1
    return {
        "model": model, "env": ENV, "split": "test", "tasks": dict(tasks), "prompts": len(seeds),
        "k": k, "temperature": temperature, "max_new_tokens": max_new_tokens,
        "prompt_style": actor.decoder.prompts.style, "solver_prompt": solver_prompt,
        "device": device, "seed": seed, **figures(rows, k), "load_s": round(load_s, 2), "wall_s": round(sample_s, 2),
        "rows": rows,
    }  # fmt: skip


def format_report(result: Mapping[str, Any]) -> str:
    """The lines the benchmark prints."""
    k = result["k"]
    lines = [
        f"{result['model']}, untrained: majority vote over k={k} samples (temperature "
        f"{result['temperature']}, <= {result['max_new_tokens']} tokens) on {result['prompts']} "
        f"distinct {result['env']} {result['split']} prompts; wall {result['wall_s']:.1f} s "
        f"(+{result['load_s']:.1f} s loading)"
    ]
    for key in ("majority_correct", "sampled_correct", f"pass@{k}", "no_answer"):
        f = result[key]
        ci = f" [{f['ci95'][0]:.3f}, {f['ci95'][1]:.3f}]" if f["ci95"] else ""
        lines.append(f"  {key:>16}: {f['mean']:.3f}{ci}")
    lines.append("  (95% bootstrap intervals over prompts)")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m", help="a zoo name, folder or HF id")
    parser.add_argument("--prompts", type=int, default=300, help="distinct test prompts")
    parser.add_argument("--k", type=int, default=8, help="samples per prompt")
    parser.add_argument("--max-new-tokens", type=int, default=48, help="the training budget")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--tasks", default=None, help="math-1agent's tasks= as JSON")
    parser.add_argument("--solver-prompt", default=SOLVER_PROMPT,
                        help="the solver's instructions (default: the main job's)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    parser.add_argument("--batch-size", type=int, default=64, help="episodes sampled at once")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args(argv)
    from flexmg.models.names import model_problem

    problem = model_problem(args.model)
    if problem:
        parser.error(problem)
    for name in ("prompts", "k", "max_new_tokens", "batch_size"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.temperature <= 0:
        parser.error("--temperature must be > 0")
    try:
        tasks = tasks_option(args.tasks)
    except ValueError as exc:
        parser.error(str(exc))
    result = run(args.model, args.prompts, args.k, args.max_new_tokens, tasks, args.temperature,
                 args.seed, resolve_device(args.device), args.batch_size,
                 args.solver_prompt)  # fmt: skip
    print(format_report(result))
    if args.json is not None:
        atomic_write_json(args.json, result, indent=2)
        print(f"written: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
