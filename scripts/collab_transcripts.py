"""Play the collaboration envs with scripted teams: the oracle team and the mute-supporter team.

For each env of issue 23 (split-2agent, check-2agent with its single-agent
counterpart check-1agent, code-testfirst) it plays held-out (``--split test``)
episodes with scripted teams that act from their own observations, prints the
mean score and success rate of each team with a 95% interval, and one transcript
per team (every role's message, the env's notes and feedback). The figures in
docs/collaboration.md are this script's output:

    .venv/bin/python scripts/collab_transcripts.py [--episodes 200] [--split test] [--no-transcripts]

Teams (all scripted, no model):
  * ``oracle``: the supporting role does its job (the holder tells A; the solver
    writes the problem's expression; the tester asserts the spec's examples) and
    the graded role uses what it was given.
  * ``mute``: the supporting role says nothing (empty text); the graded role
    plays the same script, so what it scores is what it can do alone.
  * ``junk``: the supporting role writes off-topic text.
  * code-testfirst also has ``lookup``: a coder that sees only the tester's tests
    and answers from a table of them (how far the tests alone carry a coder).
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from typing import Any

import flexmg
from flexmg.envs.families.check import checker_from, solver_from
from flexmg.envs.families.split import solve_from
from flexmg.envs.families.testfirst import NEUTRAL_NAME, pair_oracle, tester_from

Policy = Callable[[dict[str, Any], Any], str]  # (observation, task) -> message
JUNK = "Sure! Here is a fun fact: octopuses have three hearts."


def _stub(obs: dict[str, Any], task: Any) -> str:
    return f"```python\ndef {NEUTRAL_NAME}(*args, **kwargs):\n    return None\n```"


_ASSERT = re.compile(rf"^assert {NEUTRAL_NAME}\((.*)\) == (.+)$", re.MULTILINE)


def _lookup_coder(obs: dict[str, Any], task: Any) -> str:
    """A coder from the tester's tests alone: a table of the asserted calls."""
    rows = [f"    (({args},), {want})," for args, want in _ASSERT.findall(obs["context"])]
    table = "\n".join(rows)
    return (
        f"```python\n_TABLE = [\n{table}\n]\n\n"
        f"def {NEUTRAL_NAME}(*args):\n"
        "    for key, want in _TABLE:\n"
        "        if key == args:\n"
        "            return want\n"
        "    return None\n```"
    )


def _tester(obs: dict[str, Any], task: Any) -> str:
    """The tester from its own view: the spec's examples as asserts."""
    return tester_from(obs["task"])


def _solution(obs: dict[str, Any], task: Any) -> str:
    return pair_oracle(task, "coder", "", graded=True)


def _say(text: str) -> Policy:
    return lambda obs, task: text


#: env id -> team name -> role -> policy; extra env kwargs
SETTINGS: dict[str, tuple[dict[str, dict[str, Policy]], dict[str, Any]]] = {
    "split-2agent": (
        {
            "oracle": {
                "holder": lambda o, t: o["task"],
                "solver": lambda o, t: solve_from(o["context"], o["task"]),
            },
            "mute": {
                "holder": _say(""),
                "solver": lambda o, t: solve_from(o["context"], o["task"]),
            },
            "junk": {
                "holder": _say(JUNK),
                "solver": lambda o, t: solve_from(o["context"], o["task"]),
            },
        },
        {},
    ),
    "check-2agent": (
        {
            "oracle": {
                "solver": lambda o, t: solver_from(o["task"]),
                "checker": lambda o, t: checker_from(o["context"]),
            },
            "mute": {"solver": _say(""), "checker": lambda o, t: checker_from(o["context"])},
            "junk": {"solver": _say(JUNK), "checker": lambda o, t: checker_from(o["context"])},
        },
        {},
    ),
    "check-1agent": (
        {"alone": {"solver": lambda o, t: solver_from(o["task"], o["context"])}},
        {},
    ),
    "code-testfirst": (
        {
            "oracle": {"tester": _tester, "coder": _solution},
            "lookup": {"tester": _tester, "coder": _lookup_coder},
            "mute": {"tester": _say(""), "coder": _stub},
            "mute+lookup": {"tester": _say(""), "coder": _lookup_coder},
            "junk": {"tester": _say(JUNK), "coder": _lookup_coder},
        },
        {"sandbox": "local"},
    ),
}


def play(env: Any, seed: int, team: dict[str, Policy]) -> dict[str, Any]:
    """One episode with ``team``; its metrics."""
    env.reset(seed=seed)
    for role in env.agent_iter():
        _, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        env.step(team[role](env.observe(role), env.task))
    return dict(env.episode_metrics)


def transcript_text(env: Any) -> str:
    """The last episode's turns: every role's message and the env's notes, clipped."""
    lines = []
    for turn in env.transcript:
        action = turn.action if len(turn.action) <= 400 else turn.action[:400] + " [...]"
        lines.append(f"  round {turn.round + 1} [{turn.role}]: {action}")
        if turn.info.get("annotation"):
            lines.append(
                f"  round {turn.round + 1} [env on {turn.role}]: {turn.info['annotation']}"
            )
    feedback = env.episode_metrics.get("tester_feedback")
    if feedback:
        lines.append(f"  [feedback on the last round]: {feedback}")
    lines.append(f"  score {env.episode_metrics['score']:.3f}")
    return "\n".join(lines)


def interval(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of a normal 95% interval."""
    n = len(values)
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    return mean, 1.96 * math.sqrt(var / n)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--split", default="test")
    parser.add_argument("--no-transcripts", action="store_true")
    args = parser.parse_args(argv)
    print(
        f"episodes per team: {args.episodes}, split: {args.split}, seeds 0..{args.episodes - 1}\n"
    )
    print("| env | team | mean score | success rate |")
    print("|---|---|---|---|")
    shown: list[str] = []
    for env_id, (teams, kwargs) in SETTINGS.items():
        env = flexmg.make(env_id, split=args.split, **kwargs)
        try:
            for name, team in teams.items():
                runs = [play(env, seed, team) for seed in range(args.episodes)]
                score, s_ci = interval([float(m["score"]) for m in runs])
                success, c_ci = interval([float(bool(m["success"])) for m in runs])
                print(
                    f"| {env_id} | {name} | {score:.3f} ± {s_ci:.3f} | {success:.3f} ± {c_ci:.3f} |"
                )
                if not args.no_transcripts:
                    play(env, 0, team)
                    shown.append(f"{env_id}, team {name} (seed 0):\n{transcript_text(env)}")
        finally:
            env.close()
    for block in shown:
        print(f"\n{block}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
