"""A real TRL GRPOTrainer trains one role of a flexmg team on CPU (tiny local chat model).

Both routes: ``environment_factory`` (the role speaks through a tool) and
``rollout_func`` (whole episodes packed into one completion, the other roles'
text masked out). The frozen verifier answers right for even seeds only, so the
reward TRL logs must be the env's, step by step.
"""

import numpy as np
import pytest

import flexmg
from helpers import flexmg_server, require_extra

trl = require_extra("trl", "trl")
torch = pytest.importorskip("torch")

from flexmg.integrations.trl import (  # noqa: E402
    env_reward,
    environment_dataset,
    make_environment_factory,
    make_rollout_func,
)
from flexmg.models.tiny.model import build_tiny_model, tiny_config  # noqa: E402
from flexmg.models.tiny.tokenizer import build_char_tokenizer  # noqa: E402

pytestmark = pytest.mark.slow  # GRPO steps of a real trainer (tens of seconds on a busy CPU)

CHAT_TOKENS = ["<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]
CHAT_TOKENS += ["<tool_response>", "</tool_response>"]


def tiny_chat_model():
    """A Qwen2-shaped 2-layer model and a character tokenizer with Qwen2.5's chat template."""
    from trl.chat_template_utils import qwen2_5_chat_template

    tok = build_char_tokenizer()
    tok.add_tokens(CHAT_TOKENS, special_tokens=True)
    tok.eos_token = "<|im_end|>"
    tok.chat_template = qwen2_5_chat_template
    config = tiny_config(
        hidden_size=32,
        intermediate_size=64,
        num_attention_heads=2,
        num_key_value_heads=2,
        vocab_size=len(tok),
        eos_token_id=tok.eos_token_id,
    )
    return build_tiny_model(seed=0, config=config), tok


class ParityVerifier:
    """A frozen verifier: the right answer for even seeds, a wrong one for odd; logs seeds."""

    def __init__(self, env_id: str, seeds, **env_kwargs):
        self.by_task = {}
        env = flexmg.make(env_id, **env_kwargs)
        for seed in seeds:
            env.reset(seed=seed)
            self.by_task[env.task.prompt] = (seed, env.task.answer)
        env.close()
        self.seeds = []

    def __call__(self, messages):
        user = messages[-1]["content"]
        seed, answer = next(v for task, v in self.by_task.items() if f"Task:\n{task}\n" in user)
        self.seeds.append(seed)
        # unboxed, so the env scores it 0 (a boxed wrong value earns the format credit)
        return f"\\boxed{{{answer}}}" if seed % 2 == 0 else "I disagree."


def grpo_config(tmp_path, **overrides):
    kwargs = dict(
        output_dir=str(tmp_path),
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=16,
        max_steps=2,
        learning_rate=1e-3,
        beta=0.0,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        shuffle_dataset=False,
        dataloader_num_workers=0,
        seed=0,
    )
    kwargs.update(overrides)
    return trl.GRPOConfig(**kwargs)


def logged(trainer, key):
    return [entry[key] for entry in trainer.state.log_history if key in entry]


def test_grpo_with_environment_factory_logs_the_envs_reward(tmp_path):
    model, tok = tiny_chat_model()
    seeds = list(range(8))
    verifier = ParityVerifier("math-2agent", seeds)
    Env = make_environment_factory("math-2agent", role="solver", others={"verifier": verifier})
    trainer = trl.GRPOTrainer(
        model=model,
        processing_class=tok,
        args=grpo_config(tmp_path),
        train_dataset=environment_dataset("math-2agent", role="solver", seeds=seeds),
        environment_factory=Env,
    )
    trainer.train()
    rewards = logged(trainer, f"rewards/{Env.__name__}/mean")
    assert len(rewards) == 2
    # each step played 4 rollouts (2 seeds x 2 generations); the env scored them
    per_step = [verifier.seeds[0:4], verifier.seeds[4:8]]
    assert rewards == pytest.approx([np.mean([s % 2 == 0 for s in ss]) for ss in per_step])
    assert sorted(set(verifier.seeds)) == [0, 1, 2, 3]
    # TRL exposed send_message as the rollout's tool (its tool loop ran and logged)
    assert len(logged(trainer, "tools/call_frequency")) == 2


TOOL_CALL = (
    '<tool_call>\n{"name": "send_message", "arguments": {"message": "\\\\boxed{5}"}}\n'
    "</tool_call><|im_end|>"
)


def teach_tool_call(model, tok, Env, seeds, steps=200):
    """Supervised warm-up: the tiny model learns to answer every prompt with TOOL_CALL."""
    env = Env()
    rows = environment_dataset("math-2agent", role="solver", seeds=seeds)
    target = tok(TOOL_CALL, add_special_tokens=False)["input_ids"]
    ids, labels = [], []
    for row in rows:
        prompt = row["prompt"][:-1] + [{"role": "user", "content": env.reset(seed=row["seed"])}]
        text = tok.apply_chat_template(
            prompt, tools=[env.send_message], tokenize=False, add_generation_prompt=True
        )
        p_ids = tok(text, add_special_tokens=False)["input_ids"]
        ids.append(p_ids + target)
        labels.append([-100] * len(p_ids) + target)
    assert len({len(x) for x in ids}) == 1, "the prompts must have one length to batch them"
    ids, labels = torch.tensor(ids), torch.tensor(labels)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-2)
    model.train()
    loss = None
    for _ in range(steps):
        loss = model(input_ids=ids, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if loss.item() < 0.005:
            break
    return loss.item()


def two_seeds_one_answering_5(env_id: str) -> list[int]:
    """Two episode seeds whose prompts have one length; the answer is 5 only in the first."""
    env = flexmg.make(env_id)
    tasks = {}
    for seed in range(2000):
        env.reset(seed=seed)
        tasks[seed] = (len(env.task.prompt), env.task.answer.strip())
    env.close()
    first = next(s for s, (_, answer) in tasks.items() if answer == "5")
    length = tasks[first][0]
    second = next(s for s, (n, answer) in tasks.items() if n == length and answer != "5")
    return [first, second]


def test_the_models_tool_call_reaches_the_env(tmp_path):
    """A model taught to call send_message: its message is what the env grades."""
    model, tok = tiny_chat_model()
    seeds = two_seeds_one_answering_5("math-2agent")
    said = []

    def verifier(messages):  # the graded role repeats what the solver said
        content = messages[-1]["content"]
        said.append(content[content.rindex("[solver]: ") + len("[solver]: ") :].split("\n")[0])
        return said[-1]

    Env = make_environment_factory("math-2agent", role="solver", others={"verifier": verifier})
    assert teach_tool_call(model, tok, Env, seeds) < 0.01
    trainer = trl.GRPOTrainer(
        model=model,
        processing_class=tok,
        args=grpo_config(
            tmp_path, max_completion_length=512, temperature=0.01, max_tool_calling_iterations=1
        ),
        train_dataset=environment_dataset("math-2agent", role="solver", seeds=seeds),
        environment_factory=Env,
    )
    trainer.train()
    assert logged(trainer, "tools/call_frequency") == [1.0, 1.0]
    assert logged(trainer, "tools/failure_frequency") == [0.0, 0.0]
    assert said == ["\\boxed{5}"] * 8
    from flexmg.integrations.seats import play_episode

    # the first seed's answer is 5; the second scores a boxed wrong value (format credit)
    wrong = play_episode(
        "math-2agent", {"solver": str, "verifier": lambda m: "\\boxed{5}"}, seed=seeds[1]
    ).score
    expected = (1.0 + wrong) / 2
    assert logged(trainer, f"rewards/{Env.__name__}/mean") == pytest.approx([expected] * 2)


def test_grpo_through_the_openenv_server(tmp_path):
    """TRL's OpenEnv route: the factory's envs play on a `flexmg serve` process."""
    require_extra("openenv.core", "openenv")
    model, tok = tiny_chat_model()
    seeds = list(range(4))
    verifier = ParityVerifier("math-2agent", seeds)
    with flexmg_server("math-2agent", "--max-sessions", "8") as url:
        Env = make_environment_factory(
            "math-2agent", role="solver", others={"verifier": verifier}, base_url=url
        )
        trainer = trl.GRPOTrainer(
            model=model,
            processing_class=tok,
            args=grpo_config(tmp_path),
            train_dataset=environment_dataset("math-2agent", role="solver", seeds=seeds),
            environment_factory=Env,
        )
        trainer.train()
        state = trainer.environments[0]._client.state()
    rewards = logged(trainer, f"rewards/{Env.__name__}/mean")
    per_step = [verifier.seeds[0:4], verifier.seeds[4:8]]
    assert rewards == pytest.approx([np.mean([s % 2 == 0 for s in ss]) for ss in per_step])
    # the episodes really ran on the server: its session saw both roles' turns
    assert state["done"] and [t["role"] for t in state["turns"]] == ["solver", "verifier"]


def test_grpo_with_rollout_func_packs_episodes_and_masks_the_others(tmp_path):
    model, tok = tiny_chat_model()
    seeds = list(range(8))
    verifier = ParityVerifier("math-2agent", seeds, split="train", horizon=2)
    rollout = make_rollout_func(
        "math-2agent",
        role="solver",
        others={"verifier": verifier},
        seeds=seeds,
        horizon=2,
        max_turn_tokens=8,
    )
    batches = []

    played = []

    def recording(prompts, trainer):
        out = rollout(prompts, trainer)
        batches.append(out)
        played.append([r.seed for r in rollout.results])
        return out

    trainer = trl.GRPOTrainer(
        model=model,
        processing_class=tok,
        reward_funcs=env_reward,
        args=grpo_config(tmp_path, max_completion_length=2048),
        train_dataset=rollout.dataset(),
        rollout_func=recording,
    )
    trainer.train()
    rewards = logged(trainer, "rewards/env_reward/mean")
    assert len(batches) == 2 and len(rewards) == 2
    assert rewards == pytest.approx([np.mean(b["env_reward"]) for b in batches])
    for batch, seeds_played in zip(batches, played):
        assert batch["env_reward"] == [float(s % 2 == 0) for s in seeds_played]
    # odd seeds play two rounds: model turn, masked env text (the verifier's words), model turn
    result = next(r for r in rollout.results if r.metrics["rounds"] == 2)
    index = rollout.results.index(result)
    mask = batches[-1]["env_mask"][index]
    ids = batches[-1]["completion_ids"][index]
    assert len(mask) == len(ids) == len(batches[-1]["logprobs"][index])
    assert mask[0] == 1 and 0 in mask and mask[-1] == 1
    masked = tok.decode([t for t, m in zip(ids, mask) if m == 0])
    assert "[verifier]: I disagree." in masked and "<|im_start|>user" in masked
    trained = [t for t, m in zip(ids, mask) if m == 1]
    assert len(trained) <= 16 and "[verifier]" not in tok.decode(trained)
    rollout.close()


def test_programmer_errors_are_clear():
    with pytest.raises(ValueError, match="not a role of math-2agent"):
        make_environment_factory("math-2agent", role="critic", others=str)
    with pytest.raises(ValueError, match=r"missing \['verifier'\]"):
        make_environment_factory("math-2agent", role="solver", others={})
    with pytest.raises(ValueError, match="reward must be one of"):
        make_rollout_func("math-1agent", role="solver", others={}, seeds=[0], reward="mean")
    rollout = make_rollout_func("math-1agent", role="solver", others={}, seeds=[0])
    with pytest.raises(ValueError, match="not one of this rollout's rows"):
        rollout([[{"role": "user", "content": "something else"}]], trainer=None)
