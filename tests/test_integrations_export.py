"""`flexmg export`: one row per episode seed, replayable, verl's fields, through `datasets`."""

import doctest
import importlib
import json

import pytest

import flexmg
from flexmg.cli import main
from flexmg.integrations.export import repeated_rows, write_rows
from flexmg.integrations.seats import observation_to_messages
from helpers import require_extra


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_rows_replay_the_episode_they_name(tmp_path, capsys):
    out = tmp_path / "math.jsonl"
    assert main(["export", "math-2agent", "--split", "eval", "--n", "12", "--out", str(out)]) == 0
    assert "wrote 12 rows (jsonl) of split 'eval'" in capsys.readouterr().out
    rows = read_jsonl(out)
    assert [r["seed"] for r in rows] == list(range(12))
    assert [r["extra_info"]["index"] for r in rows] == list(range(12))
    for row in rows[:4]:
        info = row["extra_info"]
        env = flexmg.make(info["env_id"], **json.loads(info["env_kwargs"]))
        env.reset(seed=row["seed"])
        assert row["prompt"] == observation_to_messages(env.observe(env.agent_selection))
        assert row["answer"] == env.task.answer == row["reward_model"]["ground_truth"]
        assert info["task_id"] == env.task.id and info["split"] == "eval"
        env.close()
    first = rows[0]
    assert first["data_source"] == "flexmg/math-2agent" and first["ability"] == "math"
    assert first["reward_model"]["style"] == "rule" and first["agent_name"] == "flexmg_agent"
    assert first["extra_info"]["role"] == "solver"
    assert first["extra_info"]["roles"] == ["solver", "verifier"]
    # the eval split differs from the train split for the same seeds
    train = tmp_path / "train.jsonl"
    assert (
        main(["export", "math-2agent", "--split", "train", "--n", "12", "--out", str(train)]) == 0
    )
    assert [r["answer"] for r in read_jsonl(train)] != [r["answer"] for r in rows]


def test_code_rows_and_env_kwargs_are_recorded(tmp_path):
    out = tmp_path / "code.jsonl"
    args = ["export", "code-3agent", "--n", "3", "--seed-start", "100", "--out", str(out)]
    assert main([*args, "sandbox=local", "--agent-name", "my_loop"]) == 0
    rows = read_jsonl(out)
    assert [r["seed"] for r in rows] == [100, 101, 102]
    assert rows[0]["ability"] == "code" and rows[0]["agent_name"] == "my_loop"
    assert json.loads(rows[0]["extra_info"]["env_kwargs"]) == {"sandbox": "local", "split": "eval"}
    assert "def " in rows[0]["answer"]


def test_parquet_and_jsonl_round_trip_through_datasets(tmp_path):
    datasets = require_extra("datasets", "export")
    pq, jl = tmp_path / "m.parquet", tmp_path / "m.jsonl"
    assert main(["export", "math-3agent", "--n", "5", "--format", "parquet", "--out", str(pq)]) == 0
    assert main(["export", "math-3agent", "--n", "5", "--out", str(jl)]) == 0
    from_parquet = datasets.load_dataset("parquet", data_files=str(pq), split="train")
    from_json = datasets.load_dataset("json", data_files=str(jl), split="train")
    expected = read_jsonl(jl)
    assert from_parquet.to_list() == expected
    assert from_json.to_list() == expected
    assert from_parquet[0]["prompt"][0]["role"] == "system"


def test_bad_requests_fail_clearly_and_leave_the_old_file(tmp_path, capsys):
    out = tmp_path / "keep.jsonl"
    out.write_text("old\n")
    assert main(["export", "math-1agent", "--n", "0", "--out", str(out)]) == 2
    assert "n must be an int >= 1" in capsys.readouterr().err
    assert main(["export", "no-such-env", "--n", "2", "--out", str(out)]) == 2
    assert out.read_text() == "old\n"
    assert list(tmp_path.iterdir()) == [out]  # no temp file left behind
    with pytest.raises(ValueError, match="format must be one of"):
        write_rows([], out, "csv")


def test_export_states_its_split_and_takes_it_from_env_kwargs(tmp_path, capsys):
    out = tmp_path / "m.jsonl"
    assert main(["export", "math-1agent", "--n", "3", "--out", str(out)]) == 0
    assert "of split 'eval'" in capsys.readouterr().out  # the default, said out loud
    assert main(["export", "math-1agent", "--n", "3", "--out", str(out), "split=train"]) == 0
    assert "of split 'train'" in capsys.readouterr().out
    assert {r["extra_info"]["split"] for r in read_jsonl(out)} == {"train"}
    args = ["export", "math-1agent", "--n", "3", "--out", str(out), "--split", "eval"]
    assert main([*args, "split=train"]) == 2
    assert "two splits given" in capsys.readouterr().err


def test_rows_are_distinct_episodes_unless_repeats_are_allowed(tmp_path, capsys):
    out = tmp_path / "echo.jsonl"
    assert main(["export", "echo", "--n", "10", "--out", str(out)]) == 0
    assert "(distinct episodes)" in capsys.readouterr().out
    rows = read_jsonl(out)
    assert len(rows) == 10 and repeated_rows(rows) == 0
    assert [r["extra_info"]["index"] for r in rows] == list(range(10))
    seeds = [r["seed"] for r in rows]
    assert seeds == sorted(seeds) and seeds[-1] > 9  # echo repeats: later seeds were drawn
    for row in rows[:3]:  # each row still replays its own seed
        env = flexmg.make("echo", split="eval")
        env.reset(seed=row["seed"])
        assert row["prompt"] == observation_to_messages(env.observe(env.agent_selection))
    args = ["export", "echo", "--n", "300", "--out", str(out)]
    assert main(args) == 2  # echo's split has far fewer than 300 distinct episodes
    err = capsys.readouterr().err
    assert "has only 16 distinct episodes" in err and "--allow-repeats" in err
    assert len(read_jsonl(out)) == 10  # the old file stays
    assert main([*args, "--allow-repeats"]) == 0
    rows = read_jsonl(out)
    assert [r["seed"] for r in rows] == list(range(300)) and repeated_rows(rows) > 0


@pytest.mark.parametrize(
    "module", ["flexmg.integrations", "flexmg.integrations.seats", "flexmg.integrations.export"]
)
def test_docstring_examples(module):
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0
