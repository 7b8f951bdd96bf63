"""Every mistake on the command line is one clear line and a non-zero exit (the real CLI)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import flexmg

ROOT = Path(__file__).resolve().parents[1]


def flexmg_cli(*args: str, stdin: str = "", cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "flexmg.cli", *args],
        input=stdin, capture_output=True, text=True, timeout=300, cwd=cwd,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip


def one_error_line(out: subprocess.CompletedProcess, command: str) -> str:
    """The stderr line of the error (there is exactly one and no traceback)."""
    assert out.returncode != 0, out
    assert "Traceback" not in out.stderr, out.stderr
    lines = [line for line in out.stderr.splitlines() if line.startswith(f"flexmg {command}:")]
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith(f"flexmg {command}: error: "), lines
    return lines[0]


@pytest.mark.parametrize(
    ("args", "command", "code", "says"),
    [
        (["check", "echo", "--kw", 'roles=["b", "c"]'], "check", 2, "unknown role 'c'"),
        (["check", "math-2agent", "--kw", 'roles=["solvr"]'], "check", 2, "did you mean 'solver'"),
        (["play", "math-2agent", "--kw", 'prompts={"verifer": "x"}'], "play", 2, "'verifier'"),
        (["check", "code-2agent", "--kw", "sandbox=dockr"], "check", 2, "did you mean 'docker'"),
        (["check", "echo", "--kw", "horizn=2"], "check", 2, "did you mean 'horizon'"),
        (["export", "echo", "--out", "x.jsonl", "horizn=2"], "export", 2, "accepted: ["),
        (["check", "math-2agent", "--kw", "tasks=no-such.jsonl"], "check", 2, "no-such.jsonl"),
        (["check", "math-2agnt"], "check", 2, "Did you mean"),
        (["eval", "--run", "no-such-run"], "eval", 2, "no-such-run"),
        (["train", "--resume", "no-such-run"], "train", 2, "no run folder"),
        (["train", "--model", "smollm2-135"], "train", 2, "did you mean 'smollm2-135m'"),
        (["train", "--model", "./no-such-model"], "train", 2, "no such folder"),
        (["train", "--kw", 'roles=["solvr"]'], "train", 2, "did you mean 'solver'"),
        (["train", "--role-max-new-tokens", "verifer=8"], "train", 2, "'verifier'"),
        (["view", "no-such-file.jsonl"], "view", 2, "no-such-file.jsonl"),
        (["check", "--import", "no_such_module_xyz", "echo"], "check", 2, "no_such_module_xyz"),
    ],
)
def test_a_mistake_is_one_line_and_a_non_zero_exit(
    args: list[str], command: str, code: int, says: str, tmp_path: Path
) -> None:
    out = flexmg_cli(*args, cwd=tmp_path)
    line = one_error_line(out, command)
    assert says in line and out.returncode == code, out.stderr
    assert not list(tmp_path.iterdir())  # nothing written, no run folder started


def test_a_leaderboard_with_a_missing_run_folder_fails_before_any_cell(tmp_path: Path) -> None:
    out = flexmg_cli(
        "leaderboard", "--entries", "scripted:oracle", "run:no-such-run/{seed}",
        "--envs", "echo", "--episodes", "1", "--out", "lb", cwd=tmp_path,
    )  # fmt: skip
    line = one_error_line(out, "leaderboard")
    assert "no run folder at no-such-run/0 (nor 2 more)" in line and out.returncode == 2
    assert not (tmp_path / "lb").exists()
    hf = flexmg_cli("leaderboard", "--entries", "hf:nope-model", "--envs", "echo", "--out", "lb")
    assert "could not load model 'nope-model': not 'tiny'" in one_error_line(hf, "leaderboard")


def test_debug_shows_the_traceback_before_or_after_the_command(tmp_path: Path) -> None:
    for args in (["--debug", "check", "echo", "--kw", "horizn=2"], ["check", "echo", "--debug", "--kw", "horizn=2"]):  # fmt: skip
        out = flexmg_cli(*args, cwd=tmp_path)
        assert out.returncode != 0 and "Traceback (most recent call last)" in out.stderr, args
        assert "did you mean 'horizon'" in out.stderr


def test_an_unexpected_error_names_its_type_and_the_debug_flag(tmp_path: Path) -> None:
    (tmp_path / "boom.py").write_text(
        "import flexmg\n\n"
        "def make_env(**kwargs):\n"
        "    env = flexmg.make('echo', **kwargs)\n"
        "    env.reset = lambda *a, **k: (_ for _ in ()).throw(RuntimeError('env broke'))\n"
        "    return env\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "flexmg.cli", "play", "boom:make_env"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )  # fmt: skip
    line = one_error_line(out, "play")
    assert line.endswith("RuntimeError: env broke (--debug shows the traceback)")
    assert out.returncode == 1


def test_version() -> None:
    out = flexmg_cli("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"flexmg {flexmg.__version__}"


@pytest.mark.parametrize(
    ("script", "args", "says"),
    [
        ("bench_grader.py", ["--data", "{tmp}", "--quick"], "no figure without its corpus"),
        ("bench_sandbox.py", [], "HumanEval data not found"),
        ("answer_offsets.py", ["{tmp}/step_0000001.ckpt"], "no checkpoint file"),
        ("pass_at_k.py", ["--run", "{tmp}"], "no run folder there"),
        ("pass_at_k.py", ["--model", "{tmp}/no-model"], "no such folder"),
    ],
)
def test_a_benchmark_without_its_data_prints_no_figure(
    script: str, args: list[str], says: str, tmp_path: Path
) -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *(a.format(tmp=tmp_path) for a in args)],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "FLEXMG_HUMANEVAL": str(tmp_path / "HumanEval.jsonl.gz")},
    )  # fmt: skip
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert says in out.stderr and "error: " in out.stderr
    assert out.stdout == ""  # not one figure
