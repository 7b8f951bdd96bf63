"""flexmg's sampler and its log-probs: the same distribution, chunked, stopping right."""

from __future__ import annotations

import functools

import pytest
import torch

from family_models import build_family_model
from flexmg.models.sampling import (
    LOGPROB_FLOOR,
    SamplingConfig,
    chat_turn_end_id,
    processed_logits,
    sample_actions,
    stop_token_ids,
    token_logprobs,
)


def test_processing_matches_transformers_warpers() -> None:
    from transformers.generation.logits_process import (
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    logits = torch.randn(5, 40, generator=torch.Generator().manual_seed(0))
    cfg = SamplingConfig(temperature=0.7, top_k=20, top_p=0.8)
    ids = torch.zeros(5, 1, dtype=torch.long)
    expected = logits.clone()
    for warper in (TemperatureLogitsWarper(0.7), TopKLogitsWarper(20), TopPLogitsWarper(0.8)):
        expected = warper(ids, expected)
    got = processed_logits(logits, cfg)
    assert torch.equal(torch.isinf(got), torch.isinf(expected))
    finite = torch.isfinite(got)
    assert torch.allclose(got[finite], expected[finite])
    assert torch.equal(processed_logits(logits, SamplingConfig()), logits)


@pytest.mark.parametrize("frozen", [True, False], ids=["fused-frozen-head", "checkpointed"])
@pytest.mark.parametrize("cfg", [SamplingConfig(), SamplingConfig(0.5, 3, 0.9)])
def test_chunked_logprobs_and_entropy_equal_the_full_computation(
    cfg: SamplingConfig, frozen: bool
) -> None:
    g = torch.Generator().manual_seed(1)
    head = torch.nn.Linear(8, 11, bias=frozen).requires_grad_(not frozen)
    hidden = torch.randn(3, 5, 8, generator=g, requires_grad=True)
    targets = torch.randint(0, 11, (3, 5), generator=g)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]]).float()
    lp, ent = token_logprobs(hidden, head, targets, mask, cfg, True, chunk_elements=11 * 2)
    weights = torch.rand(3, 5, generator=g)  # any upstream gradient, not only ones
    (lp * weights).sum().add((ent * weights.flip(0)).sum()).backward()
    grad_chunked = hidden.grad.clone()
    hidden.grad = None
    logp = torch.log_softmax(processed_logits(head(hidden), cfg), -1)
    full = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1).clamp(min=LOGPROB_FLOOR) * mask
    p = logp.exp()
    full_ent = -(p * torch.where(torch.isfinite(logp), logp, 0.0)).sum(-1) * mask
    (full * weights).sum().add((full_ent * weights.flip(0)).sum()).backward()
    assert torch.allclose(lp, full, atol=1e-5) and torch.allclose(ent, full_ent, atol=1e-5)
    assert torch.allclose(grad_chunked, hidden.grad, atol=1e-5)
    hidden.grad = None
    only_lp, no_ent = token_logprobs(hidden, head, targets, mask, cfg, with_entropy=False)
    assert no_ent is None
    (only_lp * weights).sum().backward()
    logp = torch.log_softmax(processed_logits(head(hidden), cfg), -1)
    full = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1).clamp(min=LOGPROB_FLOOR) * mask
    want = torch.autograd.grad((full * weights).sum(), hidden)[0]
    assert torch.allclose(hidden.grad, want, atol=1e-5)


def test_config_errors_say_what_is_expected() -> None:
    with pytest.raises(ValueError, match="temperature must be > 0"):
        SamplingConfig(temperature=0)
    with pytest.raises(ValueError, match="top_p"):
        SamplingConfig(top_p=0.0)
    with pytest.raises(ValueError, match="top_k"):
        SamplingConfig(top_k=-1)


@pytest.fixture(scope="module")
def qwen(tmp_path_factory: pytest.TempPathFactory) -> tuple:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = build_family_model(tmp_path_factory.mktemp("qwen"), "qwen2")
    return AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)


def test_stop_ids_include_the_chat_turn_end(qwen: tuple, tmp_path) -> None:
    model, tok = qwen
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    assert chat_turn_end_id(tok) == im_end
    assert stop_token_ids(model, tok) == sorted({im_end, tok.eos_token_id})
    from transformers import AutoTokenizer

    llama = AutoTokenizer.from_pretrained(build_family_model(tmp_path / "l", "llama"))
    assert chat_turn_end_id(llama) == llama.convert_tokens_to_ids("<|eot_id|>")


def test_sampler_stops_at_every_stop_id_keeps_it_and_flags_truncation(qwen: tuple) -> None:
    model, tok = qwen
    ids = torch.tensor([[5, 6, 7], [0, 8, 9]])
    mask = torch.tensor([[1, 1, 1], [0, 1, 1]])
    torch.manual_seed(0)
    first = sample_actions(model, ids, mask, SamplingConfig(), 6, [], tok.pad_token_id)
    assert first.truncated == [True, True] and all(len(a) == 6 for a in first.action_ids)
    stop = first.action_ids[0][2]  # make the third token of row 0 a stop token
    torch.manual_seed(0)
    again = sample_actions(model, ids, mask, SamplingConfig(), 6, [stop], tok.pad_token_id)
    assert again.action_ids[0] == first.action_ids[0][:3] and again.truncated[0] is False
    # the sampler's log-probs are those of a full forward pass with the same processing
    full = torch.cat([ids[0], torch.tensor(again.action_ids[0])]).unsqueeze(0)
    logits = model(input_ids=full).logits[0, 2:-1]
    lp = torch.log_softmax(processed_logits(logits, SamplingConfig()), -1)
    expected = lp.gather(-1, torch.tensor(again.action_ids[0]).unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(torch.tensor(again.sampler_logprobs[0]), expected, atol=1e-4)


def count_rows(model, monkeypatch) -> list[int]:
    """Patch ``model.forward`` to record each call's batch rows (its signature kept: the
    sampler reads its cache keyword); the list fills as the model runs."""
    widths: list[int] = []
    forward = model.forward

    @functools.wraps(forward)
    def counting(*args, **kwargs):
        widths.append(int(kwargs["input_ids"].shape[0]))
        return forward(*args, **kwargs)

    monkeypatch.setattr(model, "forward", counting)
    return widths


def test_stopped_rows_leave_the_batch_and_draw_the_same_actions(qwen: tuple, monkeypatch) -> None:
    import flexmg.models.sampling as sampling

    model, tok = qwen
    ids = torch.randint(5, 60, (12, 4), generator=torch.Generator().manual_seed(3))
    mask = torch.ones_like(ids)
    cfg = SamplingConfig()
    torch.manual_seed(0)
    probe = sample_actions(model, ids, mask, cfg, 8, [], tok.pad_token_id)
    # stop ids that end some rows early and others late, so the batch shrinks in steps
    stops = sorted({probe.action_ids[r][k] for r, k in [(0, 1), (3, 2), (7, 4), (9, 0)]})

    def run(compact_every) -> tuple:
        widths = count_rows(model, monkeypatch)
        monkeypatch.setattr(sampling, "_compact_every", compact_every)
        torch.manual_seed(0)
        out = sample_actions(model, ids, mask, cfg, 8, stops, tok.pad_token_id)
        monkeypatch.undo()
        return out, widths

    compacted, shrinking = run(lambda b: 1)
    kept, full = run(lambda b: 10**9)
    assert set(full) == {12} and min(shrinking) < 12, "stopped rows should leave the batch"
    # the same draws: equal actions, up to a rounding-level flip of one row (a smaller
    # batch may round a logit differently, and a draw at a token boundary then changes)
    same = [a == b for a, b in zip(compacted.action_ids, kept.action_ids, strict=True)]
    assert sum(same) >= len(same) - 1
    assert any(not t for t in kept.truncated) and any(kept.truncated)
    for a, b, equal in zip(compacted.sampler_logprobs, kept.sampler_logprobs, same, strict=True):
        if equal:
            assert torch.allclose(torch.tensor(a), torch.tensor(b), atol=1e-5)


def test_identical_prompts_are_prefilled_once_and_draw_the_same_actions(
    qwen: tuple, monkeypatch
) -> None:
    model, tok = qwen
    prompts = torch.randint(5, 60, (3, 5), generator=torch.Generator().manual_seed(4))
    ids = prompts[[0, 1, 0, 2, 0, 1, 0, 0]]  # groups of one prompt, as a group learner plays
    mask = torch.ones_like(ids)
    mask[3, :2] = 0  # a left-padded row: same ids as no other row
    cfg = SamplingConfig()

    def run(share: bool) -> tuple:
        widths = count_rows(model, monkeypatch)
        torch.manual_seed(0)
        out = sample_actions(model, ids, mask, cfg, 6, [], tok.pad_token_id, share_prefill=share)
        monkeypatch.undo()
        return out, widths

    shared, shared_widths = run(True)
    alone, alone_widths = run(False)
    assert shared_widths[0] == 3 and alone_widths[0] == 8  # three distinct prompts
    assert shared_widths[1:] == alone_widths[1:]
    same = [a == b for a, b in zip(shared.action_ids, alone.action_ids, strict=True)]
    assert sum(same) >= len(same) - 1  # equal up to a rounding-level flip (see above)
    for a, b, equal in zip(shared.sampler_logprobs, alone.sampler_logprobs, same, strict=True):
        if equal:
            assert torch.allclose(torch.tensor(a), torch.tensor(b), atol=1e-5)
    greedy = sample_actions(model, ids, mask, cfg, 6, [], tok.pad_token_id, greedy=True)
    assert greedy.action_ids[0] == greedy.action_ids[2] == greedy.action_ids[7]


def test_inverse_cdf_sampling_follows_the_distribution_and_skips_zero_mass() -> None:
    from flexmg.models.sampling import _inverse_cdf

    probs = torch.tensor([[0.0, 0.2, 0.0, 0.8]]).expand(4000, 4)
    uniform = torch.rand(4000, generator=torch.Generator().manual_seed(0))
    uniform[0] = 0.0  # the edge of [0, 1): never a zero-probability token
    tok = _inverse_cdf(probs, uniform)
    assert set(tok.tolist()) == {1, 3} and tok[0] == 1
    assert abs(float((tok == 3).float().mean()) - 0.8) < 0.03
