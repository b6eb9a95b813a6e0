"""Packing documents into fixed-length blocks.

Layout (documented choice): every document is tokenized without special tokens and
followed by one ``[SEP]``; the documents are concatenated into one token stream, and the
stream is cut into consecutive blocks of exactly ``max_length`` tokens. Blocks therefore
contain no ``[PAD]`` and no ``[CLS]``; a block may start or end in the middle of a
document. The trailing partial block is dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from tokenizers import Tokenizer

from roformer_lit.errors import ConfigError


def encode_stream(tokenizer: Tokenizer, documents: Sequence[str], sep_id: int) -> torch.Tensor:
    """Tokenize ``documents`` (batched, parallel) into one int32 stream, ``[SEP]`` after each.

    Documents that tokenize to nothing are skipped (no double ``[SEP]``).
    """
    encodings = tokenizer.encode_batch(list(documents), add_special_tokens=False)
    lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
    lengths = lengths[lengths > 0]
    total = int(lengths.sum()) + len(lengths)
    stream = np.empty(total, dtype=np.int32)
    pos = 0
    for enc in encodings:
        ids = enc.ids
        if not ids:
            continue
        n = len(ids)
        stream[pos : pos + n] = ids
        stream[pos + n] = sep_id
        pos += n + 1
    return torch.from_numpy(stream)


def pack_blocks(stream: torch.Tensor, max_length: int, split: str = "train") -> torch.Tensor:
    """Cut a 1-D token stream into ``[N, max_length]`` blocks (the remainder is dropped).

    Raises:
        ConfigError: if the stream is shorter than one block.
    """
    if stream.dim() != 1:
        raise ValueError(f"stream must be 1-D, got shape {tuple(stream.shape)}")
    n = stream.numel() // max_length
    if n == 0:
        raise ConfigError(
            f"the {split} corpus is too small: {stream.numel()} tokens, fewer than one block of "
            f"max_length={max_length}; add text or lower data.max_length"
        )
    return stream[: n * max_length].reshape(n, max_length).contiguous()
