import json
import subprocess
import sys

from flexmg.cli import main, parse_kwargs


def run_cli(*args, stdin=""):
    return subprocess.run(
        [sys.executable, "-m", "flexmg.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_list_shows_roles_graph_and_description(capsys):
    assert main(["list", "--json"]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["echo-v1"]["roles"] == "a -> b"
    assert rows["echo-v1"]["graph"] == "a->b"
    assert "math-4agent-v3" in rows and rows["math-4agent-v3"]["description"]


def test_check_prints_verdict(capsys):
    assert main(["check", "echo", "--cycles", "3"]) == 0
    assert "verdict: CONFORMANT" in capsys.readouterr().out


def test_play_by_hand_through_stdin():
    out = run_cli("play", "echo", "--seed", "0", stdin="garden\n\ngarden\n\n")
    assert out.returncode == 0, out.stderr
    assert "role: a" in out.stdout and "role: b" in out.stdout
    assert "episode over: success=" in out.stdout


def test_play_quits_cleanly_on_eof():
    out = run_cli("play", "echo", stdin="")
    assert out.returncode == 0, out.stderr


def test_unknown_env_is_a_clear_error():
    out = run_cli("check", "nope-env")
    assert out.returncode != 0
    assert "no env registered with id 'nope-env'" in out.stderr


def test_parse_kwargs():
    assert parse_kwargs(["horizon=2", "split=eval"]) == {"horizon": 2, "split": "eval"}


def test_play_reads_one_line_per_turn_from_a_pipe():
    out = run_cli("play", "echo", "--seed", "0", stdin="garden\ngarden\n")
    assert out.returncode == 0, out.stderr
    assert "one line per turn" in out.stdout and "episode over: success=True" in out.stdout
    assert '"rounds": 1' in out.stdout
    wrong = run_cli("play", "echo", "--seed", "0", stdin="garden\ngardens\n")
    assert "episode over: success=False" in wrong.stdout  # b's line was its own turn
