"""The team policy: one base causal LM, one LoRA adapter per role, a value-head critic.

* One base model in memory. Each role owns a peft LoRA adapter (multi-adapter,
  ``set_adapter`` per call) or, with ``share_parameters=True``, all roles share
  one adapter named ``"shared"`` (roles told apart by their prompts).
* The critic is an MLP value head on the final hidden state of the *same* base
  with adapters disabled (``model.disable_adapter()``): centralized (one head
  ``"team"``, MARFT) or one head per role (IPPO). The KL reference model is the
  same base with adapters disabled. No second copy of the base exists.
* ``act`` samples a batch with flexmg's one decoder
  (:class:`flexmg.models.sampling.Decoder`: its own KV-cached loop, nothing
  inherited from the model's generation config) with the role's own sampling
  settings (:meth:`PolicyConfig.sampling_for`). The sampler's log-probs are
  PPO's old log-probs: the sampler and the learner compute the same
  distribution from the same weights (the learner checks it, ``sampler_kl``).
  The critic reads the base's final hidden state at the prompt's last token;
  that feature is computed once per action (a prompt-only forward, adapters
  off) and kept, since the base never changes. ``full_scoring`` (set by a
  learner that needs token-level values or the reference model) scores the
  whole batch again instead. ``evaluate`` recomputes log-probs, entropies and
  values of stored actions with gradients for the update.
* Log-probs come from the final hidden states through the output layer in
  chunks of positions, never as a full ``[B, T, vocabulary]`` float32 tensor;
  ``micro_batch`` bounds the rows per forward pass.

Layout of a batch in ``evaluate``: ``[left pad | prompt | action | right pad]``
with position ids ``cumsum(mask) - 1``. Action token ``k`` of every row sits at
column ``P + k`` (``P`` = longest prompt), so its log-prob comes from the hidden
state at column ``P - 1 + k``, as does its token-level value; the action-level
value is read at column ``P - 1`` (the last prompt token). An action keeps its
stop token (EOS or the chat template's turn end), so stopping is learned.

Example:
    >>> from flexmg.agents.policy import PolicyConfig, TeamPolicy
    >>> policy = TeamPolicy(["solver", "verifier"], PolicyConfig(max_new_tokens=12))
    >>> batch = policy.act("solver", [{"task": "What is 7 + 5?", "role": "solver"}])
    >>> ev = policy.evaluate("solver", batch.prompt_ids, batch.action_ids)
    >>> old = torch.tensor(batch.token_logprobs[0])
    >>> bool(torch.allclose(ev.token_logprobs[0, : len(old)], old, atol=1e-4))
    True
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from flexmg.agents.config import PolicyConfig
from flexmg.agents.critic import build_value_heads
from flexmg.agents.policy_state import STATE_FORMAT, load_state, trainable_state
from flexmg.models.config import SamplingConfig
from flexmg.models.loading import load_model, resolve_device, resolve_dtype
from flexmg.models.prompts import PromptEncoder, resolve_prompt_style
from flexmg.models.sampling import Decoder, length_order, token_logprobs
from flexmg.models.zoo import model_kind

__all__ = ["STATE_FORMAT", "ActionBatch", "Evaluation", "TeamPolicy", "lora_targets"]


@dataclass
class ActionBatch:
    """What :meth:`TeamPolicy.act` returns for one role's batch, one entry per observation.

    Attributes:
        texts: the decoded actions (stop token removed).
        prompt_ids, action_ids: token ids (the action keeps its stop token).
        truncated: the action hit ``max_new_tokens`` before a stop token.
        sampler_logprobs: per token, the log-prob the sampler drew it with.
        token_logprobs: per token, the learner's log-prob (PPO's old log-prob).
        values: the critic's action-level value.
        token_values: per token, the critic's token-level value.
        ref_token_logprobs: per token, the base model's log-prob (when the
            policy's ``score_reference`` is on), else None.
        critic_features: per action, the critic's input (the base's final hidden
            state at the prompt's last token), else None.

    With ``greedy=True`` nothing is scored: the last six are empty.
    """

    texts: list[str]
    prompt_ids: list[list[int]]
    action_ids: list[list[int]]
    truncated: list[bool]
    sampler_logprobs: list[list[float]]
    token_logprobs: list[list[float]]
    values: list[float]
    token_values: list[list[float]]
    ref_token_logprobs: list[list[float]] | None = None
    critic_features: list[torch.Tensor] | None = None


@dataclass
class Evaluation:
    """What :meth:`TeamPolicy.evaluate` returns; ``[B, T]`` tensors, T = longest action.

    ``entropy``, ``token_values`` and ``ref_token_logprobs`` are None when not asked for.
    """

    token_logprobs: torch.Tensor
    mask: torch.Tensor
    action_logprob: torch.Tensor
    values: torch.Tensor
    entropy: torch.Tensor | None = None
    token_values: torch.Tensor | None = None
    ref_token_logprobs: torch.Tensor | None = None


_FAMILY_TARGETS = {
    "qwen2": ["q_proj", "v_proj"], "llama": ["q_proj", "v_proj"], "mistral": ["q_proj", "v_proj"],
    "gpt2": ["c_attn"], "gpt_neox": ["query_key_value"],
}  # fmt: skip


def lora_targets(base: Any, configured: Sequence[str] | None) -> list[str]:
    """The LoRA target modules: as configured, else peft's default for the model family."""
    if configured:
        return list(configured)
    model_type = str(getattr(base.config, "model_type", ""))
    try:
        from peft.utils.constants import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING

        targets = TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING.get(model_type)
    except ImportError:  # an older or newer peft without the table: ours covers the usual ones
        targets = None
    targets = targets or _FAMILY_TARGETS.get(model_type)
    if not targets:
        raise ValueError(
            f"no default LoRA target modules for model type {model_type!r}; set "
            "PolicyConfig.lora_target_modules (--lora-target-modules) to its attention layers"
        )
    return list(targets)


def _safe_name(role: str) -> str:
    return re.sub(r"[^0-9A-Za-z_]", "_", role)


def _checked_roles(roles: Sequence[str]) -> list[str]:
    """``roles`` as a list of distinct non-empty names (a clear error otherwise)."""
    if isinstance(roles, str) or not roles:
        raise ValueError(f"roles must be a non-empty list of role names, got {roles!r}")
    out = list(roles)
    if any(not isinstance(r, str) or not r for r in out) or len(set(out)) != len(out):
        raise ValueError(f"roles must be distinct non-empty strings, got {out!r}")
    return out


def _adapter_names(roles: Sequence[str], shared: bool) -> dict[str, str]:
    """Role -> its adapter's name (``"shared"`` for all with parameter sharing)."""
    names = {r: ("shared" if shared else _safe_name(r)) for r in roles}
    if not shared and len(set(names.values())) != len(roles):
        raise ValueError(f"roles {list(roles)!r} collide after sanitising to adapter names")
    return names


def _freeze(base: Any, gradient_checkpointing: bool) -> None:
    """Freeze the base model (only adapters and value heads learn)."""
    for p in base.parameters():
        p.requires_grad_(False)
    if gradient_checkpointing:  # renamed in transformers 5.2x; same function
        if hasattr(base, "activation_checkpointing_enable"):
            base.activation_checkpointing_enable({"use_reentrant": False})
        else:
            base.gradient_checkpointing_enable({"use_reentrant": False})


def _lora_parameters(model: Any, adapters: Sequence[str]) -> dict[str, list[tuple[str, Any]]]:
    """Adapter name -> its LoRA parameters (name, parameter), in the model's order."""
    params: dict[str, list[tuple[str, Any]]] = {a: [] for a in adapters}
    for pname, p in model.named_parameters():
        if "lora_" not in pname:
            continue
        found = re.search(r"lora_[A-Za-z_]+\.([^.]+)(?:\.|$)", pname)
        owner = found.group(1) if found else None
        if owner not in params:
            raise RuntimeError(f"LoRA parameter {pname!r} belongs to no known adapter")
        params[owner].append((pname, p))
    return params


def _check_evaluate_rows(
    prompt_ids: Sequence[Sequence[int]], action_ids: Sequence[Sequence[int]]
) -> None:
    """Refuse prompts and actions of different counts, or an empty prompt."""
    if len(prompt_ids) != len(action_ids):
        raise ValueError(
            f"prompt_ids and action_ids must have the same length, got "
            f"{len(prompt_ids)} and {len(action_ids)}"
        )
    if any(len(p) == 0 for p in prompt_ids):
        raise ValueError("every prompt needs at least one token (use prompt_ids())")


class TeamPolicy(nn.Module):
    """Per-role LoRA policies on one shared base model, plus value heads.

    Args:
        roles: role names in any order (e.g. ``["solver", "verifier"]``).
        config: a :class:`PolicyConfig`.

    Attributes:
        roles, config, device, tokenizer, model (the peft model), value_heads.
    """

    def __init__(self, roles: Sequence[str], config: PolicyConfig | None = None) -> None:
        super().__init__()
        config = config if config is not None else PolicyConfig()
        if not isinstance(config, PolicyConfig):
            raise TypeError(f"config must be a PolicyConfig, got {type(config).__name__}")
        config = config.resolved(roles=roles)  # the model kind's defaults where they are None
        self.roles: list[str] = _checked_roles(roles)
        self.config = config
        self.device = resolve_device(config.device)
        self.dtype = resolve_dtype(config.dtype, self.device)
        base, self.tokenizer = load_model(config.model, config.device, config.dtype)
        _freeze(base, config.gradient_checkpointing)
        self._adapter_of = _adapter_names(self.roles, config.share_parameters)
        adapters = list(dict.fromkeys(self._adapter_of.values()))
        self.model = self._add_adapters_and_critic(base, adapters)
        self._lora_params = _lora_parameters(self.model, adapters)
        self._active: str | None = None
        self._activate_adapter(adapters[0])
        style = resolve_prompt_style(
            config.prompt_style, self.tokenizer, is_tiny=model_kind(config.model) == "tiny"
        )
        prompts = PromptEncoder(self.tokenizer, style, config.max_prompt_tokens)
        self.decoder = Decoder(self.model, self.tokenizer, prompts, stop_source=base,
                               name=config.model)  # fmt: skip
        self.score_reference = False  # act() also scores the base (a KL penalty's learner sets it)
        self.full_scoring = False  # act() scores everything again (token values, reference)
        self.eval()
        self._check_output_head()

    def _add_adapters_and_critic(self, base: Any, adapters: list[str]) -> Any:
        """The peft model with one LoRA adapter per name, and the value heads (seeded)."""
        from peft import LoraConfig, get_peft_model

        config = self.config
        lora = LoraConfig(
            r=config.lora_r,
            lora_alpha=config.lora_alpha,
            lora_dropout=config.lora_dropout,
            target_modules=lora_targets(base, config.lora_target_modules),
            bias="none",
            task_type="CAUSAL_LM",
        )
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.seed)
            try:
                model = get_peft_model(base, lora, adapter_name=adapters[0])
            except ValueError as exc:
                raise ValueError(
                    f"LoRA target modules {lora.target_modules} not found in "
                    f"{config.model!r}; set PolicyConfig.lora_target_modules to names of its "
                    f"linear layers. Cause: {exc}"
                ) from exc
            for name in adapters[1:]:
                model.add_adapter(name, lora)
            critic_names = {"centralized": ["team"], "none": []}.get(config.critic, self.roles)
            hidden = int(base.config.hidden_size)
            self.value_heads = build_value_heads(
                [self._head_key(n) for n in critic_names], hidden, config.critic_hidden
            ).to(self.device)
        return model

    @property
    def prompt_style(self) -> str:
        """The resolved prompt style (``compact``, ``chat`` or ``plain``)."""
        return self.decoder.prompts.style

    @property
    def stop_ids(self) -> list[int]:
        """Every token id that ends an action."""
        return self.decoder.stop_ids

    @property
    def _head(self) -> nn.Module:
        """The output layer (final hidden state -> logits)."""
        return self.model.get_output_embeddings()

    # ------------------------------------------------------------------ names
    @staticmethod
    def _head_key(name: str) -> str:
        return "h_" + _safe_name(name)

    def _check_role(self, role: str) -> None:
        if role not in self._adapter_of:
            raise KeyError(f"unknown role {role!r}; this policy's roles are {self.roles}")

    def adapter_name(self, role: str) -> str:
        """Name of the peft adapter of ``role`` (``"shared"`` with parameter sharing)."""
        self._check_role(role)
        return self._adapter_of[role]

    def critic_name(self, role: str) -> str:
        """Name of the value head of ``role`` (``"team"`` for the centralized critic)."""
        self._check_role(role)
        return "team" if self.config.critic == "centralized" else role

    def _activate_adapter(self, adapter: str) -> None:
        if self._active != adapter:
            self.model.set_adapter(adapter)
            self._active = adapter
            self._keep_adapters_trainable()

    def _keep_adapters_trainable(self) -> None:
        # peft freezes inactive adapters (set_adapter, disable_adapter); keep every LoRA
        # param trainable so optimizers built once from policy_parameters() stay valid.
        for params in self._lora_params.values():
            for _, p in params:
                p.requires_grad_(True)

    @contextlib.contextmanager
    def _base_only(self) -> Iterator[None]:
        """The base model, adapters disabled (critic features, KL reference), no gradients."""
        try:
            with torch.no_grad(), self.model.disable_adapter(), self._scoring_mode():
                yield
        finally:
            self._keep_adapters_trainable()

    # ---------------------------------------------------------------- params
    def policy_parameters(self, role: str) -> list[nn.Parameter]:
        """The LoRA parameters of ``role``'s adapter (shared by all roles when sharing)."""
        return [p for _, p in self._lora_params[self.adapter_name(role)]]

    def critic_parameters(self, role: str | None = None) -> list[nn.Parameter]:
        """Parameters of ``role``'s value head, or of all value heads when ``role`` is None."""
        if role is None:
            return list(self.value_heads.parameters())
        return list(self.value_heads[self._head_key(self.critic_name(role))].parameters())

    # ---------------------------------------------------------------- prompts
    def build_prompt(self, obs: Mapping[str, Any]) -> str:
        """Predecessor-conditioned prompt text for one observation (the decoder's prompts)."""
        return self.decoder.prompts.render(obs)

    def prompt_ids(self, obs: Mapping[str, Any]) -> list[int]:
        """Token ids of ``obs``'s prompt, at most ``max_prompt_tokens`` of them.

        See :meth:`flexmg.models.prompts.PromptEncoder.prompt_ids`: an over-long
        prompt loses its oldest context first.
        """
        return self.decoder.prompts.prompt_ids(obs)

    # ------------------------------------------------------------------- act
    @torch.no_grad()
    def act(
        self, role: str, observations: Sequence[Mapping[str, Any]], greedy: bool = False
    ) -> ActionBatch:
        """Generate one action per observation with ``role``'s adapter (KV cache, batched).

        Sampling uses the role's own settings (:meth:`PolicyConfig.sampling_for`,
        :meth:`PolicyConfig.max_new_tokens_for`; greedy: the argmax of the raw
        logits). A sampled batch comes back with PPO's old log-probs (the
        sampler's) and the critic's features and values (see the module
        docstring); with ``full_scoring`` the learner's scoring pass gives them.
        """
        self._check_role(role)
        if isinstance(observations, Mapping):
            raise TypeError("act() expects a list of observation dicts, got a single dict")
        prompt_ids = [self.prompt_ids(o) for o in observations]
        if not prompt_ids:
            return ActionBatch([], [], [], [], [], [], [], [], None)
        self._activate_adapter(self.adapter_name(role))
        with self._scoring_mode():
            sampled, texts = self.decoder.generate(
                prompt_ids, self.config.sampling_for(role), self.config.max_new_tokens_for(role),
                greedy=greedy,
            )  # fmt: skip
        actions, n = sampled.action_ids, len(sampled.action_ids)
        if greedy:
            return ActionBatch(texts, prompt_ids, actions, sampled.truncated,
                               [[] for _ in range(n)], [[] for _ in range(n)], [0.0] * n,
                               [[] for _ in range(n)], None)  # fmt: skip
        if self.full_scoring or self.score_reference:
            scores = self.score(role, prompt_ids, actions, with_ref=self.score_reference)
            return ActionBatch(
                texts, prompt_ids, actions, sampled.truncated, sampled.sampler_logprobs, *scores
            )
        if self.config.critic == "none":  # critic-free: nothing to value
            features, values = None, [0.0] * n
        else:
            feats = self.critic_features(prompt_ids)
            values = self.values(role, feats).float().cpu().tolist()
            features = list(feats.cpu().unbind(0))
        return ActionBatch(
            texts, prompt_ids, actions, sampled.truncated, sampled.sampler_logprobs,
            [list(lp) for lp in sampled.sampler_logprobs], values, [[] for _ in range(n)],
            None, features,
        )  # fmt: skip

    @torch.no_grad()
    def critic_features(self, prompt_ids: Sequence[Sequence[int]]) -> torch.Tensor:
        """``[B, hidden]``: the base's final hidden state at each prompt's last token.

        What the critic reads (adapters off, so it never changes during training):
        one prompt-only forward per *distinct* prompt (a group's episodes share
        their first role's prompt), ``micro_batch`` rows at a time.
        """
        index: dict[tuple[int, ...], int] = {}
        rows_of = [index.setdefault(tuple(p), len(index)) for p in prompt_ids]
        distinct = [list(p) for p in index]
        size = self.config.micro_batch or max(len(distinct), 1)
        out: list[torch.Tensor] = []
        with self._base_only():
            for start in range(0, len(distinct), size):
                rows = distinct[start : start + size]
                ids, attn, p_len = self._layout(rows, [[] for _ in rows])
                positions = (attn.cumsum(-1) - 1).clamp(min=0)
                out.append(self._final_hidden(ids, attn, positions)[:, p_len - 1].float())
        if not out:
            return torch.zeros(0, 0)
        return torch.cat(out)[torch.as_tensor(rows_of, dtype=torch.long, device=out[0].device)]

    def values(self, role: str, features: torch.Tensor) -> torch.Tensor:
        """The critic's value of ``role``'s turn from :meth:`critic_features` (``[B]``)."""
        head = self.value_heads[self._head_key(self.critic_name(role))]
        return head(features.to(self.device).float().unsqueeze(1))[:, 0]

    @torch.no_grad()
    def score(
        self,
        role: str,
        prompt_ids: Sequence[Sequence[int]],
        action_ids: Sequence[Sequence[int]],
        with_ref: bool = False,
    ) -> tuple[list[list[float]], list[float], list[list[float]], list[list[float]] | None]:
        """No-grad learner log-probs and values of stored actions, ``micro_batch`` rows at a time.

        Returns per row ``(token_logprobs, value, token_values, ref_token_logprobs or None)``.
        Rows are grouped by length so that little padding is computed.
        """
        n = len(prompt_ids)
        order = length_order(prompt_ids, action_ids)
        size = self.config.micro_batch or max(n, 1)
        tok_lp: list[list[float]] = [[] for _ in range(n)]
        values = [0.0] * n
        tok_v: list[list[float]] = [[] for _ in range(n)]
        ref: list[list[float]] = [[] for _ in range(n)]
        for start in range(0, n, size):
            rows = order[start : start + size]
            ev = self.evaluate(
                role, [prompt_ids[i] for i in rows], [action_ids[i] for i in rows],
                with_entropy=False, with_ref=with_ref, token_values=True,
            )  # fmt: skip
            assert ev.token_values is not None  # asked for with token_values=True
            lp, tv = ev.token_logprobs.float().cpu(), ev.token_values.float().cpu()
            vals = ev.values.float().cpu().tolist()
            rf = ev.ref_token_logprobs.float().cpu() if ev.ref_token_logprobs is not None else None
            for j, i in enumerate(rows):
                k = len(action_ids[i])
                tok_lp[i], values[i], tok_v[i] = lp[j, :k].tolist(), vals[j], tv[j, :k].tolist()
                if rf is not None:
                    ref[i] = rf[j, :k].tolist()
        return tok_lp, values, tok_v, (ref if with_ref else None)

    # --------------------------------------------------------------- evaluate
    @contextlib.contextmanager
    def _scoring_mode(self) -> Iterator[None]:
        """Run the model with every dropout off (train mode only for gradient checkpointing).

        PPO's ratio compares the rollout's log-probs with the update's, so both
        must come from the same function: LoRA dropout would make them differ.
        """
        was_training = self.model.training
        self.model.train(self.config.gradient_checkpointing and torch.is_grad_enabled())
        for module in self.model.modules():
            if isinstance(module, nn.Dropout):
                module.eval()
        try:
            yield
        finally:
            self.model.train(was_training)

    def evaluate(
        self,
        role: str,
        prompt_ids: Sequence[Sequence[int]],
        action_ids: Sequence[Sequence[int]],
        with_entropy: bool = True,
        with_ref: bool = False,
        token_values: bool = True,
        critic_features: torch.Tensor | None = None,
    ) -> Evaluation:
        """Log-probs (and entropies) of stored actions and the critic's values, one batch.

        Gradients flow to ``role``'s LoRA adapter (through ``token_logprobs``,
        ``entropy``, ``action_logprob``) and to the value head (through
        ``values`` and ``token_values``); the base model stays frozen. Log-probs
        are those of the sampling distribution (:attr:`PolicyConfig.sampling`),
        computed in chunks; ``entropy`` only when ``with_entropy``,
        ``token_values`` only when asked, ``ref_token_logprobs`` (the base model,
        adapters disabled) when ``with_ref``. Given the actions' ``critic_features``
        (``[B, hidden]``, from :meth:`act`), the action-level values come from them
        and the base is not run again (unless ``token_values`` or ``with_ref``).
        """
        self._check_role(role)
        _check_evaluate_rows(prompt_ids, action_ids)
        b = len(prompt_ids)
        if b == 0:
            z = torch.zeros(0, 0, device=self.device)
            return Evaluation(z, z, z[:, 0], z[:, 0], z, z, z if with_ref else None)
        ids, attn, p_len = self._layout(prompt_ids, action_ids)
        positions = (attn.cumsum(-1) - 1).clamp(min=0)
        mask = attn[:, p_len:].to(torch.float32)
        targets = ids[:, p_len:]
        cfg = self.config.sampling_for(role)
        token_lp, entropy, action_logprob = self._actor_logprobs(
            role, ids, attn, positions, p_len, targets, mask, cfg, with_entropy
        )
        if self.config.critic == "none" and not with_ref:  # critic-free: no values to compute
            zeros = torch.zeros(b, device=self.device)
            tv0 = torch.zeros_like(mask) if token_values else None
            return Evaluation(token_lp, mask, action_logprob, zeros, entropy, tv0, None)
        if critic_features is not None and not (token_values or with_ref):
            vals = self.values(role, critic_features)
            return Evaluation(token_lp, mask, action_logprob, vals, entropy, None, None)
        vals, tv, ref = self._critic_and_reference(
            role, ids, attn, positions, p_len, targets, mask, cfg, with_ref, token_values
        )
        return Evaluation(token_lp, mask, action_logprob, vals[:, 0], entropy, tv, ref)

    def _actor_logprobs(
        self, role: str, ids: torch.Tensor, attn: torch.Tensor, positions: torch.Tensor,
        p_len: int, targets: torch.Tensor, mask: torch.Tensor, cfg: SamplingConfig,
        with_entropy: bool,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:  # fmt: skip
        """``role``'s token log-probs, entropies and action log-probs (gradients to its LoRA)."""
        t_len = targets.shape[1]
        # Actor: role's adapter active, gradients to LoRA; only final hidden states kept.
        self._activate_adapter(self.adapter_name(role))
        with self._scoring_mode():
            hidden = self._final_hidden(ids, attn, positions)[:, p_len - 1 : p_len - 1 + t_len]
            token_lp, entropy = token_logprobs(
                hidden, self._head, targets, mask, cfg, with_entropy, vocab_size=self.decoder.vocab
            )
        action_logprob = token_lp.sum(-1)
        if self.config.logprob_reduction == "mean":
            action_logprob = action_logprob / mask.sum(-1).clamp(min=1.0)
        return token_lp, entropy, action_logprob

    def _critic_and_reference(
        self, role: str, ids: torch.Tensor, attn: torch.Tensor, positions: torch.Tensor,
        p_len: int, targets: torch.Tensor, mask: torch.Tensor, cfg: SamplingConfig,
        with_ref: bool, token_values: bool,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:  # fmt: skip
        """The value head's ``[B, width]`` values, token values and reference log-probs."""
        t_len = targets.shape[1]
        # Critic (and reference): the same base with adapters disabled, features under no_grad.
        with self._base_only():
            base_hidden = self._final_hidden(ids, attn, positions)
            ref = None
            if with_ref:
                ref, _ = token_logprobs(
                    base_hidden[:, p_len - 1 : p_len - 1 + t_len], self._head, targets, mask,
                    cfg, vocab_size=self.decoder.vocab,
                )  # fmt: skip
            width = max(t_len, 1) if token_values else 1
            feats = base_hidden[:, p_len - 1 : p_len - 1 + width].float()
        head = self.value_heads[self._head_key(self.critic_name(role))]
        vals = head(feats)
        tv = vals[:, :t_len] * mask if token_values else None
        return vals, tv, ref

    def _layout(
        self, prompt_ids: Sequence[Sequence[int]], action_ids: Sequence[Sequence[int]]
    ) -> tuple[torch.Tensor, torch.Tensor, int]:
        """``[left pad | prompt | action | right pad]`` ids and mask on the device, and P."""
        b = len(prompt_ids)
        p_len = max(len(p) for p in prompt_ids)
        t_len = max(len(a) for a in action_ids)
        ids = torch.full((b, p_len + t_len), self.tokenizer.pad_token_id, dtype=torch.long)
        attn = torch.zeros((b, p_len + t_len), dtype=torch.long)
        for i, (p, a) in enumerate(zip(prompt_ids, action_ids, strict=True)):
            ids[i, p_len - len(p) : p_len] = torch.as_tensor(list(p), dtype=torch.long)
            attn[i, p_len - len(p) : p_len] = 1
            if len(a):
                ids[i, p_len : p_len + len(a)] = torch.as_tensor(list(a), dtype=torch.long)
                attn[i, p_len : p_len + len(a)] = 1
        if bool(((ids < 0) | (ids >= self.decoder.vocab)).any()):
            raise ValueError(
                f"token ids must be in [0, {self.decoder.vocab}) for {self.config.model!r}"
            )
        return ids.to(self.device), attn.to(self.device), p_len

    def _final_hidden(
        self, ids: torch.Tensor, attn: torch.Tensor, positions: torch.Tensor
    ) -> torch.Tensor:
        """The last layer's (normalised) hidden states; logits only for one position."""
        out = self.model(
            input_ids=ids, attention_mask=attn, position_ids=positions,
            logits_to_keep=1, use_cache=False, output_hidden_states=True,
        )  # fmt: skip
        return out.hidden_states[-1]

    def _check_output_head(self) -> None:
        """Refuse a model whose logits are not ``output_layer(last hidden state)``.

        Chunked log-probs apply the output layer to the final hidden states; a
        family that rescales or soft-caps logits after it would be trained on
        another distribution than it samples from.
        """
        probe = torch.arange(min(4, self.decoder.vocab), device=self.device).unsqueeze(0)
        with self._base_only():
            out = self.model(input_ids=probe, output_hidden_states=True, use_cache=False)
            direct = self._head(out.hidden_states[-1]).float()
        if not torch.allclose(direct, out.logits.float(), atol=1e-3, rtol=1e-3):
            raise ValueError(
                f"{self.config.model!r}: the model's logits are not its output layer applied "
                "to the last hidden state (logit scaling or soft-capping?); flexmg's chunked "
                "log-probs would differ from its sampling, so this family is not supported"
            )

    # ------------------------------------------------------------ state I/O
    def trainable_state(self) -> dict[str, Any]:
        """Adapters + value heads as CPU tensors, with the config they belong to."""
        return trainable_state(self)

    def load_trainable_state(self, state: Mapping[str, Any]) -> None:
        """Restore adapters and value heads saved by :meth:`trainable_state` (exactly).

        Raises:
            ValueError: the state does not match this policy (format, roles,
                adapters, parameter names or shapes), with what differs.
        """
        load_state(self, state)
