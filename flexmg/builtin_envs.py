"""Registration of the built-in env families (their modules hold ids, roles and versions).

Registering imports the family modules, which are light: their rewards import
graders and sandboxes only when an episode is judged.

Example:
    >>> import flexmg
    >>> flexmg.spec("math-2agent").id
    'math-2agent-v1'
    >>> "relay-2agent-v0" in BUILTIN_ENVS
    True
"""

from __future__ import annotations

import importlib

from flexmg.envs.families import FAMILY_MODULES


def builtin_env_ids() -> dict[str, str]:
    """Every built-in id (``name-vN``) -> its one-line description, family by family."""
    ids: dict[str, str] = {}
    for module_name in FAMILY_MODULES:
        module = importlib.import_module(module_name)
        for name, workflow in module.WORKFLOWS.items():
            ids[f"{name}-v{module.VERSION}"] = workflow.description
    return ids


def register_builtin_envs() -> None:
    """Register every workflow of the family modules under its versioned id."""
    from flexmg.registration import register

    for module_name in FAMILY_MODULES:
        module = importlib.import_module(module_name)
        for name, workflow in module.WORKFLOWS.items():
            register(f"{name}-v{module.VERSION}", workflow, description=workflow.description)


BUILTIN_ENVS: dict[str, str] = builtin_env_ids()
