"""The PPO loss terms and the sampler check, as pure functions of tensors.

Each is a masked mean over tokens (or actions) with an optional fixed
denominator, so micro-batch sums add up to the whole minibatch's loss.
Used by :class:`flexmg.agents.ppo.PPOLearner`.

Example:
    >>> import torch
    >>> round(approx_kl(torch.zeros(3), torch.zeros(3)).item(), 4)
    0.0
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from flexmg.agents.samples import Sample


def masked_mean(
    x: torch.Tensor, mask: torch.Tensor | None = None, denominator: float | None = None
) -> torch.Tensor:
    """Sum of ``x`` over ``mask`` divided by ``denominator`` (default: the mask's size).

    A micro-batch passes the whole minibatch's count as ``denominator``, so the
    parts add up to the minibatch's mean. 0 when there is nothing to average.

    >>> masked_mean(torch.tensor([1.0, 3.0, 5.0]), torch.tensor([1.0, 1.0, 0.0])).item()
    2.0
    """
    total = x.sum() if mask is None else (x * mask).sum()
    if denominator is None:
        denominator = float(x.numel() if mask is None else mask.sum())
    return total / max(float(denominator), 1.0) if denominator else total * 0.0


def clipped_policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    clip: float = 0.2,
    mask: torch.Tensor | None = None,
    denominator: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """PPO clipped surrogate, negated for minimization; returns ``(loss, clip_fraction)``."""
    ratio = torch.exp(logp - old_logp)
    surr1 = ratio * advantages
    surr2 = torch.clamp(ratio, 1.0 - clip, 1.0 + clip) * advantages
    loss = -masked_mean(torch.min(surr1, surr2), mask, denominator)
    clipped = ((ratio - 1.0).abs() > clip).float()
    return loss, masked_mean(clipped, mask, denominator).detach()


def clipped_value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    clip: float | None = 0.2,
    mask: torch.Tensor | None = None,
    denominator: float | None = None,
) -> torch.Tensor:
    """``0.5 * max((V - R)^2, (V_clipped - R)^2)`` with ``V_clipped`` within ``clip`` of the old V.

    >>> round(clipped_value_loss(torch.tensor([1.0, 0.0]), torch.tensor([0.5, 0.5]),
    ...                          torch.tensor([2.0, 0.0])).item(), 4)
    0.445
    """
    loss = (values - returns) ** 2
    if clip is not None and clip > 0:
        v_clipped = old_values + torch.clamp(values - old_values, -clip, clip)
        loss = torch.max(loss, (v_clipped - returns) ** 2)
    return 0.5 * masked_mean(loss, mask, denominator)


def approx_kl(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    mask: torch.Tensor | None = None,
    denominator: float | None = None,
) -> torch.Tensor:
    """Low-variance estimate of KL(old || new): mean of ``(r - 1) - log r``, ``r = p_new/p_old``."""
    return masked_mean(_k3(logp - old_logp), mask, denominator)


def kl_to_reference(
    logp: torch.Tensor,
    ref_logp: torch.Tensor,
    mask: torch.Tensor | None = None,
    denominator: float | None = None,
) -> torch.Tensor:
    """k3 estimate of KL(policy || reference) per token: ``exp(q - p) - (q - p) - 1``."""
    return masked_mean(_k3(ref_logp - logp), mask, denominator)


def _k3(log_ratio: torch.Tensor) -> torch.Tensor:
    """Schulman's k3 term ``exp(x) - 1 - x`` (>= 0, unbiased for KL in expectation)."""
    return torch.exp(log_ratio) - 1.0 - log_ratio


def sampler_kl(samples: Sequence[Sample]) -> float:
    """Mean over sampled tokens of ``log pi_sampler(a) - log pi_learner(a)`` (0 when none).

    >>> from types import SimpleNamespace as S
    >>> sampler_kl([S(sampler_logprobs=[-1.0, -2.0], old_token_logprobs=[-1.5, -2.0])])
    0.25
    """
    total, count = 0.0, 0
    for s in samples:
        for a, b in zip(s.sampler_logprobs, s.old_token_logprobs, strict=False):
            total += a - b
            count += 1
    return total / count if count else 0.0
