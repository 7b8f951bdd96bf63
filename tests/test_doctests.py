"""Run the runnable examples in the public modules' docstrings."""

import doctest
import importlib

import pytest

MODULES = [
    "flexmg",
    "flexmg.graph",
    "flexmg.spaces",
    "flexmg.tasks",
    "flexmg.env",
    "flexmg.workflow",
    "flexmg.registration",
    "flexmg.vector",
    "flexmg.wrappers.parallel",
    "flexmg.wrappers.single_agent",
    "flexmg.wrappers.record",
    "flexmg.examples.echo",
    "flexmg.test",
    "flexmg.cli",
    "flexmg.agents",
    "flexmg.agents.base",
    "flexmg.agents.episodes",
    "flexmg.envs.code.program",
    "flexmg.builtin_envs",
    "flexmg.vector_base",
    "flexmg.envs",
    "flexmg.envs.families",
    "flexmg.envs.families.math",
    "flexmg.envs.families.code",
    "flexmg.envs.families.relay",
    "flexmg.envs.math.sources",
    "flexmg.envs.math.generators",
    "flexmg.envs.math.generators.base",
    "flexmg.envs.math.generators.expression",
    "flexmg.envs.math.generators.arithmetic",
    "flexmg.envs.math.generators.chain",
    "flexmg.envs.math.generators.fractions",
    "flexmg.envs.math.generators.linear",
    "flexmg.envs.math.generators.word",
    "flexmg.sandboxes.seccomp",
]


@pytest.mark.parametrize("name", MODULES)
def test_module_doctests(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
