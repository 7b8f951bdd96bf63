"""The leaderboard runner: results, resume without redoing cells, entries, CLI, config errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flexmg.baselines.entries import EntryError, EntrySpec
from flexmg.baselines.leaderboard import (
    RESULTS_FORMAT,
    SEED_STRIDE,
    LeaderboardConfig,
    eval_seed,
    run_leaderboard,
)
from flexmg.cli import main as cli_main
from flexmg.tasks import EVAL_SEED_OFFSET

# ---------------------------------------------------------------- user entries
# Referenced by the tests below as "test_leaderboard:<name>" (module:callable entries).
CALLS: dict[str, int] = {"act": 0, "factory": 0}


class CountingAgent:
    """Answers \\boxed{0} and counts its act() calls in CALLS."""

    def act(self, observations: list[dict]) -> list[str]:
        CALLS["act"] += 1
        return ["\\boxed{0}" for _ in observations]


def counting_factory(env_id: str, roles: list[str]) -> CountingAgent:
    CALLS["factory"] += 1
    assert env_id.startswith("math-") and roles
    return CountingAgent()


def peeking_factory(vec: Any) -> Any:
    """Reads the live task from the vector env, like the oracle (needs a sync vector env)."""
    envs = vec.envs

    def act(obs: dict) -> str:
        task = next(e.task for e in envs if e.task.prompt == obs["task"])
        return f"\\boxed{{{task.answer}}}"

    return act


def hostile(obs: dict) -> str:
    """An obs -> str function writing hostile text."""
    return "\ud800\x00" + "字" * 20000 + "```python\nimport os; os.system('rm -rf /')\n```"


def reset_calls() -> None:
    CALLS["act"] = CALLS["factory"] = 0


def _config(tmp_path: Path, **over: Any) -> LeaderboardConfig:
    data = {
        "entries": ["scripted:oracle", "scripted:empty", "test_leaderboard:counting_factory"],
        "envs": ["math-2agent"],
        "seeds": [0, 1],
        "episodes": 4,
        "num_envs": 2,
        "out": str(tmp_path / "lb"),
        "progress": False,
    }
    data.update(over)
    return LeaderboardConfig.from_dict(data)


# ---------------------------------------------------------------------- tests
def test_results_tables_and_chart(tmp_path: Path) -> None:
    res = run_leaderboard(_config(tmp_path), echo=False)
    out = tmp_path / "lb"
    data = json.loads((out / "results.json").read_text())
    assert data["format"] == RESULTS_FORMAT
    assert len(data["cells"]) == 3 * 2
    for cell in data["cells"].values():
        assert len(cell["episodes"]) == 4
        for ep in cell["episodes"]:
            assert {"success", "score", "rounds", "per_role"} <= set(ep["metrics"])
            assert "/eval/" in ep["task_id"]  # held-out split
            assert ep["seed"] >= EVAL_SEED_OFFSET
    rows = {r["entry"]: r for r in res["summary"]}
    assert rows["scripted:oracle"]["score"]["mean"] == 1.0
    assert rows["scripted:oracle"]["success_rate"]["ci95"] == [1.0, 1.0]
    assert rows["scripted:empty"]["score"]["mean"] == 0.0
    assert rows["scripted:empty"]["format_error"]["verifier"] == 1.0
    assert rows["scripted:empty"]["graded_role"] == "verifier"
    assert rows["test_leaderboard:counting_factory"]["episodes"] == 8
    assert all(r["seeds"] == [0, 1] and r["complete"] for r in rows.values())
    md = (out / "leaderboard.md").read_text()
    assert "| scripted:oracle | 1.000 ± 0.000 |" in md
    assert (out / "leaderboard.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(out.glob(".*.tmp"))  # atomic writes leave no temp files


def test_rerun_resumes_without_calling_agents_again(tmp_path: Path) -> None:
    reset_calls()
    first = run_leaderboard(_config(tmp_path), echo=False)
    assert len(first["ran"]) == 6
    calls_after_first = dict(CALLS)
    assert calls_after_first["factory"] == 2 and calls_after_first["act"] > 0

    again = run_leaderboard(_config(tmp_path), echo=False)
    assert again["ran"] == []
    assert CALLS == calls_after_first  # not a single agent call
    assert again["summary"] == first["summary"]

    more = run_leaderboard(_config(tmp_path, seeds=[0, 1, 2]), echo=False)
    assert sorted(json.loads(k)[2] for k in more["ran"]) == [2, 2, 2]  # only the new seed
    assert CALLS["factory"] == 3
    assert all(r["seeds"] == [0, 1, 2] for r in more["summary"])

    changed = run_leaderboard(_config(tmp_path, episodes=3, seeds=[0, 1, 2]), echo=False)
    assert len(changed["ran"]) == 9  # a changed episode count invalidates every cell

    redo = run_leaderboard(_config(tmp_path, episodes=3, seeds=[0, 1, 2]), redo=True, echo=False)
    assert len(redo["ran"]) == 9


def test_env_kwargs_are_part_of_the_cell(tmp_path: Path) -> None:
    swapped = {"id": "math-2agent", "name": "swapped", "kwargs": {"roles": ["verifier", "solver"]}}
    res = run_leaderboard(
        _config(tmp_path, entries=["scripted:oracle"], envs=["math-2agent", swapped]), echo=False
    )
    rows = {r["env"]: r for r in res["summary"]}
    assert rows["swapped"]["graded_role"] == "solver"
    assert rows["math-2agent"]["graded_role"] == "verifier"
    assert rows["swapped"]["score"]["mean"] == 1.0


def test_factory_reading_the_env_gets_a_sync_vector_env(tmp_path: Path) -> None:
    cfg = _config(
        tmp_path,
        entries=[{"agent": "test_leaderboard:peeking_factory", "name": "peek"}],
        vectorization="async",
    )
    res = run_leaderboard(cfg, echo=False)
    assert res["summary"][0]["score"]["mean"] == 1.0


def test_hostile_entry_is_scored_not_crashed(tmp_path: Path) -> None:
    res = run_leaderboard(
        _config(tmp_path, entries=["test_leaderboard:hostile"], seeds=[0]), echo=False
    )
    row = res["summary"][0]
    assert row["score"]["mean"] == 0.0 and row["format_error"]["verifier"] == 1.0
    assert row["score"]["ci95"] == [None, None]  # one seed: no interval, not a fake one


def test_missing_run_is_skipped_with_a_reason_and_retried(tmp_path: Path) -> None:
    entry = {"agent": f"run:{tmp_path}/runs/{{env}}-s{{seed}}", "name": "marft"}
    res = run_leaderboard(_config(tmp_path, entries=["scripted:empty", entry]), echo=False)
    assert {r["entry"] for r in res["summary"]} == {"scripted:empty"}
    assert len(res["skipped"]) == 2
    assert "config.json not found" in res["skipped"][0]["reason"]
    assert f"{tmp_path}/runs/math-2agent-s0" in res["skipped"][0]["reason"]
    again = run_leaderboard(_config(tmp_path, entries=["scripted:empty", entry]), echo=False)
    assert len(again["skipped"]) == 2 and again["ran"] == []


def test_eval_seeds_are_disjoint_from_training_seeds() -> None:
    assert eval_seed(0) == EVAL_SEED_OFFSET
    assert eval_seed(2, 5) == EVAL_SEED_OFFSET + 2 * SEED_STRIDE + 5
    # the trainer's rollout seeds: 1e9 * (seed % 1000 + 1) + update * episodes_per_update
    assert 1_000_000_000 * 1000 + 10**9 < EVAL_SEED_OFFSET
    with pytest.raises(ValueError):
        eval_seed(-1)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"entries": ["scripted:oracle"], "envs": ["math-2agent"], "epsiodes": 3},
            "unknown leaderboard config keys",
        ),
        ({"entries": ["oracle"], "envs": ["math-2agent"]}, "expected KIND:VALUE"),
        ({"entries": ["scripted:genius"], "envs": ["math-2agent"]}, "unknown scripted agent"),
        (
            {"entries": ["scripted:empty", "scripted:empty"], "envs": ["math-2agent"]},
            "duplicate entry names",
        ),
        (
            {"entries": ["scripted:empty"], "envs": ["math-2agent"], "seeds": [1, 1]},
            "distinct integers",
        ),
        (
            {
                "entries": ["scripted:empty"],
                "envs": [{"id": "math-2agent", "kwargs": {"split": "train"}}],
            },
            "set by the leaderboard",
        ),
        ({"entries": [], "envs": ["math-2agent"]}, "at least one entry"),
        ({"envs": ["math-2agent"]}, "needs \\['entries'\\]"),
    ],
)
def test_config_errors_are_clear(data: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LeaderboardConfig.from_dict(data)


def test_bad_user_entries_are_clear(tmp_path: Path) -> None:
    with pytest.raises(EntryError, match="cannot import module"):
        run_leaderboard(_config(tmp_path, entries=["no_such_module_xyz:agent"]), echo=False)
    with pytest.raises(EntryError, match="has no 'nope'"):
        run_leaderboard(_config(tmp_path, entries=["test_leaderboard:nope"]), echo=False)
    with pytest.raises(EntryError, match="needs name="):
        EntrySpec(agent=CountingAgent())


def test_python_object_entries(tmp_path: Path) -> None:
    spec = EntrySpec(agent=CountingAgent(), name="counter")
    res = run_leaderboard(_config(tmp_path, entries=[spec], seeds=[0]), echo=False)
    assert res["summary"][0]["entry"] == "counter"


def test_cli_quick_flags_and_config_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "cli"
    argv = [
        "leaderboard",
        "--entries",
        "scripted:oracle",
        "scripted:random",
        "--envs",
        "math-1agent",
        "--seeds",
        "0",
        "1",
        "--episodes",
        "3",
        "--out",
        str(out),
        "--no-progress",
    ]
    assert cli_main(argv) == 0
    printed = capsys.readouterr().out
    assert "| scripted:oracle | 1.000 ± 0.000 |" in printed
    cfg = tmp_path / "lb.yaml"
    cfg.write_text(
        "entries:\n  - scripted:oracle\n  - {agent: scripted:empty, name: nothing}\n"
        f"envs: [math-1agent]\nseeds: [0]\nepisodes: 2\nout: {out}\n"
    )
    assert cli_main(["leaderboard", "--config", str(cfg), "--no-progress"]) == 0
    data = json.loads((out / "results.json").read_text())
    assert {json.loads(k)[0] for k in data["cells"]} >= {"scripted:oracle", "nothing"}
    assert cli_main(["leaderboard", "--envs", "math-1agent", "--no-progress"]) == 2
    assert "--entries" in capsys.readouterr().err


def test_shipped_configs_parse() -> None:
    root = Path(__file__).resolve().parents[1] / "configs"
    files = sorted(root.glob("**/*.yaml"))
    assert files, f"no configs in {root}"
    for path in files:
        cfg = LeaderboardConfig.from_yaml(path)
        assert cfg.entries and cfg.envs


def crashing(obs: dict) -> str:
    """An agent with a bug."""
    raise ZeroDivisionError("oops")


def test_agent_crash_names_the_cell_and_keeps_finished_cells(tmp_path: Path) -> None:
    from flexmg.baselines.leaderboard import CellError

    cfg = _config(tmp_path, entries=["scripted:oracle", "test_leaderboard:crashing"], seeds=[0])
    with pytest.raises(CellError, match="'test_leaderboard:crashing' failed on env 'math-2agent'"):
        run_leaderboard(cfg, echo=False)
    saved = json.loads((tmp_path / "lb" / "results.json").read_text())["cells"]
    assert list(saved) == [json.dumps(["scripted:oracle", "math-2agent", 0])]
    assert cli_main(["leaderboard", "--entries", "test_leaderboard:crashing", "--envs",
                     "math-1agent", "--episodes", "1", "--out", str(tmp_path / "c"),
                     "--no-progress"]) == 1  # fmt: skip


def test_entry_restricted_to_some_envs_is_na_elsewhere(tmp_path: Path) -> None:
    entry = {"agent": "scripted:oracle", "name": "oracle-1", "envs": ["math-1agent"]}
    cfg = _config(tmp_path, entries=[entry, "scripted:empty"], envs=["math-1agent", "math-2agent"])
    res = run_leaderboard(cfg, echo=False)
    assert {(r["entry"], r["env"]) for r in res["summary"]} == {
        ("oracle-1", "math-1agent"),
        ("scripted:empty", "math-1agent"),
        ("scripted:empty", "math-2agent"),
    }
    assert res["skipped"] == []
    assert "| oracle-1 | 1.000 ± 0.000 | n/a |" in (tmp_path / "lb" / "leaderboard.md").read_text()
