"""``mean_rounds``: rounds actually played per episode, in summaries, evals and train records."""

from __future__ import annotations

import json

import pytest

import flexmg
from flexmg.evaluation import evaluation_record
from flexmg.metrics import summarize_episodes


def _scripted_episode(answers: list[str]) -> dict:
    """Play math-1agent with horizon 2, the solver writing ``answers`` round by round."""
    env = flexmg.make("math-1agent", horizon=2)
    env.reset(seed=0)
    gold = env.task.answer
    for answer in answers:
        env.step(answer.format(gold=gold, wrong=int(gold) + 1))
    assert all(env.terminations.values())
    return env.episode_metrics


def test_mean_rounds_of_scripted_two_round_episodes() -> None:
    episodes = [
        _scripted_episode(["\\boxed{{{wrong}}}", "\\boxed{{{gold}}}"]),  # wrong, then fixed: 2
        _scripted_episode(["\\boxed{{{gold}}}"]),  # right at once: 1
        _scripted_episode(["\\boxed{{{wrong}}}", "\\boxed{{{wrong}}}"]),  # wrong twice: 2
    ]
    assert [e["rounds"] for e in episodes] == [2, 1, 2]
    assert [e["success"] for e in episodes] == [True, True, False]
    assert summarize_episodes(episodes)["mean_rounds"] == pytest.approx(5 / 3)
    assert evaluation_record(episodes)["mean_rounds"] == pytest.approx(5 / 3)
    assert summarize_episodes([])["mean_rounds"] == 0.0


def test_trainer_reports_mean_rounds_at_horizon_two(tmp_path) -> None:
    pytest.importorskip("peft")
    from flexmg.agents.trainer import TrainConfig, Trainer, read_metrics
    from flexmg.models.tiny.model import build_tiny_model, tiny_config
    from flexmg.models.tiny.tokenizer import build_char_tokenizer

    model = tmp_path / "model"
    cfg = tiny_config(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2)  # fmt: skip
    build_tiny_model(seed=0, config=cfg).save_pretrained(model)
    build_char_tokenizer().save_pretrained(model)
    run = tmp_path / "run"
    config = TrainConfig(
        env="math-1agent", updates=1, episodes_per_update=4, eval_episodes=4, eval_every=1,
        env_kwargs={"horizon": 2}, run_dir=str(run), progress=False,
        policy={"model": str(model), "max_new_tokens": 3, "critic_hidden": (16, 8),
                "device": "cpu"},
    )  # fmt: skip
    Trainer(config).run()
    # A random model never answers right: every episode plays both rounds.
    records = read_metrics(run)
    assert [r["mean_rounds"] for r in records] == [2.0, 2.0, 2.0]  # eval 0, train 1, eval 1
    summary = json.loads((run / "summary.json").read_text())
    assert summary["mean_rounds_start"] == summary["mean_rounds_end"] == 2.0


def test_learning_curve_multi_round_preset(tmp_path, monkeypatch, capsys) -> None:
    from helpers import load_benchmark

    bench = load_benchmark("learning_curve")
    calls = []

    def fake_run_seed(seed, algo, env, out, extra, env_kwargs=None):
        calls.append((env, env_kwargs, extra))
        return {"eval_start": 0.1, "eval_end": 0.2, "mean_rounds_start": 1.9,
                "mean_rounds_end": 1.7, "process_seconds": 1.0, "run_dir": str(out)}  # fmt: skip

    monkeypatch.setattr(bench, "run_seed", fake_run_seed)
    assert bench.main(["--seeds", "0", "--preset", "multi-round", "--out", str(tmp_path),
                       "--", "--updates", "2"]) == 0  # fmt: skip
    assert calls == [("math-2agent", {"horizon": 2}, ["--updates", "2"])]
    assert "1.90->1.70" in capsys.readouterr().out
    result = json.loads((tmp_path / "learning_curve_summary.json").read_text())
    assert result["preset"] == "multi-round" and result["mean"]["mean_rounds_end"] == 1.7
