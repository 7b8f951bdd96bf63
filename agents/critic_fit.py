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
    >>> last < first
    True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

__all__ = ["fit_values"]

ValueFn = Callable[[str, torch.Tensor], torch.Tensor]
"""``values(role, features[B, hidden]) -> [B]``: the critic's value of each of ``role``'s turns."""


def fit_values(
    values: ValueFn,
    by_role: Mapping[str, Sequence[Any]],
    optimizers: Sequence[torch.optim.Optimizer],
    params: Sequence[torch.nn.Parameter],
    steps: int,
    max_grad_norm: float = 0.5,
) -> float | None:
    """Take ``steps`` Adam steps of ``0.5 * mean((value - return)^2)`` over every role's samples.

    Args:
        values: the policy's value function on cached features (``TeamPolicy.values``).
        by_role: each role's samples; each needs ``critic_features`` and ``ret``.
        optimizers: the critic's optimizers (stepped together).
        params: the critic's parameters (zeroed, clipped to ``max_grad_norm``).
        steps: how many steps (0: none).
        max_grad_norm: the gradient-norm clip of each step (PPO's).

    Returns:
        The last step's loss, or ``None`` when nothing was fitted (no steps, or a
        sample without cached features, e.g. token-level PPO).
    """
    data = []
    for role, part in by_role.items():
        if not part:
            continue
        if any(getattr(s, "critic_features", None) is None for s in part):
            return None
        feats = torch.stack([torch.as_tensor(s.critic_features) for s in part]).float()
        returns = torch.tensor([float(s.ret) for s in part])
        data.append((role, feats, returns))
    if steps <= 0 or not data:
        return None
    count = float(sum(len(r) for _, _, r in data))
    loss_value = 0.0
    for _ in range(steps):
        for p in params:
            p.grad = None
        loss = torch.zeros(())
        for role, feats, returns in data:
            v = values(role, feats)
            loss = loss + 0.5 * ((v.float().cpu() - returns) ** 2).sum() / count
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(params), max_grad_norm)
        for opt in optimizers:
            opt.step()
        loss_value = float(loss.detach())
    for p in params:
        p.grad = None
    return loss_value
