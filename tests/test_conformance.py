"""The conformance checker on every registered env id, and the checker catching a broken env."""

import pytest

import flexmg
from flexmg.envs.families import BUILTIN_ENVS
from flexmg.test import api_test

FAST_IDS = ["echo-v1"] + [i for i in BUILTIN_ENVS if not i.startswith("code")]
CODE_IDS = [i for i in BUILTIN_ENVS if i.startswith("code")]


@pytest.mark.parametrize("env_id", FAST_IDS)
def test_registered_env_is_conformant(env_id):
    report = api_test(env_id, num_cycles=5, verbose=False)
    assert report.passed, report.summary()


@pytest.mark.slow
@pytest.mark.parametrize("env_id", CODE_IDS)
def test_code_env_is_conformant(env_id):
    report = api_test(env_id, num_cycles=3, verbose=False)
    assert report.passed, report.summary()


def test_every_registered_id_is_covered():
    assert set(FAST_IDS) | set(CODE_IDS) >= {i for i in flexmg.registry if i in BUILTIN_ENVS}


def test_checker_catches_a_crashing_env():
    def fragile(task, transcript):
        if "\ufffd" in transcript[-1].action:
            raise RuntimeError("boom")
        return 0.0

    wf = flexmg.Workflow(
        name="fragile", roles={"a": ""}, tasks=[flexmg.Task(id="0", prompt="p")], reward=fragile
    )
    report = api_test(lambda: wf(), num_cycles=2, verbose=False)
    assert not report.passed
    failed = [c.name for c in report.checks if not c.passed]
    assert failed == ["hostile action: surrogates"]


def test_checker_catches_an_env_that_truncates_a_finished_game():
    from flexmg.workflow import WorkflowEnv

    class TruncatesAtHorizon(WorkflowEnv):  # what every env did in v0
        def _end_episode(self, judgement, solved, truncated):
            super()._end_episode(judgement, solved, truncated=not solved)

    wf = flexmg.Workflow(
        name="v0-ends",
        roles={"a": ""},
        tasks=[flexmg.Task(id="0", prompt="p")],
        reward=lambda t, tr: 0.0,
    )
    report = api_test(lambda: TruncatesAtHorizon(wf), num_cycles=2, verbose=False)
    failed = {c.name for c in report.checks if not c.passed}
    assert failed == {
        "episode end: the judged last round terminates",
        "gymnasium check_env (single-agent views)",
    }
