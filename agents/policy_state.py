"""What a team policy saves and restores: its adapters and value heads, checked on the way in.

:meth:`TeamPolicy.trainable_state <flexmg.agents.policy.TeamPolicy.trainable_state>`
and ``load_trainable_state`` are these two functions: checkpoints hold the
result, and a state that does not fit the policy (format, roles, adapters,
parameter names, shapes) is refused with what differs, never loaded in part.

Example:
    >>> load_state(None, {"format": "other"})
    Traceback (most recent call last):
    ...
    ValueError: not a TeamPolicy trainable state (format 'other', expected 'flexmg.team_policy.v1')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

__all__ = ["STATE_FORMAT", "load_state", "trainable_state"]

STATE_FORMAT = "flexmg.team_policy.v1"
"""The format tag of a saved state."""


def trainable_state(policy: Any) -> dict[str, Any]:
    """A policy's adapters + value heads as CPU tensors, with the config they belong to."""
    return {
        "format": STATE_FORMAT,
        "roles": list(policy.roles),
        "config": policy.config.to_dict(),
        "adapters": {
            a: {n: p.detach().cpu().clone() for n, p in params}
            for a, params in policy._lora_params.items()
        },
        "value_heads": {
            k: {n: t.detach().cpu().clone() for n, t in head.state_dict().items()}
            for k, head in policy.value_heads.items()
        },
    }


def load_state(policy: Any, state: Mapping[str, Any]) -> None:
    """Restore a policy's adapters and value heads saved by :func:`trainable_state` (exactly).

    Raises:
        ValueError: the state does not match this policy (format, roles,
            adapters, parameter names or shapes), with what differs.
    """
    if not isinstance(state, Mapping) or state.get("format") != STATE_FORMAT:
        got = state.get("format") if isinstance(state, Mapping) else type(state).__name__
        raise ValueError(
            f"not a TeamPolicy trainable state (format {got!r}, expected {STATE_FORMAT!r})"
        )
    adapters, heads = state.get("adapters"), state.get("value_heads")
    if not isinstance(adapters, Mapping) or set(adapters) != set(policy._lora_params):
        raise ValueError(
            f"adapters in the state {sorted(adapters or {})} do not match this policy's "
            f"{sorted(policy._lora_params)} (roles {policy.roles}, share_parameters="
            f"{policy.config.share_parameters})"
        )
    if not isinstance(heads, Mapping) or set(heads) != set(policy.value_heads.keys()):
        raise ValueError(
            f"value heads in the state {sorted(heads or {})} do not match this policy's "
            f"{sorted(policy.value_heads.keys())} (critic={policy.config.critic!r})"
        )
    copies: list[tuple[torch.Tensor, torch.Tensor]] = []
    for a, params in policy._lora_params.items():
        saved = adapters[a]
        names = {n for n, _ in params}
        if set(saved) != names:
            diff = sorted(set(saved) ^ names)[:5]
            raise ValueError(f"adapter {a!r}: parameter names differ, e.g. {diff}")
        copies += [(p, saved[n]) for n, p in params]
    for k, head in policy.value_heads.items():
        own = head.state_dict()
        if set(heads[k]) != set(own):
            raise ValueError(f"value head {k!r}: keys differ: {sorted(set(heads[k]) ^ set(own))}")
        copies += [(own[n], heads[k][n]) for n in own]
    for dst, src in copies:
        if not isinstance(src, torch.Tensor) or tuple(src.shape) != tuple(dst.shape):
            shape = tuple(src.shape) if isinstance(src, torch.Tensor) else type(src).__name__
            raise ValueError(f"shape mismatch: saved {shape}, expected {tuple(dst.shape)}")
    with torch.no_grad():
        for dst, src in copies:
            dst.copy_(src.to(device=dst.device, dtype=dst.dtype))
