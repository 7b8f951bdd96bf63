"""Episodes for the viewer's tests: real envs played by scripted teams, saved as a run would."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import flexmg
from flexmg.baselines.scripted import make_scripted
from flexmg.episodes import rollout
from flexmg.transcripts import (
    TranscriptSample,
    episode_record,
    run_transcripts_path,
    write_transcripts,
)

# What a hostile model may write: markup that would run if parsed as HTML.
INJECTION = (
    "<script>window.__flexmgPwned = 1</script>"
    '<img src=x onerror="window.__flexmgPwned = 2">'
    "</script><!-- \u2028 \u202e <b>bold</b> &amp;"
)


def team_records(
    env_id: str, team: str, episodes: int, seed: int = 0, source: dict | None = None
) -> list[dict[str, Any]]:
    """Records of ``episodes`` episodes of a scripted team (``oracle``, ``empty``, ``random``)."""
    vec = flexmg.make_vec(env_id, num_envs=min(episodes, 8), split="eval")
    try:
        agent = make_scripted(team, vec, seed=0, label=env_id)
        result = rollout(vec, agent, episodes=episodes, seed=seed)
    finally:
        vec.close()
    src = source if source is not None else {"entry": f"scripted:{team}", "env": env_id}
    return [episode_record(ep, env_id, source=src) for ep in result.episodes]


def relay_records(episodes: int, seed: int = 0) -> list[dict[str, Any]]:
    """relay-2agent: a reader that passes the problem on and a solver that answers it."""
    env = flexmg.make("relay-2agent", split="eval")
    team = {"reader": lambda o: o["task"], "solver": lambda o: f"\\boxed{{{env.task.answer}}}"}
    result = rollout(env, team, episodes=episodes, seed=seed)
    source = {"entry": "relay team", "env": "relay-2agent"}
    return [episode_record(ep, "relay-2agent", source=source) for ep in result.episodes]


def hostile_records(episodes: int = 1, seed: int = 0) -> list[dict[str, Any]]:
    """math-2agent played by a solver that writes :data:`INJECTION` (and a huge verifier)."""
    env = flexmg.make("math-2agent", split="eval", max_action_chars=200_000)
    team = {"solver": lambda o: INJECTION, "verifier": lambda o: "\u00e9\u4e2d\U0001f600" * 30_000}
    result = rollout(env, team, episodes=episodes, seed=seed)
    source = {"entry": "hostile", "env": "math-2agent"}
    return [episode_record(ep, "math-2agent", source=source) for ep in result.episodes]


def fake_training_run(run: Path, episodes: int = 6, limit: int = 4) -> Path:
    """A run folder as a training run that saves transcripts writes it.

    The evaluation at update 0 is played by the empty team, the one at update 40
    by the oracle, on the same held-out seeds (every evaluation of a run plays the
    same seeds); each keeps a seeded sample of ``limit`` episodes, as the trainer does.
    """
    run.mkdir(parents=True, exist_ok=True)
    config = {
        "train": {"env": "math-2agent", "algo": "marft", "seed": 0},
        "algorithm": {"name": "marft", "critic": "shared"},
        "roles": ["solver", "verifier"],
    }
    (run / "config.json").write_text(json.dumps(config))
    lines = []
    for update, team in ((0, "empty"), (40, "oracle")):
        source = {"kind": "eval", "update": update}
        records = team_records("math-2agent", team, episodes, source=source)
        sample = TranscriptSample(limit=limit, keep="sample", seed=0)
        for r in records:
            sample.add(r)
        write_transcripts(run_transcripts_path(run, update), sample.records())
        rate = sum(r["team"]["success"] for r in records) / len(records)
        lines.append(json.dumps({"kind": "eval", "update": update, "success_rate": rate}))
    (run / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    return run
