"""The paper_small grid script: which run folders it trains, resumes or restarts."""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import pytest

from helpers import load_benchmark


@pytest.fixture(scope="module")
def paper_small():
    return load_benchmark("paper_small")


def test_run_states(paper_small, tmp_path: Path) -> None:
    run = tmp_path / "math-2agent-marft-s0"
    assert paper_small.run_state(run, 10) == "new"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "step_000003.ckpt").write_bytes(b"x")
    assert paper_small.run_state(run, 10) == "partial"
    (run / "summary.json").write_text(json.dumps({"updates": 10}))
    assert paper_small.run_state(run, 10) == "done"
    assert paper_small.run_state(run, 12) == "partial"


def test_a_run_interrupted_before_its_first_checkpoint_is_restarted(
    paper_small, tmp_path: Path
) -> None:
    run = tmp_path / "code-2agent-marft-s0"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.json").write_text("{}")
    (run / "metrics.jsonl").write_text('{"kind": "eval", "update": 0}\n')
    assert paper_small.clear_unstarted(run) is True
    assert not run.exists()
    assert paper_small.clear_unstarted(run) is False  # nothing there: nothing to do


def test_a_run_with_a_checkpoint_is_kept_for_resume(paper_small, tmp_path: Path) -> None:
    run = tmp_path / "code-2agent-marft-s1"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.json").write_text("{}")
    (run / "checkpoints" / "step_000001.ckpt").write_bytes(b"x")
    assert paper_small.clear_unstarted(run) is False
    assert run.exists()


def test_training_children_share_the_cores(paper_small, monkeypatch) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(paper_small.os, "sched_getaffinity", lambda _pid: {0, 1, 2, 3})
    assert paper_small.child_env(2)["OMP_NUM_THREADS"] == "2"
    assert paper_small.child_env(8)["OMP_NUM_THREADS"] == "1"
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert paper_small.child_env(2)["OMP_NUM_THREADS"] == "3"  # the caller's choice wins


def _args(paper_small, tmp_path: Path, *extra: str):
    return paper_small.parse_args(["--out", str(tmp_path), *extra])


def test_default_grid_every_variant_env_and_seed(paper_small, tmp_path: Path) -> None:
    args = _args(paper_small, tmp_path)
    jobs = paper_small.plan_jobs(args)
    assert args.seeds == [0, 1, 2, 3, 4] and args.jobs == 2
    # 3 team variants x 6 envs x 5 seeds, and the single agent at 3 sizes x 2 families x 5 seeds
    assert len(jobs) == 3 * 6 * 5 + 3 * 2 * 5 == 120
    assert len({j.run_dir for j in jobs}) == 120
    for row in args.envs:
        for column in ("marft", "marft-shared", "ippo", "single"):
            seeds = sorted(j.seed for j in jobs if j.row == row and j.column == column)
            assert seeds == args.seeds, (row, column)


def test_group_baseline_is_a_column_on_request(paper_small, tmp_path: Path) -> None:
    args = _args(paper_small, tmp_path, "--variants", "group", "marft", "--envs", "check-2agent")
    jobs = paper_small.plan_jobs(args)
    assert sorted({(j.column, j.algo) for j in jobs}) == [("group", "group"), ("marft", "marft")]
    command = paper_small.train_command(jobs[0], args)
    assert command[command.index("--algo") + 1] == "group" and "check-2agent" in command
    # the group learner needs each prompt played several times; the other teams do not
    assert command[command.index("--group-size") + 1] == str(paper_small.GROUP_SIZE)
    marft = next(j for j in jobs if j.column == "marft")
    assert "--group-size" not in paper_small.train_command(marft, args)
    assert paper_small.train_config(jobs[0], args).group_size == paper_small.GROUP_SIZE


def test_group_size_must_divide_the_episodes(paper_small, tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit):
        _args(paper_small, tmp_path, "--variants", "group", "--episodes-per-update", "6",
              "--group-size", "4")  # fmt: skip
    assert "--group-size >= 2 dividing --episodes-per-update (6); got 4" in capsys.readouterr().err


def test_a_family_without_a_1agent_env_has_no_single_column(paper_small, tmp_path: Path) -> None:
    args = _args(paper_small, tmp_path, "--envs", "relay-2agent", "math-2agent", "--seeds", "0")
    jobs = paper_small.plan_jobs(args)
    single_rows = {j.row for j in jobs if j.column == "single"}
    assert single_rows == {"math-2agent"}
    assert {j.column for j in jobs if j.row == "relay-2agent"} == {"marft", "marft-shared", "ippo"}


def test_single_agent_has_each_team_sizes_budget(paper_small, tmp_path: Path) -> None:
    args = _args(paper_small, tmp_path, "--budget", "7", "--episodes-per-update", "6")
    jobs = paper_small.plan_jobs(args)
    for row in args.envs:
        k = paper_small.team_size(row)
        in_row = [j for j in jobs if j.row == row]
        actions = {paper_small.planned_actions(j, args.budget) for j in in_row}
        assert actions == {7 * 6 * k}, row  # the same sampled actions in every column
        single = [j for j in in_row if j.column == "single"]
        assert {(j.env, j.episodes_per_update, j.variant) for j in single} == {
            (row.split("-")[0] + "-1agent", k * 6, f"single-b{k}")
        }
        # the same updates, model and per-action token cap: only env, episodes per
        # update, run folder, algorithm and sharing differ between the commands
        varying = {"--env", "--episodes-per-update", "--run-dir", "--algo", "--seed"}

        def fixed(cmd: list[str], varying=varying) -> list[str]:
            kept = [a for i, a in enumerate(cmd) if a not in varying and cmd[i - 1] not in varying]
            return [a for a in kept if a != "--share-parameters"]

        assert len({tuple(fixed(paper_small.train_command(j, args))) for j in in_row}) == 1


def test_budget_check_reads_the_trainers_counts(paper_small, tmp_path: Path) -> None:
    def run(name: str, actions: int, tokens: int) -> Path:
        d = tmp_path / name
        d.mkdir()
        rec = {"kind": "train", "episodes": 4, "actions": actions, "generated_tokens": tokens}
        (d / "metrics.jsonl").write_text(json.dumps({"kind": "eval"}) + "\n" + json.dumps(rec))
        return d

    assert paper_small.measured_budget(run("a", 8, 80)) == {
        "updates": 1, "episodes": 4, "actions": 8, "generated_tokens": 80,
    }  # fmt: skip
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "metrics.jsonl").write_text('{"kind": "train", "episodes": 4}\n')
    assert paper_small.measured_budget(tmp_path / "old") is None  # not counted: not claimed
    col = lambda actions, tokens: {"actions": actions, "tokens_mean": tokens}  # noqa: E731
    check = paper_small.budget_check
    assert check({"team": col([8, 8], 100.0), "single": col([8], 109.0)}, 8)["equal"]
    assert not check({"team": col([8], 100.0), "single": col([8], 111.0)}, 8)["equal"]
    assert not check({"team": col([8], 100.0), "single": col([6], 100.0)}, 8)["equal"]
    assert not check({"team": col([], None)}, 8)["equal"]  # nothing measured


def test_projection_arithmetic_and_the_default_grid_fits(paper_small, tmp_path: Path) -> None:
    assert paper_small.makespan([5.0, 1.0, 1.0], 2) == 5.0  # not the mean load, 3.5
    assert paper_small.makespan([3.0, 3.0, 3.0], 2) == 6.0
    assert paper_small.makespan([5.0, 4.0], 1) == 9.0
    args = _args(paper_small, tmp_path, "--bounds")
    job = paper_small.make_job(args, "marft", "math-2agent", 0)
    per_episode = paper_small.SECONDS_PER_EPISODE["math-2agent"]
    want = (
        paper_small.RUN_START_SECONDS
        + args.budget * args.episodes_per_update * per_episode
        + 2 * args.train_eval_episodes * per_episode * paper_small.EVAL_FACTOR
    )
    assert paper_small.run_seconds(job, args) == pytest.approx(want)
    train, evaluate = paper_small.projected_minutes(args, [job, job, job], [job])
    assert train == pytest.approx(2 * want / 60)  # 3 equal runs on 2 workers
    assert evaluate == pytest.approx(paper_small.cell_seconds("math-2agent", args) / 60)
    default = _args(paper_small, tmp_path)
    jobs = paper_small.plan_jobs(default)
    train, evaluate = paper_small.projected_minutes(default, jobs, jobs)
    assert train + evaluate <= 110, (train, evaluate)


def test_a_finished_run_is_not_trained_again(paper_small, tmp_path: Path, monkeypatch) -> None:
    def no_training(*_args, **_kwargs):
        raise AssertionError("a finished run was trained again")

    monkeypatch.setattr(paper_small.subprocess, "run", no_training)
    args = _args(paper_small, tmp_path, "--envs", "math-2agent", "--seeds", "0", "--budget", "3")
    for job in paper_small.plan_jobs(args):
        job.run_dir.mkdir(parents=True)
        (job.run_dir / "summary.json").write_text(json.dumps({"updates": 3}))
        assert paper_small.train_one(job, args)["status"] == "done before"
    argv = ["--out", str(tmp_path), "--envs", "math-2agent", "--seeds", "0", "--budget", "3"]
    assert paper_small.main([*argv, "--train-only", "--no-progress"]) == 0


def _episode(prompt: str, success: bool) -> dict:
    role = {"format_ok": True, "answer_correct": success}
    metrics = {"prompt_id": prompt, "success": success, "graded_role": "r", "per_role": {"r": role}}
    return {"task_id": prompt, "metrics": metrics}


def test_report_tables_json_and_chart(paper_small, tmp_path: Path) -> None:
    args = _args(paper_small, tmp_path, "--envs", "math-2agent", "--seeds", "0", "1",
                 "--budget", "1", "--episodes-per-update", "2", "--bounds")  # fmt: skip
    jobs = paper_small.plan_jobs(args)
    cells = {}
    for job in jobs:
        job.run_dir.mkdir(parents=True)
        rec = {"kind": "train", "episodes": job.episodes_per_update, "actions": 4,
               "generated_tokens": 40}  # fmt: skip
        (job.run_dir / "metrics.jsonl").write_text(json.dumps(rec) + "\n")
        win = job.column == "single"
        cells[f"{job.variant}{job.seed}"] = {
            "entry": job.variant, "env": job.env, "seed": job.seed, "current": True,
            "episodes": [_episode(f"p{i}", win) for i in range(4)],
        }  # fmt: skip
    for env in ("math-2agent", "math-1agent"):  # the untrained model: right on p0 only
        for seed in (0, 1):
            cells[f"start-{env}-{seed}"] = {
                "entry": "start", "env": env, "seed": seed, "current": True,
                "episodes": [_episode(f"p{i}", i == 0) for i in range(4)],
            }  # fmt: skip
    config = paper_small.leaderboard_config(args, jobs)
    start = next(e for e in config.entries if e.name == "start")
    assert start.agent == "hf:tiny" and set(start.envs) == {"math-2agent", "math-1agent"}
    report = paper_small.build_report(args, jobs, {"cells": cells}, [])
    row = report["rows"][0]
    assert row["columns"]["single"]["success"]["mean"] == 1.0
    assert row["columns"]["marft"]["success"] == {"mean": 0.0, "ci": [0.0, 0.0]}
    assert row["columns"]["ippo"]["prompts"] == 4  # the same 4 prompts in both seeds
    assert row["budget"]["equal"] and row["budget"]["planned_actions"] == 4
    # paired on the same prompts: every team episode lost where the single agent won
    assert row["paired"]["marft - single"]["mean"] == -1.0
    assert row["paired"]["marft - single"]["pairs"] == 8  # 4 prompts x 2 seeds
    assert row["paired"]["marft - ippo"]["mean"] == 0.0
    assert "group" not in " ".join(row["paired"])  # not a column of this grid
    # gains from training: the team from its start, the single agent from its own
    assert row["columns"]["start"]["success"]["mean"] == 0.25
    assert row["paired"]["marft - start"]["mean"] == -0.25
    assert row["paired"]["single - start-single"]["mean"] == 0.75
    md, js, png = paper_small.write_outputs(report, tmp_path)
    text = md.read_text()
    assert report["model"]["weights_sha256"] in text
    assert "| env | prompts | start (untrained) | MARFT |" in text
    assert "| math-2agent | 4 | 0.250 [" in text and "| 0.000 [0.000, 0.000] |" in text
    assert "| math-2agent | 4 | 4 / 40 | 4 / 40 | 4 / 40 | 4 / 40 | 0.0% | yes |" in text
    assert "| math-2agent | MARFT - single agent | -1.000 [-1.000, -1.000] | 2 | 8 | 0.0% |" in text
    assert json.loads(js.read_text())["rows"][0]["env"] == "math-2agent"
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_docstring_examples(paper_small) -> None:
    """The script's examples and those of its plan and report modules (split from it)."""
    import paper_small_plan
    import paper_small_report

    results = [doctest.testmod(m) for m in (paper_small, paper_small_plan, paper_small_report)]
    assert sum(r.attempted for r in results) >= 6 and sum(r.failed for r in results) == 0
