"""``ResumableDataModule``: what every data module shares, pretraining and fine-tuning alike.

- the tokenizer travels with the weights: :meth:`~ResumableDataModule.state_dict` is
  :func:`~roformer_lit.data.stored_tokenizer.tokenizer_state`, saved in every checkpoint,
  with the data's content identity where they have one (:meth:`~ResumableDataModule.data_identity`,
  :mod:`roformer_lit.training.data_identity`), which a resume compares with its own;
- the loaders: the order of a pass is a permutation seeded by ``(seed, epoch)``
  (:class:`~roformer_lit.data.dataset.EpochSampler`; validation in order), the training
  loader is resumable mid-epoch (:class:`~roformer_lit.data.dataset.ResumableDataLoader`),
  and every loader has its own generator seeded by ``seed``, so a resumed run sees exactly
  the batches of an uninterrupted one.

Subclasses: :class:`~roformer_lit.data.datamodule.PretrainDataModule` (every pretraining
source) and :class:`~roformer_lit.finetune.datamodule.TaskDataModule` (a fine-tuning task).
"""

from __future__ import annotations

from typing import Any

import lightning as L
import torch
from tokenizers import Tokenizer
from torch.utils.data import DataLoader, Dataset

from roformer_lit.data.dataset import EpochSampler, ResumableDataLoader
from roformer_lit.data.stored_tokenizer import tokenizer_state
from roformer_lit.training.data_identity import DATA_IDENTITY_KEY, EVALUATED_IDENTITY_KEY


class ResumableDataModule(L.LightningDataModule):
    """A data module with a tokenizer and seeded, resumable loaders (see the module).

    A subclass gives :attr:`tokenizer`, ``seed`` and ``num_workers`` (as attributes or
    properties) and builds its loaders with :meth:`seeded_loader`."""

    seed: int
    num_workers: int

    @property
    def tokenizer(self) -> Tokenizer:
        """The data's tokenizer."""
        raise NotImplementedError

    def data_identity(self) -> str | None:
        """The content identity of the data this module gives
        (:mod:`roformer_lit.training.data_identity`), or None where its settings identify
        them (data built in memory from a seed) or nothing records one (here: none)."""
        return None

    def evaluated_identity(self) -> str | None:
        """The content identity of what ``validate``/``test`` read of these data: the data
        identity, unless a subclass's evaluation reads less (fine-tuning: the validation
        splits alone)."""
        return self.data_identity()

    def state_dict(self) -> dict[str, str]:
        """What the data module saves in each checkpoint: its tokenizer
        (:func:`~roformer_lit.data.stored_tokenizer.tokenizer_state`), so that export
        and fine-tuning need neither the tokenizer cache nor the corpus, and the data's
        identity where they have one (:data:`DATA_IDENTITY_KEY`), with the evaluated
        identity where it differs (:data:`EVALUATED_IDENTITY_KEY`)."""
        state = tokenizer_state(self.tokenizer)
        identity = self.data_identity()
        if identity is not None:
            state[DATA_IDENTITY_KEY] = identity
            evaluated = self.evaluated_identity()
            if evaluated is not None and evaluated != identity:
                state[EVALUATED_IDENTITY_KEY] = evaluated
        return state

    def current_epoch(self) -> int:
        """The trainer's epoch (0 before a trainer is attached)."""
        trainer = getattr(self, "trainer", None)
        return int(trainer.current_epoch) if trainer is not None else 0

    def seeded_loader(
        self, dataset: Dataset, *, shuffle: bool, batch_size: int | None, **options: Any
    ) -> DataLoader:
        """A loader over ``dataset``: shuffled by ``(seed, epoch)`` and resumable mid-epoch
        (training), or in order (evaluation); ``options`` go to the ``DataLoader``."""
        sampler = EpochSampler(
            len(dataset),  # type: ignore[arg-type]
            shuffle=shuffle,
            seed=self.seed,
            epoch=self.current_epoch(),
        )
        # The training loader is resumable mid-epoch (its position goes into checkpoints).
        # Every loader has its own generator: otherwise each new DataLoader iterator draws
        # its worker base seed from torch's global RNG, which dropout uses, so the dropout
        # masks of a resumed run would depend on how many iterators were created before.
        loader_class = ResumableDataLoader if shuffle else DataLoader
        return loader_class(
            dataset,
            batch_size=batch_size,
            sampler=sampler,
            num_workers=self.num_workers,
            persistent_workers=self.num_workers > 0,
            generator=torch.Generator().manual_seed(self.seed),
            **options,
        )
