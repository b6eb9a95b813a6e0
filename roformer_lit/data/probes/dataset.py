"""The probes' datasets: training batches and the fixed validation set.

* :class:`ProbeTrainBatches`: item ``(epoch, i)`` is a whole batch (load it with
  ``batch_size=None``) of ``batch_size`` sequences of one input length ``n``, drawn
  uniformly from ``[min_length, max_length]``; length and content come from the generator
  of ``(seed, "train", epoch, i)``, so an item is the same in every process, with any
  number of workers, and after a resume (the loader skips batches by index).
  A task's training hint (``hint``, :attr:`~roformer_lit.data.probes.tasks.ProbeTask.hint`)
  shapes these batches only.
* :class:`ProbeValidation`: ``count`` sequences of input length ``length``, sequence ``i``
  from the generator of ``(seed, "val", length, i)``: the same sequences whatever the
  batch size, and a longer ``count`` only adds sequences.

Items are ``{"input_ids", "labels"}`` int64 tensors (see :func:`~roformer_lit.data.probes.tasks.generate`).
With ``random_positions`` ``R`` (Ruoss et al. 2023), a training batch also carries
``position_ids``: per sequence, ``L`` distinct positions of ``[0, R)`` drawn without
replacement and sorted, from the generator of ``(seed, "positions", epoch, i)`` -- a stream
of its own, so the batch's symbols are the same with the switch on or off. Validation
sequences carry them only when asked (``validation_positions: random``): sequence ``i``'s
from the generator of ``(seed, "val_positions", length, i)``. With ``stream="test"`` the
same is drawn from the ``test`` / ``test_positions`` streams instead: other sequences, which
``extrapolate --split test`` reports on (a selection made on validation never sees them).
"""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import Dataset

from roformer_lit.data.probes.tasks import ProbeTask, generate, probe_rng


def draw_positions(rng: np.random.Generator, rows: int, length: int, limit: int) -> torch.Tensor:
    """``[rows, length]`` int64: per row, ``length`` distinct positions of ``[0, limit)``,
    sorted (a row of a uniform random subset)."""
    chosen = np.stack([np.sort(rng.choice(limit, size=length, replace=False)) for _ in range(rows)])
    return torch.from_numpy(chosen.astype(np.int64))


class ProbeTrainBatches(Dataset[dict[str, torch.Tensor]]):
    """``batches`` training batches per epoch; item ``(epoch, i)`` (as
    :class:`~roformer_lit.data.dataset.EpochSampler` yields) or ``i`` (epoch 0)."""

    def __init__(
        self,
        task: ProbeTask,
        *,
        symbols: int,
        min_length: int,
        max_length: int,
        batch_size: int,
        seed: int,
        batches: int,
        random_positions: int | None = None,
        hint: float = 0.0,
    ) -> None:
        self.task, self.symbols, self.seed, self.hint = task, symbols, seed, hint
        self.random_positions = random_positions
        self.min_length, self.max_length = min_length, max_length
        self.batch_size, self.batches = batch_size, batches

    def __len__(self) -> int:
        return self.batches

    def batch(self, index: int, epoch: int = 0) -> dict[str, torch.Tensor]:
        """Batch ``index`` of ``epoch``: its length, then its sequences, from one generator."""
        rng = probe_rng(self.seed, "train", epoch, index)
        n = int(rng.integers(self.min_length, self.max_length + 1))
        input_ids, labels = generate(self.task, rng, self.batch_size, n, self.symbols, self.hint)
        batch = {"input_ids": torch.from_numpy(input_ids), "labels": torch.from_numpy(labels)}
        if self.random_positions is not None:
            batch["position_ids"] = draw_positions(
                probe_rng(self.seed, "positions", epoch, index),
                input_ids.shape[0],
                input_ids.shape[1],
                self.random_positions,
            )
        return batch

    def __getitem__(self, key: int | tuple[int, int]) -> dict[str, torch.Tensor]:
        if isinstance(key, tuple):
            epoch, index = key
            return self.batch(int(index), int(epoch))
        return self.batch(int(key))


#: Every evaluation row of a position task is one answer (``whole_answers``, roformer_lit.batch).
_WHOLE_ANSWER = torch.tensor(True)


class ProbeValidation(Dataset[dict[str, torch.Tensor]]):
    """``count`` fixed sequences of input length ``length`` (item ``i`` or ``(epoch, i)``)."""

    def __init__(
        self,
        task: ProbeTask,
        *,
        symbols: int,
        length: int,
        count: int,
        seed: int,
        random_positions: int | None = None,
        stream: str = "val",
    ) -> None:
        self.length = length
        pairs = [
            generate(task, probe_rng(seed, stream, length, i), 1, length, symbols)
            for i in range(count)
        ]
        self.input_ids = torch.from_numpy(np.concatenate([p[0] for p in pairs]))
        self.labels = torch.from_numpy(np.concatenate([p[1] for p in pairs]))
        self.position_ids: torch.Tensor | None = None
        if random_positions is not None:
            tokens = self.input_ids.shape[1]
            self.position_ids = torch.cat(
                [
                    draw_positions(
                        probe_rng(seed, f"{stream}_positions", length, i),
                        1,
                        tokens,
                        random_positions,
                    )
                    for i in range(count)
                ]
            )

    def __len__(self) -> int:
        return self.input_ids.shape[0]

    def __getitem__(self, key: int | tuple[int, int]) -> dict[str, torch.Tensor]:
        index = key[1] if isinstance(key, tuple) else key
        item = {
            "input_ids": self.input_ids[index],
            "labels": self.labels[index],
            "whole_answers": _WHOLE_ANSWER,  # exact match scores a row (roformer_lit.batch)
        }
        if self.position_ids is not None:
            item["position_ids"] = self.position_ids[index]
        return item
