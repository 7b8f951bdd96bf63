"""Leaderboard entries backed by models: trained run folders (``run:``) and HF models (``hf:``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("peft")

from flexmg.agents.trainer import TrainConfig, Trainer  # noqa: E402
from flexmg.baselines.leaderboard import run_leaderboard  # noqa: E402
from flexmg.baselines.run_loader import RunLoadError, load_run  # noqa: E402


@pytest.fixture(scope="module")
def small_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A random 1-layer character-level Qwen2 saved as a local model folder (fast on CPU)."""
    from flexmg.models.tiny.model import build_tiny_model, tiny_config
    from flexmg.models.tiny.tokenizer import build_char_tokenizer

    d = tmp_path_factory.mktemp("model")
    cfg = tiny_config(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2)  # fmt: skip
    build_tiny_model(seed=0, config=cfg).save_pretrained(d)
    build_char_tokenizer().save_pretrained(d)
    return str(d)


def _train(model: str, run_dir: Path, seed: int, updates: int = 1) -> None:
    Trainer(
        TrainConfig(
            env="math-2agent",
            seed=seed,
            updates=updates,
            episodes_per_update=2,
            eval_every=1,
            eval_episodes=0,
            checkpoint_every=1,
            run_dir=str(run_dir),
            progress=False,
            policy={
                "model": model,
                "max_new_tokens": 4,
                "critic_hidden": (16, 8),
                "prompt_style": "compact",
                "device": "cpu",
            },
        )  # fmt: skip
    ).run()


def test_run_entries_per_env_and_seed_and_reevaluated_after_more_training(
    small_model: str, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    for seed in (0, 1):
        _train(small_model, runs / f"math-2agent-marft-s{seed}", seed)
    loaded = load_run(runs / "math-2agent-marft-s0")
    assert loaded.roles == ["solver", "verifier"] and loaded.updates == 1
    assert len(loaded.agent.act([{"task": "What is 1 + 1?", "role": "verifier"}])) == 1

    config = {
        "entries": [{"agent": f"run:{runs}/{{env}}-marft-s{{seed}}", "name": "marft"}],
        "envs": ["math-2agent", "math-3agent"],
        "seeds": [0, 1],
        "episodes": 3,
        "num_envs": 3,
        "out": str(tmp_path / "lb"),
        "progress": False,
    }
    res = run_leaderboard(config, echo=False)
    assert len(res["ran"]) == 2
    row = res["summary"][0]
    assert row["env"] == "math-2agent" and row["episodes"] == 6
    reasons = [s["reason"] for s in res["skipped"]]
    assert len(reasons) == 2 and all("config.json not found" in r for r in reasons)
    cells = json.loads((tmp_path / "lb" / "results.json").read_text())["cells"]
    infos = [c["entry_info"] for c in cells.values()]
    assert sorted(i["path"] for i in infos) == sorted(
        str(runs / f"math-2agent-marft-s{s}") for s in (0, 1)
    )
    assert all(i["updates"] == 1 for i in infos)

    assert run_leaderboard(config, echo=False)["ran"] == []  # resumed: nothing replayed
    Trainer.resume(runs / "math-2agent-marft-s1", updates=2).run()
    again = run_leaderboard(config, echo=False)
    assert again["ran"] == [json.dumps(["marft", "math-2agent", 1])]  # the new checkpoint only


def test_run_with_other_roles_is_skipped_and_hf_entry_plays(small_model: str, tmp_path: Path):
    _train(small_model, tmp_path / "run", 0)
    res = run_leaderboard(
        {
            "entries": [
                {"agent": f"run:{tmp_path}/run", "name": "trained"},
                {
                    "agent": f"hf:{small_model}",
                    "name": "base",
                    "kwargs": {"max_new_tokens": 4, "prompt_style": "compact", "device": "cpu"},
                },
            ],  # fmt: skip
            "envs": ["math-3agent"],
            "seeds": [0],
            "episodes": 2,
            "out": str(tmp_path / "lb"),
            "progress": False,
        },
        echo=False,
    )
    assert "trained with roles ['solver', 'verifier']" in res["skipped"][0]["reason"]
    assert [r["entry"] for r in res["summary"]] == ["base"]
    assert res["summary"][0]["episodes"] == 2


def test_load_run_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(RunLoadError, match="config.json not found"):
        load_run(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"train": {}, "roles": ["a"],
                                                      "policy_config": {}}))  # fmt: skip
    with pytest.raises(RunLoadError, match="no checkpoint"):
        load_run(tmp_path)
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(RunLoadError, match="cannot read"):
        load_run(tmp_path)


def test_a_greedy_entry_plays_each_distinct_task_once_with_the_same_records(
    small_model: str, tmp_path: Path
) -> None:
    import flexmg
    from flexmg.agents.llm_agent import LLMAgent
    from flexmg.baselines.leaderboard import eval_seed
    from flexmg.episodes import rollout
    from flexmg.tasks import Task

    tasks = [Task(id=f"t{i}", prompt=f"What is {i} + 1?", answer=str(i + 1)) for i in range(3)]
    kwargs = {"max_new_tokens": 4, "prompt_style": "compact", "device": "cpu"}
    config = {
        "entries": [{"agent": f"hf:{small_model}", "name": "base", "kwargs": kwargs}],
        "envs": [{"id": "math-2agent", "kwargs": {"tasks": tasks}}],
        "seeds": [0],
        "episodes": 10,
        "num_envs": 4,
        "out": str(tmp_path / "lb"),
        "progress": False,
    }
    res = run_leaderboard(config, echo=False)
    (cell,) = res["cells"].values()
    records = cell["episodes"]
    seeds = [eval_seed(0, k) for k in range(10)]
    assert [r["seed"] for r in records] == seeds
    played = [r for r in records if "replay_of" not in r]
    assert len({r["task_id"] for r in played}) == len(played) < len(records)
    by_seed = {r["seed"]: r for r in played}
    for r in records:  # a repeat counts its task's one played episode
        if "replay_of" in r:
            assert by_seed[r["replay_of"]]["task_id"] == r["task_id"]
            assert by_seed[r["replay_of"]]["metrics"] == r["metrics"]

    # the same figures as playing every episode
    agent = LLMAgent(small_model, role="verifier", greedy=True, **kwargs)
    vec = flexmg.make_vec("math-2agent", num_envs=4, tasks=tasks, split="eval")
    try:
        full = rollout(vec, agent, episodes=10, seed=seeds)
    finally:
        vec.close()
    assert [ep.metrics for ep in full.episodes] == [r["metrics"] for r in records]
