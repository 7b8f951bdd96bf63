"""Leaderboard entries: what plays, given as a short spec, built into a team of agents.

Entry specs (the ``agent`` of a leaderboard entry):

* ``scripted:oracle`` / ``scripted:empty`` / ``scripted:random``: the scripted
  baselines of :mod:`flexmg.baselines.scripted`.
* ``run:PATH``: a training run folder (``flexmg train``), loaded with
  :func:`flexmg.baselines.run_loader.load_run`. ``PATH`` may contain ``{env}``
  and ``{seed}``; they are filled per cell (``run:runs/{env}-marft-s{seed}``),
  so each leaderboard seed evaluates the run trained with that seed.
* ``hf:NAME_OR_PATH``: an :class:`~flexmg.agents.LLMAgent` on a Hugging Face
  model from the local cache or a folder (``hf:tiny`` is the project's tiny
  model); ``kwargs`` go to its ``PolicyConfig`` (``max_new_tokens``, ``device``...).
* ``module:callable``: your own agent. ``callable`` may be an agent (has
  ``act``), a function ``obs -> str``, or a *factory* whose parameters are all
  among ``env_id``, ``roles``, ``vec``, ``seed``, ``env_kwargs``, ``ctx`` and the
  entry's ``kwargs``; it is called once per cell and returns an agent, a
  function ``obs -> str`` or a dict ``{role: agent}``. A factory that asks for
  ``vec`` (or ``ctx``) gets the vector env it plays, always a ``SyncVectorEnv``,
  so it can read ``vec.envs[i].task`` the way the oracle does.

Example:
    >>> from flexmg.baselines.entries import EntrySpec
    >>> EntrySpec.parse("scripted:oracle").kind, EntrySpec.parse("run:runs/x").name
    ('scripted', 'run:runs/x')
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flexmg.actors import as_agent
from flexmg.baselines.scripted import SCRIPTED, make_scripted
from flexmg.protocols import VectorEnv
from flexmg.tasks import stable_hash

KINDS = ("scripted", "run", "hf", "callable")
FACTORY_PARAMS = ("env_id", "roles", "vec", "seed", "env_kwargs", "ctx")


class EntryError(ValueError):
    """A leaderboard entry spec is malformed or cannot be built."""


@dataclass
class EntryContext:
    """What a team is built for: one cell (entry x env x seed) of the leaderboard."""

    env_id: str
    roles: list[str]
    vec: VectorEnv
    seed: int
    env_kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class EntrySpec:
    """One leaderboard entry.

    Attributes:
        agent: the spec string (see the module docs) or, from Python, an agent
            object / factory (then ``name`` is required).
        name: the label in tables (default: the spec string).
        kwargs: extra arguments (``hf``: PolicyConfig fields and ``greedy``;
            ``run``: ``checkpoint``, ``device``, ``greedy``; ``callable``: passed
            to the factory).
        envs: optional list of env names this entry plays (default: all).
    """

    agent: Any
    name: str = ""
    kwargs: dict[str, Any] = field(default_factory=dict)
    envs: list[str] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.agent, str):
            if ":" not in self.agent or self.agent.startswith(":") or self.agent.endswith(":"):
                raise EntryError(
                    f"entry {self.agent!r}: expected KIND:VALUE, e.g. scripted:oracle, "
                    "run:runs/my-run, hf:Qwen/Qwen2.5-0.5B-Instruct or mymodule:make_agent"
                )
            if self.kind == "scripted" and self.value not in SCRIPTED:
                raise EntryError(
                    f"entry {self.agent!r}: unknown scripted agent {self.value!r}; "
                    f"known: {', '.join('scripted:' + k for k in SCRIPTED)}"
                )
            self.name = self.name or self.agent
        elif not self.name:
            raise EntryError(
                f"an entry given as a Python object ({type(self.agent).__name__}) needs name="
            )
        if not isinstance(self.kwargs, Mapping):
            raise EntryError(f"entry {self.name!r}: kwargs must be a mapping, got {self.kwargs!r}")
        self.kwargs = dict(self.kwargs)
        if self.envs is not None:
            if isinstance(self.envs, str):
                self.envs = [self.envs]
            self.envs = [str(e) for e in self.envs]

    @classmethod
    def parse(cls, item: str | Mapping[str, Any] | EntrySpec) -> EntrySpec:
        """From a spec string or a config dict ``{agent, name?, kwargs?, envs?}``."""
        if isinstance(item, EntrySpec):
            return item
        if isinstance(item, str):
            return cls(agent=item)
        if isinstance(item, Mapping):
            unknown = sorted(set(item) - {"agent", "name", "kwargs", "envs"})
            if unknown or "agent" not in item:
                raise EntryError(
                    f"entry {dict(item)!r}: keys must be agent (required), name, kwargs, envs"
                    + (f"; unknown: {unknown}" if unknown else "")
                )
            return cls(
                agent=item["agent"],
                name=str(item.get("name") or ""),
                kwargs=dict(item.get("kwargs") or {}),
                envs=item.get("envs"),
            )
        raise EntryError(f"an entry must be a spec string or a dict, got {type(item).__name__}")

    @property
    def kind(self) -> str:
        """``scripted``, ``run``, ``hf`` or ``callable``."""
        if not isinstance(self.agent, str):
            return "callable"
        prefix = self.agent.split(":", 1)[0]
        return prefix if prefix in ("scripted", "run", "hf") else "callable"

    @property
    def value(self) -> str:
        """The part after ``KIND:`` (the whole ``module:callable`` for user entries)."""
        if not isinstance(self.agent, str):
            return getattr(self.agent, "__qualname__", type(self.agent).__name__)
        return self.agent if self.kind == "callable" else self.agent.split(":", 1)[1]

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (Python objects become their qualified name)."""
        agent = self.agent if isinstance(self.agent, str) else f"<python:{self.value}>"
        out: dict[str, Any] = {"agent": agent, "name": self.name}
        if self.kwargs:
            out["kwargs"] = self.kwargs
        if self.envs is not None:
            out["envs"] = self.envs
        return out


def _import_object(path: str, search: list[Path]) -> Any:
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise EntryError(f"entry {path!r}: expected module:callable")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name.split(".")[0] and exc.name != module_name:
            raise
        for folder in search:
            if str(folder) not in sys.path:
                sys.path.insert(0, str(folder))
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc2:
            raise EntryError(
                f"entry {path!r}: cannot import module {module_name!r} ({exc2}); it must be "
                f"importable (installed, or a .py file in {[str(s) for s in search]})"
            ) from exc2
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise EntryError(f"entry {path!r}: module {module_name!r} has no {attr!r}") from None
    return obj


def _as_team(result: Any, roles: list[str], where: str) -> dict[str, Any]:
    if isinstance(result, Mapping):
        missing = [r for r in roles if r not in result]
        if missing:
            raise EntryError(
                f"{where} returned a team without roles {missing} (has {list(result)})"
            )
        return {r: as_agent(result[r]) for r in roles}
    try:
        agent = as_agent(result)
    except TypeError as exc:
        raise EntryError(f"{where}: {exc}") from None
    return {r: agent for r in roles}


def _factory_call(obj: Any, ctx: EntryContext, kwargs: dict[str, Any], where: str) -> Any | None:
    """Call ``obj`` as a factory if its parameters allow it; ``None`` if it is ``obs -> str``."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    names = set(FACTORY_PARAMS) | set(kwargs)
    params = [
        p
        for p in sig.parameters.values()
        if p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]
    required = [p for p in params if p.default is inspect.Parameter.empty]
    if any(p.name not in names for p in required):
        if kwargs:
            raise EntryError(
                f"{where}: kwargs {sorted(kwargs)} were given but it does not look like a "
                f"factory: its parameters {[p.name for p in params]} are not among "
                f"{list(FACTORY_PARAMS)} + kwargs"
            )
        return None
    values = {
        "env_id": ctx.env_id,
        "roles": list(ctx.roles),
        "vec": ctx.vec,
        "seed": ctx.seed,
        "env_kwargs": dict(ctx.env_kwargs),
        "ctx": ctx,
        **kwargs,
    }
    accepts_any = any(p.kind == inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values())
    call = {p.name: values[p.name] for p in params if p.name in values}
    if accepts_any:
        call.update(kwargs)
    return obj(**call)


def _wants_env(obj: Any) -> bool:
    try:
        params = inspect.signature(obj).parameters
    except (TypeError, ValueError):
        return False
    return "vec" in params or "ctx" in params


class Entry:
    """A runtime entry: builds the team for each cell, caching loaded models.

    Args:
        spec: the entry spec.
        search: folders tried for ``module:callable`` imports (cwd, config dir).
    """

    def __init__(self, spec: EntrySpec, search: list[Path] | None = None) -> None:
        self.spec = spec
        self.search = list(search or [Path.cwd()])
        self._object: Any = None
        self._hf_agent: Any = None
        self._runs: dict[str, Any] = {}

    @property
    def name(self) -> str:
        """The entry's label (its column in the tables)."""
        return self.spec.name

    def _user_object(self) -> Any:
        if self._object is None:
            agent = self.spec.agent
            self._object = _import_object(agent, self.search) if isinstance(agent, str) else agent
        return self._object

    @property
    def needs_env(self) -> bool:
        """True when the team must read the env objects (sync vector env required)."""
        kind = self.spec.kind
        if kind == "scripted":
            return SCRIPTED[self.spec.value][0]
        if kind == "callable":
            obj = self._user_object()
            return not callable(getattr(obj, "act", None)) and _wants_env(obj)
        return False

    @property
    def deterministic(self) -> bool:
        """True when the team acts the same on the same observation.

        That is ``hf:`` and ``run:`` entries decoding greedily (their default). The
        leaderboard then plays each distinct task of a cell once and counts it as often
        as the cell's seeds draw it.
        """
        return self.spec.kind in ("hf", "run") and bool(self.spec.kwargs.get("greedy", True))

    def run_path(self, env_name: str, seed: int) -> Path:
        """The run folder of a ``run:`` entry for a cell (``{env}``/``{seed}`` filled)."""
        try:
            return Path(self.spec.value.format(env=env_name, seed=seed))
        except (KeyError, IndexError, ValueError) as exc:
            raise EntryError(
                f"entry {self.name!r}: bad run path template {self.spec.value!r} ({exc}); "
                "only {env} and {seed} may be used"
            ) from None

    def fingerprint(self, env_name: str, seed: int) -> str:
        """Changes when what this entry plays in that cell changes (resume key)."""
        parts: list[Any] = [self.spec.to_dict()]
        if self.spec.kind == "run":
            from flexmg.agents.checkpoint import latest_checkpoint

            path = self.run_path(env_name, seed)
            ckpt = self.spec.kwargs.get("checkpoint") or latest_checkpoint(path / "checkpoints")
            parts.append(str(ckpt))
        return f"{stable_hash(*parts):016x}"

    def skip_reason(self, env_name: str, roles: list[str], seed: int) -> str | None:
        """Why this entry cannot play that cell (``None`` when it can)."""
        if self.spec.envs is not None and env_name not in self.spec.envs:
            return f"entry plays only {self.spec.envs}"
        if self.spec.kind == "run":
            from flexmg.baselines.run_loader import RunLoadError, read_run_config

            path = self.run_path(env_name, seed)
            try:
                cfg = read_run_config(path)
            except RunLoadError as exc:
                return str(exc)
            if cfg.roles != list(roles):
                return f"run {path} was trained with roles {cfg.roles}, env has {roles}"
            if not (path / "checkpoints").is_dir() or not any(
                (path / "checkpoints").glob("step_*.ckpt")
            ):
                return f"run {path} has no checkpoint yet"
        return None

    def info(self, env_name: str, seed: int) -> dict[str, Any]:
        """Facts recorded with each cell (e.g. the run's checkpoint and updates)."""
        if self.spec.kind == "run":
            run = self._runs.get(str(self.run_path(env_name, seed)))
            if run is not None:
                return run.describe()
        return {}

    def team(self, ctx: EntryContext, env_name: str) -> dict[str, Any]:
        """The team ``{role: agent}`` for one cell."""
        spec = self.spec
        if spec.kind == "scripted":
            agent = make_scripted(spec.value, ctx.vec, seed=ctx.seed, label=ctx.env_id)
            return {r: agent for r in ctx.roles}
        if spec.kind == "hf":
            if self._hf_agent is None:
                from flexmg.agents.llm_agent import LLMAgent

                kwargs = dict(spec.kwargs)
                greedy = bool(kwargs.pop("greedy", True))
                self._hf_agent = LLMAgent(spec.value, role=ctx.roles[-1], greedy=greedy, **kwargs)
            return {r: self._hf_agent for r in ctx.roles}
        if spec.kind == "run":
            from flexmg.baselines.run_loader import load_run

            path = self.run_path(env_name, seed=ctx.seed)
            key = str(path)
            if key not in self._runs:
                opts = {
                    k: spec.kwargs[k]
                    for k in ("checkpoint", "device", "greedy")
                    if k in spec.kwargs
                }
                unknown = sorted(set(spec.kwargs) - {"checkpoint", "device", "greedy"})
                if unknown:
                    raise EntryError(
                        f"entry {self.name!r}: run entries accept kwargs checkpoint, device, "
                        f"greedy; got {unknown}"
                    )
                self._runs = {key: load_run(path, **opts)}  # keep one model in memory
            return {r: self._runs[key].agent for r in ctx.roles}
        obj = self._user_object()
        where = f"entry {self.name!r}"
        if callable(getattr(obj, "act", None)) and not inspect.isclass(obj):
            return _as_team(obj, ctx.roles, where)
        if not callable(obj):
            raise EntryError(f"{where}: {obj!r} is neither an agent nor callable")
        made = _factory_call(obj, ctx, spec.kwargs, where)
        return _as_team(obj if made is None else made, ctx.roles, where)


def search_path(config_dir: str | os.PathLike[str] | None) -> list[Path]:
    """Folders where ``module:callable`` entries are looked up: cwd, then the config's folder."""
    out = [Path.cwd()]
    if config_dir is not None:
        out.append(Path(config_dir).resolve())
    return out
