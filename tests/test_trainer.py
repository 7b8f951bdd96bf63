"""The training run: run folder contents, exact resume, corrupted checkpoints, CLI."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("peft")

import flexmg.cli as cli  # noqa: E402
from flexmg.agents.checkpoint import CheckpointError, list_checkpoints  # noqa: E402
from flexmg.agents.config import RunConfig  # noqa: E402
from flexmg.agents.evaluation import read_eval_episodes, saved_eval_updates  # noqa: E402
from flexmg.agents.trainer import TrainConfig, Trainer, read_metrics  # noqa: E402
from flexmg.evaluation import evaluation_record  # noqa: E402

TIMING_KEYS = {"seconds", "wall_seconds", "rollout_seconds", "learn_seconds"}


@pytest.fixture(scope="module")
def small_model(tmp_path_factory):
    """A random 1-layer character-level Qwen2 saved as a local model folder (fast on CPU)."""
    from family_models import build_small_tiny_model

    return build_small_tiny_model(tmp_path_factory.mktemp("model"))


def _config(model, run_dir, **kw):
    base = dict(
        env="echo",
        seed=3,
        updates=3,
        episodes_per_update=4,
        eval_every=2,
        eval_episodes=4,
        checkpoint_every=1,
        keep_checkpoints=2,
        run_dir=str(run_dir),
        progress=False,
        policy={
            "model": model,
            "max_new_tokens": 4,
            "critic_hidden": (16, 8),
            "prompt_style": "compact",
            "device": "cpu",
        },
        ppo={"epochs": 2, "minibatches": 2, "lr_actor": 1e-2, "lr_critic": 1e-2},
    )
    base.update(kw)
    return TrainConfig(**base)


def _strip(records):
    return [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in records]


@pytest.mark.slow
@pytest.mark.parametrize("algo,level", [("marft", "action"), ("ippo", "token")])
def test_run_folder_and_exact_resume(small_model, tmp_path, algo, level):
    ppo = {"epochs": 2, "minibatches": 2, "lr_actor": 1e-2, "lr_critic": 1e-2, "level": level}
    full = Trainer(_config(small_model, tmp_path / "full", algo=algo, ppo=ppo)).run()
    run = tmp_path / "full"
    for name in ("config.json", "metrics.jsonl", "learning_curve.png", "summary.json"):
        assert (run / name).is_file(), name
    assert list((run / "tb").iterdir())
    assert len(list_checkpoints(run / "checkpoints")) == 2  # keep_checkpoints
    summary = json.loads((run / "summary.json").read_text())
    for key in ("eval_start", "eval_end", "seed", "updates", "wall_seconds"):
        assert key in summary
    assert summary["updates"] == 3 and summary["seed"] == 3 and summary == full
    evals = [r for r in read_metrics(run) if r["kind"] == "eval"]
    assert [e["update"] for e in evals] == [0, 2, 3]
    assert saved_eval_updates(run) == [0, 2, 3]  # each evaluation's episodes are kept
    for e in evals:
        episodes = read_eval_episodes(run, e["update"])
        assert len(episodes) == e["episodes"]
        saved = evaluation_record(episodes)
        assert {k: saved[k] for k in ("success_rate", "success_rate_ci", "prompts")} == {
            k: e[k] for k in ("success_rate", "success_rate_ci", "prompts")
        }

    # interrupted after 1 update, then resumed
    part = tmp_path / "part"
    Trainer(_config(small_model, part, algo=algo, ppo=ppo)).run(stop_after=1)
    assert not (part / "summary.json").exists()
    Trainer.resume(part).run()
    assert _strip(read_metrics(part)) == _strip(read_metrics(run))
    resumed = json.loads((part / "summary.json").read_text())
    assert resumed["evals"] == summary["evals"]
    assert [read_eval_episodes(part, u) for u in (0, 2, 3)] == [
        read_eval_episodes(run, u) for u in (0, 2, 3)
    ]


def test_corrupted_checkpoint_is_a_clear_error(small_model, tmp_path):
    run = tmp_path / "run"
    summary = Trainer(_config(small_model, run, updates=1)).run()
    assert summary["updates"] == 1 and summary["eval_start"] is not None
    for key in ("eval_prompts", "correct_start", "correct_end", "format_start", "format_end",
                "eval_end_ci", "correct_end_ci", "format_end_ci"):  # fmt: skip
        assert key in summary, key
    assert summary["eval_prompts"] >= 1
    train = [r for r in read_metrics(run) if r["kind"] == "train"]
    assert "sampler_kl" in train[0] and abs(train[0]["sampler_kl"]) < 1e-3
    assert "truncated_frac" in train[0]
    # the budget counters: one sampled action per role per episode (echo: one round)
    roles = json.loads((run / "config.json").read_text())["roles"]
    assert train[0]["actions"] == train[0]["episodes"] * len(roles) == 4 * len(roles)
    assert train[0]["generated_tokens"] == round(train[0]["action_tokens"] * train[0]["actions"])
    for name in ("config.json", "metrics.jsonl", "learning_curve.png", "summary.json", "tb"):
        assert (run / name).exists(), name
    ckpt = list_checkpoints(run / "checkpoints")[-1]
    ckpt.write_bytes(ckpt.read_bytes()[:-100])
    with pytest.raises(CheckpointError, match="truncated or corrupted"):
        Trainer.resume(run)
    with pytest.raises(FileExistsError, match="--resume"):
        Trainer(_config(small_model, run, updates=1)).run()
    with pytest.raises(CheckpointError, match="config.json not found"):
        Trainer.resume(tmp_path / "nothing")


def test_cli_train_and_eval(small_model, tmp_path, capsys):
    run = tmp_path / "cli"
    args = ["train", "--algo", "marft", "--env", "echo", "--model", small_model,
            "--updates", "1", "--episodes-per-update", "2", "--eval-episodes", "2",
            "--run-dir", str(run), "--no-progress", "--max-new-tokens", "3",
            "--device", "cpu", "--share-parameters"]  # fmt: skip
    assert cli.main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["updates"] == 1
    cfg = json.loads((run / "config.json").read_text())
    assert cfg["policy_config"]["share_parameters"] is True
    assert cli.main(["eval", "--run", str(run), "--episodes", "3"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["episodes"] == 3 and 0.0 <= res["success_rate"] <= 1.0
    assert list((run / "evals").iterdir())
    assert cli.main(["train", "--resume", str(run), "--lr", "0.1"]) == 2
    assert cli.main(args) == 2  # the run folder already holds a run
    assert cli.main(["eval", "--run", str(tmp_path / "missing")]) == 2  # a path that is not there


def test_config_errors():
    with pytest.raises(ValueError, match="unknown TrainConfig keys"):
        TrainConfig.from_dict({"nope": 1})
    with pytest.raises(ValueError, match="episodes_per_update"):
        TrainConfig(episodes_per_update=0)


def test_a_run_folder_of_the_old_code_resumes_to_the_same_records(small_model, tmp_path):
    """tests/data/run_v1: stopped after 1 of 2 updates by the code before the config unification."""
    import shutil
    from pathlib import Path

    old = Path(__file__).parent / "data" / "run_v1"
    run = tmp_path / "run_v1"
    shutil.copytree(old, run)
    config = run / "config.json"
    config.write_text(config.read_text().replace("/tmp/tidy3/old/model", small_model))
    before = json.loads(config.read_text())
    Trainer.resume(run).run()
    after = json.loads(config.read_text())
    # the same settings, in the typed configs (the old "train" section held only the policy
    # and PPO fields it set), and the resolved sections unchanged
    moved = {**before, "train": {**before["train"], "run_dir": str(run)}}
    # the update order is now written down: this run's (all agents together) is kept
    moved["algorithm"] = {**before["algorithm"], "sequential": False}
    assert RunConfig.from_dict(after) == RunConfig.from_dict(moved)
    added = {  # fields added since: their defaults
        "policy_config": {"role_temperature": {}, "role_max_new_tokens": {}},
        "ppo_config": {
            "adam_eps": None,
            "critic_steps": 0,
            "critic_holdout": 0.0,
        },  # None: the model kind's (the learner resolves it)
    }
    assert {k: v for k, v in after.items() if k != "train"} == {
        k: ({**v, **added[k]} if k in added else v) for k, v in moved.items() if k != "train"
    }
    expected = [json.loads(line) for line in (old / "uninterrupted_metrics.jsonl").open()]
    got = read_metrics(run)
    assert [(r["kind"], r["update"]) for r in got] == [(r["kind"], r["update"]) for r in expected]
    for mine, theirs in zip(_strip(got), _strip(expected), strict=True):
        # Records only gain keys (actions and generated_tokens per update, mean_rounds,
        # the interval of the team reward).
        gained = {"actions", "generated_tokens", "mean_rounds", "team_reward_ci",
                  "explained_variance/a", "explained_variance/b"}  # fmt: skip
        assert mine.keys() - theirs.keys() <= gained
        # ... and lose the team's format and correctness: echo grades no role, so the old
        # code's 0.0 was a rate nobody measured (now absent)
        dropped = {"format_rate", "format_rate_ci", "correct_rate", "correct_rate_ci"}
        assert theirs.keys() - mine.keys() <= dropped
        theirs = {k: v for k, v in theirs.items() if k not in dropped}
        if mine["update"] > 1 and mine["kind"] == "train":
            # The sampler draws by inverse CDF since 2026-12-06 (so that stopped rows can
            # leave the batch), and update 2 resamples: its draws differ from the old
            # code's. Exact resume by today's code is test_run_folder_and_exact_resume's.
            theirs = {k: v for k, v in theirs.items() if k in {"kind", "update", "episodes"}}
        for key, value in theirs.items():  # floats up to the CPU's rounding, the rest exactly
            if isinstance(value, float):
                assert mine[key] == pytest.approx(value, rel=1e-4, abs=1e-6), (key, mine, theirs)
            else:
                assert mine[key] == value, (key, mine, theirs)
