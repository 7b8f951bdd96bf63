"""Train one role of a flexmg team with TRL's ``GRPOTrainer`` (two routes).

* :func:`make_environment_factory`: a class for
  ``GRPOTrainer(environment_factory=...)``. The trained role speaks through one
  tool, ``send_message``; the other roles are callables (``messages -> text``:
  a script, another model, an HTTP client); the reward is the env's
  (``get_reward``). Pair it with :func:`environment_dataset` (one row per seed,
  so the ``num_generations`` completions of a GRPO group play the same task).
* :func:`make_rollout_func`: a callable for ``GRPOTrainer(rollout_func=...)``.
  Each rollout plays a whole episode and packs the trained role's turns into
  one completion: its own tokens are trained (``env_mask`` 1), the text that
  the env and the other roles add between its turns is masked out (0). The
  env's reward comes back as the ``env_reward`` field; pass
  :func:`env_reward` as the reward function. Its ``dataset()`` gives the rows
  to train on (the first role's prompt, as ``flexmg export`` writes it).

Both need ``pip install 'flexmg[trl]'`` (TRL 1.16; the environment route needs
transformers >= 5.2 and a chat template with tool calling).

Example (a real model id in place of the tiny test model)::

    from trl import GRPOConfig, GRPOTrainer
    from flexmg.integrations.trl import environment_dataset, make_environment_factory

    verifier = lambda messages: "I agree."          # a frozen role
    factory = make_environment_factory("math-2agent", role="solver", others={"verifier": verifier})
    trainer = GRPOTrainer(
        model="Qwen/Qwen3-0.6B",
        args=GRPOConfig(max_steps=100, num_generations=4),
        train_dataset=environment_dataset("math-2agent", role="solver", seeds=range(1000)),
        environment_factory=factory,
    )
    trainer.train()
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

from flexmg.integrations.export import iter_rows
from flexmg.integrations.seats import (
    EpisodeResult,
    Messages,
    RoleFn,
    SeatDriver,
    observation_to_messages,
)

__all__ = [
    "FlexMGRollout",
    "ValueRelay",
    "env_reward",
    "environment_dataset",
    "make_environment_factory",
    "make_rollout_func",
    "text_reward",
]

REWARDS = ("team", "role")


_NUMBER = re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?(?:/\d+)?")
_BOX = re.compile(r"\\boxed\{([^{}]*)\}")


class ValueRelay:
    r"""A frozen graded role that boxes the value the trained ``role`` wrote.

    A chat model answers in plain text ("... The answer is 7.") and rarely boxes; the
    env grades the graded role's boxed answer. Put this callable in the graded role's
    seat (the verifier of ``math-2agent``) and the team score grades the trained role's
    value: its last box, else its last number.

    >>> relay = ValueRelay("solver")
    >>> relay([{"role": "user", "content": "Task: 3 + 4?\n\n[solver]: 3 + 4 = 7.\nSo 7."}])
    '\\boxed{7}'
    >>> relay([{"role": "user", "content": "[solver]: I do not know.\n\nWrite your message"}])
    'No answer.'
    """

    def __init__(self, role: str) -> None:
        self.role = role

    def __call__(self, messages: Messages) -> str:
        """The graded role's reply: the trained role's value, boxed (or ``No answer.``)."""
        content = messages[-1]["content"] if messages else ""
        marker = f"[{self.role}]: "
        at = content.rfind(marker)
        if at < 0:
            return "No answer."
        said = content[at + len(marker) :].split("\n\nWrite your message as", 1)[0]
        boxes = _BOX.findall(said)
        numbers = _NUMBER.findall(boxes[-1] if boxes else said)
        return f"\\boxed{{{numbers[-1].replace(',', '')}}}" if numbers else "No answer."


def _last_text(completion: Any) -> str:
    """The text of a completion: a string, or the last assistant message's content."""
    if isinstance(completion, str):
        return completion
    for message in reversed(list(completion or [])):
        if isinstance(message, Mapping) and message.get("role") == "assistant":
            content = message.get("content")
            return content if isinstance(content, str) else ""
    return ""


def text_reward(
    completions: list[Any], environments: list[Any] | None = None, **kwargs: Any
) -> list[float]:
    """A reward function for ``make_environment_factory(..., plain_text=True)``.

    A model that answers in plain text instead of calling ``send_message`` still plays:
    its completion's final text is the trained role's message for its pending turn, the
    episode is finished, and the env's reward comes back. Pass it as ``reward_funcs``.
    """
    if environments is None:
        raise ValueError(
            "text_reward needs GRPOTrainer(environment_factory=make_environment_factory("
            "..., plain_text=True)): TRL passes the environments to it"
        )
    return [env._finish_with_text(_last_text(c)) for c, env in zip(completions, environments)]


def _one_way(env_kwargs: dict[str, Any]) -> dict[str, Any]:
    """Env kwargs given either way: ``env_kwargs={...}`` (as everywhere else) or as keywords.

    >>> _one_way({"env_kwargs": {"horizon": 2}, "split": "train"})
    {'horizon': 2, 'split': 'train'}
    """
    given = env_kwargs.pop("env_kwargs", None) or {}
    if not isinstance(given, Mapping):
        raise TypeError(f"env_kwargs must be a dict of env arguments, got {given!r}")
    both = sorted(set(given) & set(env_kwargs))
    if both:
        raise ValueError(f"env kwargs {both} given twice (in env_kwargs= and as keywords)")
    return {**dict(given), **env_kwargs}


def _make_env(env_id: str, env_kwargs: Mapping[str, Any]) -> Any:
    import flexmg

    return flexmg.make(env_id, **dict(env_kwargs))


def _resolve_others(
    env_id: str, env_kwargs: Mapping[str, Any], role: str, others: Mapping[str, RoleFn] | RoleFn
) -> dict[str, RoleFn]:
    """``others`` as one callable per non-trained role, checked against the env's roles."""
    env = _make_env(env_id, env_kwargs)
    roles = list(env.possible_agents)
    env.close()
    if role not in roles:
        raise ValueError(f"role {role!r} is not a role of {env_id}; roles: {roles}")
    rest = [r for r in roles if r != role]
    if callable(others) and not isinstance(others, Mapping):
        return {r: others for r in rest}
    if not isinstance(others, Mapping):
        raise TypeError(
            f"others must map each other role {rest} to a callable messages -> text "
            f"(or be one callable for all), got {type(others).__name__}"
        )
    missing = [r for r in rest if r not in others]
    unknown = sorted(set(others) - set(rest))
    if missing or unknown:
        raise ValueError(
            f"others must give a callable for each role of {env_id} but {role!r}: "
            f"missing {missing}, unknown {unknown}"
        )
    for name, fn in others.items():
        if not callable(fn):
            raise TypeError(f"others[{name!r}] must be callable (messages -> text), got {fn!r}")
    return dict(others)


def _episode_reward(result: EpisodeResult, role: str, reward: str) -> float:
    return float(result.score if reward == "team" else result.rewards.get(role, 0.0))


def _check_reward(reward: str) -> None:
    if reward not in REWARDS:
        raise ValueError(
            f"reward must be one of {REWARDS} (the team score or the role's), got {reward!r}"
        )


def environment_dataset(env_id: str, *, role: str, seeds: Sequence[int], **env_kwargs: Any) -> Any:
    """A ``datasets.Dataset`` for :func:`make_environment_factory`: one row per seed.

    Each row's ``prompt`` is the trained role's system message (its instructions)
    and an empty user message, which TRL fills with what ``reset`` returns (the
    task and what the other roles wrote). ``seed`` tells ``reset`` the episode.
    """
    import datasets

    env_kwargs = _one_way(env_kwargs)
    env = _make_env(env_id, env_kwargs)
    try:
        if role not in env.possible_agents:
            raise ValueError(
                f"role {role!r} is not a role of {env_id}; roles: {env.possible_agents}"
            )
        rows = []
        for seed in seeds:
            env.reset(seed=seed)
            system = observation_to_messages(env.observe(role))[0]
            rows.append({"prompt": [system, {"role": "user", "content": ""}], "seed": int(seed)})
    finally:
        env.close()
    return datasets.Dataset.from_list(rows)


def make_environment_factory(
    env_id: str,
    *,
    role: str,
    others: Mapping[str, RoleFn] | RoleFn,
    reward: str = "team",
    base_url: str | None = None,
    plain_text: bool = False,
    **env_kwargs: Any,
) -> type:
    """A class for ``GRPOTrainer(environment_factory=...)`` training ``role`` of ``env_id``.

    ``reset(seed=...)`` starts the episode, lets the roles before ``role`` speak
    and returns what ``role`` sees; the model answers by calling the tool
    ``send_message(message)``, which returns what comes next (the next round's
    context and feedback, or the result). ``get_reward()`` is the team score
    (``reward="team"``) or the role's summed reward (``"role"``); a rollout that
    never calls the tool counts as the role saying nothing.

    ``plain_text=True`` is for models that answer in text rather than tool calls: the
    class has no ``get_reward``; pass :func:`text_reward` as ``reward_funcs``, which plays
    the completion's final text as the role's message and returns the env's reward.

    With ``base_url`` (TRL's OpenEnv route) each instance plays its episodes on
    a ``flexmg serve`` server (one :class:`~flexmg.integrations.openenv_client.FlexMGSession`
    per instance) instead of a local env; ``env_id`` and ``env_kwargs`` must match the
    server's, or the first ``reset`` raises ``ServerMismatchError``.

    >>> Env = make_environment_factory("echo", role="b", others={"a": lambda m: "hi"})
    >>> env = Env(); print(env.reset(seed=0).splitlines()[-1])
    Write your message as the b.
    >>> env.send_message("hi"), env.get_reward()
    ('The episode is over. Team score: 1.000.', 1.0)
    """
    _check_reward(reward)
    env_kwargs = _one_way(env_kwargs)
    callers = _resolve_others(env_id, env_kwargs, role, others)

    class FlexMGToolEnv:
        """One flexmg episode per rollout; the trained role speaks through ``send_message``."""

        def __init__(self) -> None:
            self._env = None if base_url else _make_env(env_id, env_kwargs)
            self._client: Any = None
            self._driver: Any = None
            self._rng = random.Random()

        def reset(self, seed: int | None = None, **row: Any) -> str:
            """Start episode ``seed`` (a random one without); returns what the role sees."""
            if seed is None:
                seed = self._rng.randrange(2**31)
            if base_url is None:
                self._driver = SeatDriver(self._env, env_id, int(seed))
            else:
                from flexmg.integrations.openenv import RemoteSeatDriver

                if self._client is None:  # refuses a server playing another env or kwargs
                    from flexmg.integrations.openenv_client import FlexMGSession

                    self._client = FlexMGSession(base_url, env_id=env_id, env_kwargs=env_kwargs)
                self._driver = RemoteSeatDriver(self._client, env_id, int(seed))
            return self._advance()

        def send_message(self, message: str) -> str:
            if self._driver is None or self._driver.done:
                return "The episode is over; nothing more can be said."
            self._driver.act(message)
            return self._advance()

        def _score(self) -> float:
            """The env's reward of the episode (finishing it first if the role fell silent)."""
            driver = self._driver
            if driver is None:
                return 0.0
            while (turn := driver.pending()) is not None:
                who, messages = turn
                driver.act("" if who == role else callers[who](messages))
            return _episode_reward(driver.result, role, reward)

        def _finish_with_text(self, text: str) -> float:
            """Play ``text`` as the role's pending message, finish, and score the episode."""
            driver = self._driver
            if driver is None:
                return 0.0
            turn = driver.pending()
            if turn is not None and turn[0] == role:
                driver.act(text)
            return self._score()

        def _advance(self) -> str:
            assert self._driver is not None
            while (turn := self._driver.pending()) is not None:
                who, messages = turn
                if who == role:
                    return messages[-1]["content"]
                self._driver.act(callers[who](messages))
            return f"The episode is over. Team score: {self._driver.result.score:.3f}."

    FlexMGToolEnv.send_message.__doc__ = f"""Send your message to your team, as the {role}.

            Args:
                message: Your whole message for this turn.

            Returns:
                What happens next: the team's new messages and feedback, or the episode's result.
            """
    FlexMGToolEnv.__qualname__ = FlexMGToolEnv.__name__
    if not plain_text:  # TRL makes a class's get_reward a reward column of its own
        FlexMGToolEnv.get_reward = FlexMGToolEnv._score  # type: ignore[attr-defined]
    return FlexMGToolEnv


def env_reward(completions: list[Any], env_reward: list[float], **kwargs: Any) -> list[float]:
    """The reward function for :func:`make_rollout_func`: the env's reward of each rollout.

    >>> env_reward(["a", "b"], env_reward=[1.0, 0.0])
    [1.0, 0.0]
    """
    return [float(r) for r in env_reward]


def _prompt_key(prompt: Any) -> str:
    return json.dumps(prompt, sort_keys=True, ensure_ascii=False)


class FlexMGRollout:
    """The rollout function built by :func:`make_rollout_func` (see there)."""

    def __init__(
        self,
        env_id: str,
        role: str,
        callers: Mapping[str, RoleFn],
        rows: list[dict[str, Any]],
        reward: str,
        env_kwargs: Mapping[str, Any],
        max_turn_tokens: int | None = None,
    ) -> None:
        self.env_id = env_id
        self.role = role
        self.reward = reward
        self.rows = rows
        self._callers = dict(callers)
        self._env_kwargs = dict(env_kwargs)
        self.max_turn_tokens = max_turn_tokens
        self._seed_of = {_prompt_key(r["prompt"]): r["seed"] for r in rows}
        self.results: list[EpisodeResult] = []
        self._env: Any = None

    def close(self) -> None:
        """Close the env the rollouts play on (built on the first call)."""
        if self._env is not None:
            self._env.close()
            self._env = None

    def dataset(self) -> Any:
        """The rows as a ``datasets.Dataset`` (``train_dataset=`` of the trainer)."""
        import datasets

        return datasets.Dataset.from_list(self.rows)

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        """Play one episode per prompt with ``trainer``'s model as the trained role."""
        seeds = []
        for prompt in prompts:
            key = _prompt_key(prompt)
            if key not in self._seed_of:
                raise ValueError(
                    "a prompt the trainer sent is not one of this rollout's rows: train on "
                    "rollout.dataset() (rows of make_rollout_func(..., seeds=...))"
                )
            seeds.append(self._seed_of[key])
        if self._env is None:
            self._env = _make_env(self.env_id, self._env_kwargs)
        out: dict[str, list[Any]] = {
            "prompt_ids": [],
            "completion_ids": [],
            "logprobs": [],
            "env_mask": [],
            "env_reward": [],
        }
        self.results = []
        for seed in seeds:
            packer = _Packer(trainer, self.max_turn_tokens)
            driver = SeatDriver(self._env, self.env_id, seed)
            while (turn := driver.pending()) is not None:
                who, messages = turn
                fn = packer.turn if who == self.role else self._callers[who]
                driver.act(fn(messages))
            prompt_ids, completion, logprobs, mask = packer.packed()
            out["prompt_ids"].append(prompt_ids)
            out["completion_ids"].append(completion)
            out["logprobs"].append(logprobs)
            out["env_mask"].append(mask)
            out["env_reward"].append(_episode_reward(driver.result, self.role, self.reward))
            self.results.append(driver.result)
        return out


class _Packer:
    """The trained role's turns of one episode as one prompt + one packed completion.

    Each turn is generated from the packed tokens so far, so what the trainer
    scores is exactly what the model saw when it wrote.
    """

    def __init__(self, trainer: Any, max_turn_tokens: int | None = None) -> None:
        self.trainer = trainer
        self.max_turn_tokens = max_turn_tokens
        self.tok = trainer.processing_class
        self.limit = int(trainer.max_completion_length)
        self.prompt_ids: list[int] | None = None
        self.chat: Messages = []
        self.completion: list[int] = []
        self.logprobs: list[float] = []
        self.mask: list[int] = []
        self._last_ids: list[int] = []

    def _render(self, chat: Messages, generation: bool) -> str:
        return self.tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=generation)

    def _ids(self, text: str) -> list[int]:
        return list(self.tok(text, add_special_tokens=False)["input_ids"])

    def _env_text(self, user: dict[str, str]) -> str:
        """The text between the model's last reply and its next one (masked out)."""
        before = self._render(self.chat[:-1], generation=True)
        reply = self.chat[-1]["content"]
        closed = self._render(self.chat, generation=False)
        tail = closed[len(before) + len(reply) :] if closed.startswith(before + reply) else "\n"
        eos = self.tok.eos_token
        if eos and self._last_ids and self._last_ids[-1] == self.tok.eos_token_id:
            tail = tail.removeprefix(eos)
        follow = self._render([*self.chat, user], generation=True)
        return tail + (follow[len(closed) :] if follow.startswith(closed) else user["content"])

    def turn(self, messages: Messages) -> str:
        """The trained role's turn: generate its reply from the packed tokens so far."""
        if self.prompt_ids is None:
            self.prompt_ids = self._ids(self._render(messages, generation=True))
            self.chat = list(messages)
        else:
            env_ids = self._ids(self._env_text(messages[-1]))
            self.completion += env_ids
            self.logprobs += [0.0] * len(env_ids)
            self.mask += [0] * len(env_ids)
            self.chat.append(messages[-1])
        budget = self.limit - len(self.completion)
        if self.max_turn_tokens is not None:
            budget = min(budget, self.max_turn_tokens)
        new_ids, new_logprobs = self._generate(self.prompt_ids + self.completion, budget)
        self.completion += new_ids
        self.logprobs += new_logprobs
        self.mask += [1] * len(new_ids)
        self._last_ids = new_ids
        reply = self.tok.decode(new_ids, skip_special_tokens=True)
        self.chat.append({"role": "assistant", "content": reply})
        return reply

    def _generate(self, ids: list[int], budget: int) -> tuple[list[int], list[float]]:
        import torch

        if budget <= 0:
            return [], []
        trainer = self.trainer
        model = trainer.accelerator.unwrap_model(trainer.model)
        device = next(model.parameters()).device
        input_ids = torch.tensor([ids], device=device)
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                out = model.generate(
                    input_ids=input_ids,
                    attention_mask=torch.ones_like(input_ids),
                    max_new_tokens=budget,
                    do_sample=True,
                    temperature=float(trainer.temperature),
                    top_p=float(getattr(trainer, "top_p", 1.0) or 1.0),
                    pad_token_id=self.tok.pad_token_id,
                    eos_token_id=self.tok.eos_token_id,
                    return_dict_in_generate=True,
                    output_scores=True,
                )
                scores = model.compute_transition_scores(
                    out.sequences, out.scores, normalize_logits=True
                )[0]
        finally:
            model.train(was_training)
        new = out.sequences[0, len(ids) :].tolist()
        logprobs = [float(x) for x in scores.tolist()][: len(new)]
        # generate pads finished rows; a single row stops at EOS, but be safe
        pad = self.tok.pad_token_id
        while new and new[-1] == pad and pad != self.tok.eos_token_id:
            new.pop()
            logprobs.pop()
        return new, logprobs

    def packed(self) -> tuple[list[int], list[int], list[float], list[int]]:
        """``(prompt_ids, completion_ids, logprobs, env_mask)``, cut to the completion limit."""
        if self.prompt_ids is None:
            raise RuntimeError("the trained role never had a turn in this episode")
        n = self.limit
        return self.prompt_ids, self.completion[:n], self.logprobs[:n], self.mask[:n]


def make_rollout_func(
    env_id: str,
    *,
    role: str,
    others: Mapping[str, RoleFn] | RoleFn,
    seeds: Sequence[int],
    split: str = "train",
    reward: str = "team",
    max_turn_tokens: int | None = None,
    **env_kwargs: Any,
) -> FlexMGRollout:
    """A rollout function for ``GRPOTrainer(rollout_func=...)`` training ``role``.

    Each prompt the trainer sends is one of ``rollout.dataset()``'s rows (one per
    seed in ``seeds``, the first role's prompt as ``flexmg export`` writes it);
    the rollout plays that episode with the trainer's model as ``role`` (plain
    transformers generation) and ``others`` for the rest, and returns the packed
    completion, its ``env_mask`` and ``env_reward``. Each turn generates at most
    ``max_turn_tokens`` (default: what is left of ``max_completion_length``, which
    bounds the whole packed completion). ``rollout.results`` holds
    the last batch's :class:`~flexmg.integrations.seats.EpisodeResult` s.

    >>> rollout = make_rollout_func("echo", role="b", others={"a": str}, seeds=[0, 1])
    >>> len(rollout.rows), rollout.rows[0]["prompt"][0]["role"]
    (2, 'system')
    """
    _check_reward(reward)
    env_kwargs = _one_way(env_kwargs)
    callers = _resolve_others(env_id, {**env_kwargs, "split": split}, role, others)
    rows = list(iter_rows(env_id, list(seeds), split=split, env_kwargs=env_kwargs))
    if max_turn_tokens is not None and (
        not isinstance(max_turn_tokens, int) or max_turn_tokens < 1
    ):
        raise ValueError(f"max_turn_tokens must be an int >= 1 or None, got {max_turn_tokens!r}")
    return FlexMGRollout(
        env_id, role, callers, rows, reward, {**env_kwargs, "split": split}, max_turn_tokens
    )
