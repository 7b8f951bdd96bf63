"""The env families, one module each: its prompts, reward, workflows, ids and history.

Each family module declares ``VERSION``, ``TEAMS`` (env name -> roles in graph
order) and ``WORKFLOWS`` (env name -> :class:`flexmg.Workflow`), and its
docstring carries a PettingZoo-style table and a version history.
:func:`register_envs` registers every workflow of the modules listed in
:data:`FAMILY_MODULES` as ``<name>-v<VERSION>``. flexmg declares it as its own
plugin of the ``flexmg.envs`` entry-point group (``pyproject.toml``), the way
any env package registers its envs: the registry calls it on its first lookup.

Example:
    >>> import flexmg
    >>> from flexmg.envs.families import math
    >>> flexmg.make("math-2agent").possible_agents == list(math.TEAMS["math-2agent"])
    True
    >>> flexmg.spec("math-2agent").id, "relay-2agent-v2" in BUILTIN_ENVS
    ('math-2agent-v3', True)
"""

from __future__ import annotations

import importlib

from flexmg.family import Family

FAMILY_MODULES: tuple[str, ...] = (
    "flexmg.envs.families.math",
    "flexmg.envs.families.code",
    "flexmg.envs.families.relay",
    "flexmg.envs.families.split",
    "flexmg.envs.families.check",
    "flexmg.envs.families.testfirst",
)

__all__ = ["BUILTIN_ENVS", "FAMILY_MODULES", "builtin_env_ids", "family", "register_envs"]


def builtin_env_ids() -> dict[str, str]:
    """Every built-in id (``name-vN``) -> its one-line description, family by family."""
    ids: dict[str, str] = {}
    for module_name in FAMILY_MODULES:
        module = importlib.import_module(module_name)
        for name, workflow in module.WORKFLOWS.items():
            ids[f"{name}-v{module.VERSION}"] = workflow.description
    return ids


def family(name: str) -> Family:
    """The metadata of the built-in family ``name`` (``math``, ``code``, ``relay``).

    >>> family("code").token_budget("tiny")
    80
    """
    for module_name in FAMILY_MODULES:
        declared: Family = importlib.import_module(module_name).FAMILY
        if declared.name == name:
            return declared
    raise KeyError(f"no built-in env family {name!r}; families: {_names()}")


def _names() -> list[str]:
    return [m.rsplit(".", 1)[-1] for m in FAMILY_MODULES]


def register_envs() -> None:
    """Register every workflow of the family modules under its versioned id."""
    from flexmg.registration import register

    for module_name in FAMILY_MODULES:
        module = importlib.import_module(module_name)
        for name, workflow in module.WORKFLOWS.items():
            register(f"{name}-v{module.VERSION}", workflow, description=workflow.description)


BUILTIN_ENVS: dict[str, str] = builtin_env_ids()
"""Every built-in id -> its description."""
