"""The env registry: ``register``, ``make``, ``spec``, ``pprint_registry``.

Ids follow Gymnasium: ``name-vN``; an unversioned id resolves to the latest
registered version. String entry points (``"module:attr"``) load lazily, so a
missing optional dependency only matters when that env is made, and the error
then names the extra to install. An id that is not registered but looks like
``"package.module:factory"`` is made by calling that factory (no registration
needed).

Env packages register through the Python entry-point group ``flexmg.envs``
(the entry point is a function called with no arguments, or a module whose
import registers its envs). flexmg's own families are such a plugin
(``flexmg.envs.families:register_envs``); the registry loads every plugin on
its first lookup, so ``import flexmg`` imports no env family.

Example:
    >>> import flexmg
    >>> flexmg.spec("echo").id
    'echo-v1'
    >>> env = flexmg.make("echo", horizon=2)
    >>> env.horizon
    2
    >>> flexmg.make("flexmg.examples.echo:EchoEnv").possible_agents
    ['a', 'b']
"""

from __future__ import annotations

import difflib
import importlib
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

_ID_RE = re.compile(r"^(?P<name>[A-Za-z0-9_.:/-]+?)(?:-v(?P<version>\d+))?$")
# "package.module:factory": an env built by a function of the user's own module
_FACTORY_RE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")

# Top-level module of an optional dependency -> the flexmg extra that installs it.
_EXTRA_FOR_MODULE = {
    "torch": "train",
    "transformers": "train",
    "peft": "train",
    "tokenizers": "train",
    "tensorboard": "train",
    "matplotlib": "train",
    "pyarrow": "export",
    "datasets": "export",
    "ray": "ray",
    "pygame": "bench",
    "openenv": "openenv",
    "trl": "trl",
    "verifiers": "verifiers",
    "verl": "verl",
}

ENTRY_POINT_GROUP = "flexmg.envs"


class UnknownEnvError(KeyError):
    """Raised by ``make``/``spec`` for an id that is not registered."""

    def __str__(self) -> str:  # KeyError quotes its message; we want plain text
        return str(self.args[0])


class MissingDependencyError(ImportError):
    """Raised when an env's entry point needs an optional dependency that is missing."""


@dataclass(frozen=True)
class EnvSpec:
    """A registered env: its id, how to build it, and its default kwargs."""

    id: str
    entry_point: Callable[..., Any] | str
    kwargs: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    extra: str | None = None

    @property
    def name(self) -> str:
        return parse_id(self.id)[0]

    @property
    def version(self) -> int | None:
        return parse_id(self.id)[1]

    def load(self) -> Callable[..., Any]:
        """Resolve the entry point to a callable that builds the env."""
        if callable(self.entry_point):
            return self.entry_point
        module_name, _, attr = self.entry_point.partition(":")
        if not attr:
            raise ValueError(
                f"entry point of {self.id!r} must look like 'package.module:attribute', "
                f"got {self.entry_point!r}"
            )
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as err:
            top = (err.name or "").split(".")[0]
            if top and not module_name.startswith(top):
                extra = self.extra or _EXTRA_FOR_MODULE.get(top)
                how = f"pip install 'flexmg[{extra}]'" if extra else f"pip install {top}"
                raise MissingDependencyError(
                    f"env {self.id!r} needs the optional dependency {top!r}, which is not "
                    f"installed: {how}"
                ) from err
            raise
        try:
            return getattr(module, attr)
        except AttributeError:
            raise ValueError(
                f"entry point of {self.id!r}: module {module_name!r} has no attribute {attr!r}"
            ) from None

    def make(self, **kwargs: Any) -> Any:
        """Build the env with the spec's defaults updated by ``kwargs``."""
        return self.load()(**{**self.kwargs, **kwargs})


def parse_id(env_id: str) -> tuple[str, int | None]:
    """Split ``"name-vN"`` into ``("name", N)`` (``None`` when unversioned).

    >>> parse_id("math-4agent-v0")
    ('math-4agent', 0)
    >>> parse_id("math-4agent")
    ('math-4agent', None)
    """
    if not isinstance(env_id, str):
        raise TypeError(f"env ids are strings like 'math-4agent-v0', got {type(env_id).__name__}")
    match = _ID_RE.fullmatch(env_id.strip())
    if not match:
        raise ValueError(
            f"malformed env id {env_id!r}: expected 'name-vN' (e.g. 'math-4agent-v0') or 'name'"
        )
    version = match.group("version")
    return match.group("name"), (int(version) if version is not None else None)


class Registry(dict):
    """id -> :class:`EnvSpec`, with Gymnasium-style version resolution.

    Reading it (``in``, iteration, ``len``, ``[id]``, ``keys``/``values``/``items``)
    first loads the ``flexmg.envs`` entry-point plugins, once.
    """

    def __contains__(self, key: object) -> bool:
        load_plugins()
        return super().__contains__(key)

    def __iter__(self) -> Iterator[str]:
        load_plugins()
        return super().__iter__()

    def __len__(self) -> int:
        load_plugins()
        return super().__len__()

    def __getitem__(self, key: str) -> EnvSpec:
        load_plugins()
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        load_plugins()
        return super().get(key, default)

    def keys(self) -> Any:
        load_plugins()
        return super().keys()

    def values(self) -> Any:
        load_plugins()
        return super().values()

    def items(self) -> Any:
        load_plugins()
        return super().items()

    def resolve(self, env_id: str) -> EnvSpec:
        """The spec for ``env_id`` (latest version when unversioned).

        An id that is not registered but has the form ``"package.module:factory"``
        gets an unregistered spec whose entry point is that factory.
        """
        name, version = parse_id(env_id)
        if version is not None:
            key = f"{name}-v{version}"
            if key in self:
                return self[key]
            others = sorted(s.id for s in self.values() if s.name == name)
            newest = max((s for s in self.values() if s.name == name), key=_version, default=None)
            if newest is not None and version < _version(newest):
                raise UnknownEnvError(
                    f"env {env_id!r} is out of date: use {newest.id!r} (or {name!r}, which "
                    f"resolves to the newest); the env's version history says what changed. "
                    f"Versions of {name!r}: {others}"
                )
            if others:
                raise UnknownEnvError(
                    f"env {env_id!r} is not registered; versions of {name!r}: {others}"
                )
        else:
            versions = [s for s in self.values() if s.name == name]
            if versions:
                return max(versions, key=_version)
        if _FACTORY_RE.fullmatch(env_id.strip()):
            return EnvSpec(id=env_id.strip(), entry_point=env_id.strip(), description="factory")
        close = difflib.get_close_matches(env_id, sorted(self), n=3, cutoff=0.5)
        hint = f" Did you mean {close}?" if close else ""
        raise UnknownEnvError(
            f"no env registered with id {env_id!r}.{hint} "
            f"Run `flexmg list` (or flexmg.pprint_registry()) to see all ids, or pass "
            f"'package.module:factory' for an env built by your own function."
        )


def _version(spec: EnvSpec) -> int:
    return -1 if spec.version is None else spec.version


registry: Registry = Registry()


def register(
    id: str,
    entry_point: Callable[..., Any] | str,
    *,
    description: str = "",
    extra: str | None = None,
    **kwargs: Any,
) -> EnvSpec:
    """Register an env under ``id`` (``name-vN``).

    Args:
        id: the env id, e.g. ``"debate-v0"``.
        entry_point: a callable returning the env (a :class:`flexmg.Workflow`
            works), or a lazy ``"package.module:attribute"`` string.
        description: one line shown by ``flexmg list``.
        extra: the flexmg extra that installs the entry point's dependencies.
        **kwargs: default keyword arguments for the entry point.

    >>> import flexmg
    >>> spec = flexmg.register("doc-echo-v0", "flexmg.examples.echo:EchoEnv")
    >>> flexmg.make("doc-echo").possible_agents
    ['a', 'b']
    """
    name, version = parse_id(id)
    if version is None:
        raise ValueError(f"register ids need a version suffix, e.g. '{name}-v0'; got {id!r}")
    if not (callable(entry_point) or isinstance(entry_point, str)):
        raise TypeError(
            f"entry_point must be a callable or a 'module:attr' string, got {type(entry_point).__name__}"
        )
    if dict.__contains__(registry, id):  # no plugin loading: a plugin may be registering
        warnings.warn(f"overriding env {id!r} in the flexmg registry", stacklevel=2)
    spec = EnvSpec(
        id=id, entry_point=entry_point, kwargs=dict(kwargs), description=description, extra=extra
    )
    registry[id] = spec
    _register_with_pettingzoo(spec)
    return spec


def spec(env_id: str) -> EnvSpec:
    """The :class:`EnvSpec` of ``env_id`` (unversioned ids resolve to the latest)."""
    return registry.resolve(env_id)


def make(env_id: str, **kwargs: Any) -> Any:
    """Build a registered env: ``flexmg.make("math-4agent", horizon=2)``.

    Raises:
        UnknownEnvError: the id is not registered (close matches are suggested).
        MissingDependencyError: the env needs an extra that is not installed.
    """
    return spec(env_id).make(**kwargs)


def pprint_registry(print_output: bool = True) -> str | None:
    """Print (or return) every registered id with its description."""
    width = max((len(i) for i in registry), default=0)
    lines = [f"{i.ljust(width)}  {registry[i].description}".rstrip() for i in sorted(registry)]
    text = "\n".join(lines)
    if print_output:
        print(text)
        return None
    return text


_plugins = {"loaded": False}


def load_plugins() -> None:
    """Load the envs registered under the ``flexmg.envs`` entry-point group (once).

    A third party's plugin that fails to load is reported as a warning (it must
    not break flexmg); flexmg's own families failing is an error.
    """
    if _plugins["loaded"]:
        return
    _plugins["loaded"] = True
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = ep.load()
            if callable(obj):
                obj()
        except Exception as err:
            if ep.value.startswith("flexmg."):
                raise
            warnings.warn(
                f"flexmg plugin {ep.name!r} ({ep.value}) failed to load: {err!r}", stacklevel=2
            )


def _register_with_pettingzoo(spec: EnvSpec) -> None:
    """Mirror a flexmg env into PettingZoo's registry (PettingZoo >= 1.27) as ``flexmg/<id>``."""
    try:
        from pettingzoo.env_registry import registration as pz
    except ImportError:
        return
    env_id = f"flexmg/{spec.id}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pz.register("aec", env_id, entry_point=_AECFactory(spec.id))
        pz.register("parallel", env_id, entry_point=_ParallelFactory(spec.id))


@dataclass(frozen=True)
class _AECFactory:
    env_id: str

    def __call__(self, **kwargs: Any) -> Any:
        return make(self.env_id, **_rounds_limit(kwargs))


@dataclass(frozen=True)
class _ParallelFactory:
    env_id: str

    def __call__(self, **kwargs: Any) -> Any:
        from flexmg.wrappers.parallel import TurnParallelEnv

        return TurnParallelEnv(make(self.env_id, **_rounds_limit(kwargs)))


def _rounds_limit(kwargs: dict[str, Any]) -> dict[str, Any]:
    """PettingZoo's ``max_cycles`` (one cycle = every agent acts once) is flexmg's ``max_rounds``."""
    kwargs = dict(kwargs)
    cycles = kwargs.pop("max_cycles", None)
    if cycles is not None:
        kwargs.setdefault("max_rounds", cycles)
    return kwargs
