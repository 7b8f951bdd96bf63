"""Rewards a run cannot learn from are said, not trained past in silence.

* per-role rewards MARFT's credit would ignore: a one-line refusal naming ``--algo ippo``;
* a rollout whose rewards are all equal: one warning per flat stretch in ``train.log``;
* format and correctness rates an env does not report: absent from the records, not 0.0.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("peft")

import flexmg.cli as cli  # noqa: E402
from flexmg.agents.checkpoint import list_checkpoints  # noqa: E402
from flexmg.agents.trainer import (  # noqa: E402
    RoleRewardsIgnored,
    TrainConfig,
    Trainer,
    read_metrics,
)
from flexmg.env import Judgement  # noqa: E402
from flexmg.tasks import ListTaskSource, Task  # noqa: E402
from flexmg.workflow import Workflow  # noqa: E402


def _role_scored_reward(task, transcript):
    """``a`` always gets 1, ``b`` 0, the team 0; no format or correctness reported."""
    return Judgement(score=0.0, role_scores={"a": 1.0, "b": 0.0})


RoleScored = Workflow(
    name="role-scored",
    roles={"a": "Say the word you are given.", "b": "Repeat exactly what a said."},
    edges=[("a", "b")],
    tasks=ListTaskSource([Task(id=f"w/{w}", prompt=f"Say: {w}", answer=w) for w in "xyz"]),
    reward=_role_scored_reward,
    horizon=1,
)
ROLE_SCORED = f"{__name__}:RoleScored"


@pytest.fixture(scope="module")
def small_model(tmp_path_factory):
    """A random 1-layer character-level Qwen2 saved as a local model folder (fast on CPU)."""
    from family_models import build_small_tiny_model

    return build_small_tiny_model(tmp_path_factory.mktemp("model"))


def _config(model, run_dir, **kw):
    base = dict(env="echo", seed=3, updates=2, episodes_per_update=4, eval_every=2,
                eval_episodes=3, checkpoint_every=1, run_dir=str(run_dir), progress=False,
                policy={"model": model, "max_new_tokens": 4, "critic_hidden": (16, 8),
                        "device": "cpu"},
                ppo={"epochs": 1, "minibatches": 1})  # fmt: skip
    return TrainConfig(**{**base, **kw})


def test_marft_refuses_per_role_rewards_and_ippo_uses_them(small_model, tmp_path, capsys):
    run = tmp_path / "marft"
    with pytest.raises(RoleRewardsIgnored, match=r"--algo ippo") as err:
        Trainer(_config(small_model, run, env=ROLE_SCORED, algo="marft")).run()
    assert "\n" not in str(err.value)
    assert "a 1, b 0" in str(err.value) and "update 1" in str(err.value)
    # refused before the first update changed anything
    assert not [r for r in read_metrics(run) if r["kind"] == "train"]
    assert not list_checkpoints(run / "checkpoints")

    # the CLI: one line, exit 1
    args = ["train", "--algo", "marft", "--env", ROLE_SCORED, "--model", small_model,
            "--updates", "1", "--episodes-per-update", "2", "--eval-episodes", "2",
            "--run-dir", str(tmp_path / "cli"), "--no-progress", "--max-new-tokens", "3",
            "--device", "cpu"]  # fmt: skip
    capsys.readouterr()
    assert cli.main(args) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].startswith("flexmg train: error: --algo marft trains every role on the team")
    assert "--algo ippo" in lines[-1]

    # IPPO trains each role on its own reward: the same env runs
    summary = Trainer(_config(small_model, tmp_path / "ippo", env=ROLE_SCORED, algo="ippo")).run()
    assert summary["updates"] == 2
    train = [r for r in read_metrics(tmp_path / "ippo") if r["kind"] == "train"]
    assert [r["flat_rewards"] for r in train] == [0.0, 0.0]  # a gets 1, b gets 0: not flat
    assert "flat rewards" not in (tmp_path / "ippo" / "train.log").read_text()


def test_flat_rewards_warn_once_per_stretch(small_model, tmp_path):
    run = tmp_path / "run"
    Trainer(_config(small_model, run, updates=3)).run()
    train = [r for r in read_metrics(run) if r["kind"] == "train"]
    # a random tiny model never echoes the word: every episode scores 0, every update
    assert [r["flat_rewards"] for r in train] == [1.0, 1.0, 1.0]
    assert {r["team_reward"] for r in train} == {0.0}

    def warnings():
        lines = (run / "train.log").read_text().splitlines()
        return [line.split(" ", 1)[1] for line in lines if "flat rewards" in line]

    assert len(warnings()) == 1
    assert warnings()[0].startswith("flat rewards at update 1: all episodes scored 0; ")
    assert "max-new-tokens" in warnings()[0]  # 4 new tokens cut most actions: a named cause
    # the stretch goes on after a resume: no second warning
    Trainer.resume(run, updates=4).run()
    assert [r["flat_rewards"] for r in read_metrics(run) if r["kind"] == "train"][-1] == 1.0
    assert len(warnings()) == 1
    assert "resumed after update 3 of 4" in (run / "train.log").read_text()


def test_rates_an_env_does_not_report_are_absent(small_model, tmp_path):
    # echo reports each role's own_correct but grades no role: no team format or correctness
    run = tmp_path / "echo"
    summary = Trainer(_config(small_model, run, updates=1)).run()
    evals = [r for r in read_metrics(run) if r["kind"] == "eval"]
    for e in evals:
        for key in ("format_rate", "format_rate_ci", "correct_rate", "correct_rate_ci"):
            assert key not in e
        assert set(e["per_role"]["a"]) == {"success", "format", "correct", "truncated"}
        assert "success_rate" in e and "team_reward" in e
    assert summary["format_end"] is None and summary["correct_end"] is None
    assert summary["eval_end"] is not None
    assert json.loads((run / "summary.json").read_text())["format_start"] is None

    # a reward that reports nothing per role: no per-role format or correctness either
    run = tmp_path / "scored"
    Trainer(_config(small_model, run, env=ROLE_SCORED, algo="ippo", updates=1)).run()
    for e in (r for r in read_metrics(run) if r["kind"] == "eval"):
        assert "format_rate" not in e and "correct_rate" not in e
        assert all(set(rates) == {"success", "truncated"} for rates in e["per_role"].values())
