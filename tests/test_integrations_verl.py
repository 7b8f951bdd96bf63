"""verl adapter, exercised with verl's real package (runs in .venv-verl: scripts/setup_verl.sh).

The agent loop is verl's real ``AgentLoopBase`` machinery, instantiated from verl's
agent-loop registry the way ``AgentLoopWorker`` does, talking to verl's real
``LLMServerClient``; only the inference server behind it (a vLLM replica and its load
balancer in a real run) is a stand-in, generating with a tiny local model or a script.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from helpers import require_extra, save_tiny_chat_model

require_extra("verl", "verl", flag="FLEXMG_REQUIRE_VERL")  # tested in .venv-verl

import torch  # noqa: E402
from hydra.utils import instantiate  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402
from verl.experimental.agent_loop.agent_loop import (  # noqa: E402
    DictConfigWrap,
    ToolListWrap,
    _agent_loop_registry,
)
from verl.trainer.ppo.reward import get_custom_reward_fn  # noqa: E402
from verl.utils.dataset.rl_dataset import RLHFDataset  # noqa: E402
from verl.workers.rollout.llm_server import LLMServerClient  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

import flexmg  # noqa: E402
from flexmg.integrations.export import DEFAULT_AGENT_NAME as AGENT_NAME  # noqa: E402
from flexmg.integrations.export import export_rows  # noqa: E402
from flexmg.integrations.seats import observation_to_messages, play_episode  # noqa: E402
from flexmg.integrations.verl import compute_score  # noqa: E402
from flexmg.integrations.verl.agent_loop import FlexMGAgentLoop  # noqa: E402  (registers it)

ENV = "math-2agent"
GenerateFn = Callable[[list[int], dict[str, Any]], tuple[list[int], list[float] | None]]


@pytest.fixture(scope="module")
def chat_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_chat_model(tmp_path_factory.mktemp("tiny_chat"))


@pytest.fixture(scope="module")
def tokenizer(chat_model_dir: Path) -> Any:
    return AutoTokenizer.from_pretrained(chat_model_dir / "tokenizer")


# --- the stand-in inference server -------------------------------------------------------


class _Remote:
    """A method called the way verl calls Ray actor methods: ``obj.method.remote(...)``."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self._fn = fn

    def remote(self, *args: Any, **kwargs: Any) -> asyncio.Future:
        return asyncio.ensure_future(self._fn(*args, **kwargs))


class StandInServer:
    """The LLM server behind verl's server manager: ``generate(prompt_ids, sampling_params)``
    answers with what ``generate_fn`` makes; every request is kept for the assertions."""

    def __init__(self, generate_fn: GenerateFn) -> None:
        self.requests: list[dict[str, Any]] = []

        async def generate(*, request_id: str, prompt_ids: list[int], sampling_params: dict, **_):
            self.requests.append({"prompt_ids": list(prompt_ids), "params": dict(sampling_params)})
            ids, logprobs = generate_fn(list(prompt_ids), dict(sampling_params))
            return TokenOutput(token_ids=ids, log_probs=logprobs, stop_reason="completed")

        self.generate = _Remote(generate)


class StandInBalancer:
    """verl's global load balancer with one server (the shape ``LLMServerClient`` calls)."""

    def __init__(self, server: StandInServer) -> None:
        async def fields() -> list[str]:
            return []

        async def acquire(*, request_id: str, **_: Any) -> tuple[str, StandInServer]:
            return "server-0", server

        async def release(*, server_id: str, **_: Any) -> None:
            return None

        self.require_acquire_fields = _Remote(fields)
        self.require_release_fields = _Remote(fields)
        self.acquire_server = _Remote(acquire)
        self.release_server = _Remote(release)


def tiny_model_generate(model_dir: Path) -> GenerateFn:
    """Sampling with the tiny local model, returning the sampled tokens' logprobs."""
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    model.eval()

    def generate(prompt_ids: list[int], params: dict[str, Any]) -> tuple[list[int], list[float]]:
        max_new = min(int(params["max_tokens"]), 16)
        with torch.no_grad():
            out = model.generate(
                torch.tensor([prompt_ids]),
                attention_mask=torch.ones(1, len(prompt_ids), dtype=torch.long),
                max_new_tokens=max_new,
                do_sample=True,
                temperature=float(params.get("temperature", 1.0)) or 1.0,
                top_k=0,
                output_scores=True,
                return_dict_in_generate=True,
            )
        ids = out.sequences[0, len(prompt_ids) :].tolist()
        logprobs = [
            float(torch.log_softmax(score[0], -1)[tok]) for score, tok in zip(out.scores, ids)
        ]
        return ids, logprobs

    return generate


def scripted_generate(tokenizer: Any, texts: list[str]) -> GenerateFn:
    """A deterministic policy: the i-th call says ``texts[i]`` then ``<|im_end|>``."""
    calls = iter(texts)

    def generate(prompt_ids: list[int], params: dict[str, Any]) -> tuple[list[int], None]:
        ids = tokenizer.encode(next(calls), add_special_tokens=False)
        return ids + [tokenizer.convert_tokens_to_ids("<|im_end|>")], None

    return generate


# --- verl's config, dataset and agent loop ---------------------------------------------------


def verl_config(model_dir: Path, response_length: int = 6000) -> Any:
    """verl's own trainer defaults (the shipped ppo_trainer config) with this test's sizes."""
    import verl

    defaults = Path(verl.__file__).parent / "trainer" / "config" / "_generated_ppo_trainer.yaml"
    config = OmegaConf.load(defaults)
    rollout = config.actor_rollout_ref.rollout
    rollout.prompt_length = 4096
    rollout.response_length = response_length
    rollout.name = "vllm"
    config.actor_rollout_ref.model.path = str(model_dir)
    config.actor_rollout_ref.model.tokenizer_path = str(model_dir / "tokenizer")
    config.data.max_prompt_length = 4096
    config.data.return_raw_chat = True
    return config


def make_loop(config: Any, tokenizer: Any, server: StandInServer, **options: Any) -> Any:
    """Build the registered flexmg agent loop exactly as verl's AgentLoopWorker does."""
    client = LLMServerClient(config, load_balancer_handle=StandInBalancer(server))
    entry = {**_agent_loop_registry[AGENT_NAME], **options}
    assert entry["_target_"] == f"{FlexMGAgentLoop.__module__}.FlexMGAgentLoop"
    return instantiate(
        config=entry,
        trainer_config=DictConfigWrap(config=config),
        server_manager=client,
        tokenizer=tokenizer,
        processor=None,
        hf_model_type="qwen2",
        dataset_cls=RLHFDataset,
        data_config=DictConfigWrap(config.data),
        tools=ToolListWrap([]),
    )


def dataset_rows(tmp_path: Path, tokenizer: Any, config: Any, n: int = 2) -> RLHFDataset:
    path = export_rows(ENV, tmp_path / "t.parquet", n=n, fmt="parquet", split="train", seed_start=5)
    return RLHFDataset(data_files=str(path), tokenizer=tokenizer, config=config.data)


def play(config: Any, tokenizer: Any, server: StandInServer, row: dict, **options: Any) -> Any:
    """Build the loop inside a running event loop (as verl's worker does) and run one row."""
    params = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "logprobs": True}
    kwargs = {k: v for k, v in row.items() if k != "agent_name"}

    async def go() -> Any:
        return await make_loop(config, tokenizer, server, **options).run(params, **kwargs)

    return asyncio.run(go())


# --- tests -------------------------------------------------------------------------------------


def test_exported_rows_load_in_verls_dataset(tmp_path: Path, chat_model_dir: Path, tokenizer: Any):
    config = verl_config(chat_model_dir)
    data = dataset_rows(tmp_path, tokenizer, config, n=3)
    assert len(data) == 3
    env = flexmg.make(ENV)
    for i in range(3):
        row = data[i]
        env.reset(seed=5 + i)
        assert row["data_source"] == f"flexmg/{ENV}" and row["agent_name"] == AGENT_NAME
        assert row["raw_prompt"] == observation_to_messages(env.observe("solver"))
        assert row["reward_model"] == {"style": "rule", "ground_truth": env.task.answer}
        assert row["extra_info"]["seed"] == 5 + i and row["extra_info"]["env_id"] == ENV
        assert row["ability"] == "math"


def test_compute_score_through_verls_reward_loader():
    config = OmegaConf.create(
        {
            "reward": {
                "custom_reward_function": {
                    "path": "pkg://flexmg.integrations.verl.reward",
                    "name": "compute_score",
                }
            }
        }
    )
    score_fn = get_custom_reward_fn(config)
    env = flexmg.make(ENV)
    env.reset(seed=2)
    gold = env.task.answer
    info = {"env_id": ENV, "seed": 2, "env_kwargs": "{}"}
    assert score_fn(ENV, f"So the answer is \\boxed{{{gold}}}.", gold, info) == 1.0
    assert score_fn(ENV, "\\boxed{not a number}", gold, info) == 0.0
    hostile = "\\boxed{" + "\U0001f600\ud800" * 50_000 + "}" + "x" * 100_000
    assert score_fn(ENV, hostile, gold, info) == 0.0
    # A row without a seed is graded as a math answer against its ground truth.
    assert score_fn("gsm8k", "\\boxed{0.5}", "1/2", None) == 1.0
    with pytest.raises(ValueError, match="other env arguments"):
        compute_score(ENV, "x", "not the gold", info)
    with pytest.raises(ValueError, match="neither"):
        compute_score(ENV, "x", None, {})


def test_agent_loop_plays_a_packed_episode_with_the_tiny_model(
    tmp_path: Path, chat_model_dir: Path, tokenizer: Any
):
    config = verl_config(chat_model_dir)
    row = dataset_rows(tmp_path, tokenizer, config, n=1)[0]
    server = StandInServer(tiny_model_generate(chat_model_dir))
    out = play(config, tokenizer, server, row)

    # The prompt is the first role's chat prompt, as the chat template renders it.
    text = tokenizer.apply_chat_template(
        row["raw_prompt"], tokenize=False, add_generation_prompt=True
    )
    assert out.prompt_ids == tokenizer.encode(text, add_special_tokens=False)
    assert len(out.response_ids) == len(out.response_mask) == len(out.response_logprobs)
    spans = out.extra_fields["role_spans"]
    assert [s[0] for s in spans] == ["solver", "verifier"]
    # Every role's sampled tokens are trainable (mask 1); the env's turn between them is not.
    (solver, s0, s1), (verifier, v0, v1) = spans
    generated = [r["prompt_ids"] for r in server.requests]
    assert len(generated) == 2 and generated[0] == out.prompt_ids
    assert out.response_mask[s0:s1] == [1] * (s1 - s0) and s1 > s0
    assert out.response_mask[v0:v1] == [1] * (v1 - v0) and v1 > v0
    assert set(out.response_mask[s1:v0]) == {0}
    # The second request saw exactly the packed trajectory so far (sampled = trained).
    assert generated[1] == out.prompt_ids + out.response_ids[:v0]
    between = tokenizer.decode(out.response_ids[s1:v0])
    assert "Task:" in between and "[solver]:" in between  # the verifier's observation

    # The reward is the env's: replaying the same texts through flexmg gives the same score.
    texts = [tokenizer.decode(out.response_ids[a:b], skip_special_tokens=True) for _, a, b in spans]
    replay = play_episode(
        ENV,
        {"solver": lambda m: texts[0], "verifier": lambda m: texts[1]},
        seed=row["extra_info"]["seed"],
    )
    assert out.reward_score == replay.score
    assert json.loads(out.extra_fields["role_rewards"]) == replay.rewards


def test_agent_loop_rewards_a_solved_episode_and_masks_frozen_roles(
    tmp_path: Path, chat_model_dir: Path, tokenizer: Any
):
    config = verl_config(chat_model_dir)
    row = dataset_rows(tmp_path, tokenizer, config, n=1)[0]
    gold = row["reward_model"]["ground_truth"]
    texts = ["I think it is 3.", f"Checked: \\boxed{{{gold}}}"]
    server = StandInServer(scripted_generate(tokenizer, texts))
    out = play(config, tokenizer, server, row, trained_roles=["verifier"], reward="verifier")
    assert out.reward_score == 1.0 and out.extra_fields["team_score"] == 1.0
    (_, s0, s1), (_, v0, v1) = out.extra_fields["role_spans"]
    assert set(out.response_mask[s0:s1]) == {0}  # the frozen solver's tokens are context only
    assert set(out.response_mask[v0:v1]) == {1}
    assert tokenizer.decode(out.response_ids[v0:v1], skip_special_tokens=True) == texts[1]

    wrong = StandInServer(scripted_generate(tokenizer, ["x", "\\boxed{-99999}"]))
    # a boxed wrong value earns only the env's format term (math v3: 0.1)
    assert play(config, tokenizer, wrong, row).reward_score == pytest.approx(0.1)
    refusal = StandInServer(scripted_generate(tokenizer, ["x", "\\boxed{no idea}"]))
    assert play(config, tokenizer, refusal, row).reward_score == 0.0


def test_agent_loop_out_of_budget_finishes_the_episode_without_crashing(
    tmp_path: Path, chat_model_dir: Path, tokenizer: Any
):
    config = verl_config(chat_model_dir, response_length=40)
    row = dataset_rows(tmp_path, tokenizer, config, n=1)[0]
    hostile = "\U0001f600" * 30 + "\\boxed{" * 20 + "\x00"
    server = StandInServer(scripted_generate(tokenizer, [hostile, hostile]))
    out = play(config, tokenizer, server, row)
    assert len(out.response_ids) <= 40 and len(out.response_mask) == len(out.response_ids)
    assert out.extra_fields["truncated"] is True and out.reward_score == 0.0
    assert len(server.requests) == 1  # no room for the verifier: it said nothing


def test_agent_loop_rejects_rows_and_options_it_cannot_play(
    tmp_path: Path, chat_model_dir: Path, tokenizer: Any
):
    config = verl_config(chat_model_dir)
    row = dataset_rows(tmp_path, tokenizer, config, n=1)[0]
    server = StandInServer(scripted_generate(tokenizer, ["a", "b"]))
    with pytest.raises(ValueError, match="not roles of"):
        play(config, tokenizer, server, row, trained_roles=["nobody"])
    with pytest.raises(ValueError, match="reward=judge"):
        play(config, tokenizer, server, row, reward="judge")
    with pytest.raises(ValueError, match="extra_info with env_id and seed"):
        play(config, tokenizer, server, {**row, "extra_info": {}})


def test_verls_agent_loop_worker_runs_a_batch_of_episodes(
    tmp_path: Path, chat_model_dir: Path, tokenizer: Any
):
    """verl's own AgentLoopWorker (config, tokenizer and model loading, dispatch by
    agent_name, padding, reward tensors) over a dataset batch played by the flexmg loop."""
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.protocol import DataProto
    from verl.utils.dataset.rl_dataset import collate_fn

    config = verl_config(chat_model_dir)
    data = dataset_rows(tmp_path, tokenizer, config, n=2)
    golds = [data[i]["reward_model"]["ground_truth"] for i in range(2)]
    # Episodes run concurrently: the stand-in answers by the task in the prompt.
    prompts = {data[i]["raw_prompt"][1]["content"]: golds[i] for i in range(2)}

    def generate(prompt_ids: list[int], params: dict[str, Any]) -> tuple[list[int], None]:
        seen = tokenizer.decode(prompt_ids)
        verifier = "Write your message as the verifier" in seen
        gold = next(g for p, g in prompts.items() if p.split("\n\n")[0] in seen)
        text = f"\\boxed{{{gold}}}" if verifier and gold == golds[0] else "I am not sure."
        return tokenizer.encode(text, add_special_tokens=False) + [tokenizer.eos_token_id], None

    server = StandInServer(generate)

    async def go() -> Any:
        client = LLMServerClient(config, load_balancer_handle=StandInBalancer(server))
        worker = AgentLoopWorker(config, llm_client=client)
        batch = DataProto.from_single_dict(collate_fn([data[0], data[1]]))
        return await worker.generate_sequences(batch)

    out = asyncio.run(go())
    n = config.actor_rollout_ref.rollout.response_length
    assert out.batch["responses"].shape == (2, n) and out.batch["response_mask"].shape == (2, n)
    scores = out.batch["rm_scores"].sum(-1).tolist()
    assert scores == [1.0, 0.0]  # only the first team's verifier boxed its gold answer
    assert len(server.requests) == 4
    for row, spans in enumerate(out.non_tensor_batch["role_spans"]):
        assert [s[0] for s in spans] == ["solver", "verifier"]
        mask = out.batch["response_mask"][row].tolist()
        (_, s0, s1), (_, v0, v1) = spans
        assert set(mask[s0:s1]) == set(mask[v0:v1]) == {1} and set(mask[s1:v0]) == {0}


def test_agent_loop_yaml_options_hold_for_every_episode_of_a_worker(
    tmp_path: Path, chat_model_dir: Path, tokenizer: Any, monkeypatch: pytest.MonkeyPatch
):
    """The documented YAML entry (``agent_loop_config_path``) with non-default options applies
    to every episode, also after the worker's first episode imports the agent-loop module
    (the import must not replace the YAML's registry entry)."""
    import sys

    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.protocol import DataProto
    from verl.utils.dataset.rl_dataset import collate_fn

    yaml_path = tmp_path / "flexmg_agent_loop.yaml"
    yaml_path.write_text(
        f"- name: {AGENT_NAME}\n"
        "  _target_: flexmg.integrations.verl.agent_loop.FlexMGAgentLoop\n"
        "  reward: solver\n"
        "  trained_roles: [verifier]\n"
    )
    config = verl_config(chat_model_dir)
    config.actor_rollout_ref.rollout.agent.agent_loop_config_path = str(yaml_path)
    data = dataset_rows(tmp_path, tokenizer, config, n=4)
    tasks = {data[i]["raw_prompt"][1]["content"].split("\n\n")[0] + "\n\n": i for i in range(4)}

    def generate(prompt_ids: list[int], params: dict[str, Any]) -> tuple[list[int], None]:
        seen = tokenizer.decode(prompt_ids)
        i = next(i for task, i in tasks.items() if task in seen)
        gold = data[i]["reward_model"]["ground_truth"]
        verifier = "Write your message as the verifier" in seen
        text = f"\\boxed{{{gold}}}" if verifier else "I am not sure."
        return tokenizer.encode(text, add_special_tokens=False) + [tokenizer.eos_token_id], None

    server = StandInServer(generate)
    # A fresh worker process: the module is not imported until verl instantiates the loop.
    module = "flexmg.integrations.verl.agent_loop"
    import flexmg.integrations.verl as package

    monkeypatch.delitem(sys.modules, module)
    monkeypatch.delattr(package, "agent_loop", raising=False)
    monkeypatch.delitem(_agent_loop_registry, AGENT_NAME)

    async def go() -> list[Any]:
        client = LLMServerClient(config, load_balancer_handle=StandInBalancer(server))
        worker = AgentLoopWorker(config, llm_client=client)
        outs = []
        for pair in ([0, 1], [2, 3]):  # two batches through the same worker
            batch = DataProto.from_single_dict(collate_fn([data[i] for i in pair]))
            outs.append(await worker.generate_sequences(batch))
        return outs

    outs = asyncio.run(go())
    assert module in sys.modules and _agent_loop_registry[AGENT_NAME]["reward"] == "solver"
    assert sum(len(out.non_tensor_batch["role_spans"]) for out in outs) == 4
    for out in outs:
        for row, spans in enumerate(out.non_tensor_batch["role_spans"]):
            mask = out.batch["response_mask"][row].tolist()
            (_, s0, s1), (_, v0, v1) = spans
            assert set(mask[s0:s1]) == {0} and set(mask[v0:v1]) == {1}  # trained_roles
            rewards = json.loads(out.non_tensor_batch["role_rewards"][row])
            score = out.batch["rm_scores"][row].sum().item()
            assert score == rewards["solver"]  # reward: solver, not the team score
            assert out.non_tensor_batch["team_score"][row] == 1.0


@pytest.mark.parametrize(
    "name",
    [
        "flexmg.integrations.verl",
        "flexmg.integrations.verl.reward",
    ],
)
def test_module_doctests(name: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
