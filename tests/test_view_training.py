"""Values and advantages of a real PPO update (tiny model, CPU) in transcript records and the page.

This is how a training run saves a sample of its rollout (``rollouts/update_N.transcripts.jsonl``):
the episodes of the batch, each action annotated with the critic's value, the advantage PPO
used and the return, after ``PPOLearner.update``.
"""

from __future__ import annotations

import pytest

import flexmg
from flexmg.transcripts import TranscriptSample, run_transcripts_path, write_transcripts
from flexmg.view import load_collection, page_data

pytest.importorskip("torch")


@pytest.mark.slow
def test_a_ppo_updates_values_and_advantages_reach_the_page(tmp_path):
    import torch

    from flexmg.agents.config import PolicyConfig, PPOConfig
    from flexmg.agents.marft import get_algorithm
    from flexmg.agents.policy import TeamPolicy
    from flexmg.agents.ppo import PPOLearner
    from flexmg.agents.samples import build_batch
    from flexmg.episodes import play_batch

    algo = get_algorithm("marft")
    torch.manual_seed(0)
    policy = TeamPolicy(
        ["solver", "verifier"], PolicyConfig(critic=algo.critic, max_new_tokens=24, seed=0)
    )
    learner = PPOLearner(policy, PPOConfig(epochs=1, minibatches=1), algo)
    vec = flexmg.make_vec("math-2agent", num_envs=4, split="train")
    turns: dict[int, list] = {}

    last: dict[str, object] = {}

    class Actor:  # one role's batched actor; it remembers what it generated
        def __init__(self, role):
            self.role = role

        def act(self, observations):
            last[self.role] = policy.act(self.role, list(observations), greedy=False)
            return list(last[self.role].texts)

    def on_step(role, envs, actions):
        for j, i in enumerate(envs):
            turns.setdefault(i, []).append((role, last[role], j))

    try:
        team = {role: Actor(role) for role in vec.possible_agents}
        results = play_batch(vec, team, seed=0, on_step=on_step)
    finally:
        vec.close()
    batch = build_batch(results, [turns.get(i, []) for i in range(len(results))])
    learner.update(batch, 0)
    sample = TranscriptSample(limit=3, keep="first")
    for result, samples in zip(results, batch.episodes, strict=True):
        notes = [{"value": s.old_value, "advantage": s.advantage, "return": s.ret} for s in samples]
        sample.add_episode(result, "math-2agent", notes, {"kind": "train", "update": 1})
    write_transcripts(run_transcripts_path(tmp_path, 1, "train"), sample.records())

    col = load_collection([tmp_path])
    assert [(g.label, len(g.records)) for g in col.groups] == [("train rollout @ update 1", 3)]
    data = page_data(col)
    for episode, samples, result in zip(data["episodes"], batch.episodes, results, strict=False):
        assert [t["annotations"] for t in episode["turns"]] == [
            {"value": s.old_value, "advantage": s.advantage, "return": s.ret} for s in samples
        ]
        assert [t["action"] for t in episode["turns"]] == [r.action for r in result.transcript]
        assert episode["answer"] == result.task.answer
    advantages = [t["annotations"]["advantage"] for e in data["episodes"] for t in e["turns"]]
    assert len(set(advantages)) > 1  # real, varying advantages
