"""flexmg.io: atomic writes keep the old file on failure and leave no temp file; json_default."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from flexmg.io import (
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    atomic_write_via,
    json_default,
)


def test_a_failing_writer_keeps_the_old_file_and_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    atomic_write_text(path, "old")

    def half_then_fail(fh):  # type: ignore[no-untyped-def]
        fh.write(b"new but incomp")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write_via(path, half_then_fail)
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_keyboard_interrupt_also_cleans_up(tmp_path: Path) -> None:
    def interrupted(fh):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write_via(tmp_path / "x.bin", interrupted)
    assert list(tmp_path.iterdir()) == []


def test_parents_are_created_and_unicode_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "t.md"
    text = "∑ ü 🙂 \\boxed{x}\n" * 1000
    atomic_write_text(path, text)
    assert path.read_text(encoding="utf-8") == text


def test_wrong_payload_types_say_which_helper_to_use(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="atomic_write_text"):
        atomic_write_bytes(tmp_path / "x", "text")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="atomic_write_bytes"):
        atomic_write_text(tmp_path / "x", b"bytes")  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_json_default_covers_arrays_scalars_sets_paths_and_the_rest(tmp_path: Path) -> None:
    data = {
        "arr": np.arange(3),
        "f32": np.float32(0.5),
        "i64": np.int64(7),
        "set": {"b", "a"},
        "mixed": {1, "a"},
        "path": Path("runs") / "x",
        "obj": object(),
    }
    path = tmp_path / "d.json"
    atomic_write_json(path, data)
    back = json.loads(path.read_text())
    assert back["arr"] == [0, 1, 2] and back["f32"] == 0.5 and back["i64"] == 7
    assert back["set"] == ["a", "b"] and sorted(map(str, back["mixed"])) == ["1", "a"]
    assert back["path"] == str(Path("runs") / "x")
    assert back["obj"].startswith("<object object at")
    assert json_default(np.bool_(True)) is True


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_written_files_get_the_mode_of_a_plain_open_not_0600(
    tmp_path: Path, umask: int, mode: int
) -> None:
    code = (
        "import os, sys, stat; from flexmg.io import atomic_write_text; "
        f"os.umask({umask}); p = sys.argv[1]; atomic_write_text(p, 'x'); "
        "print(oct(stat.S_IMODE(os.stat(p).st_mode)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "f.json")], capture_output=True, text=True
    )
    assert out.stdout.strip() == oct(mode), out.stderr


def test_cli_outputs_are_readable_by_others(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "flexmg.cli", "export", "echo", "--n", "2", "--out", "rows.jsonl"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        preexec_fn=lambda: os.umask(0o022),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert stat.S_IMODE((tmp_path / "rows.jsonl").stat().st_mode) == 0o644
