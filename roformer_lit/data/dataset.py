"""Map-style dataset of packed blocks with per-sample BERT masking, and an epoch-aware sampler.

Masking of sample ``i``:

* training (``fixed_masking=False``): generator seeded from ``(seed, "train", epoch, i)`` —
  fresh every epoch, reproducible, independent of workers and shuffling;
* validation (``fixed_masking=True``): seeded from ``(seed, "val", 0, i)`` — identical in
  every epoch and every run with the same seed.

Randomized positions (``random_positions=R``): sample ``i`` also carries ``position_ids``,
``L`` distinct positions drawn without replacement from ``[0, R)`` and sorted, from a
generator of its own seeded from ``(seed, "positions", epoch, i)`` in training and
``(seed, "val_positions", 0, i)`` in validation (so the masking is the same with or without
them). The data module gives a validation dataset ``R`` only with ``validation_positions:
random``.

The epoch reaches the dataset through the index: :class:`EpochSampler` yields
``(epoch, index)`` pairs, so it works unchanged in DataLoader worker processes.
Lightning calls ``sampler.set_epoch(epoch)`` at the start of every training epoch.

:class:`ResumableDataLoader` makes the position inside an epoch part of the checkpoint:
Lightning saves its ``state_dict()`` (the epoch and the number of batches handed out) and,
on a restart, calls ``load_state_dict()``, after which the next pass over that epoch skips
the batches already trained on (by index, without loading them). Since the order and the
masking are pure functions of ``(seed, epoch, index)``, a resumed run sees exactly the
batches the uninterrupted run would have seen.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import torch
from torch.utils.data import Dataset, Sampler

from roformer_lit.data.masking import mask_tokens, sample_seed
from roformer_lit.data.shards import TokenBlocks
from roformer_lit.training.lightning_compat import IndexSamplerHook


class MLMBlockDataset(Dataset[dict[str, torch.Tensor]]):
    """Packed ``[N, L]`` blocks; item = ``{"input_ids": [L] int64, "labels": [L] int64}``,
    and with ``document_mask`` also ``"segment_ids": [L] int64``: the document of each token,
    counted from 0 at the block's first token; with ``random_positions`` (``R >= L``) also
    ``"position_ids": [L] int64``, sorted and distinct in
    ``[0, R)`` (see the module docstring).

    ``blocks`` is an ``[N, L]`` tensor or any sequence of ``N`` token rows with a ``shape``
    of ``(N, L)``, such as the memory-mapped :class:`~roformer_lit.data.shards.TokenBlocks`
    (``document_mask`` needs its ``document_index``).
    """

    def __init__(
        self,
        blocks: torch.Tensor | TokenBlocks,
        *,
        mlm_probability: float,
        mask_token_id: int,
        special_token_ids: Sequence[int],
        vocab_size: int,
        seed: int,
        fixed_masking: bool,
        document_mask: bool = False,
        random_positions: int | None = None,
    ) -> None:
        if len(blocks.shape) != 2:
            raise ValueError(f"blocks must be [N, L], got shape {tuple(blocks.shape)}")
        # the data module's check refuses a range shorter than a block (PretrainDataModule)
        assert random_positions is None or random_positions >= blocks.shape[1], (
            f"random_positions={random_positions} < block length {blocks.shape[1]}"
        )
        self.random_positions = random_positions
        if document_mask and not hasattr(blocks, "document_index"):
            raise ValueError("document_mask needs blocks that know their documents (TokenBlocks)")
        self.document_mask = document_mask
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
        sample = {"input_ids": input_ids, "labels": labels}
        if self.document_mask:
            documents = self.blocks.document_index(index)
            sample["segment_ids"] = documents - documents[0]
        if self.random_positions is not None:
            sample["position_ids"] = self.position_ids(index, epoch, input_ids.shape[0])
        return sample

    def position_ids(self, index: int, epoch: int, length: int) -> torch.Tensor:
        """``length`` sorted distinct positions drawn from ``[0, random_positions)`` for
        sample ``index`` of ``epoch``: a pure function of (seed, epoch, index)."""
        assert self.random_positions is not None
        stream = "val_positions" if self.fixed_masking else "positions"
        seed = sample_seed(self.seed, stream, epoch, index)
        gen = torch.Generator().manual_seed(seed)
        drawn = torch.randperm(self.random_positions, generator=gen)[:length]
        return drawn.sort().values

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
            # kept as an int64 array (8 bytes a block), not a list of Python ints
            order = torch.randperm(self.num_samples, generator=gen).numpy()
            for i in order:
                yield (epoch, int(i))
        else:
            for i in range(self.num_samples):
                yield (epoch, i)


class _SkipFirst:
    """An index (batch) sampler whose next pass starts ``loader._skip`` batches in."""

    def __init__(self, base: Iterable[Any], loader: ResumableDataLoader) -> None:
        self.base = base
        self.loader = loader

    def __len__(self) -> int:
        return len(self.base)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[Any]:
        iterator = iter(self.base)
        for _ in range(self.loader._skip):
            if next(iterator, None) is None:
                return
        yield from iterator


class ResumableDataLoader(IndexSamplerHook):
    """A ``DataLoader`` whose position inside the epoch is saved in Lightning checkpoints.

    ``state_dict()`` is ``{"epoch": e, "batches": n}``: the sampler's epoch of the current
    pass and the number of batches handed out in it. After ``load_state_dict()``, the next
    pass skips the first ``n`` batches if its epoch is ``e`` (a restart inside that epoch);
    a pass over another epoch (the saved one had ended) starts at its beginning. Skipped
    batches are skipped by index, so nothing is loaded or masked for them, and under DDP the
    count is per rank (the batch sampler already yields this rank's share).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._skip = 0
        self._pass_epoch: int | None = None
        self._yielded = 0
        self._resume: tuple[int | None, int] | None = None

    def wrap_index_sampler(self, sampler: Any) -> Any:
        """The index sampler, starting ``_skip`` batches in (torch's ``_index_sampler``:
        :class:`~roformer_lit.training.lightning_compat.IndexSamplerHook`)."""
        return _SkipFirst(sampler, self)

    def _sampler_epoch(self) -> int | None:
        epoch = getattr(self.sampler, "epoch", None)
        return int(epoch) if epoch is not None else None

    def __iter__(self) -> Iterator[Any]:  # type: ignore[override]
        # A generator: runs at the first next(), after Lightning's set_epoch for this epoch.
        epoch = self._sampler_epoch()
        skip = 0
        if self._resume is not None:
            saved_epoch, batches = self._resume
            self._resume = None
            if saved_epoch == epoch and 0 < batches < len(self):
                skip = batches
        self._skip, self._pass_epoch, self._yielded = skip, epoch, skip
        for batch in super().__iter__():
            self._yielded += 1
            yield batch

    def state_dict(self) -> dict[str, Any]:
        """The epoch of the current pass and the batches handed out in it."""
        return {"epoch": self._pass_epoch, "batches": self._yielded}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Resume the saved epoch after its first ``batches`` batches on the next pass."""
        epoch = state_dict.get("epoch")
        batches = int(state_dict.get("batches", 0))
        self._resume = (None if epoch is None else int(epoch), batches)
        if epoch is not None and hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(int(epoch))
