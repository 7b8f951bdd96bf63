"""Extra critic-only steps on a rollout's cached features (``--critic-steps K``).

PPO trains the value head with one optimizer step per minibatch, so at the main
job's 1 epoch x 1 minibatch the critic takes a single step per update and its
explained variance stays ~0 (docs/marft.md, "Does the critic learn?"). The value
head reads features the rollout already computed (``Sample.critic_features``: the
frozen base's hidden state at the prompt's last token), so fitting it harder costs
no forward pass of the model: :func:`fit_values` takes ``K`` more Adam steps of the
plain squared error to each action's return, after the PPO epochs. The actors do
not move. Explained variance is still logged on the *next* rollout, before the
critic sees it, so a critic that only memorises one batch shows no gain there.

With ``holdout`` > 0 (``--critic-holdout F``) a share ``F`` of the batch's episodes (all
their roles' turns, spread evenly over the batch) is kept out of those steps, and the
critic returns to the step whose held-out error was lowest (step 0: as PPO left it), so
the extra steps cannot make it worse on episodes it did not fit. Adam's moments are not
rolled back.

Example:
    >>> import torch
    >>> from types import SimpleNamespace as S
    >>> from flexmg.agents.critic import ValueHead
    >>> head = ValueHead(2, hidden=(8,))
    >>> samples = [S(critic_features=torch.tensor([float(i % 2), 1.0]), ret=float(i % 2))
    ...            for i in range(8)]
    >>> opt = torch.optim.Adam(head.parameters(), lr=0.05)
    >>> values = lambda role, f: head(f.unsqueeze(1))[:, 0]
    >>> first = fit_values(values, {"a": samples}, [opt], list(head.parameters()), steps=1)
    >>> last = fit_values(values, {"a": samples}, [opt], list(head.parameters()), steps=60)
    >>> last.fit_loss < first.fit_loss
    True
    >>> kept = fit_values(values, {"a": samples}, [opt], list(head.parameters()), steps=20,
    ...                   holdout=0.25)
    >>> kept.holdout_loss is not None and 0 <= kept.steps_kept <= 20
    True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["CriticFit", "fit_values", "holdout_episodes"]

ValueFn = Callable[[str, torch.Tensor], torch.Tensor]
"""``values(role, features[B, hidden]) -> [B]``: the critic's value of each of ``role``'s turns."""


@dataclass(frozen=True)
class CriticFit:
    """What :func:`fit_values` did.

    Attributes:
        fit_loss: the squared-error loss on the fitted episodes: with a holdout, at the
            kept step; without one, the last step's (computed before that step moved).
        holdout_loss: the same on the held-out episodes (``None`` without a holdout).
        steps_kept: the step the critic was left at (``steps`` without a holdout).
    """

    fit_loss: float
    holdout_loss: float | None
    steps_kept: int


def holdout_episodes(episodes: Sequence[int], share: float) -> set[int]:
    """The ``floor(n * share)`` episodes held out of ``n``, spread evenly over the sorted ids.

    Example:
        >>> sorted(holdout_episodes(range(8), 0.25))
        [3, 7]
    """
    ids = sorted(set(episodes))
    return {e for i, e in enumerate(ids) if int((i + 1) * share) > int(i * share)}


def fit_values(
    values: ValueFn,
    by_role: Mapping[str, Sequence[Any]],
    optimizers: Sequence[torch.optim.Optimizer],
    params: Sequence[torch.nn.Parameter],
    steps: int,
    max_grad_norm: float = 0.5,
    holdout: float = 0.0,
) -> CriticFit | None:
    """Take ``steps`` Adam steps of ``0.5 * mean((value - return)^2)`` over every role's samples.

    Args:
        values: the policy's value function on cached features (``TeamPolicy.values``).
        by_role: each role's samples; each needs ``critic_features`` and ``ret`` (and
            ``episode`` for a holdout; without it, its index within its role).
        optimizers: the critic's optimizers (stepped together).
        params: the critic's parameters (zeroed, clipped to ``max_grad_norm``).
        steps: how many steps (0: none).
        max_grad_norm: the gradient-norm clip of each step (PPO's).
        holdout: the share of episodes kept out of the steps, in [0, 1); the critic
            ends at the step with the lowest held-out loss.

    Returns:
        What was fitted, or ``None`` when nothing was (no steps, or a sample without
        cached features, e.g. token-level PPO).
    """
    if not 0.0 <= holdout < 1.0:
        raise ValueError(f"holdout must be in [0, 1), got {holdout!r}")
    rows: list[tuple[str, Any, int]] = []
    for role, part in by_role.items():
        if any(getattr(s, "critic_features", None) is None for s in part):
            return None
        rows += [(role, s, getattr(s, "episode", i)) for i, s in enumerate(part)]
    if steps <= 0 or not rows:
        return None
    held = holdout_episodes([e for _, _, e in rows], holdout) if holdout else set()
    fit = _stack([(r, s) for r, s, e in rows if e not in held])
    test = _stack([(r, s) for r, s, e in rows if e in held])
    if not fit:
        return None
    best = (_loss(values, test), 0, _snapshot(params)) if test else None
    fit_loss = 0.0
    for step in range(1, steps + 1):
        for p in params:
            p.grad = None
        loss = _loss_tensor(values, fit)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(params), max_grad_norm)
        for opt in optimizers:
            opt.step()
        fit_loss = float(loss.detach())
        if best is not None:
            held_loss = _loss(values, test)
            if held_loss < best[0]:
                best = (held_loss, step, _snapshot(params))
    for p in params:
        p.grad = None
    if best is None:
        return CriticFit(fit_loss, None, steps)
    with torch.no_grad():
        for p, saved in zip(params, best[2], strict=True):
            p.copy_(saved)
    return CriticFit(_loss(values, fit), best[0], best[1])


_Data = list[tuple[str, torch.Tensor, torch.Tensor]]


def _stack(rows: Sequence[tuple[str, Any]]) -> _Data:
    """Per role: the cached features ``[B, hidden]`` and the returns ``[B]``."""
    out: _Data = []
    for role in dict.fromkeys(r for r, _ in rows):
        part = [s for r, s in rows if r == role]
        feats = torch.stack([torch.as_tensor(s.critic_features) for s in part]).float()
        out.append((role, feats, torch.tensor([float(s.ret) for s in part])))
    return out


def _loss_tensor(values: ValueFn, data: _Data) -> torch.Tensor:
    count = float(sum(len(r) for _, _, r in data))
    loss = torch.zeros(())
    for role, feats, returns in data:
        v = values(role, feats)
        loss = loss + 0.5 * ((v.float().cpu() - returns) ** 2).sum() / count
    return loss


def _loss(values: ValueFn, data: _Data) -> float:
    with torch.no_grad():
        return float(_loss_tensor(values, data))


def _snapshot(params: Sequence[torch.nn.Parameter]) -> list[torch.Tensor]:
    return [p.detach().clone() for p in params]
