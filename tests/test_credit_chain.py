"""benchmarks/credit_chain.py: its figures, aggregation, and a resumable smoke run."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace as S

import pytest

from helpers import load_benchmark


@pytest.fixture(scope="module")
def credit_chain():
    return load_benchmark("credit_chain")


def _episode(problem: str, message: str, success: bool) -> S:
    turn = S(role="reader", observation={"task": problem}, action=message)
    return S(transcript=[turn, S(role="solver", action="x")], metrics={"success": success})


def test_chain_figures(credit_chain) -> None:
    eps = [
        _episode("What is 19 - 6?", "What is 19 - 6?", True),
        _episode("What is 19 - 6?", "19-6", False),
        _episode("What is 2 + 3?", "the answer is 5", True),
        _episode("What is 2 + 3?", "ok", False),
    ]
    figures = credit_chain.chain_figures(eps, ["13", "13", "5", "5"])
    assert figures == {"relay_rate": 0.5, "expression_rate": 0.5, "answer_rate": 0.25,
                       "success_rate": 0.5, "episodes": 4}  # fmt: skip


def test_aggregate_table_and_plot(credit_chain, tmp_path: Path) -> None:
    def row(update: int, r: float) -> dict:
        return {"update": update, "relay_rate": r, "expression_rate": r, "answer_rate": 0.0,
                "success_rate": r}  # fmt: skip

    runs = {
        f"marft-s{seed}": {
            "variant": "marft",
            "train": [row(1, r)],
            "eval": [row(0, 0.1), row(1, r)],
        }
        for seed, r in ((0, 0.2), (1, 0.4), (2, 0.6))
    }
    summary = credit_chain.summarize(runs, ["marft", "ippo"])
    assert list(summary) == ["marft"]
    end = summary["marft"]["eval"]["relay_rate"][-1]
    assert end["n"] == 3 and end["mean"] == pytest.approx(0.4)
    assert end["ci95"][0] < 0.4 < end["ci95"][1]
    text = credit_chain.table(summary)
    assert "0.40 ± " in text and text.splitlines()[2].startswith("marft")
    credit_chain.plot(summary, tmp_path / "fig.png", "title")
    assert (tmp_path / "fig.png").read_bytes()[:4] == b"\x89PNG"


def test_smoke_run_resumes(credit_chain, tmp_path: Path, capsys) -> None:
    pytest.importorskip("peft")
    argv = ["--out", str(tmp_path), "--variants", "marft", "--seeds", "0", "--updates", "1",
            "--episodes-per-update", "2", "--eval-episodes", "2", "--relay-warmstart-steps", "0"]  # fmt: skip
    assert credit_chain.main(argv) == 0
    results = json.loads((tmp_path / "credit_chain.json").read_text())
    run = results["runs"]["marft-s0"]
    assert [r["update"] for r in run["eval"]] == [0, 1] and len(run["train"]) == 1
    assert results["start"]["model"] == "shipped"
    assert (tmp_path / "credit_chain.png").is_file()
    assert "relay start" in capsys.readouterr().out
    assert credit_chain.main(argv) == 0  # resumed: the finished run is skipped
    assert "done already" in capsys.readouterr().err
    assert credit_chain.main([*argv[:-1], "3"]) == 2  # another configuration: refused
