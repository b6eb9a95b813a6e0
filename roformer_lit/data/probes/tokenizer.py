"""The probes' tokenizer: a word-level ``tokenizers.Tokenizer`` built in memory.

Its vocabulary is exactly the ids of :mod:`roformer_lit.data.probes.tasks`: ``[PAD]`` 0,
``[MASK]`` 1, ``[SEP]`` 2, then the symbol names ``s0``, ``s1``, ... at ids 3, 4, ...;
words are split at whitespace, so ``"s3 s0 [SEP] [MASK]"`` encodes to ``[6, 3, 2, 1]``
(a word outside the vocabulary encodes to ``[PAD]``: there is no ``[UNK]``).
It is an ordinary ``Tokenizer``: a probe run's checkpoints store it like any other run's,
and :class:`~roformer_lit.data.tokenizer.SpecialTokens` finds its special tokens.
"""

from __future__ import annotations

from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers

from roformer_lit.data.probes.tasks import FIRST_SYMBOL, MASK_ID, PAD_ID, SEP_ID

#: The special tokens of a probe vocabulary, by id.
PROBE_SPECIALS = {PAD_ID: "[PAD]", MASK_ID: "[MASK]", SEP_ID: "[SEP]"}


def symbol_name(index: int) -> str:
    """The token of symbol ``index`` (``s0``, ``s1``, ...)."""
    return f"s{index}"


def probe_tokenizer(symbols: int) -> Tokenizer:
    """The word-level tokenizer of a probe over ``symbols`` symbols (see the module)."""
    vocab = {token: i for i, token in PROBE_SPECIALS.items()}
    vocab.update({symbol_name(s): FIRST_SYMBOL + s for s in range(symbols)})
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[PAD]"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.add_special_tokens([AddedToken(t, special=True) for t in PROBE_SPECIALS.values()])
    return tokenizer
