"""The leaderboard runner: evaluate entries on envs over seeds, resumably.

A leaderboard is a grid of *cells* (entry x env x seed). Each cell plays
``episodes`` held-out episodes with a vector env (batched: an LLM agent
generates for all envs waiting on its role at once) and is saved in
``results.json`` as soon as it finishes (temp file + ``os.replace``). Running
the same config again loads the file and skips every cell whose fingerprint
(entry spec, env id and kwargs, episodes, split, and for ``run:`` entries the
checkpoint file) is unchanged, so an interrupted leaderboard resumes.

Held-out evaluation, disjoint from training:

* every env is built with ``split="eval"``: procedural generators and datasets
  only yield tasks of the eval split, which never overlaps the train split the
  trainer uses (``flexmg.tasks``);
* episode ``k`` of leaderboard seed ``s`` uses env seed
  ``EVAL_SEED_OFFSET + s * SEED_STRIDE + k`` (``EVAL_SEED_OFFSET = 2**40``), above
  every seed the trainer uses for rollouts (``< 1.01e12``), so the episode streams
  differ too.

An entry that acts the same on the same observation (greedy ``hf:`` and ``run:``
entries: :attr:`Entry.deterministic`) plays each distinct task of a cell once; its
episode is counted for every seed that drew the task (``replay_of`` in the record).

Outputs in the ``out`` folder: ``results.json`` (config, every episode's
metrics per cell, the summary), ``leaderboard.md`` (Markdown tables) and
``leaderboard.png`` (bar chart with 95% CIs over seeds).

Example:
    >>> import tempfile
    >>> from flexmg.baselines.leaderboard import LeaderboardConfig, run_leaderboard
    >>> cfg = LeaderboardConfig.from_dict({
    ...     "entries": ["scripted:oracle", "scripted:empty"], "envs": ["math-2agent"],
    ...     "seeds": [0, 1], "episodes": 4, "out": tempfile.mkdtemp(), "progress": False})
    >>> res = run_leaderboard(cfg, echo=False)
    >>> [(r["entry"], r["score"]["mean"]) for r in res["summary"]]
    [('scripted:oracle', 1.0), ('scripted:empty', 0.0)]
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import flexmg
from flexmg.baselines.entries import Entry, EntryContext, EntrySpec, search_path
from flexmg.baselines.report import CHART_FILE, TABLE_FILE, write_reports
from flexmg.episodes import rollout
from flexmg.evaluation import distinct_seed_plan
from flexmg.io import atomic_write_json
from flexmg.metrics import mean_ci, summarize_episodes
from flexmg.protocols import VectorEnv
from flexmg.settings import Settings, documented, setting
from flexmg.tasks import EVAL_SEED_OFFSET, stable_hash
from flexmg.transcripts import TranscriptSample, leaderboard_transcripts_path, save_sample
from flexmg.vector import EpisodeResult

__all__ = [
    "CHART_FILE",
    "RESULTS_FILE",
    "TABLE_FILE",
    "CellError",
    "EnvEntry",
    "LeaderboardConfig",
    "LeaderboardRunner",
    "cell_key",
    "eval_seed",
    "load_results",
    "run_leaderboard",
    "summarize",
]

RESULTS_FORMAT = "flexmg.leaderboard.v1"
SEED_STRIDE = 1_000_000
RESULTS_FILE = "results.json"


class CellError(RuntimeError):
    """An entry's agents failed while playing a cell (the cause is chained)."""


def eval_seed(seed: int, episode: int = 0) -> int:
    """The env seed of ``episode`` of leaderboard seed ``seed`` (see the module docs).

    >>> eval_seed(0) == 2**40, eval_seed(1, 3) - eval_seed(1)
    (True, 3)
    """
    if seed < 0:
        raise ValueError(f"leaderboard seeds must be >= 0, got {seed}")
    if not 0 <= episode < SEED_STRIDE:
        raise ValueError(f"episode index must be in [0, {SEED_STRIDE}), got {episode}")
    return EVAL_SEED_OFFSET + seed * SEED_STRIDE + episode


@dataclass
class EnvEntry:
    """An env column: ``id`` (registered env id), ``name`` (label, default the id), ``kwargs``."""

    id: str
    name: str = ""
    kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"an env needs a non-empty id, got {self.id!r}")
        self.name = self.name or self.id
        self.kwargs = dict(self.kwargs or {})
        reserved = sorted({"split"} & set(self.kwargs))
        if reserved:
            raise ValueError(
                f"env {self.name!r}: {reserved} is set by the leaderboard (split is the "
                "config's `split`, default 'eval'); remove it from the env kwargs"
            )

    @classmethod
    def parse(cls, item: str | Mapping[str, Any] | EnvEntry) -> EnvEntry:
        """From an id string or ``{id, name?, kwargs?}``."""
        if isinstance(item, EnvEntry):
            return item
        if isinstance(item, str):
            return cls(id=item)
        if isinstance(item, Mapping):
            unknown = sorted(set(item) - {"id", "name", "kwargs"})
            if unknown or "id" not in item:
                raise ValueError(
                    f"env {dict(item)!r}: keys must be id (required), name, kwargs"
                    + (f"; unknown: {unknown}" if unknown else "")
                )
            return cls(
                id=str(item["id"]),
                name=str(item.get("name") or ""),
                kwargs=dict(item.get("kwargs") or {}),
            )
        raise ValueError(f"an env must be an id string or a dict, got {type(item).__name__}")

    def to_dict(self) -> dict[str, Any]:
        """The ``{id, name, kwargs}`` form :meth:`parse` reads back."""
        return {"id": self.id, "name": self.name, "kwargs": self.kwargs}


def _distinct_seeds(seeds: Any) -> bool:
    return bool(seeds) and all(s >= 0 for s in seeds) and len(set(seeds)) == len(seeds)


@documented
@dataclass
class LeaderboardConfig(Settings):
    """What to evaluate (``flexmg leaderboard --config FILE.yaml`` reads these keys).

    Each field is declared once (:mod:`flexmg.settings`): its flag of ``flexmg
    leaderboard``, its check and its docstring line come from there. ``entries``
    and ``envs`` are required; ``config_dir`` is not a key of the file (it is the
    file's folder).
    """

    entries: list[EntrySpec] = setting(
        factory=list,
        help="entry specs: scripted:oracle|empty|random, run:PATH, hf:MODEL, module:callable "
        "(or {agent, name, kwargs, envs})",
        flag="--entries",
        nargs="+",
    )
    envs: list[EnvEntry] = setting(
        factory=list, help="env ids (or {id, name, kwargs})", flag="--envs", nargs="+"
    )
    seeds: list[int] = setting(
        factory=lambda: [0, 1, 2],
        help="leaderboard seeds: independent episode sets, the CI is over them (default 0 1 2)",
        flag="--seeds",
        nargs="+",
        check=(_distinct_seeds, "distinct integers >= 0"),
    )
    episodes: int = setting(
        20,
        "episodes per seed (default 20)",
        flag="--episodes",
        check=(lambda v: 1 <= int(v) < SEED_STRIDE, f"in [1, {SEED_STRIDE})"),
    )
    out: str = setting("leaderboards/default", "output folder", flag="--out")
    num_envs: int = setting(
        8,
        "vector env size = generation batch (default 8)",
        flag="--num-envs",
        check=(lambda v: int(v) >= 1, ">= 1"),
    )
    vectorization: str = setting(
        "sync",
        "vector env kind (entries that read the env, such as the oracle, always use sync)",
        flag="--vectorization",
        choices=("sync", "async", "ray"),
    )
    split: str = setting(
        "eval",
        "task split (eval: held out; change only to study overfitting)",
        flag="--split",
        choices=("eval", "train", "all"),
    )
    env_kwargs: dict[str, Any] = setting(
        factory=dict, help="kwargs for every env (an env's own kwargs win)", flag="--kw"
    )
    progress: bool = setting(True, "show progress bars", flag="--no-progress")
    transcripts: int = setting(
        8,
        "episodes per cell whose transcripts are saved in OUT/transcripts/ for flexmg view "
        "(default 8; 0: none)",
        flag="--transcripts",
        check=(lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0, ">= 0"),
    )
    config_dir: str | None = setting(
        None, "the config file's folder: module:callable entries are looked up there too"
    )

    def __post_init__(self) -> None:
        self.entries = [EntrySpec.parse(e) for e in self.entries]
        self.envs = [EnvEntry.parse(e) for e in self.envs]
        if not self.entries:
            raise ValueError("a leaderboard needs at least one entry (e.g. scripted:oracle)")
        if not self.envs:
            raise ValueError("a leaderboard needs at least one env (e.g. math-2agent)")
        for label, items in (
            ("entry", [e.name for e in self.entries]),
            ("env", [e.name for e in self.envs]),
        ):
            dup = sorted({n for n in items if items.count(n) > 1})
            if dup:
                raise ValueError(f"duplicate {label} names {dup}: give each a distinct name=")
        if isinstance(self.seeds, int):
            self.seeds = [self.seeds]
        self.seeds = [int(s) for s in self.seeds]
        self.episodes, self.num_envs = int(self.episodes), int(self.num_envs)
        self.env_kwargs = dict(self.env_kwargs or {})
        super().__post_init__()

    KEYS = (
        "entries",
        "envs",
        "seeds",
        "episodes",
        "out",
        "num_envs",
        "vectorization",
        "split",
        "env_kwargs",
        "progress",
        "transcripts",
    )
    """The keys of a config file (every field but ``config_dir``)."""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], config_dir: str | None = None) -> LeaderboardConfig:
        """From a parsed YAML/JSON mapping (unknown keys are an error)."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a leaderboard config must be a mapping, got {type(data).__name__}")
        unknown = sorted(set(data) - set(cls.KEYS))
        if unknown:
            raise ValueError(f"unknown leaderboard config keys {unknown}; known: {list(cls.KEYS)}")
        missing = [k for k in ("entries", "envs") if k not in data]
        if missing:
            raise ValueError(f"leaderboard config needs {missing}")
        return cls(**dict(data), config_dir=config_dir)

    @classmethod
    def from_yaml(cls, path: str | os.PathLike[str]) -> LeaderboardConfig:
        """Read a YAML config file; a relative ``out`` stays relative to the cwd."""
        import yaml

        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ValueError(f"cannot read leaderboard config {path}: {exc}") from exc
        except yaml.YAMLError as exc:
            raise ValueError(f"{path} is not valid YAML: {exc}") from exc
        return cls.from_dict(data or {}, config_dir=str(path.parent))

    def to_dict(self) -> dict[str, Any]:
        """The mapping :meth:`from_dict` reads back (saved in ``results.json``)."""
        return {
            "entries": [e.to_dict() for e in self.entries],
            "envs": [e.to_dict() for e in self.envs],
            "seeds": self.seeds,
            "episodes": self.episodes,
            "out": self.out,
            "num_envs": self.num_envs,
            "vectorization": self.vectorization,
            "split": self.split,
            "env_kwargs": self.env_kwargs,
            "transcripts": self.transcripts,
        }

    def env_kwargs_for(self, env: EnvEntry) -> dict[str, Any]:
        """The kwargs ``flexmg.make`` gets for ``env`` (split included)."""
        return {**self.env_kwargs, **env.kwargs, "split": self.split}


def cell_key(entry: str, env: str, seed: int) -> str:
    """The key of a cell in ``results.json``."""
    return json.dumps([entry, env, seed])


def _episode_record(ep: EpisodeResult, seed: int) -> dict[str, Any]:
    """The saved form of an episode, counted for ``seed``.

    ``seed`` differs from ``ep.seed`` when a deterministic entry's episode is counted
    again for a seed that drew the same task; the record then names it ``replay_of``.
    """
    record = {"seed": seed, "task_id": ep.task_id, "metrics": ep.metrics}
    if seed != ep.seed:
        record["replay_of"] = ep.seed
    return record


def _cell_stats(episodes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The cell's :func:`flexmg.metrics.summarize_episodes` (score, success, rounds, per role...)."""
    return dict(summarize_episodes(e["metrics"] for e in episodes))


def summarize(config: LeaderboardConfig, cells: Mapping[str, Mapping[str, Any]]) -> list[dict]:
    """One row per (entry, env) of the config with finished cells: means and 95% CIs over seeds."""
    rows = []
    for entry in config.entries:
        for env in config.envs:
            done = [
                cells[k] for s in config.seeds if (k := cell_key(entry.name, env.name, s)) in cells
            ]
            if not done:
                continue
            stats = [c["stats"] for c in done]
            roles = sorted({r for s in stats for r in s["format_error"]})
            fmt = {r: sum(s["format_error"].get(r, 0.0) for s in stats) / len(stats) for r in roles}
            rows.append({
                "entry": entry.name,
                "env": env.name,
                "env_id": env.id,
                "seeds": [c["seed"] for c in done],
                "episodes": sum(s["episodes"] for s in stats),
                "score": mean_ci([s["score"] for s in stats]).to_dict(),
                "success_rate": mean_ci([s["success_rate"] for s in stats]).to_dict(),
                "rounds": sum(s["rounds"] for s in stats) / len(stats),
                "format_error": fmt,
                "graded_role": stats[0].get("graded_role"),
                "complete": len(done) == len(config.seeds),
            })  # fmt: skip
    return rows


def load_results(out: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``results.json`` of a leaderboard folder, or an empty skeleton when absent.

    A file of another format is an error (never silently overwritten).
    """
    path = Path(out) / RESULTS_FILE
    if not path.is_file():
        return {"format": RESULTS_FORMAT, "cells": {}}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(
            f"{path} exists but cannot be read ({exc}); move it away to start afresh"
        ) from exc
    if data.get("format") != RESULTS_FORMAT:
        raise ValueError(
            f"{path} has format {data.get('format')!r}, expected {RESULTS_FORMAT!r}; "
            "use another --out folder"
        )
    data.setdefault("cells", {})
    return data


class LeaderboardRunner:
    """Runs the cells of a :class:`LeaderboardConfig` (see :func:`run_leaderboard`)."""

    def __init__(self, config: LeaderboardConfig, redo: bool = False) -> None:
        self.config = config
        self.out = Path(config.out)
        self.results = load_results(self.out)
        if redo:
            self.results["cells"] = {}
        search = search_path(config.config_dir)
        self.entries = [Entry(spec, search) for spec in config.entries]
        self.skipped: list[dict[str, Any]] = []
        self.ran: list[str] = []

    def cell_fingerprint(self, entry: Entry, env: EnvEntry, seed: int) -> str:
        """What a saved cell must match to be reused (see the module docs)."""
        cfg = self.config
        h = stable_hash(
            RESULTS_FORMAT,
            entry.fingerprint(env.name, seed),
            env.id,
            sorted(cfg.env_kwargs_for(env).items()),
            cfg.episodes,
        )
        return f"{h:016x}"

    def _save(self) -> None:
        self.results["format"] = RESULTS_FORMAT
        self.results["config"] = self.config.to_dict()
        self.results["summary"] = summarize(self.config, self._current_cells())
        self.results["skipped"] = self.skipped
        self.results["updated"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        atomic_write_json(self.out / RESULTS_FILE, self.results)

    def _current_cells(self) -> dict[str, Any]:
        """The saved cells that belong to this config (same fingerprint)."""
        return {k: c for k, c in self.results["cells"].items() if c.get("current")}

    def pending(self) -> list[tuple[Entry, EnvEntry, int]]:
        """Cells still to run (marks the finished ones of this config as current)."""
        todo = []
        for cell in self.results["cells"].values():
            cell["current"] = False
        for entry in self.entries:
            for env in self.config.envs:
                if entry.spec.envs is not None and env.name not in entry.spec.envs:
                    continue  # the entry does not play this env: n/a in the tables
                for seed in self.config.seeds:
                    key = cell_key(entry.name, env.name, seed)
                    saved = self.results["cells"].get(key)
                    fp = None
                    if saved is not None:
                        try:
                            fp = self.cell_fingerprint(entry, env, seed)
                        except Exception:  # e.g. a run folder that vanished: re-check below
                            fp = None
                    if saved is not None and fp is not None and saved.get("fingerprint") == fp:
                        saved["current"] = True
                    else:
                        todo.append((entry, env, seed))
        return todo

    def run(self) -> dict[str, Any]:
        """Run every pending cell, saving after each; returns the results dict."""
        todo = self.pending()
        self._save()
        bar = None
        if self.config.progress and todo:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(todo), desc="leaderboard cells", unit="cell", position=0)
        groups: dict[tuple[int, int], list[int]] = {}
        for entry, env, seed in todo:
            groups.setdefault((self.entries.index(entry), self.config.envs.index(env)), []).append(
                seed
            )
        try:
            for (ei, vi), seeds in groups.items():
                self._run_group(self.entries[ei], self.config.envs[vi], seeds, bar)
        finally:
            if bar is not None:
                bar.close()
            self._save()
        return self.results

    def _run_group(self, entry: Entry, env: EnvEntry, seeds: list[int], bar: Any) -> None:
        cfg = self.config
        kwargs = cfg.env_kwargs_for(env)
        probe = flexmg.make(env.id, **kwargs)
        roles = list(probe.possible_agents)
        probe.close()
        runnable = []
        for seed in seeds:
            reason = entry.skip_reason(env.name, roles, seed)
            if reason is None:
                runnable.append(seed)
            else:
                self.skipped.append(
                    {"entry": entry.name, "env": env.name, "seed": seed, "reason": reason}
                )
                if bar is not None:
                    bar.update(1)
        if not runnable:
            return
        vectorization = "sync" if entry.needs_env else cfg.vectorization
        vec = flexmg.make_vec(
            env.id, num_envs=min(cfg.num_envs, cfg.episodes), vectorization=vectorization, **kwargs
        )
        try:
            for seed in runnable:
                if bar is not None:
                    bar.set_description(f"{entry.name} | {env.name} | seed {seed}")
                self._run_cell(entry, env, seed, vec, roles, kwargs)
                if bar is not None:
                    bar.update(1)
        finally:
            vec.close()

    def _run_cell(
        self,
        entry: Entry,
        env: EnvEntry,
        seed: int,
        vec: VectorEnv,
        roles: list[str],
        kwargs: dict[str, Any],
    ) -> None:
        cfg = self.config
        t0 = time.monotonic()
        ctx = EntryContext(env_id=env.id, roles=roles, vec=vec, seed=seed, env_kwargs=kwargs)
        team = entry.team(ctx, env.name)
        seeds = [eval_seed(seed, k) for k in range(cfg.episodes)]
        if entry.deterministic:  # each distinct task once (the same task, the same episode)
            played, copy_of = distinct_seed_plan(env.id, seeds, kwargs)
        else:
            played, copy_of = seeds, list(range(len(seeds)))
        try:
            result = rollout(
                vec,
                team,
                episodes=len(played),
                seed=played,
                progress=cfg.progress,
            )
        except Exception as exc:
            raise CellError(
                f"entry {entry.name!r} failed on env {env.name!r}, seed {seed}: "
                f"{type(exc).__name__}: {exc} (finished cells are saved in {self.out}; "
                "fix the agent and re-run to resume)"
            ) from exc
        episodes = [
            _episode_record(result.episodes[j], seed=s) for s, j in zip(seeds, copy_of, strict=True)
        ]
        self._save_transcripts(entry.name, env, seed, result.episodes)
        key = cell_key(entry.name, env.name, seed)
        self.results["cells"][key] = {
            "entry": entry.name,
            "env": env.name,
            "env_id": env.id,
            "seed": seed,
            "fingerprint": self.cell_fingerprint(entry, env, seed),
            "current": True,
            "entry_info": entry.info(env.name, seed),
            "seconds": time.monotonic() - t0,
            "stats": _cell_stats(episodes),
            "episodes": episodes,
        }
        self.ran.append(key)
        self._save()

    def _save_transcripts(
        self, entry: str, env: EnvEntry, seed: int, played: Sequence[EpisodeResult]
    ) -> None:
        """Save the first ``transcripts`` episodes a cell played (or remove a stale file)."""
        sample = TranscriptSample(limit=self.config.transcripts, keep="first")
        source = {"kind": "leaderboard", "entry": entry, "env": env.name, "seed": seed}
        for episode in played:
            sample.add_episode(episode, env.id, source=source)
        save_sample(leaderboard_transcripts_path(self.out, entry, env.name, seed), sample)


def run_leaderboard(
    config: LeaderboardConfig | Mapping[str, Any],
    redo: bool = False,
    echo: bool = True,
) -> dict[str, Any]:
    """Run (or resume) a leaderboard; write results.json, leaderboard.md, leaderboard.png.

    Args:
        config: a :class:`LeaderboardConfig` or its dict form.
        redo: ignore saved cells and run everything again.
        echo: print the Markdown table at the end.

    Returns the results dict (``summary``: one row per entry x env; ``ran``:
    the cells run by this call).
    """
    if not isinstance(config, LeaderboardConfig):
        config = LeaderboardConfig.from_dict(config)
    runner = LeaderboardRunner(config, redo=redo)
    results = runner.run()
    table = write_reports(config, results, Path(config.out))
    if echo:
        print(table)
    return {**results, "ran": list(runner.ran)}
