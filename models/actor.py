""":class:`ModelActor`: a bare causal LM as an actor, decoding with flexmg's one decoder.

It renders each observation in the model's prompt style, decodes with
:class:`~flexmg.models.sampling.Decoder` (the learner's own decoder: the same
prompts, sampling distribution and stop tokens) and returns the texts. The warm
start measures the tiny model with it, and it plays a checkpoint's base model
anywhere an actor goes (``flexmg.evaluation``, leaderboards).

Example:
    >>> actor = ModelActor.load("tiny", max_new_tokens=24, greedy=True, device="cpu")
    >>> actor.decoder.prompts.style
    'compact'
    >>> out = actor.act([{"task": "What is 3 + 9?", "role": "solver"}])
    >>> out[0].startswith("03+09=")
    True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from flexmg.models.config import SamplingConfig
from flexmg.models.prompts import PromptEncoder, resolve_prompt_style
from flexmg.models.sampling import Decoder

__all__ = ["ModelActor"]


class ModelActor:
    """A causal LM acting on observations (``act(observations) -> list[str]``).

    Args:
        model: the causal LM.
        tokenizer: its tokenizer (``flexmg.models.loading.load_model`` prepares both).
        max_new_tokens: tokens per action (stop token included).
        sampling: the sampling distribution (ignored when ``greedy``).
        greedy: decode greedily (the argmax of the raw logits).
        prompt_style: ``compact`` (the tiny model's), ``chat``, ``plain``, or ``auto``
            (the chat template when the tokenizer has one, else plain).
        max_prompt_tokens: the prompt budget (the oldest context is cut first).
        seed: seeds a private torch RNG stream for sampling (the global one is left
            untouched); None samples from the global stream.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        max_new_tokens: int,
        sampling: SamplingConfig | None = None,
        greedy: bool = False,
        prompt_style: str = "auto",
        max_prompt_tokens: int = 1024,
        seed: int | None = None,
    ) -> None:
        style = resolve_prompt_style(prompt_style, tokenizer, is_tiny=False)
        self.decoder = Decoder(model, tokenizer, PromptEncoder(tokenizer, style, max_prompt_tokens))
        self.sampling = sampling or SamplingConfig()
        self.max_new_tokens = int(max_new_tokens)
        self.greedy = greedy
        self._rng_state = None if seed is None else _seeded_state(seed)

    @classmethod
    def load(
        cls, name: str, max_new_tokens: int, device: str = "auto", dtype: str = "auto",
        **options: Any,
    ) -> ModelActor:  # fmt: skip
        """A model loaded by name (``tiny``, a zoo name, a HF id or a folder) as an actor.

        ``options`` are the constructor's; the prompt style defaults to the model's
        (``compact`` for the tiny model).
        """
        from flexmg.models.loading import load_model
        from flexmg.models.zoo import model_kind

        model, tokenizer = load_model(name, device=device, dtype=dtype)
        style = options.pop("prompt_style", "auto")
        if style == "auto":
            style = resolve_prompt_style("auto", tokenizer, is_tiny=model_kind(name) == "tiny")
        return cls(model, tokenizer, max_new_tokens, prompt_style=style, **options)

    @property
    def deterministic(self) -> bool:
        """True when it acts the same on the same observation (greedy decoding)."""
        return self.greedy

    def act(self, observations: Sequence[Mapping[str, Any]]) -> list[str]:
        """One message per observation, in order."""
        if isinstance(observations, Mapping):
            raise TypeError("ModelActor.act expects a list of observation dicts, got one dict")
        if not observations:
            return []
        prompts = [self.decoder.prompts.prompt_ids(o) for o in observations]
        if self._rng_state is None:
            return self._generate(prompts)
        with torch.random.fork_rng(devices=[]):
            torch.random.set_rng_state(self._rng_state)
            texts = self._generate(prompts)
            self._rng_state = torch.random.get_rng_state()
        return texts

    def _generate(self, prompts: list[list[int]]) -> list[str]:
        _, texts = self.decoder.generate(prompts, self.sampling, self.max_new_tokens, self.greedy)
        return texts


def _seeded_state(seed: int) -> torch.Tensor:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return torch.random.get_rng_state()
