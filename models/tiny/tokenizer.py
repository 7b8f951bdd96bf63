"""Character-level tokenizer for the project's tiny model.

Built with the ``tokenizers`` library (one token per character: printable ASCII,
newline and tab, plus special tokens) and wrapped as a
``transformers.PreTrainedTokenizerFast`` so it plugs into ``generate``, peft and
``save_pretrained`` like any Hugging Face tokenizer. Characters outside the
vocabulary (any other unicode) map to ``<unk>``: hostile text never crashes it.

Example:
    >>> from flexmg.models.tiny.tokenizer import build_char_tokenizer
    >>> tok = build_char_tokenizer()
    >>> ids = tok("7+5")["input_ids"]
    >>> len(ids), tok.decode(ids)
    (3, '7+5')
"""

from __future__ import annotations

import string

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"
SPECIAL_TOKENS: tuple[str, ...] = (PAD, BOS, EOS, UNK)
# Printable ASCII without the "\x0b\x0c\r" control characters, then newline and tab.
CHARACTERS: tuple[str, ...] = tuple(c for c in string.printable if c not in "\x0b\x0c\r\n\t") + (
    "\n",
    "\t",
)


def char_vocab() -> dict[str, int]:
    """The token -> id map: special tokens first (pad=0, bos=1, eos=2, unk=3), then characters.

    >>> v = char_vocab(); v["<pad>"], v["</s>"], len(v)
    (0, 2, 101)
    """
    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS)}
    for ch in CHARACTERS:
        vocab[ch] = len(vocab)
    return vocab


def build_char_tokenizer(model_max_length: int = 4096) -> PreTrainedTokenizerFast:
    """Build the character-level tokenizer (deterministic; no files, no downloads).

    The wrapped tokenizer does not add BOS/EOS by itself; callers add them
    explicitly. ``padding_side`` is ``"left"`` (prompts for batched generation).

    >>> tok = build_char_tokenizer()
    >>> tok.pad_token_id, tok.eos_token_id, tok.bos_token_id, tok.unk_token_id
    (0, 2, 1, 3)
    >>> tok.decode(tok("é!")["input_ids"], skip_special_tokens=True)
    '!'
    """
    core = Tokenizer(models.WordLevel(vocab=char_vocab(), unk_token=UNK))
    # Every single character is its own pre-token ("(?m:.)": in Oniguruma "m" lets "." match newlines).
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"(?m:.)"), behavior="isolated")
    core.decoder = decoders.Fuse()
    core.add_special_tokens(list(SPECIAL_TOKENS))
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token=PAD,
        bos_token=BOS,
        eos_token=EOS,
        unk_token=UNK,
        padding_side="left",
        model_max_length=model_max_length,
        clean_up_tokenization_spaces=False,
    )
    return tok
