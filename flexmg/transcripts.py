"""Episode transcripts: one JSON record per episode, a bounded sample of them, their files.

A *transcript record* holds everything needed to read an episode again: the env
id and seed, the task (id, prompt, gold answer), the team's outcome
(``success``, ``score``, ``rounds``), the env's episode metrics, and each turn in
the order it was played (graph order within a round) with its round, role,
action, reward, the role's ``format_ok``/``answer_correct``/``own_correct``
flags (``None`` when the env does not report one), and, when a learner recorded
them, per-action annotations such as ``value`` and ``advantage``. What a role
was shown is kept compactly: each turn's ``observation`` holds only what is not
stored once for the episode (the task text and each role's instructions live in
``task`` and ``roles``); :func:`observation_of` puts it back together.

:func:`episode_record` builds a record from a finished
:class:`~flexmg.vector.EpisodeResult`; :class:`TranscriptSample` keeps a bounded
sample of them (the first ``limit``, or a seeded sample that picks the same
episodes at every evaluation of the same seeds); :func:`write_transcripts`
saves them atomically and :func:`read_transcripts` reads them back (also the
lines :class:`~flexmg.wrappers.RecordTranscripts` appends: the same format).
Where runs, evaluations and leaderboards keep them: :func:`run_transcripts_path`,
:func:`eval_transcripts_path`, :func:`leaderboard_transcripts_path`.

Example:
    >>> import flexmg, tempfile, os
    >>> from flexmg.episodes import rollout
    >>> team = {"a": lambda o: o["task"][5:], "b": lambda o: "no"}
    >>> episodes = rollout(flexmg.make("echo"), team, episodes=3, seed=0).episodes
    >>> sample = TranscriptSample(limit=2, keep="first")
    >>> for ep in episodes:
    ...     sample.add_episode(ep, env="echo", source={"kind": "example"})
    >>> path = os.path.join(tempfile.mkdtemp(), "episodes.jsonl")
    >>> _ = write_transcripts(path, sample.records())
    >>> records = list(read_transcripts(path))
    >>> [(r["seed"], r["team"]["success"], [t["role"] for t in r["transcript"]]) for r in records]
    [(0, False, ['a', 'b']), (1, False, ['a', 'b'])]
"""

from __future__ import annotations

import heapq
import json
import math
import os
import re
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from flexmg.env import TurnRecord, prompt_id
from flexmg.io import atomic_write_text, json_default
from flexmg.tasks import Task, stable_hash

__all__ = [
    "FLAG_KEYS",
    "RECORD_FORMAT",
    "TRANSCRIPTS_SUFFIX",
    "EpisodeLike",
    "TranscriptSample",
    "episode_record",
    "eval_transcripts_path",
    "leaderboard_transcripts_path",
    "normalize_record",
    "observation_of",
    "read_transcripts",
    "record_from_turns",
    "run_transcripts_path",
    "save_sample",
    "write_transcripts",
]

RECORD_FORMAT = "flexmg.episode.v1"
FLAG_KEYS = ("format_ok", "answer_correct", "own_correct")
TRANSCRIPTS_SUFFIX = ".transcripts.jsonl"
Keep = Literal["first", "sample"]
Annotations = Sequence[Mapping[str, Any] | None]
# what the env puts in a turn's info that the record keeps elsewhere (or is the episode's)
_LIFTED_INFO = frozenset({*FLAG_KEYS, "episode"})


class EpisodeLike(Protocol):
    """What :func:`episode_record` reads of a finished episode (an ``EpisodeResult``)."""

    seed: int | None
    task_id: str
    transcript: list[TurnRecord]
    metrics: dict[str, Any]


# ----------------------------------------------------------------------------- records
def _clean(value: Any) -> Any:
    """Plain JSON values: non-finite floats become ``None``, lone surrogates U+FFFD.

    Other values become their ``json_default`` form.
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return _valid_unicode(value)
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, Mapping):
        return {_valid_unicode(str(k)): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return _clean(json_default(value))


def _valid_unicode(text: str) -> str:
    """``text`` with lone surrogates (not encodable as UTF-8) replaced by U+FFFD."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    return text


def _flag(value: Any) -> bool | None:
    return None if value is None else bool(value)


def _annotation(values: Mapping[str, Any] | None, index: int) -> dict[str, float | None]:
    if values is None:
        return {}
    if not isinstance(values, Mapping):
        raise TypeError(
            f"annotation of turn {index} must be a mapping such as "
            f"{{'value': 0.2, 'advantage': -0.1}}, got {type(values).__name__}"
        )
    out: dict[str, float | None] = {}
    for key, number in values.items():
        if number is None:
            out[str(key)] = None
            continue
        try:
            out[str(key)] = _clean(float(number))
        except (TypeError, ValueError):
            raise TypeError(
                f"annotation {key!r} of turn {index} must be a number, got {number!r}"
            ) from None
    return out


def record_from_turns(
    env: str,
    seed: int | None,
    task: Task | Mapping[str, Any],
    turns: Sequence[TurnRecord],
    metrics: Mapping[str, Any],
    annotations: Annotations | None = None,
    source: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A transcript record from an episode's parts (see the module docs for the fields).

    Args:
        env: the env id (or name) the episode was played on.
        seed: the episode's seed.
        task: the task played (a ``Task``, or ``{"id", "prompt", "answer"}``).
        turns: the env's transcript (``env.transcript``), in the order played.
        metrics: the env's ``episode_metrics``.
        annotations: one mapping per turn (or ``None`` for a turn) of numbers a
            learner recorded for the action, e.g. ``{"value": 0.3, "advantage": 0.1}``.
        source: where the episode comes from (e.g. ``{"kind": "eval", "update": 40}``).

    >>> from flexmg.env import TurnRecord
    >>> turn = TurnRecord(0, "solver", 0, {"task": "1+1?", "role": "solver",
    ...     "instructions": "Answer.", "round": 0, "context": "", "feedback": ""},
    ...     "\\\\boxed{2}", reward=1.0, info={"format_ok": True, "answer_correct": True})
    >>> rec = record_from_turns("math", 3, {"id": "t", "prompt": "1+1?", "answer": "2"},
    ...     [turn], {"success": True, "score": 1.0, "rounds": 1}, [{"value": 0.25}])
    >>> rec["team"], rec["transcript"][0]["format_ok"], rec["transcript"][0]["annotations"]
    ({'success': True, 'score': 1.0, 'rounds': 1, 'truncated': False}, True, {'value': 0.25})
    """
    if annotations is not None and len(annotations) != len(turns):
        raise ValueError(
            f"got {len(annotations)} annotations for an episode of {len(turns)} turns: "
            "pass one mapping (or None) per turn, in transcript order"
        )
    task_part: dict[str, Any]
    if isinstance(task, Task):
        task_part = {"id": task.id, "prompt": task.prompt, "answer": task.answer}
    else:
        task_part = {
            "id": str(task.get("id", "")),
            "prompt": str(task.get("prompt", "")),
            "answer": None if task.get("answer") is None else str(task.get("answer")),
        }
    if not task_part["prompt"] and turns:
        task_part["prompt"] = str(turns[0].observation.get("task", ""))
    roles: dict[str, dict[str, str]] = {}
    out_turns = []
    for i, turn in enumerate(turns):
        obs = dict(turn.observation)
        obs.pop("role", None)
        obs.pop("round", None)
        if obs.get("task") == task_part["prompt"]:
            obs.pop("task")
        role_part = roles.setdefault(turn.role, {"instructions": str(obs.get("instructions", ""))})
        if obs.get("instructions", "") == role_part["instructions"]:
            obs.pop("instructions", None)
        info = dict(turn.info)
        entry: dict[str, Any] = {
            "round": int(turn.round),
            "role": turn.role,
            "position": int(turn.position),
            "action": turn.action,
            "reward": float(turn.reward),
            "team_reward": float(turn.team_reward),
            **{key: _flag(info.get(key)) for key in FLAG_KEYS},
            "observation": obs,
            "info": {k: v for k, v in info.items() if k not in _LIFTED_INFO},
            "time": float(turn.time),
        }
        note = _annotation(annotations[i], i) if annotations is not None else {}
        if note:
            entry["annotations"] = note
        out_turns.append(entry)
    metrics = dict(metrics)
    record: dict[str, Any] = {
        "format": RECORD_FORMAT,
        "env": str(env),
        "seed": None if seed is None else int(seed),
        "task": task_part,
        "prompt_id": str(metrics.get("prompt_id") or prompt_id(task_part["prompt"])),
        "team": {
            "success": bool(metrics.get("success", False)),
            "score": float(metrics.get("score", 0.0) or 0.0),
            "rounds": int(metrics.get("rounds", 0) or 0),
            "truncated": bool(metrics.get("truncated", False)),
        },
        "metrics": metrics,
        "roles": roles,
        "transcript": out_turns,
    }
    if source:
        record["source"] = dict(source)
    return _clean(record)


def episode_record(
    episode: EpisodeLike,
    env: str,
    annotations: Annotations | None = None,
    source: Mapping[str, Any] | None = None,
    task: Task | None = None,
) -> dict[str, Any]:
    """The transcript record of a finished episode (a :class:`~flexmg.vector.EpisodeResult`).

    The task (with its gold answer) is ``task`` when given, else the episode's
    own ``task`` (vector envs record it), else only the id and the prompt the
    first role saw. ``annotations`` and ``source`` as in :func:`record_from_turns`.

    >>> import flexmg
    >>> vec = flexmg.make_vec("echo", num_envs=1)
    >>> vec.reset(seed=4)
    >>> while not vec.all_done():
    ...     role = vec.next_role()
    ...     _ = vec.step(role, [o["task"][5:] for o in vec.observe(role)])
    >>> rec = episode_record(vec.episodes()[0], "echo", annotations=[{"value": 0.5}, None])
    >>> rec["team"]["success"], rec["task"]["answer"] == rec["transcript"][1]["action"]
    (True, True)
    """
    chosen: Task | Mapping[str, Any] | None = task or getattr(episode, "task", None)
    if chosen is None:
        chosen = {"id": episode.task_id, "prompt": "", "answer": None}
    return record_from_turns(
        env,
        episode.seed,
        chosen,
        episode.transcript,
        episode.metrics,
        annotations=annotations,
        source=source,
    )


def observation_of(record: Mapping[str, Any], index: int) -> dict[str, Any]:
    """The full observation turn ``index`` of ``record`` was shown (the env's six fields).

    >>> import flexmg
    >>> from flexmg.episodes import rollout
    >>> ep = rollout(flexmg.make("echo"), lambda o: "hi", episodes=1).episodes[0]
    >>> observation_of(episode_record(ep, "echo"), 1) == ep.transcript[1].observation
    True
    """
    turn = record["transcript"][index]
    obs = dict(turn.get("observation") or {})
    roles = record.get("roles") or {}
    return {
        "task": obs.get("task", record["task"]["prompt"]),
        "role": turn["role"],
        "instructions": obs.get(
            "instructions", (roles.get(turn["role"]) or {}).get("instructions", "")
        ),
        "round": turn["round"],
        "context": obs.get("context", ""),
        "feedback": obs.get("feedback", ""),
    }


def normalize_record(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A well-formed record in the current format from any recorded line.

    Every field is checked and rebuilt (a file may have been edited or written by
    other code); lines written before this format (``RecordTranscripts`` turns
    carrying the whole observation and info) are converted. Anything that is not
    an episode raises ``ValueError`` saying why.

    >>> old = {"env": "echo", "seed": 0, "task": {"id": "t", "prompt": "say a"},
    ...        "metrics": {"success": True, "score": 1.0, "rounds": 1},
    ...        "transcript": [{"round": 0, "role": "a", "position": 0, "action": "a",
    ...                        "observation": {"task": "say a", "context": ""}, "info": {}}]}
    >>> rec = normalize_record(old)
    >>> rec["format"], rec["team"]["success"], rec["transcript"][0]["format_ok"]
    ('flexmg.episode.v1', True, None)
    >>> normalize_record(rec) == rec
    True
    """
    if not isinstance(raw, Mapping):
        raise ValueError(f"an episode record is a JSON object, got {type(raw).__name__}")
    turns = raw.get("transcript")
    if not isinstance(turns, list):
        if "per_role" in raw or "success" in raw:
            raise ValueError(
                "this line holds an episode's metrics without its messages (e.g. the trainer's "
                "evals/update_N.jsonl); transcripts are in the *.transcripts.jsonl files"
            )
        raise ValueError("not an episode record: it has no 'transcript' list of turns")
    task: Mapping[str, Any] = raw["task"] if isinstance(raw.get("task"), Mapping) else {}
    roles: Mapping[str, Any] = raw["roles"] if isinstance(raw.get("roles"), Mapping) else {}
    prompt = str(task.get("prompt") or "")
    records = []
    notes = []
    try:
        for i, turn in enumerate(turns):
            if not isinstance(turn, Mapping):
                raise ValueError(f"turn {i} is not a JSON object")
            role = str(turn.get("role", "?"))
            obs = dict(turn.get("observation") or {})
            obs.setdefault("task", prompt)
            role_part = roles.get(role)
            if isinstance(role_part, Mapping):
                obs.setdefault("instructions", str(role_part.get("instructions", "")))
            info = dict(turn.get("info") or {})
            info.update({k: turn[k] for k in FLAG_KEYS if k in turn})
            records.append(
                TurnRecord(
                    round=int(turn.get("round", 0)),
                    role=role,
                    position=int(turn.get("position", i)),
                    observation=obs,
                    action=str(turn.get("action", "")),
                    reward=float(turn.get("reward", 0.0) or 0.0),
                    team_reward=float(turn.get("team_reward", 0.0) or 0.0),
                    info=info,
                    time=float(turn.get("time", 0.0) or 0.0),
                )
            )
            note = turn.get("annotations")
            notes.append(note if isinstance(note, Mapping) else None)
        seed = raw.get("seed")
        return record_from_turns(
            str(raw.get("env", "")),
            None if seed is None else int(seed),
            {
                "id": task.get("id", raw.get("task_id", "")),
                "prompt": prompt,
                "answer": task.get("answer"),
            },
            records,
            dict(raw.get("metrics") or {}),
            annotations=notes,
            source=raw.get("source") if isinstance(raw.get("source"), Mapping) else None,
        )
    except (TypeError, ValueError) as exc:
        raise ValueError(f"not a well-formed episode record: {exc}") from None


# ----------------------------------------------------------------------------- samples
class TranscriptSample:
    """A bounded sample of episode records.

    Args:
        limit: at most this many records are kept (0 keeps none).
        keep: ``"first"`` keeps the first ``limit`` added; ``"sample"`` keeps the
            ``limit`` episodes whose ``(seed, env seed, task id)`` hash lowest:
            a seeded sample that picks the same episodes whenever the same episodes
            are offered (every evaluation of a run plays the same seeds, so the
            first and the last evaluation keep the same prompts).
        seed: the sample's seed (``keep="sample"``).

    >>> sample = TranscriptSample(limit=2, keep="sample", seed=1)
    >>> for s in range(10):
    ...     sample.add({"seed": s, "task": {"id": f"t{s % 4}"}})
    >>> again = TranscriptSample(limit=2, keep="sample", seed=1)
    >>> for s in reversed(range(10)):
    ...     again.add({"seed": s, "task": {"id": f"t{s % 4}"}})
    >>> kept = [r["seed"] for r in sample.records()]
    >>> len(kept), kept == sorted(r["seed"] for r in again.records())
    (2, True)
    """

    def __init__(self, limit: int = 32, keep: Keep = "sample", seed: int = 0) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"limit must be an int >= 0 (0 keeps nothing), got {limit!r}")
        if keep not in ("first", "sample"):
            raise ValueError(f"keep must be 'first' or 'sample', got {keep!r}")
        self.limit = limit
        self.keep = keep
        self.seed = int(seed)
        self.offered = 0
        self._heap: list[tuple[int, int, int, dict[str, Any]]] = []  # (-priority, -order, ...)

    def _priority(self, seed: Any, task_id: Any) -> int:
        if self.keep == "first":
            return self.offered
        return stable_hash("transcript-sample", self.seed, seed, task_id)

    def wants(self, seed: Any, task_id: Any) -> bool:
        """Whether an episode of this env seed and task id would be kept if added now."""
        if self.limit == 0:
            return False
        if len(self._heap) < self.limit:
            return True
        return (self._priority(seed, task_id), self.offered) < (
            -self._heap[0][0],
            -self._heap[0][1],
        )

    def add(self, record: Mapping[str, Any]) -> None:
        """Offer one record (kept or dropped at once; memory stays at ``limit`` records)."""
        task = record.get("task") or {}
        task_id = task.get("id") if isinstance(task, Mapping) else None
        key = (self._priority(record.get("seed"), task_id), self.offered)
        order = self.offered
        self.offered += 1
        if self.limit == 0:
            return
        item = (-key[0], -key[1], order, dict(record))
        if len(self._heap) < self.limit:
            heapq.heappush(self._heap, item)
        elif (item[0], item[1]) > (self._heap[0][0], self._heap[0][1]):
            heapq.heapreplace(self._heap, item)

    def add_episode(
        self,
        episode: EpisodeLike,
        env: str,
        annotations: Annotations | None = None,
        source: Mapping[str, Any] | None = None,
    ) -> None:
        """Offer a finished episode; its record is built only when it is kept."""
        if not self.wants(episode.seed, episode.task_id):
            self.offered += 1
            return
        self.add(episode_record(episode, env, annotations=annotations, source=source))

    def records(self) -> list[dict[str, Any]]:
        """The kept records, in the order they were added."""
        return [item[3] for item in sorted(self._heap, key=lambda item: item[2])]

    def __len__(self) -> int:
        return len(self._heap)


# ----------------------------------------------------------------------------- files
def _line(record: Mapping[str, Any]) -> str:
    return json.dumps(_clean(record), ensure_ascii=False, allow_nan=False) + "\n"


def write_transcripts(path: str | os.PathLike[str], records: Iterable[Mapping[str, Any]]) -> Path:
    """Write records as JSON lines, atomically (the old file or the whole new one).

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "a.jsonl")
    >>> _ = write_transcripts(path, [{"seed": 1, "transcript": []}])
    >>> open(path).read()
    '{"seed": 1, "transcript": []}\\n'
    """
    target = Path(path)
    atomic_write_text(target, "".join(_line(r) for r in records))
    return target


def save_sample(path: str | os.PathLike[str], sample: TranscriptSample) -> Path | None:
    """Write a sample's records to ``path`` (folders made); with none kept, remove ``path``.

    A file left at ``path`` by an earlier run of the same evaluation would show
    episodes that no longer belong to it, so a sample that keeps nothing (limit 0,
    or no episodes offered) deletes it. Returns the path written, or None.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "evals", "a.transcripts.jsonl")
    >>> sample = TranscriptSample(limit=1, keep="first")
    >>> sample.add({"seed": 1, "transcript": []})
    >>> save_sample(path, sample).name, save_sample(path, TranscriptSample(limit=0)), os.path.exists(path)
    ('a.transcripts.jsonl', None, False)
    """
    target = Path(path)
    records = sample.records()
    if not records:
        target.unlink(missing_ok=True)
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    return write_transcripts(target, records)


def read_transcripts(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Yield the JSON objects of a transcripts file as stored (see :func:`normalize_record`).

    A damaged line (a crash mid-append) is skipped with a warning naming it.
    """
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                warnings.warn(f"{path}:{lineno}: skipping a damaged line", stacklevel=2)


def run_transcripts_path(
    run_dir: str | os.PathLike[str], update: int, kind: Literal["eval", "train"] = "eval"
) -> Path:
    """Where a training run keeps the transcripts of an evaluation or a training rollout.

    ``kind="eval"``: the held-out episodes of the evaluation after ``update``
    updates, next to their metrics (``evals/update_N.jsonl``); ``kind="train"``: a
    sample of update ``update``'s rollout, with the values and advantages PPO used.

    >>> run_transcripts_path("runs/r", 40).as_posix(), run_transcripts_path("r", 3, "train").as_posix()
    ('runs/r/evals/update_0000040.transcripts.jsonl', 'r/rollouts/update_0000003.transcripts.jsonl')
    """
    if kind not in ("eval", "train"):
        raise ValueError(f"kind must be 'eval' or 'train', got {kind!r}")
    folder = "evals" if kind == "eval" else "rollouts"
    return Path(run_dir) / folder / f"update_{int(update):07d}{TRANSCRIPTS_SUFFIX}"


def eval_transcripts_path(output: str | os.PathLike[str]) -> Path:
    """Where ``flexmg eval`` keeps the transcripts of the evaluation it writes to ``output``.

    >>> eval_transcripts_path("runs/r/evals/math-2agent-eval-n200-s0.json").name
    'math-2agent-eval-n200-s0.transcripts.jsonl'
    """
    out = Path(output)
    stem = out.name[: -len(out.suffix)] if out.suffix else out.name
    return out.with_name(stem + TRANSCRIPTS_SUFFIX)


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def leaderboard_transcripts_path(
    out: str | os.PathLike[str], entry: str, env: str, seed: int
) -> Path:
    """Where a leaderboard keeps the transcripts of one cell (entry x env x seed).

    >>> leaderboard_transcripts_path("lb", "scripted:oracle", "math-2agent", 0).name[:30]
    'scripted_oracle__math-2agent__'
    """
    slug = "__".join(_UNSAFE.sub("_", part)[:60] for part in (entry, env, f"seed{int(seed)}"))
    digest = f"{stable_hash('cell', entry, env, int(seed)):016x}"[:8]
    return Path(out) / "transcripts" / f"{slug}-{digest}.jsonl"
