"""flexmg: Flex-MG environments for teams of LLM agents, with verifiable rewards.

A Flex-MG (flexible Markov game) is a PettingZoo AEC game whose agents are
roles (planner, solver, verifier, ...); a dependency graph sets who sees whose
output within a round and so the turn order.

Example:
    >>> import flexmg
    >>> env = flexmg.make("echo")
    >>> env.reset(seed=0)
    >>> env.agent_selection
    'a'
"""

from __future__ import annotations

from flexmg.env import FlexMGEnv, Judgement, TurnRecord
from flexmg.graph import DependencyGraph
from flexmg.registration import (
    EnvSpec,
    MissingDependencyError,
    UnknownEnvError,
    make,
    pprint_registry,
    register,
    registry,
    spec,
)
from flexmg.tasks import Task
from flexmg.workflow import Workflow

__version__ = "0.1.0"

__all__ = [
    "DependencyGraph",
    "EnvSpec",
    "FlexMGEnv",
    "Judgement",
    "MissingDependencyError",
    "Task",
    "TurnRecord",
    "UnknownEnvError",
    "Workflow",
    "make",
    "make_vec",
    "pprint_registry",
    "register",
    "registry",
    "spec",
]


def make_vec(env_id: str, num_envs: int, vectorization: str = "sync", **kwargs):
    """Build ``num_envs`` copies of ``env_id`` stepped in lockstep role by role.

    ``vectorization`` is ``"sync"`` (one process), ``"async"`` (one worker
    process per env: rewards such as sandboxed tests are computed in parallel)
    or ``"ray"`` (the envs spread over Ray actors, by default one per CPU of
    the Ray cluster; needs ``pip install 'flexmg[ray]'``).

    >>> import flexmg
    >>> vec = flexmg.make_vec("echo", num_envs=2)
    >>> vec.num_envs
    2
    """
    from flexmg.vector import make_vec as _make_vec

    return _make_vec(env_id, num_envs, vectorization=vectorization, **kwargs)


# The core's own example env; the env families register through the ``flexmg.envs``
# entry point when the registry is first read (flexmg.registration).
register(
    "echo-v1",
    "flexmg.examples.echo:EchoEnv",
    description="toy: b must repeat the word a says (API example, no model needed)",
)
