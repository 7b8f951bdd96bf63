"""What ``flexmg view`` reads: episodes files, run folders, ``flexmg eval`` outputs, leaderboards.

:func:`load_collection` turns one or more paths into a :class:`Collection`: the
episodes (normalized :mod:`flexmg.transcripts` records) in *groups* (one per
evaluation of a run, per leaderboard entry and env, per file), with a few lines
about where they come from. What each kind of path holds:

* an episodes file (``*.jsonl``: ``RecordTranscripts``, :func:`~flexmg.transcripts.write_transcripts`);
* a training run folder (``config.json``, ``metrics.jsonl``): its
  ``evals/update_N.transcripts.jsonl`` (held-out episodes of each evaluation),
  ``rollouts/update_N.transcripts.jsonl`` (training episodes with values and advantages)
  and the transcripts of ``flexmg eval`` outputs kept in ``evals/``;
* a ``flexmg eval`` output (``NAME.json``) with its ``NAME.transcripts.jsonl``;
* a leaderboard folder (``results.json``) with its ``transcripts/*.jsonl``.

Example:
    >>> import flexmg, tempfile, os
    >>> from flexmg.episodes import rollout
    >>> from flexmg.transcripts import episode_record, write_transcripts
    >>> eps = rollout(flexmg.make("echo"), lambda o: "hi", episodes=2).episodes
    >>> path = os.path.join(tempfile.mkdtemp(), "eps.jsonl")
    >>> _ = write_transcripts(path, [episode_record(e, "echo") for e in eps])
    >>> col = load_collection([path])
    >>> [(g.label, len(g.records)) for g in col.groups]
    [('eps.jsonl', 2)]
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flexmg.transcripts import TRANSCRIPTS_SUFFIX, normalize_record, read_transcripts

__all__ = ["Collection", "EpisodeGroup", "ViewError", "load_collection", "load_path"]

LEADERBOARD_FORMAT = "flexmg.leaderboard.v1"
MAX_EPISODES = 10_000  # episodes on one page by default (a few MB each thousand)
KIND_ORDER = {
    "eval": 0,
    "train": 1,
    "flexmg eval": 2,
    "leaderboard": 3,
    "entries": 4,
    "episodes": 5,
}


class ViewError(Exception):
    """A path the viewer cannot show (the message says what was expected instead)."""


@dataclass
class EpisodeGroup:
    """Episodes shown together: one evaluation, one leaderboard entry on one env, one file."""

    label: str
    kind: str = "episodes"
    update: int | None = None
    entry: str | None = None
    env: str | None = None
    records: list[dict[str, Any]] = field(default_factory=list)

    def sort_key(self) -> tuple[int, int]:
        """Evaluations by update first, then training rollouts, then the rest.

        A stable sort keeps the order the groups were read in.
        """
        return (KIND_ORDER.get(self.kind, 9), self.update if self.update is not None else -1)


@dataclass
class Collection:
    """Everything one page shows: a title, lines about the sources, the episode groups."""

    title: str
    groups: list[EpisodeGroup] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def episodes(self) -> int:
        """How many episodes the groups hold."""
        return sum(len(g.records) for g in self.groups)


def _group_of(record: Mapping[str, Any], fallback: str) -> tuple[str, dict[str, Any]]:
    """The group label and attributes of a record, from its ``source`` (else the file name)."""
    source = record.get("source") or {}
    kind = str(source.get("kind", "")) if isinstance(source, Mapping) else ""
    update = source.get("update") if isinstance(source, Mapping) else None
    update = update if isinstance(update, int) and not isinstance(update, bool) else None
    if kind == "eval" and update is not None:
        return f"eval @ update {update}", {"kind": "eval", "update": update}
    if kind == "train" and update is not None:
        return f"train rollout @ update {update}", {"kind": "train", "update": update}
    if isinstance(source, Mapping) and "entry" in source:  # a leaderboard's (or a team's) cell
        entry, env = str(source.get("entry")), str(source.get("env", record.get("env", "?")))
        return f"{entry} | {env}", {"kind": kind or "entries", "entry": entry, "env": env}
    if kind == "flexmg eval":
        name = str(source.get("label") or source.get("checkpoint") or fallback)
        return f"flexmg eval: {name}", {"kind": "flexmg eval", "update": update}
    return fallback, {"kind": "episodes"}


def _read_file(path: Path, label: str, col: Collection, groups: dict[str, EpisodeGroup]) -> int:
    """Add a transcripts file's records to ``groups``; damaged lines go to ``col.skipped``."""
    count = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for lineno, raw in enumerate(read_transcripts(path), 1):
            try:
                record = normalize_record(raw)
            except ValueError as exc:
                if count == 0 and lineno == 1 and "without its messages" in str(exc):
                    raise ViewError(f"{path}: {exc}") from None
                col.skipped.append(f"{path.name} record {lineno}: {exc}")
                continue
            name, attrs = _group_of(record, label)
            group = groups.get(name)
            if group is None:
                group = groups[name] = EpisodeGroup(label=name, **attrs)
            group.records.append(record)
            count += 1
    col.skipped.extend(str(w.message) for w in caught)
    return count


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ViewError(f"{path}: cannot read it as JSON ({exc})") from None


def _run_notes(run: Path) -> list[str]:
    notes = []
    config_path = run / "config.json"
    if config_path.is_file():
        config = _read_json(config_path)
        train = config.get("train", {}) if isinstance(config, Mapping) else {}
        algo = (config.get("algorithm") or {}).get("name") if isinstance(config, Mapping) else None
        roles = config.get("roles") if isinstance(config, Mapping) else None
        notes.append(
            f"run {run.name}: {algo or train.get('algo', '?')} on {train.get('env', '?')}, "
            f"roles {', '.join(map(str, roles or [])) or '?'}, seed {train.get('seed', '?')}"
        )
    metrics = run / "metrics.jsonl"
    if metrics.is_file():
        evals = []
        for line in metrics.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(rec, dict) and rec.get("kind") == "eval":
                rate = rec.get("success_rate")
                if isinstance(rate, (int, float)):
                    evals.append(f"{rec.get('update')}: {rate:.3f}")
        if evals:
            notes.append("held-out success by update: " + ", ".join(evals))
    return notes


def _load_run(run: Path, col: Collection, groups: dict[str, EpisodeGroup]) -> None:
    evals = sorted((run / "evals").glob(f"*{TRANSCRIPTS_SUFFIX}"))
    files = [p for p in evals if p.name.startswith("update_")]
    files += sorted((run / "rollouts").glob(f"update_*{TRANSCRIPTS_SUFFIX}"))
    files += [p for p in evals if not p.name.startswith("update_")]  # `flexmg eval` outputs
    col.notes.extend(_run_notes(run))
    if not files:
        raise ViewError(
            f"{run}: this run folder has no transcripts (expected "
            f"evals/update_NNNNNNN{TRANSCRIPTS_SUFFIX}, written by runs that save the "
            "transcripts of their evaluations); its evals/update_N.jsonl hold metrics only"
        )
    for path in files:
        kind = "eval" if path.parent.name == "evals" else "train"
        digits = path.name.removeprefix("update_").removesuffix(TRANSCRIPTS_SUFFIX)
        fallback = f"{kind} @ update {int(digits)}" if digits.isdigit() else path.name
        if not path.name.startswith("update_"):
            fallback = f"flexmg eval: {path.name.removesuffix(TRANSCRIPTS_SUFFIX)}"
        _read_file(path, fallback, col, groups)


def _load_leaderboard(out: Path, col: Collection, groups: dict[str, EpisodeGroup]) -> None:
    results = _read_json(out / "results.json")
    summary = results.get("summary") if isinstance(results, Mapping) else None
    for row in summary or []:
        if isinstance(row, Mapping) and isinstance(row.get("score"), Mapping):
            col.notes.append(
                f"{row.get('entry')} on {row.get('env')}: score {row['score'].get('mean')} "
                f"over seeds {row.get('seeds')}"
            )
    files = sorted((out / "transcripts").glob("*.jsonl"))
    if not files:
        raise ViewError(
            f"{out}: this leaderboard folder has no transcripts (expected transcripts/*.jsonl, "
            "written by leaderboards that save a sample of each cell's episodes)"
        )
    cells = results.get("cells", {}) if isinstance(results, Mapping) else {}
    current = {
        (c.get("entry"), c.get("env"), c.get("seed"))
        for c in cells.values()
        if isinstance(c, Mapping) and c.get("current", True)
    }
    local: dict[str, EpisodeGroup] = {}
    for path in files:
        _read_file(path, path.name, col, local)
    for name, group in local.items():  # only the cells the results count now
        group.records = [r for r in group.records if not cells or _cell(r) in current]
        if name in groups:
            groups[name].records.extend(group.records)
        else:
            groups[name] = group


def _cell(record: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    source = record.get("source") or {}
    return (source.get("entry"), source.get("env"), source.get("seed"))


def _load_eval_output(path: Path, col: Collection, groups: dict[str, EpisodeGroup]) -> None:
    from flexmg.transcripts import eval_transcripts_path

    result = _read_json(path)
    if isinstance(result, Mapping) and "success_rate" in result:
        col.notes.append(
            f"{path.name}: {result.get('env', '?')} ({result.get('split', '?')} split), "
            f"{result.get('episodes', '?')} episodes, success {result.get('success_rate')}"
        )
    transcripts = eval_transcripts_path(path)
    if not transcripts.is_file():
        raise ViewError(
            f"{path}: no transcripts next to this evaluation (expected {transcripts.name}, "
            "written by `flexmg eval` when it saves transcripts)"
        )
    _read_file(transcripts, f"flexmg eval: {path.stem}", col, groups)


def load_path(
    path: str | os.PathLike[str], col: Collection, groups: dict[str, EpisodeGroup]
) -> None:
    """Add what ``path`` holds to ``col``/``groups`` (see the module docs for the kinds)."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file or folder")
    if p.is_dir():
        if (p / "results.json").is_file():
            _load_leaderboard(p, col, groups)
        elif any(
            (p / name).exists() for name in ("config.json", "metrics.jsonl", "evals", "rollouts")
        ):
            _load_run(p, col, groups)
        else:
            raise ViewError(
                f"{p}: not a run folder (config.json, evals/, rollouts/), a leaderboard folder "
                "(results.json) or an episodes file; pass one of those"
            )
        return
    if p.suffix == ".json":
        data = _read_json(p)
        if isinstance(data, Mapping) and data.get("format") == LEADERBOARD_FORMAT:
            _load_leaderboard(p.parent, col, groups)
        else:
            _load_eval_output(p, col, groups)
        return
    if _read_file(p, p.name, col, groups) == 0:
        raise ViewError(
            f"{p}: no episode records in this file (expected JSON lines with a 'transcript' "
            "list, as RecordTranscripts and flexmg.transcripts.write_transcripts write)"
        )


def load_collection(
    paths: Sequence[str | os.PathLike[str]],
    title: str | None = None,
    max_episodes: int = MAX_EPISODES,
) -> Collection:
    """The episodes of every path, grouped (see the module docs).

    Beyond ``max_episodes`` episodes each group keeps its first ones, in proportion
    to its size (at least one), and a note says how many were left out.

    Raises:
        FileNotFoundError: a path does not exist.
        ViewError: a path holds no episodes to show (the message says what it expected).
    """
    if not paths:
        raise ViewError("give at least one path: an episodes file, a run or leaderboard folder")
    if max_episodes < 1:
        raise ValueError(f"max_episodes must be >= 1, got {max_episodes}")
    names = ", ".join(Path(p).name or str(p) for p in paths)
    col = Collection(title=title or f"flexmg episodes: {names}")
    groups: dict[str, EpisodeGroup] = {}
    for path in paths:
        load_path(path, col, groups)
    col.groups = sorted((g for g in groups.values() if g.records), key=EpisodeGroup.sort_key)
    if not col.groups:
        raise ViewError(f"no episodes to show in {names}")
    total = col.episodes
    if total > max_episodes:
        for group in col.groups:
            group.records = group.records[: max(1, len(group.records) * max_episodes // total)]
        col.notes.append(
            f"showing {col.episodes} of {total} episodes (the first of each group; "
            "raise --max-episodes to see more)"
        )
    return col


def roles_in(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every role that acts in ``records``, in order of first appearance.

    >>> roles_in([{"transcript": [{"role": "b"}, {"role": "a"}]}, {"transcript": [{"role": "b"}]}])
    ['b', 'a']
    """
    seen: dict[str, None] = {}
    for record in records:
        for turn in record.get("transcript", []):
            seen.setdefault(str(turn.get("role")), None)
    return list(seen)
