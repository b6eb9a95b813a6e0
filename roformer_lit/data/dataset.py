"""Map-style dataset of packed blocks with per-sample BERT masking, and an epoch-aware sampler.

Masking of sample ``i``:

* training (``fixed_masking=False``): generator seeded from ``(seed, "train", epoch, i)`` —
  fresh every epoch, reproducible, independent of workers and shuffling;
* validation (``fixed_masking=True``): seeded from ``(seed, "val", 0, i)`` — identical in
  every epoch and every run with the same seed.

The epoch reaches the dataset through the index: :class:`EpochSampler` yields
``(epoch, index)`` pairs, so it works unchanged in DataLoader worker processes.
Lightning calls ``sampler.set_epoch(epoch)`` at the start of every training epoch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch
from torch.utils.data import Dataset, Sampler

from roformer_lit.data.masking import mask_tokens, sample_seed


class MLMBlockDataset(Dataset[dict[str, torch.Tensor]]):
    """Packed ``[N, L]`` blocks; item = ``{"input_ids": [L] int64, "labels": [L] int64}``."""

    def __init__(
        self,
        blocks: torch.Tensor,
        *,
        mlm_probability: float,
        mask_token_id: int,
        special_token_ids: Sequence[int],
        vocab_size: int,
        seed: int,
        fixed_masking: bool,
    ) -> None:
        if blocks.dim() != 2:
            raise ValueError(f"blocks must be [N, L], got shape {tuple(blocks.shape)}")
        self.blocks = blocks
        self.mlm_probability = mlm_probability
        self.mask_token_id = mask_token_id
        self.special_token_ids = torch.tensor(sorted(set(special_token_ids)), dtype=torch.long)
        keep = torch.ones(vocab_size, dtype=torch.bool)
        keep[self.special_token_ids[self.special_token_ids < vocab_size]] = False
        self.replacement_ids = torch.arange(vocab_size)[keep]
        self.seed = seed
        self.fixed_masking = fixed_masking
        self.stream = "val" if fixed_masking else "train"

    def __len__(self) -> int:
        return self.blocks.shape[0]

    def masked_sample(self, index: int, epoch: int = 0) -> dict[str, torch.Tensor]:
        """The masked sample ``index`` for ``epoch`` (epoch is ignored with fixed masking)."""
        if self.fixed_masking:
            epoch = 0
        gen = torch.Generator().manual_seed(sample_seed(self.seed, self.stream, epoch, index))
        input_ids, labels = mask_tokens(
            self.blocks[index],
            generator=gen,
            mlm_probability=self.mlm_probability,
            mask_token_id=self.mask_token_id,
            special_token_ids=self.special_token_ids,
            replacement_ids=self.replacement_ids,
        )
        return {"input_ids": input_ids, "labels": labels}

    def __getitem__(self, key: int | tuple[int, int]) -> dict[str, torch.Tensor]:
        """``dataset[i]`` (epoch 0) or ``dataset[(epoch, i)]`` as yielded by EpochSampler."""
        if isinstance(key, tuple):
            epoch, index = key
            return self.masked_sample(int(index), int(epoch))
        return self.masked_sample(int(key))


class EpochSampler(Sampler[tuple[int, int]]):
    """Yields ``(epoch, index)``; with ``shuffle`` the order is a permutation seeded by (seed, epoch)."""

    def __init__(self, num_samples: int, *, shuffle: bool, seed: int, epoch: int = 0) -> None:
        self.num_samples = num_samples
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = epoch

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch (called by Lightning at the start of each training epoch)."""
        self.epoch = epoch

    def __len__(self) -> int:
        return self.num_samples

    def __iter__(self) -> Iterator[tuple[int, int]]:
        epoch = self.epoch
        if self.shuffle:
            gen = torch.Generator().manual_seed(sample_seed(self.seed, "shuffle", epoch, 0))
            order = torch.randperm(self.num_samples, generator=gen).tolist()
        else:
            order = range(self.num_samples)
        for i in order:
            yield (epoch, i)
