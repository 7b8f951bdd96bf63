import subprocess
import sys
import textwrap

import pytest

import flexmg
from flexmg.registration import MissingDependencyError, UnknownEnvError


def test_unversioned_resolves_to_latest():
    flexmg.register("vtest-v0", "flexmg.examples.echo:EchoEnv")
    flexmg.register("vtest-v3", "flexmg.examples.echo:EchoEnv", horizon=3)
    assert flexmg.spec("vtest").id == "vtest-v3"
    assert flexmg.make("vtest").horizon == 3
    assert flexmg.make("vtest-v0").horizon == 1
    with pytest.raises(UnknownEnvError, match="versions of 'vtest'"):
        flexmg.make("vtest-v9")


def test_unknown_id_suggests_close_matches():
    with pytest.raises(UnknownEnvError, match=r"Did you mean.*math-4agent-v3"):
        flexmg.make("math-4agnet")


def test_register_requires_version_and_valid_entry_point():
    with pytest.raises(ValueError, match="version suffix"):
        flexmg.register("noversion", "x:y")
    with pytest.raises(TypeError):
        flexmg.register("bad-v0", 42)


def test_missing_optional_dependency_names_the_extra(tmp_path, monkeypatch):
    mod = tmp_path / "needs_torchy_thing.py"
    mod.write_text("import torch_that_does_not_exist\nEnv = None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    flexmg.register("needsdep-v0", "needs_torchy_thing:Env", extra="train")
    with pytest.raises(MissingDependencyError, match=r"flexmg\[train\]"):
        flexmg.make("needsdep")


def test_pprint_registry_lists_builtins():
    text = flexmg.pprint_registry(print_output=False)
    for env_id in ["echo-v1", "math-4agent-v3", "code-2agent-v1", "relay-2agent-v2"]:
        assert env_id in text


def test_pettingzoo_registry_mirror():
    import pettingzoo

    env = pettingzoo.make("aec", "flexmg/echo")
    assert env.possible_agents == ["a", "b"]
    par = pettingzoo.make("parallel", "flexmg/echo-v1")
    obs, infos = par.reset(seed=0)
    assert set(obs) == {"a", "b"}


def test_third_party_entry_point_plugin(tmp_path):
    """A tiny package installed in the test registers an env via the flexmg.envs group."""
    pkg = tmp_path / "flexmg_plugin_demo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        textwrap.dedent("""
        import flexmg
        from flexmg.examples.echo import EchoEnv

        def register_envs():
            flexmg.register("plugin-echo-v0", EchoEnv, description="from a plugin")
    """)
    )
    (tmp_path / "pyproject.toml").write_text(
        textwrap.dedent("""
        [build-system]
        requires = ["setuptools>=64"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "flexmg-plugin-demo"
        version = "0.0.1"
        [project.entry-points."flexmg.envs"]
        demo = "flexmg_plugin_demo:register_envs"
        [tool.setuptools]
        packages = ["flexmg_plugin_demo"]
    """)
    )
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(tmp_path),
        ],
        check=True,
        capture_output=True,
    )
    code = (
        "import flexmg; env = flexmg.make('plugin-echo'); "
        "print(env.possible_agents, flexmg.spec('plugin-echo').description)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**__import__("os").environ, "PYTHONPATH": str(target)},
    )
    assert "['a', 'b'] from a plugin" in out.stdout


def test_import_flexmg_does_not_import_torch():
    code = "import sys, flexmg; print('torch' in sys.modules, 'transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
