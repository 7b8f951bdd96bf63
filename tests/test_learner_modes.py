"""The learner's modes end to end with the tiny model: the critic-free group baseline
(no value heads, advantages relative to the prompt's group) and MARFT's agent-by-agent
update (the successor learns against its predecessor's updated policy)."""

from __future__ import annotations

import pytest

from flexmg.agents.config import TrainConfig
from flexmg.agents.marft import get_algorithm
from flexmg.agents.trainer import Trainer, read_metrics


def _run(tmp_path, **kw):
    cfg = TrainConfig(env="math-2agent", updates=1, episodes_per_update=8, eval_episodes=0,
                      run_dir=str(tmp_path / "run"), progress=False, **kw)  # fmt: skip
    trainer = Trainer(cfg)
    trainer.run()
    return trainer, [r for r in read_metrics(cfg.run_dir) if r["kind"] == "train"][-1]


def test_group_baseline_is_critic_free_and_plays_each_prompt_g_times(tmp_path) -> None:
    trainer, rec = _run(tmp_path, algo="group", group_size=4)
    assert len(trainer.policy.value_heads) == 0 and not trainer.learner.critic_opts
    seeds = trainer.rollout_seeds(0)
    assert seeds[:4] == [seeds[0]] * 4 and seeds[4] == seeds[0] + 1
    assert "value_loss" not in rec and "explained_variance" not in rec


def test_group_baseline_refuses_groups_of_one(tmp_path) -> None:
    with pytest.raises(ValueError, match="group-size >= 2"):
        Trainer(TrainConfig(env="math-2agent", algo="group", run_dir=str(tmp_path / "r")))
    with pytest.raises(ValueError, match="not a multiple"):
        Trainer(TrainConfig(env="math-2agent", group_size=3, episodes_per_update=8,
                            run_dir=str(tmp_path / "s")))  # fmt: skip


def test_marft_updates_agent_by_agent_and_logs_ev_per_role(tmp_path) -> None:
    assert get_algorithm("marft").sequential and not get_algorithm("ippo").sequential
    trainer, rec = _run(tmp_path, algo="marft")
    assert trainer.learner.sequential
    if rec["actor_steps"] > 0:  # the solver learned first: its ratio was measured
        assert "sequential_ratio/solver" in rec
        assert 0.0 <= rec["sequential_shift/solver"] < float("inf")
    assert {"explained_variance/solver", "explained_variance/verifier"} <= set(rec)
