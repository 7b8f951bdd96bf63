"""The PPO machinery shared by MARFT and IPPO: losses, the update loop, the schedule.

:class:`PPOLearner` owns the optimizers (one per LoRA adapter, one per value
head, separate learning rates) and does, per training step:

1. :meth:`PPOLearner.prepare`: recompute the *old* log-probs and values of the
   rollout under the current (pre-update) policy in batched no-grad passes,
   then assign advantages with the algorithm's credit function
   (``agents/gae.py``) and normalize them.
2. :meth:`PPOLearner.update`: epochs x minibatches of clipped PPO with clipped
   value loss, entropy bonus, optional KL penalty to the reference model (the
   base with adapters disabled), gradient-norm clipping, target-KL early stop
   (a role's policy step is skipped, and its policy frozen for the rest of the
   update, once the approximate KL exceeds ``target_kl``), critic warm-up
   (the first ``critic_warmup`` updates train only the critic) and
   agent-by-agent training (``agent_interval = K``: only the policy of role
   ``floor(update / K) mod N`` learns; ``K = 0``: all together). The critic
   always learns from every role's samples.

Example:
    >>> import torch
    >>> loss, clipfrac = clipped_policy_loss(
    ...     torch.log(torch.tensor([1.5, 0.5, 1.0])), torch.zeros(3),
    ...     torch.tensor([1.0, 1.0, -1.0]), clip=0.2)
    >>> round(loss.item(), 4), round(clipfrac.item(), 4)
    (-0.2333, 0.6667)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

import torch
from flexmg.agents.buffer import RolloutBatch, Sample
from flexmg.agents.gae import Chain, assign_advantages


def config_from_dict(cls: type, data: dict[str, Any]) -> Any:
    """Build the dataclass ``cls`` from ``data``; unknown keys are a clear ``ValueError``."""
    known = {f.name for f in fields(cls)}
    unknown = set(data) - known
    if unknown:
        raise ValueError(f"unknown {cls.__name__} keys {sorted(unknown)}; known: {sorted(known)}")
    return cls(**data)


@dataclass
class PPOConfig:
    """PPO hyperparameters (defaults suit the tiny model; MARFT.md has the 7B ones)."""

    level: str = "action"  # "action" (APPO) | "token" (TPPO)
    gamma: float = 0.99
    lam: float = 0.95
    token_gamma: float = 1.0
    token_lam: float = 1.0
    clip: float = 0.2
    value_clip: float = 0.2
    entropy_coef: float = 0.01
    value_coef: float = 0.5
    max_grad_norm: float = 0.5
    target_kl: float | None = 0.1
    epochs: int = 2
    minibatches: int = 2
    critic_warmup: int = 0
    agent_interval: int = 0
    lr_actor: float = 1e-3
    lr_critic: float = 1e-3
    kl_coef: float = 0.0
    lr_schedule: str = "linear"  # "constant" | "linear" (decay to 0 over the run's updates)
    normalize_advantages: bool = True
    eval_chunk: int = 64  # samples per no-grad recomputation forward

    def __post_init__(self) -> None:
        if self.level not in ("action", "token"):
            raise ValueError(f"PPOConfig.level must be 'action' or 'token', got {self.level!r}")
        if self.epochs < 1 or self.minibatches < 1:
            raise ValueError(
                f"epochs and minibatches must be >= 1, got {self.epochs} and {self.minibatches}"
            )
        if self.agent_interval < 0 or self.critic_warmup < 0:
            raise ValueError("agent_interval and critic_warmup must be >= 0")
        if self.lr_actor <= 0 or self.lr_critic <= 0:
            raise ValueError("learning rates must be > 0")
        if self.lr_schedule not in ("constant", "linear"):
            raise ValueError(
                f"lr_schedule must be 'constant' or 'linear', got {self.lr_schedule!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (for config.json and checkpoints)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PPOConfig:
        """Inverse of :meth:`to_dict`; unknown keys are rejected with a clear error."""
        return config_from_dict(cls, data)


# ----------------------------------------------------------------------------- losses


def masked_mean(x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Mean of ``x`` over ``mask`` (all of ``x`` when None); 0 when the mask is empty.

    >>> masked_mean(torch.tensor([1.0, 3.0, 5.0]), torch.tensor([1.0, 1.0, 0.0])).item()
    2.0
    """
    if mask is None:
        return x.mean() if x.numel() else x.sum()
    return (x * mask).sum() / mask.sum().clamp(min=1.0)


def clipped_policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    clip: float = 0.2,
    mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """PPO clipped surrogate, negated for minimization; returns ``(loss, clip_fraction)``."""
    ratio = torch.exp(logp - old_logp)
    surr1 = ratio * advantages
    surr2 = torch.clamp(ratio, 1.0 - clip, 1.0 + clip) * advantages
    loss = -masked_mean(torch.min(surr1, surr2), mask)
    clipped = ((ratio - 1.0).abs() > clip).float()
    return loss, masked_mean(clipped, mask).detach()


def clipped_value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    clip: float | None = 0.2,
    mask: torch.Tensor | None = None,
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
    return 0.5 * masked_mean(loss, mask)


def approx_kl(
    logp: torch.Tensor, old_logp: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Low-variance estimate of KL(old || new): mean of ``(r - 1) - log r``, ``r = p_new/p_old``."""
    log_ratio = logp - old_logp
    return masked_mean(torch.exp(log_ratio) - 1.0 - log_ratio, mask)


def kl_to_reference(
    logp: torch.Tensor, ref_logp: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """k3 estimate of KL(policy || reference) per token: ``exp(q - p) - (q - p) - 1``."""
    d = ref_logp - logp
    return masked_mean(torch.exp(d) - d - 1.0, mask)


def active_roles(roles: Sequence[str], update: int, interval: int) -> list[str]:
    """Roles whose policy learns at ``update`` (agent-by-agent schedule).

    >>> active_roles(["a", "b", "c"], 5, 2), active_roles(["a", "b"], 5, 0)
    (['c'], ['a', 'b'])
    """
    if interval <= 0:
        return list(roles)
    return [roles[(update // interval) % len(roles)]]


def _pad(rows: Sequence[Sequence[float]], width: int) -> torch.Tensor:
    out = torch.zeros(len(rows), width)
    for i, row in enumerate(rows):
        n = min(len(row), width)
        if n:
            out[i, :n] = torch.tensor(list(row[:n]), dtype=torch.float32)
    return out


# ----------------------------------------------------------------------------- learner


class PPOLearner:
    """Optimizers and the PPO update for a ``TeamPolicy`` (see ``agents/policy.py``).

    Args:
        policy: the team policy (``evaluate``, ``policy_parameters``,
            ``critic_parameters``, ``adapter_name``, ``critic_name``, ``roles``).
        config: the PPO hyperparameters.
        credit: the algorithm's credit function (episode samples -> chains).
    """

    def __init__(self, policy: Any, config: PPOConfig, credit: Any) -> None:
        self.policy = policy
        self.config = config
        self.credit = credit
        self.roles: list[str] = list(policy.roles)
        self.actor_opts: dict[str, torch.optim.Optimizer] = {}
        self.critic_opts: dict[str, torch.optim.Optimizer] = {}
        self.actor_params: dict[str, list[torch.nn.Parameter]] = {}
        self.critic_params: dict[str, list[torch.nn.Parameter]] = {}
        groups = (
            ("adapter", policy.adapter_name, policy.policy_parameters, self.actor_params,
             self.actor_opts, config.lr_actor),
            ("critic", policy.critic_name, policy.critic_parameters, self.critic_params,
             self.critic_opts, config.lr_critic),
        )  # fmt: skip
        for role in self.roles:
            for kind, name_of, params_of, params_by, opts, lr in groups:
                name = name_of(role)
                if name in opts:  # shared by several roles
                    continue
                params = [p for p in params_of(role) if p.requires_grad]
                if not params:
                    raise ValueError(f"policy has no trainable parameters for {kind} {name!r}")
                params_by[name] = params
                opts[name] = torch.optim.Adam(params, lr=lr, eps=1e-5)

    def set_progress(self, update: int, total: int) -> float:
        """Set learning rates for ``update`` of ``total`` (linear decay); returns the factor."""
        frac = 1.0
        if self.config.lr_schedule == "linear" and total > 0:
            frac = max(0.0, 1.0 - update / total)
        for opts, lr in ((self.actor_opts, self.config.lr_actor),
                         (self.critic_opts, self.config.lr_critic)):  # fmt: skip
            for opt in opts.values():
                for group in opt.param_groups:
                    group["lr"] = lr * frac
        return frac

    # -- state ------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Optimizer states (for checkpoints)."""
        return {
            "actor": {k: o.state_dict() for k, o in self.actor_opts.items()},
            "critic": {k: o.state_dict() for k, o in self.critic_opts.items()},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore optimizer states saved by :meth:`state_dict`."""
        for group, opts in (("actor", self.actor_opts), ("critic", self.critic_opts)):
            saved = state.get(group, {})
            if set(saved) != set(opts):
                raise ValueError(
                    f"checkpoint has {group} optimizers {sorted(saved)} but this policy has "
                    f"{sorted(opts)}; was it trained with other roles or share_parameters?"
                )
            for k, o in opts.items():
                o.load_state_dict(saved[k])

    # -- preparation ------------------------------------------------------------------
    @torch.no_grad()
    def recompute(self, samples: Sequence[Sample]) -> None:
        """Fill ``old_*`` fields of ``samples`` under the current policy (batched, no grad)."""
        with_ref = self.config.kl_coef > 0
        by_role: dict[str, list[Sample]] = {}
        for s in samples:
            by_role.setdefault(s.role, []).append(s)
        chunk = max(1, self.config.eval_chunk)
        for role, group in by_role.items():
            for start in range(0, len(group), chunk):
                part = group[start : start + chunk]
                ev = self.policy.evaluate(
                    role,
                    [s.prompt_ids for s in part],
                    [s.action_ids for s in part],
                    with_ref=with_ref,
                )
                tok_lp = ev.token_logprobs.detach().float().cpu()
                tok_v = ev.token_values.detach().float().cpu()
                act_lp = ev.action_logprob.detach().float().cpu()
                vals = ev.values.detach().float().cpu()
                ref = None
                if with_ref and ev.ref_token_logprobs is not None:
                    ref = ev.ref_token_logprobs.detach().float().cpu()
                for i, s in enumerate(part):
                    n = len(s.action_ids)
                    s.old_logprob = float(act_lp[i])
                    s.old_value = float(vals[i])
                    s.old_token_logprobs = tok_lp[i, :n].tolist()
                    s.old_token_values = tok_v[i, :n].tolist()
                    s.ref_token_logprobs = ref[i, :n].tolist() if ref is not None else None

    def prepare(self, batch: RolloutBatch) -> dict[str, float]:
        """Recompute old log-probs/values, assign advantages, normalize them."""
        cfg = self.config
        samples = batch.samples
        self.recompute(samples)
        assign_advantages(
            batch.episodes,
            self.credit,
            level=cfg.level,
            gamma=cfg.gamma,
            lam=cfg.lam,
            token_gamma=cfg.token_gamma,
            token_lam=cfg.token_lam,
        )
        if cfg.level == "action":
            adv = torch.tensor([s.advantage for s in samples], dtype=torch.float64)
        else:
            adv = torch.tensor(
                [a for s in samples for a in s.token_advantages[: len(s.action_ids)]],
                dtype=torch.float64,
            )
        raw_mean = float(adv.mean()) if adv.numel() else 0.0
        if cfg.normalize_advantages and adv.numel() > 1:
            mean, std = float(adv.mean()), float(adv.std())
            for s in samples:
                s.advantage = (s.advantage - mean) / (std + 1e-8)
                s.token_advantages = [(a - mean) / (std + 1e-8) for a in s.token_advantages]
        rets = [s.ret for s in samples]
        vals = [s.old_value for s in samples]
        return {
            "adv_mean_raw": raw_mean,
            "value_mean": sum(vals) / max(1, len(vals)),
            "return_mean": sum(rets) / max(1, len(rets)),
            "explained_variance": _explained_variance(vals, rets),
        }

    # -- update -----------------------------------------------------------------------
    def _role_losses(
        self, role: str, part: Sequence[Sample], learn_policy: bool
    ) -> tuple[torch.Tensor, torch.Tensor | None, dict[str, float]]:
        """(value term, policy term or None, stats) for one role's minibatch (one forward)."""
        cfg = self.config
        ev = self.policy.evaluate(
            role, [s.prompt_ids for s in part], [s.action_ids for s in part], with_ref=False
        )
        dev = ev.values.device
        mask = ev.mask.float()
        width = mask.shape[1]
        old_tok_lp = _pad([s.old_token_logprobs for s in part], width).to(dev)
        tok_lp = ev.token_logprobs.float()
        kl_old = approx_kl(tok_lp.detach(), old_tok_lp, mask)
        values = ev.values.float()
        old_v = torch.tensor([s.old_value for s in part], device=dev)
        if cfg.level == "action":
            ret = torch.tensor([s.ret for s in part], device=dev)
            v_loss = clipped_value_loss(values, old_v, ret, cfg.value_clip)
        else:
            # token values; an empty action keeps one virtual token: its action-level value
            vwidth = max(width, 1)
            empty = mask.sum(dim=1) == 0
            tv = torch.zeros(len(part), vwidth, device=dev)
            tv[:, :width] = ev.token_values.float()
            tv[empty, 0] = values[empty]
            vmask = torch.zeros(len(part), vwidth, device=dev)
            vmask[:, :width] = mask
            vmask[empty, 0] = 1.0
            old_tv = _pad([s.old_token_values or [s.old_value] for s in part], vwidth).to(dev)
            t_ret = _pad([s.token_returns for s in part], vwidth).to(dev)
            v_loss = clipped_value_loss(tv, old_tv, t_ret, cfg.value_clip, vmask)
        stats = {"value_loss": float(v_loss.detach()), "approx_kl": float(kl_old)}
        value_term = cfg.value_coef * v_loss
        policy_term = None
        if learn_policy:
            if cfg.level == "action":
                old_lp = torch.tensor([s.old_logprob for s in part], device=dev)
                adv = torch.tensor([s.advantage for s in part], device=dev)
                pg, clipfrac = clipped_policy_loss(ev.action_logprob.float(), old_lp, adv, cfg.clip)
            else:
                t_adv = _pad([s.token_advantages for s in part], width).to(dev)
                pg, clipfrac = clipped_policy_loss(tok_lp, old_tok_lp, t_adv, cfg.clip, mask)
            entropy = masked_mean(ev.entropy.float(), mask)
            policy_term = pg - cfg.entropy_coef * entropy
            stats.update(
                policy_loss=float(pg.detach()),
                entropy=float(entropy.detach()),
                clipfrac=float(clipfrac),
            )
            if cfg.kl_coef > 0:
                ref = _pad([s.ref_token_logprobs or [] for s in part], width).to(dev)
                kl_ref = kl_to_reference(tok_lp, ref, mask)
                policy_term = policy_term + cfg.kl_coef * kl_ref
                stats["kl_ref"] = float(kl_ref.detach())
        return value_term, policy_term, stats

    def update(
        self, batch: RolloutBatch, update: int, generator: torch.Generator | None = None
    ) -> dict[str, float]:
        """One PPO update on a prepared batch; returns averaged statistics.

        Args:
            batch: a rollout on which :meth:`prepare` was called.
            update: the 0-based update counter (drives warm-up and agent-by-agent).
            generator: RNG for minibatch shuffling (seed it for exact resume).
        """
        cfg = self.config
        warm = update < cfg.critic_warmup
        learning = set() if warm else set(active_roles(self.roles, update, cfg.agent_interval))
        stopped: set[str] = set()  # adapters stopped by target KL
        by_role = batch.by_role()
        totals: dict[str, float] = {}
        counts: dict[str, int] = {}
        actor_steps = skipped = 0
        for _epoch in range(cfg.epochs):
            order = {
                r: torch.randperm(len(ss), generator=generator).tolist()
                for r, ss in by_role.items()
            }
            for mb in range(cfg.minibatches):
                self._zero_grad()
                stepping: set[str] = set()
                for role in self.roles:
                    ss = by_role.get(role, [])
                    idx = order.get(role, [])[mb :: cfg.minibatches]
                    if not idx:
                        continue
                    part = [ss[i] for i in idx]
                    adapter = self.policy.adapter_name(role)
                    learn = role in learning and adapter not in stopped
                    loss, policy_term, stats = self._role_losses(role, part, learn)
                    if learn and cfg.target_kl is not None and stats["approx_kl"] > cfg.target_kl:
                        # too far from the rollout policy: skip this policy step, stop the role
                        stopped.add(adapter)
                        stepping.discard(adapter)
                        skipped += 1
                        stats = {k: stats[k] for k in ("value_loss", "approx_kl")}
                    elif policy_term is not None:
                        stepping.add(adapter)
                        loss = loss + policy_term
                    loss.backward()
                    for k, v in stats.items():
                        totals[k] = totals.get(k, 0.0) + v
                        counts[k] = counts.get(k, 0) + 1
                grad_norms = self._step(stepping - stopped)
                actor_steps += len(stepping - stopped)
                for k, v in grad_norms.items():
                    totals[k] = totals.get(k, 0.0) + v
                    counts[k] = counts.get(k, 0) + 1
        self._zero_grad()
        out = {k: totals[k] / counts[k] for k in totals}
        out.update(
            actor_steps=float(actor_steps),
            kl_skipped=float(skipped),
            critic_warmup=float(warm),
            learning_roles=float(len(learning)),
        )
        return out

    def _zero_grad(self) -> None:
        for o in (*self.actor_opts.values(), *self.critic_opts.values()):
            o.zero_grad(set_to_none=True)

    def _step(self, adapters: set[str]) -> dict[str, float]:
        cfg = self.config
        norms: dict[str, float] = {}
        for name in sorted(adapters):
            n = torch.nn.utils.clip_grad_norm_(self.actor_params[name], cfg.max_grad_norm)
            norms["grad_norm_actor"] = float(n)
            self.actor_opts[name].step()
        for name, opt in self.critic_opts.items():
            params = self.critic_params[name]
            if any(p.grad is not None for p in params):
                n = torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
                norms["grad_norm_critic"] = float(n)
                opt.step()
        return norms


def _explained_variance(pred: Sequence[float], target: Sequence[float]) -> float:
    if len(target) < 2:
        return 0.0
    t = torch.tensor(list(target), dtype=torch.float64)
    p = torch.tensor(list(pred), dtype=torch.float64)
    var = float(t.var())
    return 0.0 if var == 0 else 1.0 - float((t - p).var()) / var


__all__ = [
    "Chain",
    "PPOConfig",
    "PPOLearner",
    "active_roles",
    "approx_kl",
    "clipped_policy_loss",
    "clipped_value_loss",
    "kl_to_reference",
    "masked_mean",
]
