"""The transcript record format (flexmg.transcripts): built from real episodes, sampled, saved."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import flexmg
from flexmg.baselines.scripted import make_scripted
from flexmg.episodes import rollout
from flexmg.transcripts import (
    RECORD_FORMAT,
    TranscriptSample,
    episode_record,
    eval_transcripts_path,
    leaderboard_transcripts_path,
    normalize_record,
    observation_of,
    read_transcripts,
    run_transcripts_path,
    write_transcripts,
)
from flexmg.wrappers import RecordTranscripts


def oracle_episodes(env_id: str = "math-2agent", n: int = 4, seed: int = 0):
    vec = flexmg.make_vec(env_id, num_envs=n, split="eval")
    try:
        return rollout(vec, make_scripted("oracle", vec), episodes=n, seed=seed).episodes
    finally:
        vec.close()


def test_record_of_a_real_episode_holds_task_turns_flags_and_outcome():
    episodes = oracle_episodes()
    ep = episodes[0]
    rec = episode_record(ep, "math-2agent", source={"kind": "eval", "update": 0})
    assert rec["format"] == RECORD_FORMAT and rec["env"] == "math-2agent" and rec["seed"] == 0
    assert rec["task"] == {"id": ep.task.id, "prompt": ep.task.prompt, "answer": ep.task.answer}
    assert rec["prompt_id"] == ep.metrics["prompt_id"]
    assert rec["team"] == {"success": True, "score": 1.0, "rounds": 1, "truncated": False}
    assert rec["source"] == {"kind": "eval", "update": 0}
    turns = rec["transcript"]
    assert [t["role"] for t in turns] == ["solver", "verifier"]  # graph order
    assert [(t["round"], t["position"]) for t in turns] == [(0, 0), (0, 1)]
    for turn, original in zip(turns, ep.transcript, strict=True):
        assert turn["action"] == original.action and turn["reward"] == original.reward
        assert turn["format_ok"] is True and turn["answer_correct"] is True
        assert turn["own_correct"] is True
        assert "format_ok" not in turn["info"] and "grade_reason" in turn["info"]
        assert "annotations" not in turn
    # the observation is stored once per episode where it repeats, and put back exactly
    assert "task" not in turns[0]["observation"] and "instructions" not in turns[1]["observation"]
    for i, original in enumerate(ep.transcript):
        assert observation_of(rec, i) == {**original.observation, "round": int(original.round)}
    json.dumps(rec, allow_nan=False)  # plain JSON


class SilentJudgeEnv(flexmg.FlexMGEnv):
    """A custom env whose judge reports a score and nothing else."""

    def __init__(self) -> None:
        super().__init__(roles=["a", "b"])

    def sample_task(self, rng):
        return flexmg.Task(id="t", prompt="say hi", answer="hi")

    def judge(self, task, transcript, round_index):
        return flexmg.Judgement(score=float(transcript[-1].action == task.answer))


def test_flags_an_env_does_not_report_are_none_not_false():
    ep = rollout(SilentJudgeEnv(), lambda o: "hi", episodes=1).episodes[0]
    rec = episode_record(ep, "silent")
    assert rec["team"]["success"] and rec["task"]["answer"] == "hi"
    assert {(t["format_ok"], t["answer_correct"], t["own_correct"]) for t in rec["transcript"]} == {
        (None, None, None)
    }


def test_annotations_are_checked_and_kept_per_action():
    ep = oracle_episodes(n=1)[0]
    rec = episode_record(ep, "m", annotations=[{"value": 0.25, "advantage": -1.5}, None])
    assert rec["transcript"][0]["annotations"] == {"value": 0.25, "advantage": -1.5}
    assert "annotations" not in rec["transcript"][1]
    rec = episode_record(ep, "m", annotations=[{"value": float("nan")}, {"advantage": 2}])
    assert rec["transcript"][0]["annotations"] == {"value": None}
    with pytest.raises(ValueError, match="got 1 annotations for an episode of 2 turns"):
        episode_record(ep, "m", annotations=[{"value": 1.0}])
    with pytest.raises(TypeError, match="'value' of turn 1 must be a number"):
        episode_record(ep, "m", annotations=[None, {"value": "high"}])


def test_hostile_text_survives_the_round_trip(tmp_path):
    hostile = "</script><script>alert(1)</script>\u2028\u202e\x00 " + "é" * 50 + "\ud800"
    env = flexmg.make("math-2agent", split="eval")
    ep = rollout(env, {"solver": lambda o: hostile, "verifier": lambda o: "x" * 100_000}).episodes[
        0
    ]
    rec = episode_record(ep, "math-2agent", annotations=[{"value": 1.0}, {"value": 2.0}])
    path = write_transcripts(tmp_path / "e.jsonl", [rec])
    back = list(read_transcripts(path))
    assert back == [rec]
    assert back[0]["transcript"][0]["action"] == hostile.replace("\ud800", "\ufffd")
    assert len(back[0]["transcript"][1]["action"]) == env.max_action_chars  # the env cut it
    assert normalize_record(back[0]) == rec


def test_write_is_atomic_and_a_torn_line_is_skipped(tmp_path):
    path = tmp_path / "sub" / "e.jsonl"
    records = [episode_record(e, "math-2agent") for e in oracle_episodes(n=3)]
    write_transcripts(path, records)
    assert [p.name for p in path.parent.iterdir()] == ["e.jsonl"]
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"format": "flexmg.episode.v1", "transcript": [')
    with pytest.warns(UserWarning, match="e.jsonl:4: skipping a damaged line"):
        assert len(list(read_transcripts(path))) == 3


def test_first_keeps_the_first_records():
    sample = TranscriptSample(limit=3, keep="first")
    for s in range(10):
        sample.add({"seed": s, "task": {"id": "t"}})
    assert [r["seed"] for r in sample.records()] == [0, 1, 2] and sample.offered == 10


def test_a_seeded_sample_keeps_the_same_episodes_at_every_evaluation():
    def kept(records, seed=7):
        sample = TranscriptSample(limit=4, keep="sample", seed=seed)
        for r in records:
            sample.add(r)
        assert len(sample) == 4
        return sorted((r["seed"], r["task"]["id"]) for r in sample.records())

    start = [{"seed": s, "task": {"id": f"t{s}"}, "action": "early"} for s in range(50)]
    end = [{"seed": s, "task": {"id": f"t{s}"}, "action": "late"} for s in reversed(range(50))]
    assert kept(start) == kept(end)  # the same prompts at the start and the end of training
    assert kept(start) != kept(start, seed=8)  # another seed, another sample
    assert kept(start) != sorted((s, f"t{s}") for s in range(4))  # not just the first


def test_sample_builds_records_only_for_kept_episodes_and_rejects_bad_settings():
    episodes = oracle_episodes(n=4)
    sample = TranscriptSample(limit=2, keep="first")
    for ep in episodes:
        sample.add_episode(ep, "math-2agent", source={"kind": "eval", "update": 3})
    assert [r["seed"] for r in sample.records()] == [0, 1] and sample.offered == 4
    none = TranscriptSample(limit=0)
    none.add_episode(episodes[0], "math-2agent")
    assert none.records() == []
    with pytest.raises(ValueError, match="limit must be an int >= 0"):
        TranscriptSample(limit=-1)
    with pytest.raises(ValueError, match="keep must be 'first' or 'sample'"):
        TranscriptSample(keep="last")  # type: ignore[arg-type]


def test_record_transcripts_writes_the_same_records(tmp_path):
    path = tmp_path / "rec.jsonl"
    env = RecordTranscripts(flexmg.make("math-2agent", split="eval"), path)
    oracle = make_scripted("oracle", env.unwrapped)
    for seed in (0, 1):
        env.reset(seed=seed)
        for role in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            env.step(None if term or trunc else oracle.act([obs])[0])
    records = list(read_transcripts(path))
    assert [r["format"] for r in records] == [RECORD_FORMAT] * 2
    assert records[1]["seed"] == 1 and records[1]["task"]["answer"] == env.unwrapped.task.answer
    assert records[0]["team"]["success"] and records[0]["transcript"][1]["answer_correct"]
    assert [normalize_record(r) for r in records] == records


def test_older_lines_are_converted_and_non_episodes_refused():
    ep = oracle_episodes(n=1)[0]
    old = {  # what RecordTranscripts wrote before this format
        "env": "math-2agent",
        "seed": 0,
        "task": {"id": ep.task_id, "prompt": ep.task.prompt},
        "metrics": ep.metrics,
        "transcript": [r.to_dict() for r in ep.transcript],
    }
    rec = normalize_record(json.loads(json.dumps(old, default=int)))
    assert rec == episode_record(ep, "math-2agent") | {"task": {**rec["task"], "answer": None}}
    assert rec["transcript"][1]["answer_correct"] is True
    with pytest.raises(ValueError, match="metrics without its messages"):
        normalize_record({"task_id": "t", "success": True, "per_role": {}})
    with pytest.raises(ValueError, match="no 'transcript' list"):
        normalize_record({"hello": 1})
    with pytest.raises(ValueError, match="not a well-formed episode record"):
        normalize_record({"transcript": [{"role": "a", "round": "first"}]})
    with pytest.raises(ValueError, match="turn 0 is not a JSON object"):
        normalize_record({"transcript": ["hi"]})


def test_paths_do_not_collide_with_the_metrics_files(tmp_path):
    from flexmg.agents.evaluation import saved_eval_updates, write_eval_episodes

    write_eval_episodes(tmp_path, 40, [{"task_id": "a", "success": True}])
    write_transcripts(run_transcripts_path(tmp_path, 40), [])
    write_transcripts(run_transcripts_path(tmp_path, 40, "train"), [])
    assert saved_eval_updates(tmp_path) == [40]
    assert run_transcripts_path(tmp_path, 40).name == "update_0000040.transcripts.jsonl"
    assert eval_transcripts_path(tmp_path / "x.json") == tmp_path / "x.transcripts.jsonl"
    a = leaderboard_transcripts_path(tmp_path, "hf:org/model", "math-2agent", 0)
    b = leaderboard_transcripts_path(tmp_path, "hf:org_model", "math-2agent", 0)
    assert a.parent == tmp_path / "transcripts" and "/" not in a.name and a != b
    with pytest.raises(ValueError, match="kind must be 'eval' or 'train'"):
        run_transcripts_path(tmp_path, 1, "test")  # type: ignore[arg-type]


def test_the_record_module_and_the_viewer_import_no_torch():
    code = "import sys, flexmg.transcripts, flexmg.view; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
