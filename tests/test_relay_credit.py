"""Credit through the chain: one real MARFT update moves the reader's adapter the right way.

The reader is never graded. On a hand-made relay-2agent batch where the team
scores exactly when the reader passed the problem on, one PPO update of the
real learner (tiny model, one LoRA adapter per role, centralized critic,
MARFT credit) must raise the reader's log-prob of a relaying message relative
to an unhelpful one; with the reward flipped the movement must reverse.
"""

from __future__ import annotations

import pytest

pytest.importorskip("peft")

import flexmg  # noqa: E402
from flexmg.agents.marft import get_algorithm  # noqa: E402
from flexmg.agents.policy import PolicyConfig, TeamPolicy  # noqa: E402
from flexmg.agents.ppo import PPOConfig, PPOLearner  # noqa: E402
from flexmg.agents.samples import RolloutBatch, Sample  # noqa: E402
from flexmg.envs.families.relay import carries_problem  # noqa: E402

EPISODES = 8  # half relay the problem, half do not


def _policy() -> TeamPolicy:
    config = PolicyConfig(model="tiny", critic="centralized", critic_hidden=(32, 16),
                          device="cpu", seed=0)  # fmt: skip
    return TeamPolicy(["reader", "solver"], config)


def _action_ids(policy: TeamPolicy, text: str) -> list[int]:
    ids = policy.tokenizer(text, add_special_tokens=False)["input_ids"]
    return [*ids, policy.tokenizer.eos_token_id]


def _relay_batch(policy: TeamPolicy, flipped: bool) -> tuple[RolloutBatch, list[int]]:
    """Episodes played on the real env with hand-chosen messages; returns one reader prompt."""
    env = flexmg.make("relay-2agent")
    episodes, metrics = [], []
    for e in range(EPISODES):
        env.reset(seed=e)
        relays = e % 2 == 0
        task = env.task
        message = task.prompt if relays else "ok"
        answer = f"\\boxed{{{task.answer}}}" if relays else f"{int(task.answer) + 7}"
        team = float(relays != flipped)
        samples = []
        for turn, (role, text) in enumerate((("reader", message), ("solver", answer))):
            prompt = policy.prompt_ids(env.observe(role))
            samples.append(
                Sample(
                    episode=e,
                    turn=turn,
                    role=role,
                    round=0,
                    prompt_ids=prompt,
                    action_ids=_action_ids(policy, text),
                    truncated=False,
                    reward=team,
                    team_reward=team,
                    last_in_round=role == "solver",
                )  # fmt: skip
            )
            env.step(text)
        assert carries_problem(message, task.prompt) == relays
        assert env.rewards["solver"] == float(relays)  # the env agrees on the unflipped reward
        episodes.append(samples)
        metrics.append({"success": team > 0})
    return RolloutBatch(episodes=episodes, metrics=metrics), episodes[0][0].prompt_ids


def _relay_margin(policy: TeamPolicy, prompt: list[int]) -> float:
    """log pi_reader(relaying message) - log pi_reader(unhelpful message) on one prompt."""
    relay, other = _action_ids(policy, "What is 10 + 3?"), _action_ids(policy, "ok")
    token_lp, *_ = policy.score("reader", [prompt, prompt], [relay, other])
    return sum(token_lp[0]) - sum(token_lp[1])


def _margin_change(flipped: bool) -> float:
    policy = _policy()
    marft = get_algorithm("marft")
    learner = PPOLearner(policy, PPOConfig(lr_actor=1e-3, lr_critic=1e-3, recompute_old=True,
                                           target_kl=None), marft)  # fmt: skip
    batch, prompt = _relay_batch(policy, flipped)
    # a prompt the batch does not hold: the movement generalises past the trained prompts
    env = flexmg.make("relay-2agent")
    env.reset(seed=1000)
    probe = policy.prompt_ids(env.observe("reader"))
    before = _relay_margin(policy, probe), _relay_margin(policy, prompt)
    solver_before = [p.detach().clone() for p in policy.policy_parameters("solver")]
    import torch

    stats = learner.update(batch, 0, generator=torch.Generator().manual_seed(0))
    assert stats["learning_roles"] == 2.0 and stats["actor_steps"] > 0
    readers = [s for s in batch.samples if s.role == "reader"]
    relaying = [s.advantage for s in readers if s.episode % 2 == 0]
    unhelpful = [s.advantage for s in readers if s.episode % 2 == 1]
    # MARFT: the reader's reward is 0; its advantage comes through the solver's value.
    assert (min(relaying) > max(unhelpful)) != flipped
    assert any(not torch.equal(a, b) for a, b in
               zip(solver_before, policy.policy_parameters("solver"), strict=True))  # fmt: skip
    after = _relay_margin(policy, probe), _relay_margin(policy, prompt)
    return after[1] - before[1] + (after[0] - before[0])


# One update at the default learning rate moves the shipped reader (already confident:
# it was warm-started on relay transcripts) by a few hundredths of a nat: +0.017 toward
# relaying, -0.023 with the reward flipped. Larger steps are not monotone on this model.
MIN_MOVE = 0.005


def test_marft_update_moves_the_reader_toward_relaying() -> None:
    assert _margin_change(flipped=False) > MIN_MOVE


def test_with_the_reward_flipped_the_reader_moves_the_other_way() -> None:
    assert _margin_change(flipped=True) < -MIN_MOVE
