"""The team policy: one base causal LM, one LoRA adapter per role, a value-head critic.

* One base model in memory. Each role owns a peft LoRA adapter (multi-adapter,
  ``set_adapter`` per call) or, with ``share_parameters=True``, all roles share
  one adapter named ``"shared"`` (roles told apart by their prompts).
* The critic is an MLP value head on the final hidden state of the *same* base
  with adapters disabled (``model.disable_adapter()``): centralized (one head
  ``"team"``, MARFT) or one head per role (IPPO). The KL reference model is the
  same base with adapters disabled. No second copy of the base exists.
* ``act`` generates a batch with the KV cache (left-padded prompts) and returns
  the behaviour log-probs and values; ``evaluate`` recomputes log-probs,
  entropies and values for stored actions in one masked batched forward.

Layout of a batch in ``evaluate``: ``[left pad | prompt | action | right pad]``
with position ids ``cumsum(mask) - 1``. Action token ``k`` of every row sits at
column ``P + k`` (``P`` = longest prompt), so its log-prob comes from the logits
at column ``P - 1 + k`` and its token-level value from the hidden state there;
the action-level value is read at column ``P - 1`` (the last prompt token).
Actions exclude the EOS token, so an immediate EOS is an empty action.

Example:
    >>> from flexmg.agents.policy import PolicyConfig, TeamPolicy
    >>> policy = TeamPolicy(["solver", "verifier"], PolicyConfig(max_new_tokens=12))
    >>> batch = policy.act("solver", [{"task": "What is 7 + 5?", "role": "solver"}])
    >>> ev = policy.evaluate("solver", batch.prompt_ids, batch.action_ids)
    >>> bool(torch.allclose(ev.action_logprob, batch.logprobs, atol=1e-4))
    True
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from flexmg.agents.critic import build_value_heads
from flexmg.agents.llm_agent import render_prompt, resolve_prompt_style
from torch import nn

STATE_FORMAT = "flexmg.team_policy.v1"
_DTYPES = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
}


@dataclass
class PolicyConfig:
    """Settings of a :class:`TeamPolicy` (defaults: the tiny model on CPU).

    ``prompt_style`` (an addition to the shared contract): ``"auto"`` uses the
    compact format for the tiny model, the chat template when the tokenizer has
    one, and the plain role-prompt format otherwise.

    >>> PolicyConfig(lora_r=4).lora_target_modules
    ['q_proj', 'v_proj']
    """

    model: str = "tiny"
    share_parameters: bool = False
    critic: str = "centralized"
    lora_r: int = 8
    lora_alpha: int = 16
    lora_dropout: float = 0.0
    lora_target_modules: list[str] | None = None
    max_new_tokens: int = 16
    temperature: float = 1.0
    top_k: int = 50
    top_p: float = 1.0
    max_prompt_tokens: int = 1024
    logprob_reduction: str = "sum"
    critic_hidden: tuple[int, ...] = (1024, 512)
    device: str = "auto"
    dtype: str = "auto"
    gradient_checkpointing: bool = False
    seed: int = 0
    prompt_style: str = "auto"

    def __post_init__(self) -> None:
        if self.lora_target_modules is None:
            self.lora_target_modules = ["q_proj", "v_proj"]
        self.lora_target_modules = list(self.lora_target_modules)
        self.critic_hidden = tuple(int(h) for h in self.critic_hidden)
        checks = [
            (isinstance(self.model, str) and bool(self.model), "model must be a non-empty str"),
            (self.critic in ("centralized", "per_role"), "critic must be 'centralized' or 'per_role'"),
            (self.logprob_reduction in ("sum", "mean"), "logprob_reduction must be 'sum' or 'mean'"),
            (self.lora_r > 0 and self.lora_alpha > 0, "lora_r and lora_alpha must be positive"),
            (0.0 <= self.lora_dropout < 1.0, "lora_dropout must be in [0, 1)"),
            (len(self.lora_target_modules) > 0, "lora_target_modules must not be empty"),
            (self.max_new_tokens >= 1, "max_new_tokens must be >= 1"),
            (self.temperature > 0, "temperature must be > 0 (use act(greedy=True) for argmax)"),
            (self.top_k >= 0, "top_k must be >= 0 (0 disables top-k)"),
            (0.0 < self.top_p <= 1.0, "top_p must be in (0, 1]"),
            (self.max_prompt_tokens >= 1, "max_prompt_tokens must be >= 1"),
            (self.dtype == "auto" or self.dtype in _DTYPES, f"dtype must be 'auto' or one of {sorted(_DTYPES)}"),
            (self.prompt_style in ("auto", "compact", "chat", "plain"),
             "prompt_style must be 'auto', 'compact', 'chat' or 'plain'"),
        ]  # fmt: skip
        for ok, message in checks:
            if not ok:
                raise ValueError(f"PolicyConfig: {message} (got {self!r})")

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict (for run configs and checkpoints)."""
        d = asdict(self)
        d["critic_hidden"] = list(self.critic_hidden)
        return d


@dataclass
class ActionBatch:
    """What :meth:`TeamPolicy.act` returns for one role's batch (see module docstring)."""

    texts: list[str]
    prompt_ids: list[list[int]]
    action_ids: list[list[int]]
    logprobs: torch.Tensor
    values: torch.Tensor
    token_values: list[torch.Tensor] = field(default_factory=list)


@dataclass
class Evaluation:
    """What :meth:`TeamPolicy.evaluate` returns; ``[B, T]`` tensors, T = longest action."""

    token_logprobs: torch.Tensor
    mask: torch.Tensor
    entropy: torch.Tensor
    action_logprob: torch.Tensor
    values: torch.Tensor
    token_values: torch.Tensor
    ref_token_logprobs: torch.Tensor | None = None


def resolve_device(name: str) -> torch.device:
    """``"auto"`` -> cuda when available, else cpu; anything else as given.

    >>> resolve_device("cpu").type
    'cpu'
    """
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(
            f"device {name!r} was asked for, but torch {torch.__version__} sees no CUDA device "
            f"(built with CUDA {torch.version.cuda}); use device='auto' or 'cpu'"
        )
    return device


def resolve_dtype(name: str, device: torch.device) -> torch.dtype:
    """``"auto"`` -> bf16 on a CUDA device that supports it, else fp32.

    >>> resolve_dtype("auto", torch.device("cpu"))
    torch.float32
    """
    if name != "auto":
        return _DTYPES[name]
    if device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32


def _safe_name(role: str) -> str:
    return re.sub(r"[^0-9A-Za-z_]", "_", role)


def _load_tokenizer(name: str) -> Any:
    """AutoTokenizer, except for folders that declare the generic tokenizers backend.

    transformers 5 maps such folders to the model type's tokenizer class (e.g.
    ``Qwen2Tokenizer``), which replaces the saved pre-tokenizer; a folder saved
    from :func:`~flexmg.agents.tokenizer.build_char_tokenizer` would lose its spaces.
    """
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    try:
        from transformers.models.auto.tokenization_auto import get_tokenizer_config

        declared = get_tokenizer_config(name).get("tokenizer_class")
    except Exception:  # noqa: BLE001 - any failure: let AutoTokenizer decide and report
        declared = None
    if declared in ("TokenizersBackend", "PreTrainedTokenizerFast"):
        return PreTrainedTokenizerFast.from_pretrained(name)
    return AutoTokenizer.from_pretrained(name)


def _load_base(config: PolicyConfig, device: torch.device, dtype: torch.dtype) -> tuple[Any, Any]:
    """Load (model, tokenizer): the shipped tiny model or any HF causal LM by name/path."""
    if config.model == "tiny":
        from flexmg.agents.tiny_model import load_tiny

        model, tokenizer = load_tiny()
        model = model.to(dtype=dtype)
    else:
        from transformers import AutoModelForCausalLM

        try:
            tokenizer = _load_tokenizer(config.model)
            model = AutoModelForCausalLM.from_pretrained(config.model, dtype=dtype)
        except OSError as exc:
            raise OSError(
                f"could not load model {config.model!r}: pass 'tiny', a local folder with "
                "config.json + weights + tokenizer, or a Hugging Face model id that is in the "
                f"local cache (no downloads happen at run time). Cause: {exc}"
            ) from exc
    if tokenizer.pad_token_id is None:
        if tokenizer.eos_token_id is None:
            raise ValueError(
                f"the tokenizer of {config.model!r} has neither a pad nor an eos token; "
                "set tokenizer.pad_token before using it"
            )
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    return model.to(device), tokenizer


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
        from peft import LoraConfig, get_peft_model

        config = config if config is not None else PolicyConfig()
        if not isinstance(config, PolicyConfig):
            raise TypeError(f"config must be a PolicyConfig, got {type(config).__name__}")
        if isinstance(roles, str) or not roles:
            raise ValueError(f"roles must be a non-empty list of role names, got {roles!r}")
        roles = list(roles)
        if any(not isinstance(r, str) or not r for r in roles) or len(set(roles)) != len(roles):
            raise ValueError(f"roles must be distinct non-empty strings, got {roles!r}")
        self.roles: list[str] = roles
        self.config = config
        self.device = resolve_device(config.device)
        self.dtype = resolve_dtype(config.dtype, self.device)

        base, self.tokenizer = _load_base(config, self.device, self.dtype)
        for p in base.parameters():
            p.requires_grad_(False)
        if config.gradient_checkpointing:
            base.gradient_checkpointing_enable(
                gradient_checkpointing_kwargs={"use_reentrant": False}
            )
        self.prompt_style = resolve_prompt_style(
            config.prompt_style, self.tokenizer, is_tiny=config.model == "tiny"
        )

        self._adapter_of = {
            r: ("shared" if config.share_parameters else _safe_name(r)) for r in roles
        }
        adapters = list(dict.fromkeys(self._adapter_of.values()))
        if len(adapters) != len(set(self._adapter_of.values())) or (
            not config.share_parameters and len(adapters) != len(roles)
        ):
            raise ValueError(f"roles {roles!r} collide after sanitising to adapter names")
        lora = LoraConfig(
            r=config.lora_r,
            lora_alpha=config.lora_alpha,
            lora_dropout=config.lora_dropout,
            target_modules=list(config.lora_target_modules or []),
            bias="none",
            task_type="CAUSAL_LM",
        )
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.seed)
            try:
                model = get_peft_model(base, lora, adapter_name=adapters[0])
            except ValueError as exc:
                raise ValueError(
                    f"LoRA target modules {config.lora_target_modules} not found in "
                    f"{config.model!r}; set PolicyConfig.lora_target_modules to names of its "
                    f"linear layers. Cause: {exc}"
                ) from exc
            for name in adapters[1:]:
                model.add_adapter(name, lora)
            critic_names = ["team"] if config.critic == "centralized" else roles
            hidden = int(base.config.hidden_size)
            self.value_heads = build_value_heads(
                [self._head_key(n) for n in critic_names], hidden, config.critic_hidden
            ).to(self.device)
        self.model = model
        self._lora_params: dict[str, list[tuple[str, nn.Parameter]]] = {a: [] for a in adapters}
        for pname, p in model.named_parameters():
            if "lora_" not in pname:
                continue
            found = re.search(r"lora_[A-Za-z_]+\.([^.]+)(?:\.|$)", pname)
            owner = found.group(1) if found else None
            if owner not in self._lora_params:
                raise RuntimeError(f"LoRA parameter {pname!r} belongs to no known adapter")
            self._lora_params[owner].append((pname, p))
        self._active: str | None = None
        self._activate_adapter(adapters[0])
        # Eval mode by default (no dropout: act() and evaluate() agree exactly); call
        # .train() to enable LoRA dropout in evaluate() when lora_dropout > 0.
        self.eval()

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
            # peft freezes inactive adapters in set_adapter; keep every LoRA param trainable
            # so optimizers built once from policy_parameters() stay valid.
            for params in self._lora_params.values():
                for _, p in params:
                    p.requires_grad_(True)

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
        """Predecessor-conditioned prompt text for one observation (see ``llm_agent``)."""
        if not isinstance(obs, Mapping):
            raise TypeError(f"an observation must be a dict, got {type(obs).__name__}")
        return render_prompt(obs, self.prompt_style, self.tokenizer)

    def encode_prompt(self, prompt: str) -> list[int]:
        """Token ids of a prompt (BOS first for the tiny model), cut to ``max_prompt_tokens``.

        Over-long prompts keep their end (the role tag and latest context).
        """
        tok = self.tokenizer
        # Lone surrogates (hostile text) would crash the Rust tokenizer: replace them.
        prompt = prompt.encode("utf-8", "replace").decode("utf-8")
        if self.prompt_style == "compact":
            ids = [tok.bos_token_id, *tok(prompt, add_special_tokens=False)["input_ids"]]
        else:
            ids = tok(prompt, add_special_tokens=self.prompt_style == "plain")["input_ids"]
        if not ids:
            ids = [tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id]
        return ids[-self.config.max_prompt_tokens :]

    # ------------------------------------------------------------------- act
    def _pad_left(self, seqs: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), self.tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for i, s in enumerate(seqs):
            if s:
                ids[i, width - len(s) :] = torch.as_tensor(s, dtype=torch.long)
                mask[i, width - len(s) :] = 1
        return ids.to(self.device), mask.to(self.device)

    @torch.no_grad()
    def act(
        self, role: str, observations: Sequence[Mapping[str, Any]], greedy: bool = False
    ) -> ActionBatch:
        """Generate one action per observation with ``role``'s adapter (KV cache, batched).

        Returns the decoded texts, unpadded prompt/action ids, the action
        log-probs under the sampling policy (temperature-scaled, same numbers
        :meth:`evaluate` gives) and the critic's action- and token-level values.
        """
        self._check_role(role)
        if isinstance(observations, Mapping):
            raise TypeError("act() expects a list of observation dicts, got a single dict")
        prompt_ids = [self.encode_prompt(self.build_prompt(o)) for o in observations]
        if not prompt_ids:
            empty = torch.zeros(0, device=self.device)
            return ActionBatch([], [], [], empty, empty.clone(), [])
        action_ids = self._generate(role, prompt_ids, greedy)
        was_training = self.training
        if was_training:
            self.eval()
        try:
            ev = self._evaluate(role, prompt_ids, action_ids, with_ref=False, value_grad=False)
        finally:
            if was_training:
                self.train(True)
        lengths = [len(a) for a in action_ids]
        token_values = [ev.token_values[i, :n].clone() for i, n in enumerate(lengths)]
        texts = [self.tokenizer.decode(a, skip_special_tokens=True) for a in action_ids]
        return ActionBatch(
            texts, prompt_ids, action_ids, ev.action_logprob, ev.values, token_values
        )

    def _generate(self, role: str, prompt_ids: list[list[int]], greedy: bool) -> list[list[int]]:
        from transformers import GenerationConfig

        cfg = self.config
        tok = self.tokenizer
        input_ids, attention_mask = self._pad_left(prompt_ids)
        sampling = (
            {}
            if greedy
            else {"temperature": cfg.temperature, "top_k": cfg.top_k, "top_p": cfg.top_p}
        )
        gen_cfg = GenerationConfig(
            do_sample=not greedy,
            max_new_tokens=cfg.max_new_tokens,
            pad_token_id=tok.pad_token_id,
            eos_token_id=tok.eos_token_id,
            bos_token_id=tok.bos_token_id,
            use_cache=True,
            **sampling,
        )
        self._activate_adapter(self.adapter_name(role))
        was_training = self.model.training
        if was_training:
            self.model.eval()
        try:
            out = self.model.generate(
                input_ids=input_ids, attention_mask=attention_mask, generation_config=gen_cfg
            )
        finally:
            if was_training:
                self.model.train(True)
        new = out[:, input_ids.shape[1] :].tolist()
        stop = {tok.eos_token_id, tok.pad_token_id}
        actions = []
        for row in new:
            cut = next((k for k, t in enumerate(row) if t in stop), len(row))
            actions.append(row[:cut])
        return actions

    # --------------------------------------------------------------- evaluate
    def evaluate(
        self,
        role: str,
        prompt_ids: Sequence[Sequence[int]],
        action_ids: Sequence[Sequence[int]],
        with_ref: bool = False,
    ) -> Evaluation:
        """Log-probs, entropies and values of stored actions in one batched forward.

        Gradients flow to ``role``'s LoRA adapter (through ``token_logprobs``,
        ``entropy``, ``action_logprob``) and to the value head (through
        ``values`` and ``token_values``); the base model stays frozen.
        ``ref_token_logprobs`` (base model, adapters disabled) when ``with_ref``.
        """
        self._check_role(role)
        return self._evaluate(role, prompt_ids, action_ids, with_ref=with_ref, value_grad=True)

    def _evaluate(
        self,
        role: str,
        prompt_ids: Sequence[Sequence[int]],
        action_ids: Sequence[Sequence[int]],
        with_ref: bool,
        value_grad: bool,
    ) -> Evaluation:
        if len(prompt_ids) != len(action_ids):
            raise ValueError(
                f"prompt_ids and action_ids must have the same length, got "
                f"{len(prompt_ids)} and {len(action_ids)}"
            )
        if any(len(p) == 0 for p in prompt_ids):
            raise ValueError("every prompt needs at least one token (use encode_prompt())")
        b = len(prompt_ids)
        if b == 0:
            z = torch.zeros(0, 0, device=self.device)
            return Evaluation(z, z, z, z[:, 0], z[:, 0], z, z if with_ref else None)
        p_len = max(len(p) for p in prompt_ids)
        t_len = max(len(a) for a in action_ids)
        pad = self.tokenizer.pad_token_id
        ids = torch.full((b, p_len + t_len), pad, dtype=torch.long)
        attn = torch.zeros((b, p_len + t_len), dtype=torch.long)
        for i, (p, a) in enumerate(zip(prompt_ids, action_ids, strict=True)):
            ids[i, p_len - len(p) : p_len] = torch.as_tensor(list(p), dtype=torch.long)
            attn[i, p_len - len(p) : p_len] = 1
            if len(a):
                ids[i, p_len : p_len + len(a)] = torch.as_tensor(list(a), dtype=torch.long)
                attn[i, p_len : p_len + len(a)] = 1
        vocab = int(self.model.get_input_embeddings().num_embeddings)
        if bool(((ids < 0) | (ids >= vocab)).any()):
            raise ValueError(f"token ids must be in [0, {vocab}) for {self.config.model!r}")
        ids, attn = ids.to(self.device), attn.to(self.device)
        positions = (attn.cumsum(-1) - 1).clamp(min=0)
        mask = attn[:, p_len:].to(torch.float32)
        targets = ids[:, p_len:]
        keep = t_len + 1  # logits at columns P-1 .. P+T-1; the last one predicts nothing

        # Actor: role's adapter active, gradients to LoRA.
        self._activate_adapter(self.adapter_name(role))
        actor_training = self.training or self.config.gradient_checkpointing
        was_training = self.model.training
        if was_training != actor_training:
            self.model.train(actor_training)
        try:
            logits = self.model(
                input_ids=ids, attention_mask=attn, position_ids=positions,
                logits_to_keep=keep, use_cache=False,
            ).logits[:, :t_len]  # fmt: skip
        finally:
            if was_training != actor_training:
                self.model.train(was_training)
        token_logprobs, entropy = self._logprobs(logits, targets, with_entropy=True)
        token_logprobs = token_logprobs * mask
        entropy = entropy * mask
        action_logprob = token_logprobs.sum(-1)
        if self.config.logprob_reduction == "mean":
            action_logprob = action_logprob / mask.sum(-1).clamp(min=1.0)

        # Critic (and reference): the same base with adapters disabled, features under no_grad.
        with torch.no_grad(), self.model.disable_adapter():
            was_training = self.model.training
            if was_training:
                self.model.eval()
            try:
                out = self.model(
                    input_ids=ids, attention_mask=attn, position_ids=positions,
                    logits_to_keep=keep if with_ref else 1, use_cache=False,
                    output_hidden_states=True,
                )  # fmt: skip
            finally:
                if was_training:
                    self.model.train(True)
            feats = out.hidden_states[-1][:, p_len - 1 : p_len - 1 + max(t_len, 1)]
            ref = None
            if with_ref:
                ref, _ = self._logprobs(out.logits[:, :t_len], targets, with_entropy=False)
                ref = ref * mask
        head = self.value_heads[self._head_key(self.critic_name(role))]
        with torch.set_grad_enabled(value_grad and torch.is_grad_enabled()):
            vals = head(feats.float().detach())
        values = vals[:, 0]
        token_values = vals[:, :t_len] * mask
        return Evaluation(token_logprobs, mask, entropy, action_logprob, values, token_values, ref)

    def _logprobs(
        self, logits: torch.Tensor, targets: torch.Tensor, with_entropy: bool
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        logp = torch.log_softmax(logits.float() / self.config.temperature, dim=-1)
        taken = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        ent = -(logp.exp() * logp).sum(-1) if with_entropy else None
        return taken, ent

    # ------------------------------------------------------------ state I/O
    def trainable_state(self) -> dict[str, Any]:
        """Adapters + value heads as CPU tensors, with the config they belong to."""
        return {
            "format": STATE_FORMAT,
            "roles": list(self.roles),
            "config": self.config.to_dict(),
            "adapters": {
                a: {n: p.detach().cpu().clone() for n, p in params}
                for a, params in self._lora_params.items()
            },
            "value_heads": {
                k: {n: t.detach().cpu().clone() for n, t in head.state_dict().items()}
                for k, head in self.value_heads.items()
            },
        }

    def load_trainable_state(self, state: Mapping[str, Any]) -> None:
        """Restore adapters and value heads saved by :meth:`trainable_state` (exactly).

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
        if not isinstance(adapters, Mapping) or set(adapters) != set(self._lora_params):
            raise ValueError(
                f"adapters in the state {sorted(adapters or {})} do not match this policy's "
                f"{sorted(self._lora_params)} (roles {self.roles}, share_parameters="
                f"{self.config.share_parameters})"
            )
        if not isinstance(heads, Mapping) or set(heads) != set(self.value_heads.keys()):
            raise ValueError(
                f"value heads in the state {sorted(heads or {})} do not match this policy's "
                f"{sorted(self.value_heads.keys())} (critic={self.config.critic!r})"
            )
        copies: list[tuple[torch.Tensor, torch.Tensor]] = []
        for a, params in self._lora_params.items():
            saved = adapters[a]
            names = {n for n, _ in params}
            if set(saved) != names:
                diff = sorted(set(saved) ^ names)[:5]
                raise ValueError(f"adapter {a!r}: parameter names differ, e.g. {diff}")
            copies += [(p, saved[n]) for n, p in params]
        for k, head in self.value_heads.items():
            own = head.state_dict()
            if set(heads[k]) != set(own):
                raise ValueError(
                    f"value head {k!r}: keys differ: {sorted(set(heads[k]) ^ set(own))}"
                )
            copies += [(own[n], heads[k][n]) for n in own]
        for dst, src in copies:
            if not isinstance(src, torch.Tensor) or tuple(src.shape) != tuple(dst.shape):
                shape = tuple(src.shape) if isinstance(src, torch.Tensor) else type(src).__name__
                raise ValueError(f"shape mismatch: saved {shape}, expected {tuple(dst.shape)}")
        with torch.no_grad():
            for dst, src in copies:
                dst.copy_(src.to(device=dst.device, dtype=dst.dtype))

    def save_pretrained_adapters(self, folder: str | Path) -> None:
        """Write each adapter in peft's format (``folder/<adapter>/``) for use outside flexmg."""
        self.model.save_pretrained(str(folder), selected_adapters=list(self._lora_params))
