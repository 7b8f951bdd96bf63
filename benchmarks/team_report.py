"""The learning report of a training run: start (the base model) vs a checkpoint, same prompts.

Loads the run's team policy twice: as it started (LoRA B = 0, so the base model's
outputs) and from a checkpoint (default: the newest), plays one greedy and ``n``
sampled episodes (the run's own per-role temperatures) on each of ``--prompts``
distinct prompts of the **test** split, and on ``--phrasing-prompts`` prompts asked
in wordings never used in training (``phrasing="unseen"``), and writes
:func:`flexmg.report.learning_report` as ``report_<update>.json`` and ``.md`` in the
run folder: team and per-role correctness and format, greedy and sampled, paired
gains with 95% bootstrap intervals over prompts, pass@k, transitions, answer kinds,
copying. The episodes behind it go to ``report_<update>.episodes.json``, which
``benchmarks/seeds_report.py`` pools over training seeds.

Usage::

    python benchmarks/team_report.py runs/marft-s0 --prompts 300 --samples 4
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from flexmg.io import atomic_write_text


def _evaluate(policy: Any, env: str, kwargs: dict[str, Any], prompts: int, n: int) -> Any:
    from flexmg.agents.llm_agent import LLMAgent
    from flexmg.evaluation import play_prompts

    greedy, sampled = LLMAgent(policy, greedy=True), LLMAgent(policy, greedy=False)
    return play_prompts(greedy, sampled, env, prompts=prompts, n=n, split="test",
                        env_kwargs=kwargs, progress=lambda m: print("  " + m, flush=True))  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--checkpoint", type=Path, default=None, help="default: the newest")
    parser.add_argument("--prompts", type=int, default=300, help="distinct test prompts")
    parser.add_argument("--phrasing-prompts", type=int, default=120)
    parser.add_argument("--samples", type=int, default=4, help="sampled episodes per prompt")
    parser.add_argument("--start-only", action="store_true",
                        help="only evaluate the start (cached in the run folder for later calls)")  # fmt: skip
    args = parser.parse_args(argv)

    import torch

    from flexmg.agents.checkpoint import latest_checkpoint, load_checkpoint
    from flexmg.agents.config import RunConfig
    from flexmg.agents.policy import TeamPolicy
    from flexmg.report import learning_report, render_report

    run = RunConfig.read(args.run_dir)
    ckpt = args.checkpoint or latest_checkpoint(args.run_dir / "checkpoints")
    if ckpt is None and not args.start_only:
        print(f"team_report: error: no checkpoint in {args.run_dir / 'checkpoints'}")
        return 2
    torch.manual_seed(0)
    policy = TeamPolicy(run.roles, run.policy_config)
    env, kwargs = run.train.env, dict(run.train.env_kwargs)
    tasks = dict(kwargs.get("tasks") or {"name": "arithmetic"})
    sets = {"test": (kwargs, args.prompts)}
    if args.phrasing_prompts and tasks.get("name") == "arithmetic":
        sets["unseen phrasings"] = ({**kwargs, "tasks": {**tasks, "phrasing": "unseen"}},
                                    args.phrasing_prompts)  # fmt: skip
    t0 = time.monotonic()
    key = f"{args.prompts}-{args.phrasing_prompts}-{args.samples}"
    cache = args.run_dir / f"report_start_{key}.json"  # the start does not change: reuse it
    if cache.is_file():
        start = json.loads(cache.read_text())
    else:
        start = {}
        for name, (kw, n_prompts) in sets.items():
            print(f"start ({name})", flush=True)
            start[name] = _evaluate(policy, env, kw, n_prompts, args.samples)
        atomic_write_text(cache, json.dumps(start, default=str))
    if args.start_only:
        print(f"written: {cache}")
        return 0
    assert ckpt is not None
    state = load_checkpoint(ckpt)
    update = int(state["counters"]["updates_done"])
    policy.load_trainable_state(state["policy"])
    out: dict[str, Any] = {"run_dir": str(args.run_dir), "checkpoint": str(ckpt),
                           "update": update, "samples": args.samples}  # fmt: skip
    text, ends = [], {}
    for name, (kw, n_prompts) in sets.items():
        print(f"update {update} ({name})", flush=True)
        end = ends[name] = _evaluate(policy, env, kw, n_prompts, args.samples)
        report = learning_report(start[name], end, ks=(1, 2, 4))
        out[name] = report
        text.append(render_report(report, f"{args.run_dir.name}: update 0 vs {update}, {name}"))
    out["seconds"] = time.monotonic() - t0
    atomic_write_text(args.run_dir / f"report_{update}.json", json.dumps(out, indent=2))
    episodes = {"key": key, "update": update, "start": start, "end": ends}  # seeds_report.py
    atomic_write_text(
        args.run_dir / f"report_{update}.episodes.json", json.dumps(episodes, default=str)
    )
    atomic_write_text(args.run_dir / f"report_{update}.md", "\n\n".join(text))
    print("\n\n".join(text))
    print(f"written: {args.run_dir / f'report_{update}.md'} ({out['seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
