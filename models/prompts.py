"""Prompt formats: how an env observation becomes a model's input.

Three prompt styles turn an env observation (keys ``task``, ``role``,
``instructions``, ``round``, ``context``, ``feedback``) into model input:

* ``"compact"``: for the project's tiny character-level model: task, visible
  context (predecessors' outputs, earlier rounds), feedback, then the role tag.
* ``"chat"``: the tokenizer's chat template (system = role instructions).
* ``"plain"``: a role-prompt format with full instructions, for models
  without a chat template.

:class:`PromptEncoder` turns an observation into a model's prompt token ids
within a token budget (the oldest context is cut first, :func:`fit_observation`).

Torch-free: every decoder (:mod:`flexmg.models.sampling`: the learner's team
policy, ``ModelActor``) and the framework integrations render observations with
these functions.

Example:
    >>> from flexmg.models.prompts import compact_prompt
    >>> obs = {"task": "What is 7 + 5?", "role": "verifier", "context": "[solver]: \\\\boxed{12}"}
    >>> print(compact_prompt(obs))
    Q:What is 7 + 5?
    [solver]: \\boxed{12}
    [verifier]:
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "CUT_MARKER",
    "PROMPT_STYLES",
    "PromptEncoder",
    "chat_messages",
    "compact_prompt",
    "fit_observation",
    "plain_prompt",
    "render_prompt",
    "resolve_prompt_style",
]

PROMPT_STYLES = ("auto", "compact", "chat", "plain")
_CUT = "..."


def _field(obs: Mapping[str, Any], key: str) -> str:
    """A string field of an observation; missing/None -> "", other types -> str()."""
    value = obs.get(key, "") if isinstance(obs, Mapping) else ""
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _head(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - len(_CUT), 0)] + _CUT


def _tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else _CUT + text[len(text) - max(limit - len(_CUT), 0) :]


def compact_prompt(
    obs: Mapping[str, Any],
    max_task_chars: int = 300,
    max_context_chars: int = 400,
    max_feedback_chars: int = 120,
) -> str:
    """The compact prompt of the tiny model: ``Q:task``, context, ``F:feedback``, ``[role]:``.

    Long fields are cut (task keeps its head, context its tail: the latest
    outputs matter most), so the prompt stays short whatever the env sends.

    >>> compact_prompt({"task": "1+1?", "role": "solver"})
    'Q:1+1?\\n[solver]:'
    """
    role = _field(obs, "role") or "agent"
    lines = ["Q:" + _head(_field(obs, "task"), max_task_chars)]
    context = _field(obs, "context").strip("\n")
    if context:
        lines.append(_tail(context, max_context_chars))
    feedback = _field(obs, "feedback").strip()
    if feedback:
        lines.append("F:" + _head(feedback, max_feedback_chars))
    lines.append(f"[{_head(role, 40)}]:")
    return "\n".join(lines)


def plain_prompt(obs: Mapping[str, Any]) -> str:
    """A role-prompt format with full instructions (models without a chat template).

    >>> print(plain_prompt({"task": "1+1?", "role": "solver", "instructions": "Solve it."}))
    ### Role: solver
    Solve it.
    <BLANKLINE>
    ### Task
    1+1?
    <BLANKLINE>
    ### Response (solver)
    <BLANKLINE>
    """
    role = _field(obs, "role") or "agent"
    parts = [f"### Role: {role}"]
    instructions = _field(obs, "instructions").strip()
    if instructions:
        parts.append(instructions)
    parts.append("")
    parts += ["### Task", _field(obs, "task"), ""]
    context = _field(obs, "context").strip("\n")
    if context:
        parts += ["### Team transcript", context, ""]
    feedback = _field(obs, "feedback").strip()
    if feedback:
        parts += ["### Feedback", feedback, ""]
    parts += [f"### Response ({role})", ""]
    return "\n".join(parts)


def chat_messages(obs: Mapping[str, Any]) -> list[dict[str, str]]:
    """System + user messages for a chat template.

    >>> [m["role"] for m in chat_messages({"task": "1+1?", "role": "solver"})]
    ['system', 'user']
    """
    role = _field(obs, "role") or "agent"
    system = _field(obs, "instructions").strip() or (
        f"You are the {role} of a team of agents solving a task together."
    )
    user = [f"Task:\n{_field(obs, 'task')}"]
    context = _field(obs, "context").strip("\n")
    if context:
        user.append(f"What your team has written so far:\n{context}")
    feedback = _field(obs, "feedback").strip()
    if feedback:
        user.append(f"Feedback on the previous round:\n{feedback}")
    user.append(f"Write your message as the {role}.")
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(user)}]


def resolve_prompt_style(style: str, tokenizer: Any, is_tiny: bool) -> str:
    """Map ``"auto"`` to ``"compact"`` (tiny model), ``"chat"`` (chat template) or ``"plain"``.

    >>> resolve_prompt_style("auto", None, is_tiny=True)
    'compact'
    """
    if style not in PROMPT_STYLES:
        raise ValueError(f"prompt_style must be one of {PROMPT_STYLES}, got {style!r}")
    if style != "auto":
        if style == "chat" and not getattr(tokenizer, "chat_template", None):
            raise ValueError(
                "prompt_style='chat' needs a tokenizer with a chat template; "
                "use 'plain' or 'auto' for this model"
            )
        return style
    if is_tiny:
        return "compact"
    return "chat" if getattr(tokenizer, "chat_template", None) else "plain"


def render_prompt(obs: Mapping[str, Any], style: str, tokenizer: Any = None) -> str:
    """Render ``obs`` in a resolved style (``compact``, ``chat`` or ``plain``).

    >>> render_prompt({"task": "2+2?", "role": "solver"}, "compact")
    'Q:2+2?\\n[solver]:'
    """
    if style == "compact":
        return compact_prompt(obs)
    if style == "plain":
        return plain_prompt(obs)
    if style == "chat":
        return tokenizer.apply_chat_template(
            chat_messages(obs), tokenize=False, add_generation_prompt=True
        )
    raise ValueError(f"unresolved prompt style {style!r}: expected compact, chat or plain")


CUT_MARKER = "[... {n} characters of earlier context cut ...]"


def fit_observation(
    obs: Mapping[str, Any], fits: Callable[[Mapping[str, Any]], bool]
) -> Mapping[str, Any]:
    """Shorten ``obs`` until ``fits(obs)``: the oldest context goes first.

    The role, its instructions and the task are kept. The context (the team's
    transcript) loses its oldest characters, replaced by a visible marker, so
    the cut sits in the middle of the prompt, between the task and the latest
    messages. Only if the prompt still does not fit, the feedback, then the
    middle of the task are cut too (each with a marker). Returns ``obs`` itself
    when it fits.

    >>> obs = {"task": "2+2?", "role": "solver", "context": "a" * 100 + "LATEST"}
    >>> small = fit_observation(obs, lambda o: len(o["context"]) <= 60)
    >>> small["context"].startswith("[... ") and small["context"].endswith("LATEST")
    True
    """
    if fits(obs):
        return obs
    current = dict(obs)
    for key, keep in (("context", "tail"), ("feedback", "head"), ("task", "middle")):
        text = _field(current, key)
        if not text:
            continue
        if not fits({**current, key: _shorten(text, 0, keep)}):
            current[key] = _shorten(text, 0, keep)
            continue
        lo, hi = 0, len(text) - 1  # the longest kept length that fits, by bisection
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (
                (mid, hi) if fits({**current, key: _shorten(text, mid, keep)}) else (lo, mid - 1)
            )
        return {**current, key: _shorten(text, lo, keep)}
    return current


def _shorten(text: str, kept: int, keep: str) -> str:
    """``text`` cut to ``kept`` characters (its ``tail``, ``head`` or both ends) plus a marker."""
    marker = CUT_MARKER.format(n=len(text) - kept)
    if keep == "tail":
        return marker + "\n" + text[len(text) - kept :] if kept else marker
    if keep == "head":
        return text[:kept] + "\n" + marker if kept else marker
    half = kept // 2
    return text[:half] + "\n" + marker + "\n" + text[len(text) - (kept - half) :]


class PromptEncoder:
    """An observation -> the token ids of its prompt, in a resolved style, within a budget.

    Args:
        tokenizer: the model's tokenizer (a Hugging Face tokenizer).
        style: a resolved prompt style (``compact``, ``chat`` or ``plain``).
        max_prompt_tokens: the budget; longer prompts lose their oldest context first.

    >>> from flexmg.models.tiny.tokenizer import build_char_tokenizer
    >>> enc = PromptEncoder(build_char_tokenizer(), "compact", max_prompt_tokens=64)
    >>> ids = enc.prompt_ids({"task": "2+2?", "role": "solver"})
    >>> ids[0] == enc.tokenizer.bos_token_id, len(ids)
    (True, 17)
    """

    def __init__(self, tokenizer: Any, style: str, max_prompt_tokens: int) -> None:
        if style not in ("compact", "chat", "plain"):
            raise ValueError(f"unresolved prompt style {style!r}: expected compact, chat or plain")
        self.tokenizer = tokenizer
        self.style = style
        self.max_prompt_tokens = int(max_prompt_tokens)

    def render(self, obs: Mapping[str, Any]) -> str:
        """The prompt text of one observation."""
        if not isinstance(obs, Mapping):
            raise TypeError(f"an observation must be a dict, got {type(obs).__name__}")
        return render_prompt(obs, self.style, self.tokenizer)

    def encode(self, prompt: str) -> list[int]:
        """Token ids of a rendered prompt (BOS first in the compact style), not cut."""
        tok = self.tokenizer
        # Lone surrogates (hostile text) would crash the Rust tokenizer: replace them.
        prompt = prompt.encode("utf-8", "replace").decode("utf-8")
        if self.style == "compact":
            ids = [tok.bos_token_id, *tok(prompt, add_special_tokens=False)["input_ids"]]
        else:
            ids = tok(prompt, add_special_tokens=self.style == "plain")["input_ids"]
        if not ids:
            ids = [tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id]
        return list(ids)

    def prompt_ids(self, obs: Mapping[str, Any]) -> list[int]:
        """Token ids of ``obs``'s prompt, at most ``max_prompt_tokens`` of them.

        An over-long prompt keeps its system prompt, role instructions and task:
        the oldest context is cut, with a visible marker, in the middle of the
        prompt (:func:`fit_observation`). Should even that not fit, the ids keep
        their head and their end.
        """
        limit = self.max_prompt_tokens
        cache: dict[str, list[int]] = {}

        def ids_of(o: Mapping[str, Any]) -> list[int]:
            text = self.render(o)
            if text not in cache:
                cache[text] = self.encode(text)
            return cache[text]

        ids = ids_of(fit_observation(obs, lambda o: len(ids_of(o)) <= limit))
        if len(ids) > limit:
            tail = min(64, limit // 4)
            ids = ids[: limit - tail] + ids[len(ids) - tail :]
        return ids
