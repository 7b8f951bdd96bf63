"""Torch-free settings of the models: the sampling distribution every decoder uses.

:class:`SamplingConfig` is the whole distribution rollouts sample from (greedy
decoding takes the argmax of the raw logits); :mod:`flexmg.models.sampling`
applies it, and the learner scores actions under the same one.

Example:
    >>> SamplingConfig(temperature=0.5, top_k=2).is_temperature_only
    False
    >>> SamplingConfig(temperature=0)
    Traceback (most recent call last):
    ...
    ValueError: SamplingConfig.temperature must be > 0 (use greedy for argmax); got 0
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flexmg.settings import Settings, documented, setting

__all__ = ["DTYPE_NAMES", "SamplingConfig"]

DTYPE_NAMES: dict[str, str] = {
    "float32": "float32",
    "fp32": "float32",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
}
"""Weight dtype names a model may be loaded in (besides ``"auto"``) -> torch's name."""


def _positive(v: Any) -> bool:
    return v > 0


@documented
@dataclass(frozen=True)
class SamplingConfig(Settings):
    """The whole sampling distribution of rollouts (greedy evaluation takes the argmax).

    >>> SamplingConfig().is_temperature_only
    True
    """

    temperature: float = setting(
        1.0, "logits are divided by it", check=(_positive, "> 0 (use greedy for argmax)")
    )
    top_k: int = setting(
        0,
        "keep the k most likely tokens (0: off, the default)",
        check=(lambda v: v >= 0, ">= 0 (0 disables it)"),
    )
    top_p: float = setting(
        1.0,
        "keep the smallest set of tokens with this much probability (1.0: off)",
        check=(lambda v: 0.0 < v <= 1.0, "in (0, 1]"),
    )

    @property
    def is_temperature_only(self) -> bool:
        """True when no truncation (top-k / top-p) is in effect."""
        return self.top_k == 0 and self.top_p >= 1.0
