"""Ctrl-C during ``flexmg train``: a real SIGINT to a real run, then ``--resume``.

The first SIGINT finishes the update under way, saves a checkpoint and exits 130;
resuming gives the records of a run never stopped. A second SIGINT aborts at once
and leaves the last complete checkpoint loadable.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("peft")

from flexmg.agents.checkpoint import list_checkpoints, load_checkpoint  # noqa: E402
from flexmg.agents.evaluation import read_eval_episodes, saved_eval_updates  # noqa: E402
from flexmg.agents.stop import StopOnInterrupt, StopRequested  # noqa: E402
from flexmg.agents.trainer import read_metrics  # noqa: E402

TIMING_KEYS = {"seconds", "wall_seconds", "rollout_seconds", "learn_seconds"}
UPDATES = 12


@pytest.fixture(scope="module")
def small_model(tmp_path_factory):
    """A random 1-layer character-level Qwen2 saved as a local model folder (fast on CPU)."""
    from family_models import build_small_tiny_model

    return build_small_tiny_model(tmp_path_factory.mktemp("model"))


def _train_args(
    model: str, run_dir: Path, checkpoint_every: int = 100, vectorization: str = "sync"
) -> list[str]:
    return ["train", "--algo", "marft", "--env", "echo", "--model", model, "--seed", "3",
            "--updates", str(UPDATES), "--episodes-per-update", "16", "--eval-episodes", "4",
            "--eval-every", "2", "--checkpoint-every", str(checkpoint_every),
            "--keep-checkpoints", "3", "--max-new-tokens", "4", "--device", "cpu",
            "--vectorization", vectorization, "--run-dir", str(run_dir)]  # fmt: skip


def _flexmg(*args: str, **kw) -> subprocess.Popen:
    """``flexmg ARGS`` in its own process group (as a terminal runs a command)."""
    return subprocess.Popen(
        [sys.executable, "-m", "flexmg.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **kw,
    )


def _finish(proc: subprocess.Popen) -> tuple[int, str]:
    _, err = proc.communicate(timeout=600)
    return proc.returncode, err


def _wait_for(condition, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + 600
    while not condition():
        if proc.poll() is not None:
            raise AssertionError(f"the run ended before {what}: {proc.communicate()[1][-2000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _trained(run_dir: Path) -> bool:
    path = run_dir / "metrics.jsonl"
    return path.exists() and '"kind": "train"' in path.read_text()


def _strip(records):
    return [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in records]


def _no_partial_files(run_dir: Path) -> None:
    """Atomic writes leave no temp files (``.<name>.*.tmp``) behind."""
    assert not [p for p in run_dir.rglob("*") if p.name.endswith(".tmp")]


@pytest.fixture(scope="module")
def uninterrupted(small_model, tmp_path_factory):
    """The reference: the same run, never stopped."""
    run = tmp_path_factory.mktemp("full") / "run"
    rc, err = _finish(_flexmg(*_train_args(small_model, run), "--no-progress"))
    assert rc == 0, err[-2000:]
    return run


def _assert_same_run(run: Path, reference: Path) -> None:
    assert _strip(read_metrics(run)) == _strip(read_metrics(reference))
    summary = json.loads((run / "summary.json").read_text())
    assert summary["evals"] == json.loads((reference / "summary.json").read_text())["evals"]
    updates = saved_eval_updates(reference)
    assert saved_eval_updates(run) == updates == list(range(0, UPDATES + 1, 2))
    assert [read_eval_episodes(run, u) for u in updates] == [
        read_eval_episodes(reference, u) for u in updates
    ]


@pytest.mark.slow
@pytest.mark.parametrize("vectorization", ["sync", "async"])  # async: env worker processes
def test_ctrl_c_saves_a_checkpoint_and_resume_continues_exactly(
    small_model, uninterrupted, tmp_path, vectorization
):
    run = tmp_path / "run"
    # with its progress bar; the workers of async envs get the terminal's SIGINT too
    proc = _flexmg(*_train_args(small_model, run, vectorization=vectorization))
    _wait_for(lambda: _trained(run), proc, "the first update")
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal sends
    rc, err = _finish(proc)
    assert rc == 130, err[-2000:]
    lines = [seg.strip() for seg in re.split(r"[\r\n]", err) if seg.strip()]
    # the bar (on stderr) is redrawn around two lines of their own: the notice, the result
    assert any(re.fullmatch(r"Ctrl-C: (finishing this update|leaving the evaluation), then "
                            r"saving a checkpoint \(Ctrl-C again to abort at once\)", line)
               for line in lines), err[-2000:]  # fmt: skip
    stopped = re.fullmatch(
        rf"stopped after update (\d+) of {UPDATES}: saved (\S+); continue with: "
        rf"flexmg train --resume {re.escape(str(run))}",
        lines[-1],
    )
    assert stopped, err[-2000:]
    update, saved = int(stopped.group(1)), Path(stopped.group(2))
    assert 1 <= update < UPDATES
    bars = [line for line in lines if line.startswith("marft echo:")]
    assert f"| {update}/{UPDATES} " in bars[-1], bars[-1]  # the bar counts what was done
    # the only checkpoint is the one Ctrl-C wrote (--checkpoint-every 100), complete
    assert list_checkpoints(run / "checkpoints") == [saved]
    assert load_checkpoint(saved)["counters"]["updates_done"] == update
    _no_partial_files(run)
    assert not (run / "summary.json").exists()
    assert f"stopped by Ctrl-C after update {update}" in (run / "train.log").read_text()
    assert [r["update"] for r in read_metrics(run) if r["kind"] == "train"][-1] == update

    rc, err = _finish(_flexmg("train", "--resume", str(run), "--no-progress"))
    assert rc == 0, err[-2000:]
    _assert_same_run(run, uninterrupted)


@pytest.mark.slow
def test_a_second_ctrl_c_aborts_and_keeps_the_last_checkpoint(small_model, uninterrupted, tmp_path):
    run = tmp_path / "run"
    proc = _flexmg(*_train_args(small_model, run, checkpoint_every=1), "--no-progress")
    lines: list[str] = []  # stderr, read as it comes
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")))
    reader.start()
    # the checkpoint of update 1 is there: the run is in update 2's rollout now
    _wait_for(lambda: bool(list_checkpoints(run / "checkpoints")), proc, "a checkpoint")
    os.killpg(proc.pid, signal.SIGINT)
    _wait_for(lambda: any(x.startswith("Ctrl-C: ") for x in lines), proc, "the first notice")
    os.killpg(proc.pid, signal.SIGINT)  # while update 2 still runs (almost always)
    assert proc.wait(timeout=600) == 130
    reader.join()
    err = "".join(lines)
    last_line = err.strip().splitlines()[-1]
    aborted = re.fullmatch(
        rf"aborted: the newest checkpoint \S+ is intact; continue with: "
        rf"flexmg train --resume {re.escape(str(run))}",
        last_line,
    )
    # on a loaded machine the first stop can complete (update 2 saved) before the second
    # Ctrl-C is delivered: then the run says so, still exits 130 and resumes exactly
    stopped = re.fullmatch(
        r"stopped after update \d+ of \d+: saved \S+; continue with: .*", last_line
    )
    assert aborted or stopped, err[-2000:]
    saved = list_checkpoints(run / "checkpoints")
    assert saved and all(load_checkpoint(p)["format"] == 1 for p in saved)
    _no_partial_files(run)

    rc, err = _finish(_flexmg("train", "--resume", str(run), "--no-progress"))
    assert rc == 0, err[-2000:]
    _assert_same_run(run, uninterrupted)


def test_stop_on_interrupt_with_real_signals():
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        pytest.skip("SIGINT is handled by someone else here")
    notes: list[str] = []
    with StopOnInterrupt(notify=notes.append) as stop:
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.01)  # the handler runs in the main thread at the next bytecode
        assert stop.requested and notes[0].startswith("Ctrl-C: finishing this update")
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

    with StopOnInterrupt() as stop:  # an evaluation is left at once
        with pytest.raises(StopRequested):
            with stop.interruptible():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(1)
        assert stop.requested
        with pytest.raises(StopRequested):  # and not entered once a stop is asked
            with stop.interruptible():
                pass
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


class _CtrlCAt:
    """A real SIGINT to this process at a chosen step of a real run (``where``, ``update``)."""

    def __init__(self, where: str, update: int) -> None:
        self.where, self.update = where, update

    def trainer(self, config):
        from flexmg.agents.trainer import Trainer

        at = self

        class Interrupted(Trainer):
            def rollout(self, vec, update):
                if at.where == "rollout" and update + 1 == at.update:
                    os.kill(os.getpid(), signal.SIGINT)
                return super().rollout(vec, update)

            def evaluate_episodes(self, on_batch=None):
                if at.where == "eval" and self.updates_done == at.update:
                    os.kill(os.getpid(), signal.SIGINT)
                    time.sleep(1)  # the handler leaves the evaluation at once
                return super().evaluate_episodes(on_batch=on_batch)

        return Interrupted(config)


@pytest.mark.parametrize(
    "where,update,pending,evals",
    [("rollout", 1, False, [0]), ("rollout", 2, True, [0]), ("eval", 2, True, [0]),
     ("eval", 0, True, [])],
)  # fmt: skip
def test_a_stop_at_any_step_resumes_exactly(small_model, tmp_path, where, update, pending, evals):
    """Stopped during a rollout (the update finishes) or an evaluation (left at once)."""
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        pytest.skip("SIGINT is handled by someone else here")
    from flexmg.agents.stop import TrainingInterrupted
    from flexmg.agents.trainer import TrainConfig, Trainer

    def config(run_dir):
        return TrainConfig(env="echo", seed=5, updates=3, episodes_per_update=4, eval_every=2,
                           eval_episodes=4, checkpoint_every=100, run_dir=str(run_dir),
                           progress=False, policy={"model": small_model, "max_new_tokens": 4,
                           "critic_hidden": (16, 8), "device": "cpu"},
                           ppo={"epochs": 1, "minibatches": 2, "lr_actor": 1e-2})  # fmt: skip

    Trainer(config(tmp_path / "full")).run()
    run = tmp_path / "run"
    with pytest.raises(TrainingInterrupted) as stop:
        _CtrlCAt(where, update).trainer(config(run)).run()
    assert stop.value.update == update
    state = load_checkpoint(stop.value.checkpoint)
    assert bool(state["counters"].get("eval_pending")) == pending
    assert [e["update"] for e in state["evals"]] == evals
    Trainer.resume(run).run()
    assert _strip(read_metrics(run)) == _strip(read_metrics(tmp_path / "full"))
