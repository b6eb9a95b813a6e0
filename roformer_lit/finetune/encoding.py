"""Examples as token ids, and batches with dynamic padding.

A single text becomes ``[CLS] a [SEP]`` and a pair ``[CLS] a [SEP] b [SEP]`` (``[CLS]``
only if the tokenizer has it: then it is the first token, which ``pooling: cls`` reads).
Longer inputs are truncated to ``max_length`` tokens, a pair longest-first (one token at a
time from the longer of the two texts, as Hugging Face's ``longest_first``).

No segment (token-type) ids are produced: the encoder's ``segment_ids`` mean *separate
documents* (attention stays inside a segment, positions restart), which would keep the
two texts of a pair from attending to each other; the ``[SEP]`` between them marks the
boundary, as in RoBERTa-style encoders without token types.

A batch is ``{"input_ids": [B, L], "attention_mask": [B, L], "labels": [B]}``, padded to
its longest member with ``[PAD]``; ``attention_mask`` is 1 at real tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tokenizers import Tokenizer
from torch import Tensor

from roformer_lit.data.tokenizer import SpecialTokens


def truncate_pair(a: list[int], b: list[int], budget: int) -> tuple[list[int], list[int]]:
    """Cut tokens from the end of the longer of ``a``, ``b`` (``a`` on ties) until
    ``len(a) + len(b) <= budget``."""
    a, b = list(a), list(b)
    while len(a) + len(b) > max(budget, 0):
        if len(a) >= len(b):
            a.pop()
        else:
            b.pop()
    return a, b


def encode_examples(
    tokenizer: Tokenizer,
    texts: Sequence[str],
    pairs: Sequence[str | None],
    max_length: int,
) -> list[list[int]]:
    """Token ids of each ``(text, pair)``: ``[CLS] a [SEP] (b [SEP])``, at most ``max_length``."""
    special = SpecialTokens.from_tokenizer(tokenizer, "the checkpoint's tokenizer")
    head = [special.cls] if special.cls is not None else []
    firsts = [e.ids for e in tokenizer.encode_batch(list(texts), add_special_tokens=False)]
    present = [p for p in pairs if p is not None]
    seconds = iter(
        [e.ids for e in tokenizer.encode_batch(present, add_special_tokens=False)]
        if present
        else []
    )
    encoded = []
    for first, pair in zip(firsts, pairs, strict=True):
        if pair is None:
            a, _ = truncate_pair(first, [], max_length - len(head) - 1)
            encoded.append([*head, *a, special.sep])
        else:
            a, b = truncate_pair(first, next(seconds), max_length - len(head) - 2)
            encoded.append([*head, *a, special.sep, *b, special.sep])
    return encoded


def collate(
    rows: Sequence[tuple[list[int], int | float]], pad_id: int, regression: bool
) -> dict[str, Tensor]:
    """Pad ``(ids, label)`` rows to the longest: input_ids, attention_mask, labels
    (``float32`` for a regression, ``int64`` otherwise)."""
    length = max(len(ids) for ids, _ in rows)
    input_ids = torch.full((len(rows), length), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(rows), length), dtype=torch.long)
    for i, (ids, _) in enumerate(rows):
        input_ids[i, : len(ids)] = torch.tensor(ids, dtype=torch.long)
        attention_mask[i, : len(ids)] = 1
    dtype = torch.float32 if regression else torch.long
    labels = torch.tensor([label for _, label in rows], dtype=dtype)
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}
