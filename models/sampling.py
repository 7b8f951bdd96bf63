"""How flexmg samples actions, and the log-probs of exactly that distribution.

:class:`Decoder` is the one decoder: a causal LM with its tokenizer, prompt
encoder and stop tokens turns observations into actions. The learner's team
policy, :class:`~flexmg.models.actor.ModelActor` (a bare model as an actor: the
warm start's measurement, pass@k of a checkpoint) and every held-out
evaluation decode with it, so what is measured is what trains.

flexmg owns decoding: :func:`sample_actions` is its own KV-cached loop, so
nothing is inherited from a model's ``generation_config.json`` (a chat model's
repetition penalty, top-k or top-p never sneak into rollouts or greedy
evaluations). The only logits processing in effect is :class:`SamplingConfig`
(temperature, then top-k, then top-p), and :func:`processed_logits` is the one
function both the sampler and the learner apply, so PPO trains the
distribution that sampled. The default is temperature only: top-k / top-p
truncate the distribution, and a token that leaves the kept set after an
update gets the floor log-prob :data:`LOGPROB_FLOOR` (no gradient through it).

:func:`token_logprobs` computes the log-probs (and, only when asked, the
entropy) of given tokens from final hidden states in chunks of positions, so no
full ``[batch, tokens, vocabulary]`` float32 tensor ever exists; under autograd
each chunk is recomputed in the backward pass (activation checkpointing).

Example:
    >>> import torch
    >>> cfg = SamplingConfig(temperature=0.5, top_k=2)
    >>> processed_logits(torch.tensor([[1.0, 2.0, 3.0]]), cfg)
    tensor([[-inf, 4., 6.]])
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.checkpoint import checkpoint

from flexmg.models.config import SamplingConfig
from flexmg.models.prompts import PromptEncoder

LOGPROB_FLOOR = -100.0
"""Log-prob given to a token outside the top-k/top-p set of the current policy."""

DEFAULT_CHUNK_ELEMENTS = 1 << 24
"""Logit elements per chunk in :func:`token_logprobs` (64 MiB of float32)."""


def processed_logits(logits: torch.Tensor, cfg: SamplingConfig) -> torch.Tensor:
    """float32 scores of the sampling distribution: temperature, then top-k, then top-p.

    Removed tokens get ``-inf``; ``log_softmax`` of the result is the sampler's log-prob.
    """
    scores = logits.float() / cfg.temperature
    if cfg.top_k > 0 and cfg.top_k < scores.shape[-1]:
        kth = torch.topk(scores, cfg.top_k, dim=-1).values[..., -1:]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    if cfg.top_p < 1.0:
        sorted_scores, order = torch.sort(scores, dim=-1, descending=True)
        probs = torch.softmax(sorted_scores, dim=-1)
        # drop a token when the tokens before it already hold top_p of the mass
        drop_sorted = (probs.cumsum(-1) - probs) > cfg.top_p
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        scores = scores.masked_fill(drop, float("-inf"))
    return scores


def _chunk_stats(
    head: Callable[[torch.Tensor], torch.Tensor],
    hidden: torch.Tensor,
    targets: torch.Tensor,
    cfg: SamplingConfig,
    with_entropy: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probs of ``targets`` and entropies for one chunk (autograd-friendly)."""
    scores = processed_logits(head(hidden), cfg)
    logp = torch.log_softmax(scores, dim=-1)
    taken = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1).clamp(min=LOGPROB_FLOOR)
    if not with_entropy:
        return taken, torch.zeros_like(taken)
    return taken, _entropy(logp, cfg)[0]


def _entropy(
    logp: torch.Tensor, cfg: SamplingConfig, probs: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Entropy per row, and ``log p`` with removed tokens (``-inf``) as 0."""
    finite_logp = logp if cfg.is_temperature_only else torch.nan_to_num(logp, neginf=0.0)
    plogp = (logp.exp() if probs is None else probs) * finite_logp
    return -plogp.sum(-1), finite_logp


class _FusedHeadLogprobs(torch.autograd.Function):
    """Log-probs and entropies through a frozen linear output layer, chunk by chunk.

    The backward pass needs only ``d/dhidden``, which per position is
    ``W^T (onehot - p) / T`` for the log-prob and ``-W^T p (log p + H) / T`` for
    the entropy; both ``[n, hidden]`` products are formed in the forward pass,
    chunk by chunk, so the logits are never kept nor recomputed.
    """

    @staticmethod
    def forward(
        ctx: Any, hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
        targets: torch.Tensor, cfg: SamplingConfig, with_entropy: bool, step: int,
    ) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
        n = hidden.shape[0]
        taken = torch.empty(n, device=hidden.device, dtype=torch.float32)
        ent = torch.zeros(n, device=hidden.device, dtype=torch.float32)
        grad_lp = torch.empty(hidden.shape, device=hidden.device, dtype=torch.float32)
        grad_ent = torch.zeros_like(grad_lp) if with_entropy else None
        for start in range(0, n, step):
            part = slice(start, start + step)
            y = targets[part]
            logits = torch.nn.functional.linear(hidden[part], weight, bias)
            logp = torch.log_softmax(processed_logits(logits, cfg), dim=-1)
            del logits
            lp = logp.gather(-1, y.unsqueeze(-1)).squeeze(-1)
            taken[part] = lp.clamp(min=LOGPROB_FLOOR)
            p = logp.exp()
            if with_entropy:
                h_rows, finite_logp = _entropy(logp, cfg, p)
                ent[part] = h_rows
                g = p * (finite_logp + h_rows.unsqueeze(-1))  # -(dH/dscores)
                assert grad_ent is not None  # allocated whenever with_entropy
                grad_ent[part] = -(g.to(weight.dtype) @ weight).float() / cfg.temperature
                del g, finite_logp
            del logp
            p.neg_()
            p.scatter_add_(-1, y.unsqueeze(-1), torch.ones_like(lp).unsqueeze(-1))  # onehot - p
            p[lp < LOGPROB_FLOOR] = 0.0  # clamped at the floor: no gradient
            grad_lp[part] = (p.to(weight.dtype) @ weight).float() / cfg.temperature
            del p
        ctx.save_for_backward(grad_lp, *(() if grad_ent is None else (grad_ent,)))
        ctx.hidden_dtype = hidden.dtype
        ctx.mark_non_differentiable(*(() if with_entropy else (ent,)))
        return taken, ent

    @staticmethod
    def backward(ctx: Any, g_lp: torch.Tensor, g_ent: torch.Tensor) -> tuple:
        grad_lp, *rest = ctx.saved_tensors
        grad = g_lp.unsqueeze(-1) * grad_lp
        if rest and g_ent is not None:
            grad = grad + g_ent.unsqueeze(-1) * rest[0]
        return grad.to(ctx.hidden_dtype), None, None, None, None, None, None


def token_logprobs(
    hidden: torch.Tensor,
    head: Any,
    targets: torch.Tensor,
    mask: torch.Tensor,
    cfg: SamplingConfig,
    with_entropy: bool = False,
    chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
    vocab_size: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probs of ``targets`` (and entropies) from hidden states, chunk by chunk.

    Args:
        hidden: ``[B, T, H]`` final hidden states (position ``t`` predicts ``targets[:, t]``).
        head: the output layer (hidden -> logits), e.g. ``model.get_output_embeddings()``.
        targets: ``[B, T]`` token ids.
        mask: ``[B, T]``; positions with 0 are skipped (their outputs are 0).
        cfg: the sampling distribution whose log-probs are wanted.
        with_entropy: also return the entropy of that distribution (else ``None``).
        chunk_elements: at most this many logits exist at once (per chunk).
        vocab_size: the head's output size (for the chunk length; read from ``head`` if None).

    Returns:
        ``(logprobs [B, T], entropy [B, T] or None)`` in float32.

    >>> head = torch.nn.Linear(4, 6, bias=False)
    >>> h, y = torch.randn(2, 3, 4), torch.randint(0, 6, (2, 3))
    >>> lp, _ = token_logprobs(h, head, y, torch.ones(2, 3), SamplingConfig(), chunk_elements=6)
    >>> full = torch.log_softmax(head(h), -1).gather(-1, y.unsqueeze(-1)).squeeze(-1)
    >>> bool(torch.allclose(lp, full, atol=1e-6))
    True
    """
    b, t = targets.shape
    flat_mask = mask.reshape(-1) > 0
    rows = flat_mask.nonzero().squeeze(-1)
    out_lp = torch.zeros(b * t, device=hidden.device, dtype=torch.float32)
    out_ent = torch.zeros(b * t, device=hidden.device, dtype=torch.float32)
    if rows.numel():
        h = hidden.reshape(b * t, -1).index_select(0, rows)
        y = targets.reshape(-1).index_select(0, rows)
        vocab = vocab_size or int(getattr(head, "out_features", 0) or head(h[:1]).shape[-1])
        step = max(1, chunk_elements // max(1, vocab))
        grad = torch.is_grad_enabled() and h.requires_grad
        if grad and _frozen_linear(head):
            lp_all, ent_all = _FusedHeadLogprobs.apply(
                h, head.weight, head.bias, y, cfg, with_entropy, step
            )
            lps, ents = [lp_all], [ent_all]
        else:  # any other head: chunks recomputed in the backward pass (checkpointing)
            lps, ents = [], []
            for start in range(0, h.shape[0], step):
                args = (head, h[start : start + step], y[start : start + step], cfg, with_entropy)
                lp, ent = checkpoint(_chunk_stats, *args, use_reentrant=False) if grad else (
                    _chunk_stats(*args))  # fmt: skip
                lps.append(lp)
                ents.append(ent)
        out_lp = out_lp.index_put((rows,), torch.cat(lps))
        if with_entropy:
            out_ent = out_ent.index_put((rows,), torch.cat(ents))
    lp = out_lp.view(b, t)
    return lp, (out_ent.view(b, t) if with_entropy else None)


def length_order(
    prompt_ids: Sequence[Sequence[int]], action_ids: Sequence[Sequence[int]]
) -> list[int]:
    """Row indices by prompt length, then action length, so consecutive rows pad little.

    A batch of rows is padded to its longest prompt plus its longest action; the
    learner's scoring and its update slice rows in this order.

    >>> length_order([[1, 2, 3], [1], [1, 2]], [[9], [9, 9], [9]])
    [1, 2, 0]
    """
    return sorted(range(len(prompt_ids)), key=lambda i: (len(prompt_ids[i]), len(action_ids[i])))


def _frozen_linear(head: Any) -> bool:
    """A plain linear output layer that does not learn (the fused path's condition)."""
    return (
        isinstance(head, torch.nn.Linear)
        and not head.weight.requires_grad
        and (head.bias is None or not head.bias.requires_grad)
    )


@dataclass
class SampledActions:
    """What :func:`sample_actions` returns, one entry per row.

    Attributes:
        action_ids: generated tokens, the stop token included when one was produced.
        sampler_logprobs: the sampler's log-prob of each token (empty lists when greedy).
        truncated: True when the action hit ``max_new_tokens`` without a stop token.
    """

    action_ids: list[list[int]]
    sampler_logprobs: list[list[float]]
    truncated: list[bool]


@torch.no_grad()
def sample_actions(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    cfg: SamplingConfig,
    max_new_tokens: int,
    stop_ids: Iterable[int],
    pad_id: int,
    greedy: bool = False,
    share_prefill: bool = True,
) -> SampledActions:
    """Sample (or greedily decode) actions for left-padded prompts with a KV cache.

    Every row stops at the first token in ``stop_ids`` (kept in its action) or
    after ``max_new_tokens`` tokens (then flagged ``truncated``). Randomness
    comes from torch's global generator (seed it for reproducible rollouts): each
    step draws one uniform number per row of the whole batch and samples by
    inverting that row's CDF, so a row's action depends only on its own prompt
    and draws. Rows that have stopped leave the batch (and the KV cache) once they
    are an eighth of it (:func:`_compact_every`); that changes no draw, so the actions are
    the same up to floating-point rounding of the smaller batch. With ``share_prefill``,
    identical prompts (a group's episodes) are prefilled once and their KV cache copied,
    again the same actions up to rounding.
    """
    b = input_ids.shape[0]
    device = input_ids.device
    stops = torch.tensor(sorted(set(stop_ids)), dtype=torch.long, device=device)
    mask = attention_mask.clone()
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    next_pos = mask.sum(-1)
    step_ids, step_pos = input_ids, positions
    rows = torch.arange(b, device=device)  # original row of each row still in the batch
    done = torch.zeros(b, dtype=torch.bool, device=device)
    tokens = torch.full((b, max_new_tokens), pad_id, dtype=torch.long, device=device)
    logps = torch.zeros((b, max_new_tokens), dtype=torch.float32, device=device)
    cache_arg = _cache_argument(model)
    past: Any = None
    width = 0
    distinct, copies = _distinct_rows(input_ids, attention_mask) if share_prefill else (None, None)
    for step in range(max_new_tokens):
        shared = None
        if step == 0 and distinct is not None and copies is not None:
            out = model(
                input_ids=step_ids[distinct], attention_mask=mask[distinct],
                position_ids=step_pos[distinct], use_cache=True, logits_to_keep=1,
                **{cache_arg: None},
            )  # fmt: skip
            shared = getattr(out, cache_arg, None)
        if shared is not None and hasattr(shared, "batch_select_indices"):
            shared.batch_select_indices(copies)  # each row gets its prompt's cache
            past, logits = shared, out.logits[:, -1][copies]
        else:  # every later step, and a first step whose cache cannot be copied
            out = model(
                input_ids=step_ids, attention_mask=mask, position_ids=step_pos,
                use_cache=True, logits_to_keep=1, **{cache_arg: past},
            )  # fmt: skip
            past = getattr(out, cache_arg, None)
            logits = out.logits[:, -1]
        if greedy:
            tok = logits.argmax(-1)
        else:
            uniform = torch.rand(b, device=device)[rows]  # one draw per row of the whole batch
            logp = torch.log_softmax(processed_logits(logits, cfg), dim=-1)
            tok = _inverse_cdf(logp.exp(), uniform)
            logps[rows, step] = logp.gather(-1, tok.unsqueeze(-1)).squeeze(-1).float()
        tok = torch.where(done, torch.full_like(tok, pad_id), tok)
        tokens[rows, step] = tok
        width = step + 1
        live = ~done
        done = done | torch.isin(tok, stops)
        if bool(done.all()):
            break
        mask = torch.cat([mask, live.long().unsqueeze(-1)], dim=-1)
        step_ids, step_pos = tok.unsqueeze(-1), next_pos.unsqueeze(-1)
        next_pos = next_pos + live.long()
        if int(done.sum()) >= _compact_every(len(rows)) and hasattr(past, "batch_select_indices"):
            keep = (~done).nonzero().squeeze(-1)
            past.batch_select_indices(keep)
            rows, done, mask = rows[keep], done[keep], mask[keep]
            step_ids, step_pos, next_pos = step_ids[keep], step_pos[keep], next_pos[keep]
    return _collect(tokens[:, :width], logps[:, :width], stops, greedy, b)


def _distinct_rows(
    input_ids: torch.Tensor, attention_mask: torch.Tensor
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """``(distinct, copies)``: a row of each distinct prompt, and each row's prompt.

    ``(None, None)`` when every prompt differs (nothing to share).

    >>> d, c = _distinct_rows(torch.tensor([[5, 6], [7, 8], [5, 6]]), torch.ones(3, 2))
    >>> d.tolist(), c.tolist()
    ([0, 1], [0, 1, 0])
    """
    if input_ids.shape[0] < 2:
        return None, None
    rows = torch.cat([input_ids, attention_mask.to(input_ids.dtype)], dim=-1)
    _, copies = torch.unique(rows, dim=0, return_inverse=True)
    if int(copies.max()) + 1 == rows.shape[0]:
        return None, None
    order = torch.arange(rows.shape[0], device=rows.device)
    first = torch.full((int(copies.max()) + 1,), rows.shape[0], device=rows.device)
    first = first.scatter_reduce(0, copies, order, reduce="amin")  # first row of each prompt
    return first, copies


def _compact_every(batch: int) -> int:
    """How many stopped rows make the sampler drop them (an eighth of the batch, at least 1).

    Dropping copies the KV cache, so it waits until it saves a worthwhile share of a step.
    """
    return max(1, batch // 8)


def _inverse_cdf(probs: torch.Tensor, uniform: torch.Tensor) -> torch.Tensor:
    """One token per row: the first whose cumulative probability exceeds ``uniform`` x total.

    Tokens of probability 0 are never picked (``right=True`` skips flat stretches).
    """
    cdf = probs.float().cumsum(-1)
    target = (uniform.float() * cdf[:, -1]).unsqueeze(-1)
    tok = torch.searchsorted(cdf, target, right=True).squeeze(-1)
    return tok.clamp(max=probs.shape[-1] - 1)


def _cache_argument(model: Any) -> str:
    """The KV-cache keyword of the model's forward.

    ``cache`` in transformers >= 5.2x, ``past_key_values`` in earlier versions; the
    output field has the same name.
    """
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    params = inspect.signature(base.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _collect(
    tok: torch.Tensor, lp: torch.Tensor, stops: torch.Tensor, greedy: bool, b: int
) -> SampledActions:
    """Per row: the tokens up to and including the first stop, their log-probs, truncation."""
    if tok.shape[1] == 0:
        return SampledActions([[] for _ in range(b)], [[] for _ in range(b)], [True] * b)
    tok, lp = tok.cpu(), lp.float().cpu()
    is_stop = torch.isin(tok, stops.cpu())
    actions, logprobs, truncated = [], [], []
    for i in range(b):
        hits = is_stop[i].nonzero()
        end = int(hits[0]) + 1 if hits.numel() else tok.shape[1]
        actions.append(tok[i, :end].tolist())
        logprobs.append([] if greedy else lp[i, :end].tolist())
        truncated.append(not hits.numel())
    return SampledActions(actions, logprobs, truncated)


def stop_token_ids(model: Any, tokenizer: Any) -> list[int]:
    """Every id that ends an action.

    The model's and generation config's EOS ids, the tokenizer's EOS, and the token
    that ends an assistant turn in its chat template.

    >>> from types import SimpleNamespace as S
    >>> m = S(config=S(eos_token_id=2), generation_config=S(eos_token_id=[2, 7]))
    >>> stop_token_ids(m, S(eos_token_id=2, chat_template=None))
    [2, 7]
    """
    found: list[Any] = []
    for source in (getattr(model, "generation_config", None), getattr(model, "config", None)):
        eos = getattr(source, "eos_token_id", None)
        found += list(eos) if isinstance(eos, (list, tuple)) else [eos]
    found.append(getattr(tokenizer, "eos_token_id", None))
    found.append(chat_turn_end_id(tokenizer))
    return sorted({int(i) for i in found if isinstance(i, int) and i >= 0})


def chat_turn_end_id(tokenizer: Any) -> int | None:
    """The special token a chat template writes right after an assistant message, if any.

    Found by rendering a two-message chat with a marker answer (e.g. ``<|im_end|>``
    for Qwen, ``<|eot_id|>`` for Llama 3); ``None`` without a chat template.
    """
    if not getattr(tokenizer, "chat_template", None):
        return None
    marker = "flexmg-turn-marker"
    try:
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": "hi"}, {"role": "assistant", "content": marker}],
            tokenize=False,
        )
    except Exception:  # noqa: BLE001 - a template that cannot render has no turn end to find
        return None
    if marker not in text:
        return None
    rest = text.split(marker, 1)[1]
    ids = tokenizer(rest, add_special_tokens=False)["input_ids"] if rest else []
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    special |= set(getattr(tokenizer, "added_tokens_decoder", {}) or {})
    return int(ids[0]) if ids and ids[0] in special else None


class Decoder:
    """A causal LM decoding observations into actions (flexmg's one decoder).

    Args:
        model: the causal LM (a peft model works: its active adapter decodes).
        tokenizer: its tokenizer (pad token set, left padding).
        prompts: the :class:`~flexmg.models.prompts.PromptEncoder` of the model.
        stop_source: the model whose configs name the EOS ids (default ``model``).
        name: the model's name, for error messages.
    """

    def __init__(
        self, model: Any, tokenizer: Any, prompts: PromptEncoder, stop_source: Any = None,
        name: str = "the model",
    ) -> None:  # fmt: skip
        self.model, self.tokenizer, self.prompts, self.name = model, tokenizer, prompts, name
        self.vocab = int(model.get_input_embeddings().num_embeddings)
        stops = stop_token_ids(stop_source if stop_source is not None else model, tokenizer)
        self.stop_ids = [i for i in stops if i < self.vocab]
        if not self.stop_ids:
            raise ValueError(f"{name!r}: neither the model nor the tokenizer has an EOS id")
        self._stop_set = set(self.stop_ids)

    @property
    def device(self) -> torch.device:
        """Where the model's parameters are."""
        return next(self.model.parameters()).device

    def pad_left(self, seqs: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Left-padded ids and attention mask of token sequences, on the model's device."""
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), self.tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for i, s in enumerate(seqs):
            if s:
                ids[i, width - len(s) :] = torch.as_tensor(s, dtype=torch.long)
                mask[i, width - len(s) :] = 1
        return ids.to(self.device), mask.to(self.device)

    def text(self, action_ids: Sequence[int]) -> str:
        """The decoded action, its stop token removed."""
        ids = list(action_ids)
        if ids and ids[-1] in self._stop_set:
            ids = ids[:-1]
        return str(self.tokenizer.decode(ids, skip_special_tokens=True))

    @torch.no_grad()
    def generate(
        self, prompt_ids: Sequence[Sequence[int]], cfg: SamplingConfig, max_new_tokens: int,
        greedy: bool = False,
    ) -> tuple[SampledActions, list[str]]:  # fmt: skip
        """Sample (or greedily decode) one action per prompt; the actions and their texts."""
        input_ids, attention_mask = self.pad_left(prompt_ids)
        sampled = sample_actions(
            self.model, input_ids, attention_mask, cfg, max_new_tokens, self.stop_ids,
            self.tokenizer.pad_token_id, greedy=greedy,
        )  # fmt: skip
        return sampled, [self.text(a) for a in sampled.action_ids]
