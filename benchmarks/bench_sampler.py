"""One role's turn of decoding: flexmg's sampler against itself without each of its two savings, same run.

flexmg's sampler (``flexmg.models.sampling.sample_actions``) saves work twice:

* **shared prefill**: identical prompts (a group's episodes: 8 per prompt by default)
  are prefilled once and their KV cache copied to every row;
* **dropped rows**: rows that have stopped leave the batch and the KV cache once they
  are an eighth of it.

The references are the same sampler with one saving off: ``prefill every row``
(``share_prefill=False``) and ``keep every row`` (``_compact_every`` past the batch
size, how it decoded before). All three decode the same observations from the same seed,
in turn, ``--repeats`` times. Inverse-CDF sampling with one draw per row of the whole
batch makes a row's action independent of the others, so they draw the same actions up
to floating-point rounding: a different batch can round a logit differently, and a draw
that falls at a boundary between two tokens then flips (counted in ``identical_actions``).

Defaults are one turn of the main job's solver: SmolLM2-135M-Instruct, 64 observations of
``math-2agent`` (8 prompts x 8, A + B in 0-40, the main job's solver prompt), at most 48
new tokens, temperature 1.0.

Run::

    python benchmarks/bench_sampler.py                  # SmolLM2, 64 x 48 tokens, 3 repeats
    python benchmarks/bench_sampler.py --model tiny --episodes 16 --max-new-tokens 24
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

FLEXMG = "flexmg"  # both savings on: the figure; the other ways are its references
SOLVER_PROMPT = "You are the solver. Solve the problem and put the final answer in \\boxed{}."


def observations(episodes: int, group: int) -> list[dict[str, Any]]:
    """The solver's first observations of ``episodes`` main-job episodes (``group`` per prompt)."""
    import flexmg

    env = flexmg.make(
        "math-2agent", tasks={"name": "arithmetic", "max_operand": 40, "ops": "+"},
        prompts={"solver": SOLVER_PROMPT},
    )  # fmt: skip
    out = []
    for i in range(episodes):
        env.reset(seed=i // group)
        out.append(env.observe("solver"))
    return out


def run(model: str, episodes: int, group: int, max_new_tokens: int, repeats: int,
        seed: int = 0) -> dict[str, Any]:  # fmt: skip
    """Decode the same turn with and without dropping stopped rows: times, identical actions."""
    import torch

    import flexmg.models.sampling as sampling
    from flexmg.agents.config import PolicyConfig
    from flexmg.agents.policy import TeamPolicy

    policy = TeamPolicy(
        ["solver", "verifier"],
        PolicyConfig(model=model, temperature=1.0, max_new_tokens=max_new_tokens, critic="none"),
    )
    obs = observations(episodes, group)
    dropping, sharing = sampling._compact_every, sampling.sample_actions

    def keeping(batch: int) -> int:
        return batch + 1  # never reached: every row stays to the end

    def prefilling(*args: Any, **kwargs: Any) -> Any:
        return sharing(*args, **kwargs, share_prefill=False)

    ways = {  # name -> (row-dropping rule, sampler)
        FLEXMG: (dropping, sharing),
        "prefill every row": (dropping, prefilling),
        "keep every row": (keeping, sharing),
    }
    times: dict[str, list[float]] = {name: [] for name in ways}
    actions: dict[str, Any] = {}
    counts: dict[str, int] = {}  # generated tokens of each way's (last) decode
    for _ in range(repeats):
        for name, (rule, sampler) in ways.items():
            sampling._compact_every = rule  # type: ignore[assignment]
            sampling.sample_actions = sampler  # type: ignore[assignment]
            try:
                torch.manual_seed(seed)
                start = time.perf_counter()
                batch = policy.act("solver", obs)
                times[name].append(time.perf_counter() - start)
            finally:
                sampling._compact_every = dropping  # type: ignore[assignment]
                sampling.sample_actions = sharing  # type: ignore[assignment]
            actions[name] = batch.action_ids
            counts[name] = sum(len(a) for a in batch.action_ids)
    med = {name: statistics.median(t) for name, t in times.items()}
    longest = max(len(a) for a in actions[FLEXMG])
    return {
        "model": model, "episodes": episodes, "group": group, "max_new_tokens": max_new_tokens,
        "repeats": repeats, "generated_tokens": counts[FLEXMG],
        "generated_tokens_by_way": counts, "longest_action": longest,
        "seconds": times, "median_s": med,
        "tokens_per_s": {name: counts[name] / s for name, s in med.items()},
        "ratio_to_reference": {name: med[FLEXMG] / med[name] for name in ways if name != FLEXMG},
        "identical_actions": {
            name: sum(a == b for a, b in zip(actions[FLEXMG], actions[name], strict=True))
            for name in ways if name != FLEXMG
        },
    }  # fmt: skip


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--group", type=int, default=8, help="episodes per prompt")
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    res = run(args.model, args.episodes, args.group, args.max_new_tokens, args.repeats)
    print(f"{res['model']}: {res['episodes']} actions, {res['generated_tokens']} tokens "
          f"(longest {res['longest_action']} of {res['max_new_tokens']})")  # fmt: skip
    for name, s in res["median_s"].items():
        print(f"  {name:18s} median {s:6.2f} s  {res['tokens_per_s'][name]:7.1f} tokens/s  "
              f"runs {', '.join(f'{t:.2f}' for t in res['seconds'][name])}")  # fmt: skip
    for name, ratio in res["ratio_to_reference"].items():
        print(f"  flexmg / {name}: {ratio:.2f}x the time; identical actions: "
              f"{res['identical_actions'][name]} of {res['episodes']}")  # fmt: skip
    if args.json:
        from flexmg.io import atomic_write_text

        atomic_write_text(args.json, json.dumps(res, indent=2))
    return res


if __name__ == "__main__":
    main()
