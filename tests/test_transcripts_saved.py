"""Training, ``flexmg eval`` and leaderboards save their episodes' transcripts for ``flexmg view``.

End to end with real parts: a tiny-model ``flexmg train`` run, ``flexmg eval`` of its
checkpoint and a leaderboard with the run as an entry, each read back by the viewer's
loader (``load_collection``/``page_data``); every saved episode is replayed from its
recorded actions in a fresh env, which must give the same rewards and outcome.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("peft")

import flexmg  # noqa: E402
import flexmg.cli as cli  # noqa: E402
from flexmg.agents.config import TrainConfig  # noqa: E402
from flexmg.agents.evaluation import read_eval_episodes  # noqa: E402
from flexmg.agents.trainer import read_metrics  # noqa: E402
from flexmg.baselines.leaderboard import LeaderboardConfig  # noqa: E402
from flexmg.episodes import rollout  # noqa: E402
from flexmg.transcripts import (  # noqa: E402
    TRANSCRIPTS_SUFFIX,
    eval_transcripts_path,
    read_transcripts,
    run_transcripts_path,
)
from flexmg.view import ViewError, load_collection, page_data  # noqa: E402


@pytest.fixture(scope="module")
def small_model(tmp_path_factory):
    """A random 1-layer character-level Qwen2 saved as a local model folder (fast on CPU)."""
    from family_models import build_small_tiny_model

    return build_small_tiny_model(tmp_path_factory.mktemp("model"))


def _train(model: str, run: Path, *extra: str) -> None:
    args = ["train", "--env", "echo", "--model", model, "--updates", "2", "--eval-every", "1",
            "--episodes-per-update", "4", "--eval-episodes", "6", "--run-dir", str(run),
            "--no-progress", "--max-new-tokens", "3", "--device", "cpu", *extra]  # fmt: skip
    assert cli.main(args) == 0


@pytest.fixture(scope="module")
def trained(small_model, tmp_path_factory):
    """A 2-update run that saves 3 transcripts per evaluation and per saved rollout."""
    run = tmp_path_factory.mktemp("runs") / "run"
    _train(small_model, run, "--transcripts", "3")
    return run


def _replay(record: dict[str, Any], split: str = "eval") -> None:
    """Play the record's actions again in a fresh env: the same rewards and outcome."""
    actions = iter([t["action"] for t in record["transcript"]])
    env = flexmg.make(record["env"], split=split)
    try:
        episode = rollout(env, lambda obs: next(actions), episodes=1, seed=record["seed"])
    finally:
        env.close()
    again = episode.episodes[0]
    assert [t.action for t in again.transcript] == [t["action"] for t in record["transcript"]]
    assert [t.role for t in again.transcript] == [t["role"] for t in record["transcript"]]
    assert [t.reward for t in again.transcript] == [t["reward"] for t in record["transcript"]]
    assert again.metrics["success"] == record["team"]["success"]
    assert again.task_id == record["task"]["id"]


def test_training_saves_each_evaluation_and_the_rollout_before_it(trained):
    run = trained
    for update in (0, 1, 2):
        path = run_transcripts_path(run, update)
        records = list(read_transcripts(path))
        assert len(records) == 3
        metrics = {m["task_id"]: m for m in read_eval_episodes(run, update)}
        for record in records:
            assert record["source"] == {"kind": "eval", "update": update}
            assert metrics[record["task"]["id"]]["success"] == record["team"]["success"]
            _replay(record)
    # a seeded sample: the same prompts at every evaluation (so start and end pair up)
    prompts = [
        sorted(r["prompt_id"] for r in read_transcripts(run_transcripts_path(run, u)))
        for u in (0, 1, 2)
    ]
    assert prompts[0] == prompts[1] == prompts[2]
    for update in (1, 2):
        records = list(read_transcripts(run_transcripts_path(run, update, "train")))
        assert len(records) == 3
        for record in records:
            assert record["source"] == {"kind": "train", "update": update}
            for turn in record["transcript"]:
                assert set(turn["annotations"]) == {"value", "advantage", "return"}
            _replay(record, split="train")
    assert not run_transcripts_path(run, 0, "train").exists()

    col = load_collection([run])
    assert [(g.label, len(g.records)) for g in col.groups] == [
        ("eval @ update 0", 3), ("eval @ update 1", 3), ("eval @ update 2", 3),
        ("train rollout @ update 1", 3), ("train rollout @ update 2", 3),
    ]  # fmt: skip
    data = page_data(col)
    saved = [r for g in col.groups for r in g.records]
    assert [[t["action"] for t in e["turns"]] for e in data["episodes"]] == [
        [t["action"] for t in r["transcript"]] for r in saved
    ]
    assert data["comparisons"], "the first and the last evaluation side by side"
    train_turns = [t for e in data["episodes"] if e["group"] >= 3 for t in e["turns"]]
    assert all("advantage" in t["annotations"] for t in train_turns)


def test_flexmg_eval_saves_a_sample_next_to_its_output(trained, capsys):
    out = trained / "evals" / "mine.json"
    args = ["eval", "--run", str(trained), "--episodes", "5", "--output", str(out)]
    assert cli.main([*args, "--transcripts", "2"]) == 0
    result = json.loads(capsys.readouterr().out)
    path = eval_transcripts_path(out)
    assert result["transcripts"] == str(path) and json.loads(out.read_text()) == result
    records = list(read_transcripts(path))
    assert len(records) == 2
    for record in records:
        assert record["source"] == {"kind": "flexmg eval", "label": "mine", "update": 2}
        _replay(record)

    col = load_collection([out])
    assert [(g.label, len(g.records)) for g in col.groups] == [("flexmg eval: mine", 2)]
    turns = [e["turns"] for e in page_data(col)["episodes"]]
    assert [[t["action"] for t in ts] for ts in turns] == [
        [t["action"] for t in r["transcript"]] for r in records
    ]
    assert "flexmg eval: mine" in [g.label for g in load_collection([trained]).groups]

    assert cli.main([*args, "--transcripts", "0"]) == 0  # off: the old sample goes too
    assert json.loads(capsys.readouterr().out)["transcripts"] is None
    assert not path.exists()
    with pytest.raises(ViewError, match="no transcripts"):
        load_collection([out])
    with pytest.raises(SystemExit) as exc:
        cli.main([*args, "--transcripts", "-1"])
    assert exc.value.code == 2
    assert "expected an integer >= 0" in capsys.readouterr().err


def test_a_leaderboard_saves_the_first_episodes_of_each_cell(trained, tmp_path, capsys):
    out = tmp_path / "lb"
    args = ["leaderboard", "--entries", f"run:{trained}", "scripted:random", "--envs", "echo",
            "--seeds", "0", "1", "--episodes", "3", "--out", str(out), "--no-progress"]  # fmt: skip
    assert cli.main([*args, "--transcripts", "2"]) == 0
    files = sorted((out / "transcripts").glob("*.jsonl"))
    assert len(files) == 4  # entry x env x seed
    col = load_collection([out])
    assert [(g.label, len(g.records)) for g in col.groups] == [
        (f"run:{trained} | echo", 4),
        ("scripted:random | echo", 4),
    ]
    results = json.loads((out / "results.json").read_text())
    assert results["config"]["transcripts"] == 2
    for group in col.groups:
        for record in group.records:
            source = record["source"]
            cell = results["cells"][json.dumps([source["entry"], "echo", source["seed"]])]
            played = {e["seed"]: e["metrics"]["success"] for e in cell["episodes"]}
            assert played[record["seed"]] == record["team"]["success"]
            _replay(record)
    data = page_data(col)
    assert sum(len(e["turns"]) for e in data["episodes"]) == 8 * 2  # two roles a turn each

    assert cli.main([*args, "--transcripts", "0", "--redo"]) == 0  # off: no file stays behind
    capsys.readouterr()
    assert not list((out / "transcripts").glob("*.jsonl"))
    with pytest.raises(ViewError, match="no transcripts"):
        load_collection([out])


def test_a_run_with_transcripts_off_saves_none_and_trains_the_same(small_model, trained, tmp_path):
    run = tmp_path / "off"
    _train(small_model, run, "--transcripts", "0")
    assert read_eval_episodes(run, 2)  # the metrics are still kept
    assert not list(run.rglob(f"*{TRANSCRIPTS_SUFFIX}"))
    with pytest.raises(ViewError, match="no transcripts"):
        load_collection([run])
    assert json.loads((run / "config.json").read_text())["train"]["transcripts"] == 0

    def records(folder: Path) -> list[dict[str, Any]]:
        return [
            {k: v for k, v in r.items() if not k.endswith("seconds")} for r in read_metrics(folder)
        ]

    assert records(run) == records(trained)  # saving transcripts changes nothing that trains


def test_a_stopped_and_resumed_run_saves_the_same_transcripts(small_model, trained, tmp_path):
    from flexmg.agents.trainer import Trainer

    run = tmp_path / "part"
    config = TrainConfig(  # what _train's flags say
        env="echo",
        updates=2,
        eval_every=1,
        episodes_per_update=4,
        eval_episodes=6,
        run_dir=str(run),
        progress=False,
        transcripts=3,
        policy={"model": small_model, "max_new_tokens": 3, "device": "cpu"},
    )
    Trainer(config).run(stop_after=1)
    Trainer.resume(run).run()

    def saved(folder: Path) -> dict[str, list[dict[str, Any]]]:
        out = {}
        for path in sorted(folder.rglob(f"*{TRANSCRIPTS_SUFFIX}")):
            records = list(read_transcripts(path))
            for record in records:  # each turn's grading time is the only clock reading
                record["transcript"] = [
                    {k: v for k, v in t.items() if k != "time"} for t in record["transcript"]
                ]
            out[path.relative_to(folder).as_posix()] = records
        return out

    resumed = saved(run)
    assert len(resumed) == 5 and resumed == {
        k: v for k, v in saved(trained).items() if not k.startswith("evals/mine")
    }


def test_the_defaults_and_an_old_config_without_the_field():
    from flexmg.cli.eval import DEFAULT_TRANSCRIPTS

    assert TrainConfig().transcripts == 32 and DEFAULT_TRANSCRIPTS == 64
    lb = LeaderboardConfig(entries=["scripted:random"], envs=["echo"])
    assert lb.transcripts == 8
    old = lb.to_dict()
    del old["transcripts"]  # a results.json written before the field existed
    assert LeaderboardConfig.from_dict(old).transcripts == 8
    with pytest.raises(ValueError, match="transcripts"):
        TrainConfig(transcripts=-1)
    with pytest.raises(ValueError, match="transcripts"):
        LeaderboardConfig(entries=["scripted:random"], envs=["echo"], transcripts=-2)
