"""The env families, one module each: its prompts, reward, workflows, ids and history.

Each family module declares ``VERSION``, ``TEAMS`` (env name -> roles in graph
order) and ``WORKFLOWS`` (env name -> :class:`flexmg.Workflow`), and its
docstring carries a PettingZoo-style table and a version history.
:func:`flexmg.builtin_envs.register_builtin_envs` registers every workflow of
the modules listed in :data:`FAMILY_MODULES` as ``<name>-v<VERSION>``.

Example:
    >>> import flexmg
    >>> from flexmg.envs.families import math
    >>> flexmg.make("math-2agent").possible_agents == list(math.TEAMS["math-2agent"])
    True
"""

from __future__ import annotations

FAMILY_MODULES: tuple[str, ...] = (
    "flexmg.envs.families.math",
    "flexmg.envs.families.code",
    "flexmg.envs.families.relay",
)

__all__ = ["FAMILY_MODULES"]
