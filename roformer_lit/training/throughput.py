"""Training throughput: :func:`tokens_in` (a batch's tokens, the one count) and
:class:`Throughput`, the callback that logs ``perf/tokens_per_s`` and ``perf/peak_mem_mb``.

    perf/tokens_per_s = tokens_in(batch) x world size / seconds since the previous
                        training batch ended

logged at every training batch but the first of an epoch and the first after a validation
(their interval is not training time); ``perf/peak_mem_mb`` is the peak accelerator memory
allocated, or the process's peak RSS on a CPU, in MiB. The progress display
(:mod:`~roformer_lit.training.progress`) counts tokens with the same :func:`tokens_in`.
Every CLI run has the callback (``RoformerCLI.instantiate_trainer``).
"""

from __future__ import annotations

import resource
import time
from collections.abc import Mapping
from typing import Any

import torch
from lightning.pytorch import Callback, LightningModule, Trainer

from roformer_lit.batch import IGNORE_INDEX
from roformer_lit.module import MaskedLM
from roformer_lit.training.flops import nominal_peak_flops, training_step_flops


def tokens_in(batch: Any) -> int:
    """Tokens in a batch: the elements of ``input_ids`` (or of the first tensor)."""
    if isinstance(batch, Mapping):
        ids = batch.get("input_ids")
        if ids is None:
            ids = next((v for v in batch.values() if hasattr(v, "numel")), None)
    elif isinstance(batch, list | tuple) and batch:
        ids = batch[0]
    else:
        ids = batch
    return int(ids.numel()) if hasattr(ids, "numel") else 0


def peak_memory_mb(device: torch.device) -> float:
    """Peak accelerator memory allocated, or the process's peak RSS on CPU, in MiB."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def step_flops(module: LightningModule, batch: Any) -> float | None:
    """FLOPs of one training step of an MLM run on ``batch`` (None for other modules or
    batches without ``input_ids`` and ``labels``)."""
    if not isinstance(module, MaskedLM) or not isinstance(batch, Mapping):
        return None
    ids, labels = batch.get("input_ids"), batch.get("labels")
    if ids is None or labels is None or ids.dim() != 2:
        return None
    masked = int((labels != IGNORE_INDEX).sum())
    return training_step_flops(module, ids.shape[0], ids.shape[1], masked)


class Throughput(Callback):
    """Logs ``perf/tokens_per_s``, ``perf/peak_mem_mb``, ``perf/model_tflops`` and
    ``perf/mfu`` (module docstring); ``peak_flops`` overrides the device's nominal peak."""

    def __init__(self, clock: Any = time.perf_counter, peak_flops: float | None = None) -> None:
        self.clock = clock
        self.peak_flops = peak_flops
        self._last_batch_end: float | None = None

    def on_train_epoch_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._last_batch_end = None

    def on_validation_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._last_batch_end = None

    def on_train_batch_end(
        self,
        trainer: Trainer,
        pl_module: LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
    ) -> None:
        now = self.clock()
        if self._last_batch_end is not None:
            seconds = max(now - self._last_batch_end, 1e-9)
            world = max(trainer.world_size, 1)
            pl_module.log("perf/tokens_per_s", tokens_in(batch) * world / seconds)
            pl_module.log("perf/peak_mem_mb", peak_memory_mb(pl_module.device))
            flops = step_flops(pl_module, batch)
            if flops is not None:
                rate = flops * world / seconds
                pl_module.log("perf/model_tflops", rate / 1e12)
                peak = self.peak_flops or nominal_peak_flops(pl_module.device)
                if peak:
                    pl_module.log("perf/mfu", rate / peak)
        self._last_batch_end = now
