"""BERT masking, reproducible per sample.

Each non-special token is selected with probability ``mlm_probability``; a selected
token becomes ``[MASK]`` with probability 0.8, a random non-special token with 0.1, and
stays unchanged with 0.1. Labels hold the original id at selected positions, -100 elsewhere.

Reproducibility: :func:`sample_seed` maps (seed, stream, epoch, index) to a generator seed,
so a sample's masking is a pure function of those values — independent of batch
composition, worker count or shuffling order.
"""

from __future__ import annotations

import hashlib

import torch

from roformer_lit.batch import IGNORE_INDEX

MASK_FRACTION = 0.8
RANDOM_FRACTION = 0.1


def sample_seed(seed: int, stream: str, epoch: int, index: int) -> int:
    """A 63-bit generator seed derived from (seed, stream name, epoch, sample index)."""
    digest = hashlib.blake2b(f"{seed}|{stream}|{epoch}|{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & ((1 << 63) - 1)


def mask_tokens(
    input_ids: torch.Tensor,
    *,
    generator: torch.Generator,
    mlm_probability: float,
    mask_token_id: int,
    special_token_ids: torch.Tensor,
    replacement_ids: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Apply BERT masking to ``input_ids`` (any shape, integer).

    Args:
        input_ids: original token ids (not modified).
        generator: source of randomness (CPU ``torch.Generator``).
        mlm_probability: probability that a non-special token is selected.
        mask_token_id: id of ``[MASK]``.
        special_token_ids: 1-D tensor of ids that are never selected.
        replacement_ids: 1-D tensor of ids that random replacements are drawn from
            (the non-special vocabulary).

    Returns:
        ``(masked_ids, labels)``, both int64 with the shape of ``input_ids``; ``labels`` is
        the original id where selected and -100 elsewhere.
    """
    ids = input_ids.long()
    shape = ids.shape
    select_draw = torch.rand(shape, generator=generator)
    action_draw = torch.rand(shape, generator=generator)
    random_pick = torch.randint(len(replacement_ids), shape, generator=generator)

    selected = (select_draw < mlm_probability) & ~torch.isin(ids, special_token_ids)
    to_mask = selected & (action_draw < MASK_FRACTION)
    to_random = (
        selected & (action_draw >= MASK_FRACTION) & (action_draw < MASK_FRACTION + RANDOM_FRACTION)
    )

    labels = torch.where(selected, ids, torch.full_like(ids, IGNORE_INDEX))
    masked = torch.where(to_mask, torch.full_like(ids, mask_token_id), ids)
    masked = torch.where(to_random, replacement_ids.long()[random_pick], masked)
    return masked, labels
