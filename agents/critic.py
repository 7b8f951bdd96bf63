"""Value heads for the centralized (MARFT) or per-role (IPPO) critic.

A value head is an MLP ``hidden -> 1024 -> 512 -> 1`` with ReLU (the MARFT
reference shape) that reads final hidden states of the *shared* base model
(adapters disabled), so the critic never needs a second copy of the base.

Example:
    >>> import torch
    >>> from flexmg.agents.critic import ValueHead
    >>> head = ValueHead(16, hidden=(8, 4))
    >>> head(torch.zeros(3, 5, 16)).shape
    torch.Size([3, 5])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch
from torch import nn


class ValueHead(nn.Module):
    """MLP mapping features ``[..., in_features]`` to scalar values ``[...]``.

    The output layer starts near zero (weights scaled by 0.01, zero bias) so
    initial value estimates are ~0 and do not swamp early advantages.

    Args:
        in_features: width of the base model's hidden state.
        hidden: widths of the hidden layers (default: the MARFT ``(1024, 512)``).
    """

    def __init__(self, in_features: int, hidden: Sequence[int] = (1024, 512)) -> None:
        super().__init__()
        if in_features <= 0:
            raise ValueError(f"in_features must be positive, got {in_features}")
        widths = [int(w) for w in hidden]
        if any(w <= 0 for w in widths):
            raise ValueError(f"hidden widths must be positive integers, got {tuple(hidden)}")
        layers: list[nn.Module] = []
        prev = in_features
        for w in widths:
            layers += [nn.Linear(prev, w), nn.ReLU()]
            prev = w
        out = nn.Linear(prev, 1)
        with torch.no_grad():
            out.weight.mul_(0.01)
            out.bias.zero_()
        layers.append(out)
        self.net = nn.Sequential(*layers)
        self.in_features = in_features

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """Values for ``features`` of shape ``[..., in_features]`` -> ``[...]`` (float32)."""
        if features.shape[-1] != self.in_features:
            raise ValueError(
                f"ValueHead expects features with last dim {self.in_features}, "
                f"got shape {tuple(features.shape)}"
            )
        return self.net(features.to(self.net[0].weight.dtype)).squeeze(-1)


def build_value_heads(
    names: Iterable[str], in_features: int, hidden: Sequence[int] = (1024, 512)
) -> nn.ModuleDict:
    """One :class:`ValueHead` per name (e.g. ``["team"]``, one per role, or none: critic-free).

    >>> sorted(build_value_heads(["a", "b"], 4, hidden=(2,)).keys())
    ['a', 'b']
    """
    heads = nn.ModuleDict()
    for name in names:
        if name not in heads:
            heads[name] = ValueHead(in_features, hidden)
    return heads
