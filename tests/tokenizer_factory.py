"""A tiny WordPiece tokenizer of an exact vocabulary size, for tests of small models."""

from __future__ import annotations

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

from roformer_lit.data.tokenizer import SPECIAL_TOKENS


def word(i: int) -> str:
    """The word that has id ``i`` (for ``i >= len(SPECIAL_TOKENS)``)."""
    return f"w{i}"


def tiny_tokenizer(vocab_size: int) -> Tokenizer:
    """Ids 0-4: ``[PAD] [UNK] [CLS] [SEP] [MASK]`` (as a trained tokenizer), then ``w5``,
    ``w6``, ... up to ``vocab_size - 1``; BERT normaliser and pre-tokeniser as in training,
    so ``"w7 [MASK] w9"`` encodes to ``[7, 4, 9]`` by construction."""
    vocab = {token: i for i, token in enumerate(SPECIAL_TOKENS)}
    vocab.update({word(i): i for i in range(len(SPECIAL_TOKENS), vocab_size)})
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##")
    tok.add_special_tokens(list(SPECIAL_TOKENS))
    assert tok.get_vocab_size(with_added_tokens=True) == vocab_size
    return tok
