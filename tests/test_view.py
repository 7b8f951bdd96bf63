"""flexmg view: loading runs, evals, leaderboards and episodes files; the page's data and escaping."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

import pytest

from flexmg.cli import main as flexmg_main
from flexmg.transcripts import (
    eval_transcripts_path,
    leaderboard_transcripts_path,
    write_transcripts,
)
from flexmg.view import (
    Collection,
    EpisodeGroup,
    ViewError,
    build_page,
    default_comparisons,
    load_collection,
    page_data,
    pair_by_prompt,
)
from view_data import INJECTION, fake_training_run, hostile_records, relay_records, team_records

DATA = re.compile(r'<script id="flexmg-data" type="application/json">(.*?)</script>', re.S)


def embedded(html: str) -> dict:
    match = DATA.search(html)
    assert match is not None
    return json.loads(match.group(1))


@pytest.fixture(scope="module")
def episodes_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("eps") / "episodes.jsonl"
    records = team_records("math-2agent", "oracle", 6) + team_records("math-2agent", "empty", 6)
    write_transcripts(path, records + relay_records(4) + hostile_records())
    return path


# ----------------------------------------------------------------------------- escaping
def test_hostile_text_is_data_never_markup(episodes_file):
    html = build_page(load_collection([episodes_file]))
    assert html.count("<script") == 2 and html.count("</script>") == 2  # data + the page's
    assert "<img" not in html and "<b>bold</b>" not in html and "<!-- " not in html
    body = DATA.search(html).group(1)  # type: ignore[union-attr]
    assert body.isascii() and not set("<>&") & set(body)
    data = json.loads(body)
    hostile = [e for e in data["episodes"] if e["turns"][0]["action"] == INJECTION]
    assert len(hostile) == 1  # the exact text, back from the page's JSON
    verifier = hostile[0]["turns"][1]
    assert verifier["chars"] == 90_000 and len(verifier["action"]) < 20_200
    assert verifier["action"].endswith(
        "more characters not embedded in this page: see the episodes file]"
    )


def test_the_page_allows_its_own_script_and_style_only():
    html = build_page(Collection("t", [EpisodeGroup("g", records=hostile_records())]))
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1)  # type: ignore[union-attr]
    script = re.findall(r"<script>(.*?)</script>", html, re.S)[-1]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp and "default-src 'none'" in csp
    style = re.search(r"<style>(.*?)</style>", html, re.S).group(1)  # type: ignore[union-attr]
    assert "unsafe-inline" not in csp and "http" not in script + style  # nothing to fetch


def test_a_title_or_text_with_lone_surrogates_still_writes(tmp_path):
    records = hostile_records()
    records[0]["task"]["prompt"] = "bad \ud800 prompt"
    out = tmp_path / "p.html"
    from flexmg.view import write_page

    write_page(
        out, build_page(Collection("title \udcff <x>", [EpisodeGroup("g", records=records)]))
    )
    text = out.read_text(encoding="utf-8")
    assert "<title>title ? &lt;x&gt;</title>" in text
    assert embedded(text)["episodes"][0]["prompt"] == "bad \ud800 prompt"


# ----------------------------------------------------------------------------- the data
def test_page_data_has_what_the_filters_and_the_conversation_need(episodes_file):
    col = load_collection([episodes_file])
    assert [g.label for g in col.groups] == [
        "scripted:oracle | math-2agent",
        "scripted:empty | math-2agent",
        "relay team | relay-2agent",
        "hostile | math-2agent",
    ]
    data = page_data(col)
    assert data["roles"] == ["solver", "verifier", "reader"]
    assert [g["episodes"] for g in data["groups"]] == [6, 6, 4, 1]
    assert [g["success_rate"] for g in data["groups"]] == [1.0, 0.0, 1.0, 0.0]
    eps = data["episodes"]
    assert len(eps) == 17 and [e["group"] for e in eps] == [0] * 6 + [1] * 6 + [2] * 4 + [3]
    oracle, empty, relay = eps[0], eps[6], eps[12]
    assert oracle["success"] and not empty["success"] and oracle["answer"]
    assert [t["role"] for t in oracle["turns"]] == ["solver", "verifier"]
    assert oracle["turns"][1]["format_ok"] and oracle["turns"][1]["answer_correct"]
    assert empty["turns"][1]["format_ok"] is False and empty["turns"][1]["action"] == ""
    assert oracle["turns"][0]["action"].endswith(f"\\boxed{{{oracle['answer']}}}.")
    assert oracle["roles"]["verifier"].startswith("You are the verifier")
    # what the solver of a relay saw: its predecessor's message, and no problem
    assert relay["turns"][1]["seen"]["context"] == f"[reader]: {relay['prompt']}"
    assert "hidden" in relay["turns"][1]["seen"]["task"]
    assert data["comparisons"][0]["label"] == "scripted:oracle vs scripted:empty on math-2agent"


def test_pairs_match_the_same_prompt_in_order():
    a = [{"prompt_id": p} for p in ("x", "y", "x", "z")]
    b = [{"prompt_id": p} for p in ("y", "x", "w", "x", "x")]
    assert pair_by_prompt(a, b) == [(0, 1), (1, 0), (2, 3)]
    assert pair_by_prompt([], b) == [] and pair_by_prompt(a, []) == []


def test_start_and_end_of_training_side_by_side(tmp_path):
    run = fake_training_run(tmp_path / "run", episodes=8, limit=5)
    col = load_collection([run])
    assert [(g.label, g.kind, g.update) for g in col.groups] == [
        ("eval @ update 0", "eval", 0),
        ("eval @ update 40", "eval", 40),
    ]
    assert col.notes[0].startswith("run run: marft on math-2agent, roles solver, verifier")
    assert col.notes[1] == "held-out success by update: 0: 0.000, 40: 1.000"
    (comparison,) = default_comparisons(col.groups)
    assert comparison.label == "start (update 0) vs end (update 40)"
    start, end = col.groups
    assert len(comparison.pairs) == 5  # the seeded sample kept the same 5 prompts both times
    for i, j in comparison.pairs:
        assert start.records[i]["task"] == end.records[j]["task"]
        assert not start.records[i]["team"]["success"] and end.records[j]["team"]["success"]
    data = page_data(col)
    assert data["comparisons"][0]["pairs"] == [[i, 5 + j] for i, j in comparison.pairs]


# ----------------------------------------------------------------------------- sources
def test_a_leaderboard_folder_shows_its_current_cells(tmp_path):
    out = tmp_path / "lb"
    cells = {}
    for entry, seed, current in (("scripted:oracle", 0, True), ("scripted:empty", 0, True),
                                 ("scripted:empty", 1, False)):  # fmt: skip
        source = {"kind": "leaderboard", "entry": entry, "env": "math-2agent", "seed": seed}
        records = team_records("math-2agent", entry.split(":")[1], 3, seed=seed, source=source)
        write_transcripts(leaderboard_transcripts_path(out, entry, "math-2agent", seed), records)
        cells[json.dumps([entry, "math-2agent", seed])] = {
            "entry": entry, "env": "math-2agent", "seed": seed, "current": current,
        }  # fmt: skip
    summary = [{"entry": "scripted:oracle", "env": "math-2agent", "score": {"mean": 1.0},
                "seeds": [0]}]  # fmt: skip
    results = {"format": "flexmg.leaderboard.v1", "cells": cells, "summary": summary}
    (out / "results.json").write_text(json.dumps(results))
    for path in (out, out / "results.json"):
        col = load_collection([path])
        assert [(g.label, len(g.records)) for g in col.groups] == [
            ("scripted:empty | math-2agent", 3),  # seed 1 is no longer counted
            ("scripted:oracle | math-2agent", 3),
        ]
        assert col.notes == ["scripted:oracle on math-2agent: score 1.0 over seeds [0]"]
        (comparison,) = default_comparisons(col.groups)
        assert comparison.label == "scripted:empty vs scripted:oracle on math-2agent"
        assert len(comparison.pairs) == 3


def test_a_flexmg_eval_output_with_its_transcripts(tmp_path):
    output = tmp_path / "evals" / "math-2agent-eval-n4-s0.json"
    output.parent.mkdir()
    output.write_text(json.dumps({"env": "math-2agent", "split": "eval", "episodes": 4,
                                  "success_rate": 1.0, "checkpoint": "step_40.ckpt"}))  # fmt: skip
    with pytest.raises(ViewError, match="expected math-2agent-eval-n4-s0.transcripts.jsonl"):
        load_collection([output])
    source = {"kind": "flexmg eval", "label": "step_40.ckpt"}
    write_transcripts(
        eval_transcripts_path(output), team_records("math-2agent", "oracle", 4, source=source)
    )
    col = load_collection([output])
    assert [(g.label, g.kind, len(g.records)) for g in col.groups] == [
        ("flexmg eval: step_40.ckpt", "flexmg eval", 4)
    ]
    assert "success 1.0" in col.notes[0]
    run = load_collection([tmp_path])  # the run folder shows the evaluations kept in it too
    assert [g.label for g in run.groups] == ["flexmg eval: step_40.ckpt"]


def test_what_cannot_be_shown_is_one_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        load_collection([tmp_path / "nope.jsonl"])
    run = tmp_path / "old-run"
    (run / "evals").mkdir(parents=True)
    (run / "evals" / "update_0000000.jsonl").write_text('{"task_id": "a", "success": true}\n')
    (run / "config.json").write_text("{}")
    with pytest.raises(ViewError, match="has no transcripts.*evals/update_NNNNNNN.transcripts"):
        load_collection([run])
    with pytest.raises(ViewError, match="metrics without its messages"):
        load_collection([run / "evals" / "update_0000000.jsonl"])
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(ViewError, match="no episode records in this file"):
        load_collection([empty])
    with pytest.raises(ViewError, match="not a run folder"):
        load_collection([tmp_path / "old-run" / "evals"])


def test_damaged_lines_are_skipped_and_named(tmp_path):
    path = tmp_path / "mixed.jsonl"
    write_transcripts(path, team_records("math-2agent", "oracle", 2))
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"transcript": [{"role": "a", "round": "x"}]}\n[1, 2]\n{"torn": \n')
    col = load_collection([path])
    assert col.episodes == 2 and len(col.skipped) == 3
    assert "mixed.jsonl record 3: not a well-formed episode record" in col.skipped[0]
    assert "skipping a damaged line" in col.skipped[2]
    assert len(page_data(col)["skipped"]) == 3


# ----------------------------------------------------------------------------- the command
def test_flexmg_view_writes_the_page(episodes_file, tmp_path, capsys):
    out = tmp_path / "page.html"
    assert flexmg_main(["view", str(episodes_file), "--out", str(out), "--title", "demo"]) == 0
    assert capsys.readouterr().out.strip() == (
        f"wrote {out}: 17 episodes in 4 groups, 2 side-by-side comparisons"
    )
    data = embedded(out.read_text(encoding="utf-8"))
    assert data["title"] == "demo" and len(data["episodes"]) == 17


def test_flexmg_view_default_output_and_errors(tmp_path, capsys):
    run = fake_training_run(tmp_path / "run", episodes=2, limit=2)
    assert flexmg_main(["view", str(run)]) == 0
    assert (run / "view.html").is_file()
    capsys.readouterr()
    assert flexmg_main(["view", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"flexmg view: error: {tmp_path / 'missing'}: no such file or folder"
    (tmp_path / "bare").mkdir()
    assert flexmg_main(["view", str(tmp_path / "bare")]) == 1
    assert capsys.readouterr().err.count("\n") == 1
    assert flexmg_main(["view", str(run), "--max-chars", "5"]) == 2
    assert "--max-chars must be >= 100" in capsys.readouterr().err


def test_a_few_thousand_episodes_make_one_page(tmp_path):
    base = team_records("math-2agent", "oracle", 8) + team_records("math-2agent", "empty", 8)
    records = [dict(r, seed=k) for k in range(200) for r in base]  # 3200 episodes
    path = write_transcripts(tmp_path / "many.jsonl", records)
    html = build_page(load_collection([path]))
    assert len(embedded(html)["episodes"]) == 3200
    assert len(html) < 12_000_000
    capped = load_collection([path], max_episodes=1000)
    assert [len(g.records) for g in capped.groups] == [500, 500]  # oracle and empty
    assert capped.notes[-1].startswith("showing 1000 of 3200 episodes")
    with pytest.raises(ValueError, match="max_episodes must be >= 1"):
        load_collection([path], max_episodes=0)
