"""The PPO update shared by MARFT and IPPO, readable top to bottom.

:meth:`PPOLearner.update` is the whole algorithm on one rollout, in order:

1. **rollout**: the batch comes from :func:`flexmg.agents.samples.collect_rollout`;
   every turn carries its tokens, the sampler's log-probs, and the *old*
   log-probs and values from the rollout's own scoring pass (exact: the policy
   does not change between rollout and update, and both passes run the same
   function without dropout). ``recompute_old=True`` recomputes them instead.
2. **sampler check** (``_score_old``): ``sampler_kl``, the mean over sampled tokens of
   ``log pi_sampler(a) - log pi_learner(a)``, ~0 when sampling = training.
3. **credit** (``_credit``): the algorithm's credit function (:mod:`flexmg.agents.credit`)
   turns each episode into chains (MARFT: through the agents; IPPO: per role).
4. **GAE** along the chains (:mod:`flexmg.agents.gae`).
5. **normalise** (``_normalise``) the advantages, unless every reward of the batch is equal:
   then the advantages are critic noise and no actor step follows
   (``_learning_roles``, with the critic warm-up and agent-by-agent schedule).
6. **epochs x minibatches x roles x micro-batches** (``_train_roles``; MARFT's
   roles one after another, each reweighted by its predecessors' ratios):
   clipped PPO (the ratio per ``ratio``), clipped value loss, entropy bonus,
   optional KL penalty to the base; gradients accumulate over micro-batches
   (same result as one batch).
7. **step**: gradient-norm clip, one optimizer step per learning adapter and
   per value head; a role whose approximate KL passed ``target_kl`` skips the
   step and stops for the rest of the update. ``critic_steps`` more critic-only
   steps follow on the cached features (:mod:`flexmg.agents.critic_fit`).
8. **statistics** (``_summary``): the averaged losses, returns, value fit.

Example:
    >>> import torch
    >>> loss, clipfrac = clipped_policy_loss(
    ...     torch.log(torch.tensor([1.5, 0.5, 1.0])), torch.zeros(3),
    ...     torch.tensor([1.0, 1.0, -1.0]), clip=0.2)
    >>> round(loss.item(), 4), round(clipfrac.item(), 4)
    (-0.2333, 0.6667)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from flexmg.agents.config import RATIOS, PPOConfig
from flexmg.agents.credit import rewards_are_flat
from flexmg.agents.critic_fit import fit_values
from flexmg.agents.gae import assign_advantages, normalize_advantages
from flexmg.agents.losses import (  # noqa: F401 - the loss terms, importable from here too
    approx_kl,
    clipped_policy_loss,
    clipped_value_loss,
    kl_to_reference,
    masked_mean,
    sampler_kl,
)
from flexmg.agents.marft import Algorithm
from flexmg.agents.samples import RolloutBatch, Sample
from flexmg.models.sampling import length_order
from flexmg.protocols import Chain, Policy


def active_roles(roles: Sequence[str], update: int, interval: int) -> list[str]:
    """Roles whose policy learns at ``update`` (agent-by-agent schedule).

    >>> active_roles(["a", "b", "c"], 5, 2), active_roles(["a", "b"], 5, 0)
    (['c'], ['a', 'b'])
    """
    if interval <= 0:
        return list(roles)
    return [roles[(update // interval) % len(roles)]]


def _by_length(part: Sequence[Sample]) -> list[Sample]:
    """``part`` in :func:`~flexmg.models.sampling.length_order`, so micro-batches pad little.

    Every loss is a sum with the whole minibatch's denominator, so the order changes no
    gradient (up to rounding).
    """
    order = length_order([s.prompt_ids for s in part], [s.action_ids for s in part])
    return [part[i] for i in order]


def _micro_batches(part: Sequence[Sample], size: int) -> list[Sequence[Sample]]:
    """``part`` in consecutive slices of ``size`` (all of it when ``size`` is 0)."""
    size = size or len(part)
    return [part[start : start + size] for start in range(0, len(part), size)]


def _pad(rows: Sequence[Sequence[float]], width: int, device: Any) -> torch.Tensor:
    out = torch.zeros(len(rows), width)
    for i, row in enumerate(rows):
        n = min(len(row), width)
        if n:
            out[i, :n] = torch.tensor(list(row[:n]), dtype=torch.float32)
    return out.to(device)


# ----------------------------------------------------------------------------- learner


class PPOLearner:
    """Optimizers and the PPO update for a team policy (see the module docstring).

    Args:
        policy: the team policy (:class:`flexmg.protocols.Policy`).
        config: the PPO hyperparameters (learning rates left None: the policy's model
            kind's, :meth:`PPOConfig.resolved`).
        algorithm: the algorithm (:class:`flexmg.agents.marft.Algorithm`): its credit
            function or critic-free advantages, and its update order.
    """

    def __init__(self, policy: Policy, config: PPOConfig, algorithm: Algorithm) -> None:
        from flexmg.models.zoo import model_kind

        self.policy = policy
        self.config = config.resolved(model_kind(str(getattr(policy.config, "model", "tiny"))))
        config = self.config
        assert config.lr_actor is not None and config.lr_critic is not None  # resolved
        assert config.adam_eps is not None
        self._lr_actor, self._lr_critic = float(config.lr_actor), float(config.lr_critic)
        self.algorithm = algorithm
        self.roles: list[str] = list(policy.roles)
        policy.score_reference = config.kl_coef > 0  # the rollout then scores the base too
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
                if kind == "critic" and algorithm.critic == "none":
                    continue  # critic-free: no value heads to train
                name = name_of(role)
                if name in opts:  # shared by several roles
                    continue
                params = [p for p in params_of(role) if p.requires_grad]
                if not params:
                    raise ValueError(f"policy has no trainable parameters for {kind} {name!r}")
                params_by[name] = params
                opts[name] = torch.optim.Adam(params, lr=lr, eps=config.adam_eps)

    def set_progress(self, update: int, total: int) -> float:
        """Set learning rates for ``update`` of ``total`` (linear decay); returns the factor."""
        frac = 1.0
        if self.config.lr_schedule == "linear" and total > 0:
            frac = max(0.0, 1.0 - update / total)
        for opts, lr in ((self.actor_opts, self._lr_actor),
                         (self.critic_opts, self._lr_critic)):  # fmt: skip
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

    # -- the update, top to bottom -----------------------------------------------------
    def update(
        self, batch: RolloutBatch, update: int, generator: torch.Generator | None = None
    ) -> dict[str, float]:
        """One PPO update on a fresh rollout (steps 1-8 of the module docstring).

        Args:
            batch: the rollout (samples with the rollout's old log-probs and values).
            update: the 0-based update counter (drives warm-up and agent-by-agent).
            generator: RNG for minibatch shuffling (seed it for exact resume).

        Returns:
            Averaged statistics (``sampler_kl``, losses, ``clipfrac/<role>``, ...).
        """
        stats = _Stats()
        self._score_old(batch.samples, stats)  # 1-2
        self._credit(batch)  # 3-4
        flat = self._normalise(batch, stats)  # 5
        learning = self._learning_roles(update, flat)
        by_role = batch.by_role()
        steps = self._train_roles(by_role, learning, len(batch.episodes), generator, stats)  # 6-7
        values = getattr(self.policy, "values", None)  # TeamPolicy's value of cached features
        if self.config.critic_steps and self.algorithm.critic != "none" and values is not None:
            fit = fit_values(values, by_role, list(self.critic_opts.values()),
                             [p for ps in self.critic_params.values() for p in ps],
                             self.config.critic_steps, self.config.max_grad_norm,
                             self.config.critic_holdout)  # fmt: skip
            if fit is not None:
                stats.set("critic_fit_loss", fit.fit_loss)
                stats.set("critic_steps_kept", float(fit.steps_kept))
                if fit.holdout_loss is not None:
                    stats.set("critic_holdout_loss", fit.holdout_loss)
        self._zero_grad()
        return self._summary(batch.samples, by_role, stats, steps, update, learning)

    def _score_old(self, samples: Sequence[Sample], stats: _Stats) -> None:
        """Steps 1-2: the old log-probs and values, and how far the sampler is from them.

        The old log-probs and values are the rollout's, or recomputed when
        ``recompute_old``; ``sampler_kl`` says whether the learner scores what the
        sampler drew.
        """
        if self.config.recompute_old:
            self.recompute(samples)
        stats.set("sampler_kl", sampler_kl(samples))

    def _credit(self, batch: RolloutBatch) -> None:
        """Steps 3-4: the algorithm's critic-free advantages, or GAE along its credit chains."""
        cfg = self.config
        if self.algorithm.advantages is not None:
            self.algorithm.advantages(batch.episodes, batch.metrics)
            return
        assert self.algorithm.credit is not None  # Algorithm checks: credit xor advantages
        assign_advantages(
            batch.episodes, self.algorithm.credit, level=cfg.level, gamma=cfg.gamma,
            lam=cfg.lam, token_gamma=cfg.token_gamma, token_lam=cfg.token_lam,
            truncation_penalty=cfg.truncation_penalty,
        )  # fmt: skip

    def _normalise(self, batch: RolloutBatch, stats: _Stats) -> bool:
        """Step 5: normalise the advantages in place; True when every reward is equal.

        A critic-free algorithm's advantages are already relative to their group and
        are left as they are. Equal rewards everywhere make the advantages critic
        noise: the caller then takes no actor step.
        """
        cfg = self.config
        critic = self.algorithm.critic != "none"
        flat = rewards_are_flat(batch.episodes, cfg.truncation_penalty)
        stats.set(
            "adv_mean_raw",
            normalize_advantages(batch.samples, cfg.level, cfg.normalize_advantages and critic),
        )
        stats.set("flat_rewards", float(flat))
        return flat

    def _warming_up(self, update: int) -> bool:
        """Whether ``update`` is in the critic warm-up (value heads learn, no actor step)."""
        return self.algorithm.critic != "none" and update < self.config.critic_warmup

    def _learning_roles(self, update: int, flat: bool) -> set[str]:
        """The roles whose policy takes steps at ``update``.

        None during the critic warm-up or on flat rewards, else the agent-by-agent
        schedule's (:func:`active_roles`).
        """
        if self._warming_up(update) or flat:
            return set()
        return set(active_roles(self.roles, update, self.config.agent_interval))

    def _train_roles(
        self, by_role: dict[str, list[Sample]], learning: set[str], n_episodes: int,
        generator: torch.Generator | None, stats: _Stats,
    ) -> _Steps:  # fmt: skip
        """Steps 6-7: epochs x minibatches x roles (x micro-batches), one step per minibatch.

        MARFT's agent-by-agent order (:attr:`sequential`): one role after another, each
        weighted by how its predecessors' updated policies changed what they said
        (their ratio product, :meth:`_reweight`); otherwise every role in each minibatch.
        """
        steps = _Steps()
        weights = [1.0] * n_episodes
        if not self.sequential:
            self._epochs(self.roles, by_role, learning, weights, generator, stats, steps)
            return steps
        for i, role in enumerate(self.roles):
            self._epochs([role], by_role, learning, weights, generator, stats, steps)
            if i + 1 < len(self.roles) and role in learning and role in by_role:
                self._reweight(role, by_role[role], weights, stats)
        return steps

    def _summary(
        self, samples: Sequence[Sample], by_role: dict[str, list[Sample]], stats: _Stats,
        steps: _Steps, update: int, learning: set[str],
    ) -> dict[str, float]:  # fmt: skip
        """The update's statistics: the averaged losses plus the batch's returns and values.

        Explained variance is NaN on a flat-reward batch: the returns then vary only by
        the critics' own bootstrap, and a ratio to that near-zero variance measures nothing.
        """
        out = stats.means()
        rets = [s.ret for s in samples]
        vals = [s.old_value for s in samples]
        if self.algorithm.critic != "none":
            ev = _explained_variance if not out.get("flat_rewards") else _not_measured
            out.update(value_mean=sum(vals) / max(1, len(vals)), explained_variance=ev(vals, rets))
            for role, part in by_role.items():
                out[f"explained_variance/{role}"] = ev(
                    [s.old_value for s in part], [s.ret for s in part]
                )
        out.update(
            return_mean=sum(rets) / max(1, len(rets)),
            truncated_frac=sum(s.truncated for s in samples) / max(1, len(samples)),
            actor_steps=float(steps.actor),
            kl_skipped=float(steps.skipped),
            critic_warmup=float(self._warming_up(update)),
            learning_roles=float(len(learning)),
        )
        return out

    @property
    def sequential(self) -> bool:
        """Whether roles learn one after another (MARFT; needs one adapter per role)."""
        adapters = {self.policy.adapter_name(r) for r in self.roles}
        return self.algorithm.sequential and len(adapters) == len(self.roles) > 1

    def _epochs(
        self, roles: Sequence[str], by_role: dict[str, list[Sample]], learning: set[str],
        weights: Sequence[float], generator: torch.Generator | None, stats: _Stats,
        steps: _Steps,
    ) -> None:  # fmt: skip
        """``epochs`` x ``minibatches`` of ``roles``' samples, one optimizer step per minibatch."""
        cfg = self.config
        stopped: set[str] = set()  # adapters stopped by target KL
        for _epoch in range(cfg.epochs):
            order = {r: torch.randperm(len(by_role.get(r, [])), generator=generator).tolist()
                     for r in roles}  # fmt: skip
            for mb in range(cfg.minibatches):
                self._zero_grad()
                stepping: set[str] = set()
                for role in roles:
                    part = [by_role[role][i] for i in order[role][mb :: cfg.minibatches]]
                    if not part:
                        continue
                    adapter = self.policy.adapter_name(role)
                    learn = role in learning and adapter not in stopped
                    kl = self._accumulate(role, part, learn, stats, weights)
                    if learn and cfg.target_kl is not None and kl > cfg.target_kl:
                        stopped.add(adapter)  # too far from the rollout policy: stop this role
                        steps.skipped += 1
                        for p in self.actor_params[adapter]:
                            p.grad = None
                    elif learn:
                        stepping.add(adapter)
                stepping -= stopped
                for name, norm in self._step(stepping).items():
                    stats.add(name, norm)
                steps.actor += len(stepping)

    @torch.no_grad()
    def _reweight(
        self, role: str, part: Sequence[Sample], weights: list[float], stats: _Stats
    ) -> None:
        """Multiply each episode's weight by ``role``'s new/old action ratio there (clamped).

        The successors of ``role`` then learn against its *updated* policy: HAPPO's
        sequential correction, the product of the predecessors' ratios, kept within
        ``[1 - clip, 1 + clip]`` so one agent's step cannot swamp the next one's signal.
        """
        cfg = self.config
        part = _by_length(part)
        ratios: list[float] = []
        for micro in _micro_batches(part, int(self.policy.config.micro_batch)):
            with torch.no_grad():  # a measurement: no graph to keep
                ev = self.policy.evaluate(
                    role, [s.prompt_ids for s in micro], [s.action_ids for s in micro],
                    with_entropy=False, with_ref=False, token_values=False, **_features(micro),
                )  # fmt: skip
            mask = ev.mask.float()
            old = _pad([s.old_token_logprobs for s in micro], mask.shape[1], mask.device)
            log_ratio = ((ev.token_logprobs.float() - old) * mask).sum(-1)
            if cfg.ratio != "action_sum":
                log_ratio = log_ratio / mask.sum(-1).clamp(min=1.0)
            ratios.extend(torch.exp(log_ratio).tolist())
        low, high = 1.0 - cfg.clip, 1.0 + cfg.clip
        for s, r in zip(part, ratios, strict=True):
            weights[s.episode] = min(max(weights[s.episode] * r, low), high)
        stats.set(f"sequential_ratio/{role}", sum(ratios) / max(1, len(ratios)))
        # how far the successors' weights move: 0 means the agent-by-agent update is the
        # simultaneous one (MARFT's update equals IPPO's up to the critic)
        stats.set(
            f"sequential_shift/{role}", sum(abs(r - 1.0) for r in ratios) / max(1, len(ratios))
        )

    def _accumulate(
        self, role: str, part: Sequence[Sample], learn: bool, stats: _Stats,
        weights: Sequence[float] | None = None,
    ) -> float:  # fmt: skip
        """Backward the losses of one role's minibatch, micro-batch by micro-batch.

        Every loss is divided by the whole minibatch's count (samples or tokens),
        so the accumulated gradient equals one pass over the minibatch. Returns
        the approximate KL of the minibatch to the rollout policy.
        """
        cfg = self.config
        critic = self.algorithm.critic != "none"
        n_samples = float(len(part))
        n_tokens = float(sum(len(s.action_ids) for s in part))
        n_vtokens = float(sum(max(len(s.action_ids), 1) for s in part))
        role_stats = _Stats()
        for micro in _micro_batches(_by_length(part), int(self.policy.config.micro_batch)):
            ev = self._evaluate_micro(role, micro, learn, critic)
            dev = ev.mask.device
            mask = ev.mask.float()
            width = mask.shape[1]
            tok_lp = ev.token_logprobs.float()
            old_tok_lp = _pad([s.old_token_logprobs for s in micro], width, dev)
            kl = approx_kl(tok_lp.detach(), old_tok_lp, mask, n_tokens)
            role_stats.add("approx_kl", float(kl))
            loss = torch.zeros((), device=dev)
            if critic:
                v_loss = self._value_loss(ev, micro, mask, n_samples, n_vtokens)
                role_stats.add("value_loss", float(v_loss.detach()))
                loss = loss + cfg.value_coef * v_loss
            if learn:
                loss = self._add_actor_loss(
                    loss, ev, micro, tok_lp, old_tok_lp, mask, n_samples, n_tokens, weights,
                    role_stats,
                )  # fmt: skip
            if loss.requires_grad:
                loss.backward()
        return _merge_role_stats(stats, role_stats, role)

    def _evaluate_micro(self, role: str, micro: Sequence[Sample], learn: bool, critic: bool) -> Any:
        """The policy's evaluation of one micro-batch, with what the configured losses need."""
        cfg = self.config
        return self.policy.evaluate(
            role, [s.prompt_ids for s in micro], [s.action_ids for s in micro],
            with_entropy=learn and cfg.entropy_coef > 0, with_ref=False,
            token_values=critic and cfg.level == "token",
            **({} if cfg.level == "token" else _features(micro)),
        )  # fmt: skip

    def _add_actor_loss(
        self, loss: torch.Tensor, ev: Any, micro: Sequence[Sample], tok_lp: torch.Tensor,
        old_tok_lp: torch.Tensor, mask: torch.Tensor, n_samples: float, n_tokens: float,
        weights: Sequence[float] | None, role_stats: _Stats,
    ) -> torch.Tensor:  # fmt: skip
        """``loss`` plus the policy loss, minus the entropy bonus, plus the KL penalty."""
        cfg = self.config
        dev, width = mask.device, mask.shape[1]
        adv = self._advantages(micro, width, dev)
        if weights is not None:
            w = torch.tensor([weights[s.episode] for s in micro], device=dev)
            adv = adv * (w.unsqueeze(-1) if adv.dim() == 2 else w)
        pg, clipfrac = self._policy_loss(tok_lp, old_tok_lp, adv, mask, n_samples, n_tokens)
        role_stats.add("policy_loss", float(pg.detach()))
        role_stats.add("clipfrac", float(clipfrac))
        loss = loss + pg
        if ev.entropy is not None:
            entropy = masked_mean(ev.entropy.float(), mask, n_tokens)
            role_stats.add("entropy", float(entropy.detach()))
            loss = loss - cfg.entropy_coef * entropy
        if cfg.kl_coef > 0:
            ref = _pad([s.ref_token_logprobs or [] for s in micro], width, dev)
            kl_ref = kl_to_reference(tok_lp, ref, mask, n_tokens)
            role_stats.add("kl_ref", float(kl_ref.detach()))
            loss = loss + cfg.kl_coef * kl_ref
        return loss

    def _advantages(self, part: Sequence[Sample], width: int, device: Any) -> torch.Tensor:
        """Advantages as ``[B]`` (action ratios) or ``[B, T]`` (token ratios)."""
        if self.config.level == "token":
            return _pad([s.token_advantages for s in part], width, device)
        adv = torch.tensor([s.advantage for s in part], device=device)
        return adv.unsqueeze(-1).expand(-1, width) if self.config.ratio == "token" else adv

    def _policy_loss(
        self, tok_lp: torch.Tensor, old_tok_lp: torch.Tensor, adv: torch.Tensor,
        mask: torch.Tensor, n_samples: float, n_tokens: float,
    ) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
        """The clipped surrogate with the configured ratio (token, action mean or action sum)."""
        cfg = self.config
        if cfg.level == "token" or cfg.ratio == "token":
            return clipped_policy_loss(tok_lp, old_tok_lp, adv, cfg.clip, mask, n_tokens)
        log_ratio = ((tok_lp - old_tok_lp) * mask).sum(-1)
        if cfg.ratio == "action_mean":
            log_ratio = log_ratio / mask.sum(-1).clamp(min=1.0)
        return clipped_policy_loss(log_ratio, torch.zeros_like(log_ratio), adv, cfg.clip,
                                   denominator=n_samples)  # fmt: skip

    def _value_loss(
        self, ev: Any, part: Sequence[Sample], mask: torch.Tensor, n_samples: float,
        n_vtokens: float,
    ) -> torch.Tensor:  # fmt: skip
        cfg = self.config
        values = ev.values.float()
        dev = values.device
        old_v = torch.tensor([s.old_value for s in part], device=dev)
        if cfg.level == "action":
            ret = torch.tensor([s.ret for s in part], device=dev)
            return clipped_value_loss(values, old_v, ret, cfg.value_clip, denominator=n_samples)
        # token values; an empty action keeps one virtual token: its action-level value
        width = mask.shape[1]
        vwidth = max(width, 1)
        empty = mask.sum(dim=1) == 0
        tv = torch.zeros(len(part), vwidth, device=dev)
        tv[:, :width] = ev.token_values.float()
        tv[empty, 0] = values[empty]
        vmask = torch.zeros(len(part), vwidth, device=dev)
        vmask[:, :width] = mask
        vmask[empty, 0] = 1.0
        old_tv = _pad([s.old_token_values or [s.old_value] for s in part], vwidth, dev)
        t_ret = _pad([s.token_returns for s in part], vwidth, dev)
        return clipped_value_loss(tv, old_tv, t_ret, cfg.value_clip, vmask, n_vtokens)

    @torch.no_grad()
    def recompute(self, samples: Sequence[Sample]) -> None:
        """Refill the old log-probs and values of ``samples`` under the current policy."""
        by_role: dict[str, list[Sample]] = {}
        for s in samples:
            by_role.setdefault(s.role, []).append(s)
        with_ref = self.config.kl_coef > 0
        for role, group in by_role.items():
            tok_lp, values, tok_v, ref = self.policy.score(
                role, [s.prompt_ids for s in group], [s.action_ids for s in group], with_ref
            )
            for i, s in enumerate(group):
                s.old_token_logprobs, s.old_value, s.old_token_values = (
                    tok_lp[i],
                    values[i],
                    tok_v[i],
                )
                s.ref_token_logprobs = ref[i] if ref is not None else None

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


def _features(part: Sequence[Sample]) -> dict[str, torch.Tensor]:
    """``{"critic_features": stacked}`` of ``part`` for ``Policy.evaluate`` ({} if any lacks them)."""
    feats = [s.critic_features for s in part]
    if not feats or any(f is None for f in feats):
        return {}
    return {"critic_features": torch.stack([torch.as_tensor(f) for f in feats])}


@dataclass
class _Steps:
    """Counts of optimizer steps taken and skipped (target KL) in one update."""

    actor: int = 0
    skipped: int = 0


class _Stats:
    """Running sums and counts of named statistics."""

    def __init__(self) -> None:
        self.sums: dict[str, float] = {}
        self.counts: dict[str, int] = {}

    def add(self, name: str, value: float) -> None:
        self.sums[name] = self.sums.get(name, 0.0) + float(value)
        self.counts[name] = self.counts.get(name, 0) + 1

    def set(self, name: str, value: float) -> None:
        self.sums[name], self.counts[name] = float(value), 1

    def totals(self) -> dict[str, float]:
        return dict(self.sums)

    def means(self) -> dict[str, float]:
        return {k: self.sums[k] / self.counts[k] for k in self.sums}


def _merge_role_stats(stats: _Stats, role_stats: _Stats, role: str) -> float:
    """Add one role's minibatch totals to ``stats``; returns its approximate KL."""
    totals = role_stats.totals()
    for name, value in totals.items():
        stats.add(name, value)
    if "clipfrac" in totals:
        stats.add(f"clipfrac/{role}", totals["clipfrac"])
    return totals.get("approx_kl", 0.0)


def _not_measured(pred: Sequence[float], target: Sequence[float]) -> float:
    return math.nan


def _explained_variance(pred: Sequence[float], target: Sequence[float]) -> float:
    if len(target) < 2:
        return 0.0
    t = torch.tensor(list(target), dtype=torch.float64)
    p = torch.tensor(list(pred), dtype=torch.float64)
    var = float(t.var())
    return 0.0 if var == 0 else 1.0 - float((t - p).var()) / var


__all__ = [
    "RATIOS",
    "Chain",
    "PPOConfig",
    "PPOLearner",
    "active_roles",
    "approx_kl",
    "clipped_policy_loss",
    "clipped_value_loss",
    "kl_to_reference",
    "masked_mean",
    "normalize_advantages",
    "sampler_kl",
]
