"""The learner's configs: one declaration per field drives docs, checks, dicts and flags."""

from __future__ import annotations

import argparse
import json
from dataclasses import fields
from pathlib import Path

import pytest

from flexmg.agents.config import (
    PolicyConfig,
    PPOConfig,
    RunConfig,
    RunConfigError,
    TrainConfig,
)
from flexmg.cli import train as cli
from flexmg.models.config import SamplingConfig
from flexmg.settings import flagged_fields

CONFIGS = (TrainConfig, PolicyConfig, PPOConfig, SamplingConfig)
SECTIONS = {"train": TrainConfig, "policy": PolicyConfig, "ppo": PPOConfig}
CLI_OWN = {"--help", "-h", "--horizon", "--resume"}
SHORTCUTS = {"--bf16": ("dtype", "bfloat16")}
# flags added since: every env kwarg (--kw KEY=VALUE) and the dtype by name (--dtype)
FLAGS_ADDED = {
    "--kw",
    "--critic-steps",
    "--dtype",
    "--role-temperature",
    "--role-max-new-tokens",
    "--group-size",
    "--lora-alpha",
    "--lr-schedule",
    "--transcripts",
    "--adam-eps",
    "--gae-lambda",
    "--critic-holdout",
}
# fields added since run_v1 was written: an old config reads them at these defaults
FIELDS_ADDED = {
    "policy_config": {"role_temperature": {}, "role_max_new_tokens": {}},
    "train": {"group_size": 1, "transcripts": 32},
    "ppo_config": {"adam_eps": None, "critic_steps": 0, "critic_holdout": 0.0},
}
OLD_RUN = Path(__file__).parent / "data" / "run_v1"

# every flag `flexmg train` had before its flags were generated from the configs
FLAGS_BEFORE = {
    "--algo", "--env", "--seed", "--updates", "--episodes-per-update", "--horizon", "--run-dir",
    "--resume", "--eval-every", "--eval-episodes", "--checkpoint-every", "--keep-checkpoints",
    "--vectorization", "--no-progress", "--model", "--share-parameters", "--device", "--bf16",
    "--gradient-checkpointing", "--lora-target-modules", "--lora-r", "--temperature",
    "--max-new-tokens", "--top-k", "--top-p", "--micro-batch", "--max-prompt-tokens", "--level",
    "--ratio", "--truncation-penalty", "--lr", "--critic-lr", "--epochs", "--minibatches",
    "--agent-interval", "--critic-warmup", "--kl-coef", "--target-kl", "--entropy-coef", "--gamma",
}  # fmt: skip


def _train_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    cli.add_train_arguments(parser)
    return parser


def _actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {o: a for a in parser._actions for o in a.option_strings}


def test_the_parser_has_exactly_the_flagged_fields_and_the_cli_own_flags() -> None:
    actions = _actions(_train_parser())
    generated = {f.metadata["flag"]: f for cls in SECTIONS.values() for f in flagged_fields(cls)}
    assert set(actions) == set(generated) | CLI_OWN | set(SHORTCUTS)
    for flag, (dest, value) in SHORTCUTS.items():
        assert actions[flag].dest == dest and actions[flag].const == value
    for flag, f in generated.items():
        action = actions[flag]
        assert action.dest == f.name and action.default is None, flag
        assert f.metadata["help"] in (action.help or ""), flag
    dests = [f.name for cls in SECTIONS.values() for f in flagged_fields(cls)]
    assert len(dests) == len(set(dests)), "two flagged fields share a name"


def test_every_flag_of_before_is_still_there() -> None:
    assert set(_actions(_train_parser())) - {"-h", "--help"} == FLAGS_BEFORE | FLAGS_ADDED


def test_flags_land_in_their_config_sections() -> None:
    args = _train_parser().parse_args(
        ["--env", "echo", "--no-progress", "--lr", "0.1", "--critic-lr", "0.2", "--bf16",
         "--share-parameters", "--lora-target-modules", "q_proj, v_proj", "--horizon", "3",
         "--target-kl", "0.5", "--level", "token", "--top-k", "5"]
    )  # fmt: skip
    assert cli.train_config(args) == TrainConfig(
        env="echo", progress=False, env_kwargs={"horizon": 3},
        policy=PolicyConfig(
            share_parameters=True, lora_target_modules=["q_proj", "v_proj"], top_k=5,
            dtype="bfloat16",
        ),
        ppo=PPOConfig(level="token", target_kl=0.5, lr_actor=0.1, lr_critic=0.2),
    )  # fmt: skip
    assert cli.given_flags(args) == sorted(
        ["env", "progress", "env_kwargs", "share_parameters", "lora_target_modules", "top_k",
         "dtype", "level", "target_kl", "lr_actor", "lr_critic"]
    )  # fmt: skip
    assert cli.train_config(_train_parser().parse_args([])) == TrainConfig()
    assert cli.given_flags(_train_parser().parse_args([])) == []
    kw = _train_parser().parse_args(["--kw", "horizon=2", 'tasks={"name": "linear"}'])
    assert cli.train_config(kw).env_kwargs == {"horizon": 2, "tasks": {"name": "linear"}}
    with pytest.raises(SystemExit):
        _train_parser().parse_args(["--level", "word"])


@pytest.mark.parametrize("cls", CONFIGS)
def test_every_field_has_help_listed_in_the_docstring(cls: type) -> None:
    for f in fields(cls):
        assert f.metadata.get("help"), f"{cls.__name__}.{f.name} has no help"
        assert f"{f.name}: {f.metadata['help']}" in (cls.__doc__ or "")


@pytest.mark.parametrize("cls", CONFIGS)
def test_dicts_round_trip_and_unknown_keys_are_named(cls: type) -> None:
    cfg = cls()
    data = json.loads(json.dumps(cfg.to_dict()))
    assert cls.from_dict(data) == cfg
    with pytest.raises(ValueError, match=rf"unknown {cls.__name__} keys \['nope'\]"):
        cls.from_dict({"nope": 1})


@pytest.mark.parametrize(
    "cls,kwargs,expected",
    [
        (TrainConfig, {"episodes_per_update": 0}, "TrainConfig.episodes_per_update must be >= 1"),
        (TrainConfig, {"keep_checkpoints": -1}, "keep_checkpoints must be >= 0"),
        (TrainConfig, {"vectorization": "gpu"}, "must be one of 'sync', 'async', 'ray'"),
        (TrainConfig, {"algo": "dqn"}, "TrainConfig.algo must be one of 'group', 'ippo', 'marft'"),
        (PolicyConfig, {"critic": "global"}, "PolicyConfig.critic must be one of"),
        (PolicyConfig, {"model": ""}, "PolicyConfig.model must be a non-empty str"),
        (PolicyConfig, {"lora_dropout": 1.0}, r"lora_dropout must be in \[0, 1\)"),
        (PolicyConfig, {"lora_target_modules": []}, "None .the family's default. or a non-empty"),
        (PolicyConfig, {"dtype": "int8"}, "PolicyConfig.dtype must be one of 'auto'"),
        (PolicyConfig, {"top_p": 2.0}, r"top_p must be in \(0, 1\]"),
        (PPOConfig, {"epochs": 0}, "PPOConfig.epochs must be >= 1; got 0"),
        (PPOConfig, {"lr_critic": 0.0}, "PPOConfig.lr_critic must be > 0"),
        (PPOConfig, {"ratio": "word"}, "PPOConfig.ratio must be one of 'token'"),
        (SamplingConfig, {"temperature": 0}, "temperature must be > 0 .use greedy for argmax."),
    ],
)
def test_checks_say_what_was_expected(cls: type, kwargs: dict, expected: str) -> None:
    with pytest.raises(ValueError, match=expected):
        cls(**kwargs)


def test_policy_config_normalises_sequences() -> None:
    cfg = PolicyConfig(critic_hidden=[16, 8], lora_target_modules=("q_proj",))  # type: ignore[arg-type]
    assert cfg.critic_hidden == (16, 8) and cfg.lora_target_modules == ["q_proj"]
    assert cfg.to_dict()["critic_hidden"] == [16, 8]
    assert cfg.resolved().sampling == SamplingConfig(1.0, 0, 1.0)
    with pytest.raises(ValueError, match="resolve the config first"):
        _ = cfg.sampling


def test_defaults_that_depend_on_the_model_and_the_env_live_in_one_place() -> None:
    from flexmg.family import family_of

    tiny = PolicyConfig().resolved(family_of("code-2agent"), ["coder", "reviewer"], seed=4)
    assert (tiny.temperature, tiny.max_new_tokens, tiny.micro_batch, tiny.seed) == (1.0, 80, 0, 4)
    llm = PolicyConfig(model="some/llm", temperature=0.9).resolved(family_of("math-2agent"))
    assert (llm.temperature, llm.max_new_tokens, llm.micro_batch) == (0.9, 512, 8)
    policy, ppo = TrainConfig(env="math-2agent", seed=2).resolved(
        ["solver", "verifier"], "per_role"
    )
    assert (policy.max_new_tokens, policy.seed, policy.critic, ppo.lr_actor) == (24, 2, "per_role",
                                                                                  1e-3)  # fmt: skip


def test_dtype_names_are_the_policys() -> None:
    pytest.importorskip("torch")
    from flexmg.models.config import DTYPE_NAMES
    from flexmg.models.loading import DTYPES

    assert sorted(DTYPES) == sorted(DTYPE_NAMES)
    policy_dtype = next(f for f in fields(PolicyConfig) if f.name == "dtype")
    assert set(policy_dtype.metadata["choices"]) == {"auto", *DTYPES}


def test_an_old_config_json_reads_back_and_writes_the_same() -> None:
    """An old run's settings read into the typed configs and are written back unchanged.

    The old "train" section held the policy and PPO fields a run set as dicts; they read
    into the nested configs (unset fields at their defaults), and the resolved sections
    are written exactly as they were.
    """
    data = json.loads((OLD_RUN / "config.json").read_text())
    run = RunConfig.read(OLD_RUN)
    written = run.to_dict()
    for section in ("algorithm", "roles", "policy_config", "ppo_config"):
        added = FIELDS_ADDED.get(section, {})
        assert written[section] == (
            {**data[section], **added} if isinstance(data[section], dict) else data[section]
        ), section
    old_train = {k: v for k, v in data["train"].items() if k not in ("policy", "ppo")}
    assert {k: written["train"][k] for k in old_train} == old_train
    for section in ("policy", "ppo"):
        assert {k: written["train"][section][k] for k in data["train"][section]} == data["train"][
            section
        ]
    assert RunConfig.from_dict(written) == run
    assert run.train.ppo == PPOConfig(epochs=2, minibatches=2, lr_actor=0.01, lr_critic=0.01)
    assert run.policy_config.critic_hidden == (16, 8) and run.roles == ["a", "b"]


def test_run_config_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(RunConfigError, match="config.json not found"):
        RunConfig.read(tmp_path)
    (tmp_path / "config.json").write_text('{"train": {}}')
    with pytest.raises(
        RunConfigError, match="cannot read .*config.json: no 'roles', 'policy_config' section"
    ):
        RunConfig.read(tmp_path)
    (tmp_path / "config.json").write_text('{"train": {"lr": 1}, "roles": [], "policy_config": {}}')
    with pytest.raises(RunConfigError, match="unknown TrainConfig keys"):
        RunConfig.read(tmp_path)
