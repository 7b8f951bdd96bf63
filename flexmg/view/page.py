"""One self-contained HTML page of episodes: data as JSON, inline CSS and JS, no network.

:func:`page_data` turns a :class:`~flexmg.view.sources.Collection` into the
JSON the page embeds (texts capped at ``max_chars``); :func:`build_page` wraps it with the page's CSS (``page.css``) and
script (``page.js``) into one HTML document.

Every text an episode holds is hostile (an LLM wrote it): it is embedded as JSON
inside a ``<script type="application/json">`` block with ``<``, ``>`` and ``&``
escaped (so no text can close the block), and the script shows it only through
``textContent`` (never parsed as HTML). The page's Content-Security-Policy allows
its own script and style (by hash) and nothing else: no other script, no
network request, no form.

Example:
    >>> import flexmg
    >>> from flexmg.episodes import rollout
    >>> from flexmg.transcripts import episode_record
    >>> from flexmg.view.sources import Collection, EpisodeGroup
    >>> ep = rollout(flexmg.make("echo"), lambda o: "</script><b>hi</b>", episodes=1).episodes[0]
    >>> col = Collection("demo", [EpisodeGroup("echo", records=[episode_record(ep, "echo")])])
    >>> html = build_page(col)
    >>> "<b>hi</b>" in html, "\\\\u003c/script\\\\u003e\\\\u003cb\\\\u003ehi" in html
    (False, True)
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flexmg.io import atomic_write_bytes
from flexmg.view.compare import Comparison, default_comparisons
from flexmg.view.sources import Collection, roles_in

__all__ = ["DEFAULT_MAX_CHARS", "build_page", "cap", "page_data", "write_page"]

DEFAULT_MAX_CHARS = 20_000  # characters of one text embedded in the page, at most
_ASSETS = Path(__file__).resolve().parent


def cap(text: Any, limit: int) -> str:
    """``text`` as a string of at most about ``limit`` characters, marking a cut.

    >>> cap("abcdef", 3)
    'abc\\n[... 3 more characters not embedded in this page: see the episodes file]'
    """
    text = text if isinstance(text, str) else str(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} more characters not embedded in this page: see the episodes file]"


def _info_rows(info: Mapping[str, Any], limit: int) -> list[list[str]]:
    rows = []
    for key, value in info.items():
        if key == "annotation":
            continue
        text = value if isinstance(value, str) else json.dumps(value, default=repr)
        rows.append([cap(key, 200), cap(text, limit)])
    return rows


def _turn(turn: Mapping[str, Any], limit: int) -> dict[str, Any]:
    info = turn.get("info") or {}
    obs = turn.get("observation") or {}
    return {
        "round": turn["round"],
        "role": turn["role"],
        "position": turn["position"],
        "action": cap(turn["action"], limit),
        "chars": len(turn["action"]),
        "reward": turn["reward"],
        "team_reward": turn["team_reward"],
        "format_ok": turn.get("format_ok"),
        "answer_correct": turn.get("answer_correct"),
        "own_correct": turn.get("own_correct"),
        "annotations": turn.get("annotations") or {},
        "note": cap(info["annotation"], limit) if info.get("annotation") else "",
        "seen": {k: cap(v, limit) for k, v in obs.items() if isinstance(v, str)},
        "info": _info_rows(info, min(limit, 2000)),
    }


def _episode(record: Mapping[str, Any], group: int, limit: int) -> dict[str, Any]:
    task = record["task"]
    metrics = json.dumps(record.get("metrics", {}), indent=1, default=repr)
    return {
        "group": group,
        "env": record.get("env", ""),
        "seed": record.get("seed"),
        "task_id": cap(task.get("id", ""), 300),
        "prompt": cap(task.get("prompt", ""), limit),
        "answer": None if task.get("answer") is None else cap(task["answer"], limit),
        "prompt_id": record.get("prompt_id"),
        **{k: record["team"][k] for k in ("success", "score", "rounds", "truncated")},
        "roles": {r: cap(v.get("instructions", ""), limit) for r, v in record["roles"].items()},
        "turns": [_turn(t, limit) for t in record["transcript"]],
        "metrics": cap(metrics, min(limit, 8000)),
    }


def page_data(
    col: Collection,
    comparisons: list[Comparison] | None = None,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> dict[str, Any]:
    """The JSON the page embeds: groups, episodes (group by group), roles, comparisons.

    The groups hold transcript records as :func:`~flexmg.transcripts.normalize_record`
    returns them (what :func:`~flexmg.view.sources.load_collection` reads). A
    comparison's pairs are indices into ``episodes``. ``comparisons`` default to
    :func:`~flexmg.view.compare.default_comparisons` of the groups.
    """
    if max_chars < 100:
        raise ValueError(f"max_chars must be >= 100, got {max_chars}")
    if comparisons is None:
        comparisons = default_comparisons(col.groups)
    episodes: list[dict[str, Any]] = []
    groups = []
    offsets = []
    for g, group in enumerate(col.groups):
        offsets.append(len(episodes))
        episodes.extend(_episode(r, g, max_chars) for r in group.records)
        n = len(group.records)
        groups.append({
            "label": group.label,
            "kind": group.kind,
            "update": group.update,
            "episodes": n,
            "success_rate": sum(r["team"]["success"] for r in group.records) / n if n else None,
            "score": sum(r["team"]["score"] for r in group.records) / n if n else None,
        })  # fmt: skip
    return {
        "title": col.title,
        "notes": [cap(n, 2000) for n in col.notes],
        "skipped": [cap(s, 500) for s in col.skipped[:200]],
        "groups": groups,
        "roles": roles_in(r for g in col.groups for r in g.records),
        "episodes": episodes,
        "comparisons": [
            {
                "label": c.label,
                "a": c.a,
                "b": c.b,
                "pairs": [[offsets[c.a] + i, offsets[c.b] + j] for i, j in c.pairs],
            }
            for c in comparisons
        ],
    }


def _embed_json(data: Any) -> str:
    """JSON safe inside a ``<script>`` element: no ``<``, ``>``, ``&`` or non-ASCII left."""
    text = json.dumps(data, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _csp_hash(text: str) -> str:
    return (
        "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"
    )


def _escape_html(text: str) -> str:
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )


def build_page(
    col: Collection,
    comparisons: list[Comparison] | None = None,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> str:
    """The HTML page of ``col`` (see the module docs); open it in any browser, offline."""
    data = _embed_json(page_data(col, comparisons, max_chars))
    script = (_ASSETS / "page.js").read_text(encoding="utf-8")
    style = (_ASSETS / "page.css").read_text(encoding="utf-8")
    csp = (
        f"default-src 'none'; script-src {_csp_hash(script)}; style-src {_csp_hash(style)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f"<title>{_escape_html(col.title)}</title>\n"
        f"<style>{style}</style>\n</head>\n<body>\n"
        "<noscript>This page shows its episodes with JavaScript; enable it to read them.</noscript>\n"
        '<div id="app"></div>\n'
        f'<script id="flexmg-data" type="application/json">{data}</script>\n'
        f"<script>{script}</script>\n</body>\n</html>\n"
    )


def write_page(path: str | os.PathLike[str], html: str) -> Path:
    """Write the page atomically (the old file or the whole new one); returns its path."""
    target = Path(path)
    atomic_write_bytes(target, html.encode("utf-8", "replace"))  # a path name's lone surrogates
    return target
