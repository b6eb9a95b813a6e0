"""``MaskedLM``: the LightningModule every experiment trains.

    loss = mean over {i : labels_i != -100} of  -log softmax(head(h_i))[labels_i]

The output head runs only at labelled positions. AdamW with linear warmup then linear
decay (to ``min_lr_ratio * learning_rate``), stepped per optimiser step. Logged scalars:
``train/loss``, ``train/lr``, ``val/loss``, ``val/acc`` (micro masked-token accuracy),
``val/exact`` (position tasks only: the fraction of sequences with a masked token whose
every masked token is predicted right, exact match of a probe's answers), ``val/ppl`` (and
``train/skipped_batches`` with ``skip_nonfinite``); ``perf/*`` (tokens/s, peak memory,
model TFLOP/s and MFU) are the trainer's (:class:`~roformer_lit.training.throughput.Throughput`).

Fault tolerance: a non-finite training loss or gradient stops the run with
:class:`TrainingDiverged` naming the step, before the optimiser touches the weights (so no
later checkpoint holds NaN weights), unless ``skip_nonfinite`` is set, in which case the
batch is skipped (no optimiser step) and counted. Checkpoints carry the random number
generators' states (torch CPU and CUDA, Python, NumPy), restored just before the first
training batch after a resume, so dropout continues exactly where it stopped.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F
from lightning.pytorch.trainer.states import TrainerFn
from torch import Tensor
from torchmetrics import MetricCollection
from torchmetrics.classification import MulticlassAccuracy

from roformer_lit.architecture_rules import FIELD_RULES
from roformer_lit.batch import IGNORE_INDEX, Batch, placement
from roformer_lit.component_origins import COMPONENTS_KEY, record, recorded_origins
from roformer_lit.encoder_config import EncoderConfig
from roformer_lit.errors import ConfigError, TrainingDiverged
from roformer_lit.model import Encoder, MLMHead, check_labels, init_bert_weights
from roformer_lit.module_arguments import (
    FLAT_KEYS,
    configs_from,
    flat_help,
    flat_hyperparameters,
    flat_signature,
)
from roformer_lit.training.architecture_digest import DIGEST_KEY, architecture_digest
from roformer_lit.training.checkpoint_io import PRETRAINING, read_checkpoint
from roformer_lit.training.lifecycle import RunModule, evaluation_mean
from roformer_lit.training_config import TrainingConfig
from roformer_lit.validation import TRAINING_RULES, Rule, check_weights_fit_in_memory

#: Every argument of :class:`MaskedLM` and what it accepts: the architecture's fields and
#: the training settings.
MODEL_RULES: dict[str, Rule] = {**FIELD_RULES, **TRAINING_RULES}


class MaskedLM(RunModule):
    """An encoder MLM with a registered position scheme and attention kernel.

    ``MaskedLM(model=EncoderConfig(...), training=TrainingConfig(...))`` takes the
    architecture (:class:`~roformer_lit.encoder_config.EncoderConfig`, kept as
    ``self.config`` and passed whole to the encoder and head) and the training settings
    (:class:`~roformer_lit.training_config.TrainingConfig`, ``self.training_config``) whole.
    Either may instead be given field by field, flat (``MaskedLM(position="alibi",
    learning_rate=1e-3)``): the spelling of YAML, the command line (``--model.hidden_size``)
    and every checkpoint's ``hyper_parameters``, through the alias table
    :data:`~roformer_lit.module_arguments.FLAT_KEYS`. The signature jsonargparse reads and
    the ``Args`` below are generated from the two dataclasses, where each field is written
    once.
    """

    CHECKPOINT_KIND = PRETRAINING  # fit's checkpoints

    def __init__(
        self,
        model: EncoderConfig | Mapping[str, Any] | None = None,
        training: TrainingConfig | Mapping[str, Any] | None = None,
        **flat: Any,
    ) -> None:
        self.config, self.training_config = configs_from(model, training, flat)
        settings = self.training_config
        # RunModule.__init__ named, not super(): a frame without ``__class__`` is one that
        # Lightning's save_hyperparameters does not read the (flat) signature's locals from
        RunModule.__init__(
            self, settings.optimizer_settings, skip_nonfinite=settings.skip_nonfinite
        )
        # flat, as every version saved them: the one spelling checkpoints hold
        self.save_hyperparameters(flat_hyperparameters(self.config, settings))
        self._warmup_steps = settings.warmup_steps
        check_weights_fit_in_memory(self.config.as_dict())  # a host check: it allocates
        try:
            self.encoder = Encoder(self.config)
            self.head = MLMHead(self.config)
        except RuntimeError as exc:  # torch's CPU allocator and CUDA OOM say "allocate"
            if "allocate" not in str(exc):
                raise
            raise ConfigError(
                "cannot allocate the model's weights (model.vocab_size, hidden_size, "
                "num_layers, intermediate_size, max_positions are too large for this machine): "
                + " ".join(str(exc).split())[:200]
            ) from None
        self.apply(lambda m: init_bert_weights(m, settings.init_std))
        # the encoder is registered once, as ``encoder``; the (compiled) callable that runs
        # it is kept outside the module tree, so no tensor has a second name in state_dict
        object.__setattr__(
            self, "_encode", torch.compile(self.encoder) if settings.compile else self.encoder
        )
        self.train_acc = MulticlassAccuracy(self.config.vocab_size, average="micro")
        self.val_metrics = self._stage_metrics(self.config.vocab_size)
        self.test_metrics = self._stage_metrics(self.config.vocab_size)
        self.best_val_loss = math.inf

    @classmethod
    def from_config(cls, config: EncoderConfig, **training: Any) -> MaskedLM:
        """A model of the architecture ``config`` with the training settings ``training``
        (the others their defaults)."""
        return cls(model=config, **training)

    @classmethod
    def load_overrides(cls) -> tuple[list[str], list[str]]:
        """``load_from_checkpoint``'s overrides (:meth:`RunModule.load_from_checkpoint`): the
        training settings may be replaced; the architecture's fields may not (the weights
        are of the checkpoint's)."""
        return (
            [k for k, section in FLAT_KEYS.items() if section == "training"],
            [k for k, section in FLAT_KEYS.items() if section == "model"],
        )

    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike[str]) -> MaskedLM:
        """The model of a pretraining checkpoint, on the CPU: the one loader every command
        that reads a checkpoint's model uses (``export``, ``extrapolate``, ``locality``).
        The file is checked by :func:`~roformer_lit.training.checkpoint_io.read_checkpoint` (a
        regular file, a PyTorch archive, a pretraining checkpoint; one ConfigError line
        otherwise) and unpickled with ``weights_only=True``, so a crafted checkpoint cannot
        run code; a checkpoint that does not fit its own hyperparameters is one line too."""
        read_checkpoint(path, kind=PRETRAINING)
        try:
            return cls.load_read_checkpoint(path, map_location="cpu")
        except ConfigError as exc:
            raise ConfigError(f"{exc}{recorded_origins(path, exc)}") from None
        except Exception as exc:  # a truncated or foreign file that passed the checks
            detail = " ".join(str(exc).split())[:200]
            raise ConfigError(
                f"cannot load checkpoint {path}: {type(exc).__name__}: {detail}"
            ) from exc

    @staticmethod
    def _stage_metrics(vocab_size: int) -> MetricCollection:
        return MetricCollection(
            {
                "loss": evaluation_mean(),
                "acc": MulticlassAccuracy(vocab_size, average="micro", ignore_index=IGNORE_INDEX),
                "exact": evaluation_mean(),
            }
        )

    @property
    def max_length(self) -> int | None:
        """The longest input the position scheme accepts (None: unbounded)."""
        return self.encoder.position.max_length

    def on_fit_start(self) -> None:
        """A kernel that cannot train on this module's device (``backend: flex`` on the CPU)
        is refused now, in one line, before the sanity validation (whose forward computes no
        gradients) and whether or not the encoder is compiled
        (:meth:`~roformer_lit.model.Encoder.check_training_device`)."""
        super().on_fit_start()
        with torch.enable_grad():
            self.encoder.check_training_device(self.device)

    # -- the public model API -------------------------------------------------------------

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        segment_ids: Tensor | None = None,
        position_ids: Tensor | None = None,
    ) -> Tensor:
        """MLM logits ``[B, L, V]``; ``attention_mask`` is 1/True at real tokens;
        ``segment_ids`` (``[B, L]`` int, runs of equal ids) keeps packed documents apart:
        attention stays inside a segment and positions restart in each; ``position_ids``
        (``[B, L]``, increasing and distinct along each row) places the tokens at those positions
        (randomized positions; see :meth:`Encoder.forward`)."""
        hidden = self._encode(
            input_ids, attention_mask, segment_ids=segment_ids, position_ids=position_ids
        )
        return self.head(hidden, self.encoder.word_embeddings.weight)

    def masked_logits(
        self,
        input_ids: Tensor,
        labels: Tensor,
        attention_mask: Tensor | None = None,
        segment_ids: Tensor | None = None,
        position_ids: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        """Logits ``[N, V]`` and targets ``[N]`` at the N labelled positions only.

        In eager mode the last layer's row-wise work (output projection, FFN, norms) runs
        at those N positions only; a compiled encoder keeps static shapes (no graph break
        on the data-dependent N) and the positions are selected after it.
        """
        if isinstance(input_ids, torch.Tensor) and input_ids.dim() == 2:  # else the
            # encoder's own check names input_ids
            check_labels(self.config.vocab_size, input_ids, labels)
        selected = labels != IGNORE_INDEX
        where = {"segment_ids": segment_ids, "position_ids": position_ids}
        if self._encode is self.encoder:
            hidden = self.encoder(input_ids, attention_mask, rows=selected, **where)
        else:
            hidden = self._encode(input_ids, attention_mask, **where)[selected]
        logits = self.head(hidden, self.encoder.word_embeddings.weight)
        return logits, labels[selected].long()  # cross_entropy takes long targets

    def mlm_loss(
        self,
        input_ids: Tensor,
        labels: Tensor,
        attention_mask: Tensor | None = None,
        segment_ids: Tensor | None = None,
        position_ids: Tensor | None = None,
    ) -> Tensor:
        """Mean cross-entropy over positions whose label is not -100 (0 if there are none)."""
        return _cross_entropy(
            *self.masked_logits(input_ids, labels, attention_mask, segment_ids, position_ids)
        )

    # -- training -------------------------------------------------------------------------

    def training_step(self, batch: Batch, batch_idx: int) -> Tensor | None:
        """One step; a batch's ``position_ids`` (randomized positions) place its tokens."""
        logits, targets = self.masked_logits(batch["input_ids"], batch["labels"], *placement(batch))
        loss = _cross_entropy(logits, targets)
        finite = self.loss_is_finite(loss)  # skips (skip_nonfinite) or stops the run
        if self.skip_nonfinite:
            self.log("train/skipped_batches", float(self.skipped_batches))
        if not finite:
            return None  # skipped: no backward, no optimiser step
        self.log("train/loss", loss, prog_bar=True)
        if self._trainer is not None and self.trainer.optimizers:  # one schedule, both groups
            lr = self.trainer.optimizers[0].param_groups[0]["lr"]
            self.log("train/lr", float(lr), on_step=True, on_epoch=False)
        if targets.numel():
            self.train_acc(logits.detach(), targets)
            self.log("train/acc", self.train_acc, on_step=True, on_epoch=False)
        return loss

    def _evaluate(self, batch: Batch, metrics: MetricCollection) -> None:
        """Loss, accuracy and exact match of one evaluation batch; ``position_ids`` only when
        the data module put them there (``data.validation_positions: random``)."""
        logits, targets = self.masked_logits(batch["input_ids"], batch["labels"], *placement(batch))
        if targets.numel() == 0:
            return
        loss = F.cross_entropy(logits.float(), targets)
        metrics["loss"].update(loss, weight=targets.numel())
        metrics["acc"].update(logits, targets)
        if "whole_answers" in batch:  # a position task's rows: each one answer
            metrics["exact"].update(*_exact_match(logits, batch["labels"]))

    def _log_stage(self, metrics: MetricCollection, stage: str) -> None:
        if metrics["loss"].update_count == 0:
            return
        loss = metrics["loss"].compute()
        values = {
            f"{stage}/loss": loss,
            f"{stage}/acc": metrics["acc"].compute(),
            f"{stage}/ppl": torch.exp(loss.clamp(max=50.0)),
        }
        # exact match means something only where the masked tokens are one answer: batches
        # that say so (``whole_answers``, roformer_lit.batch) are the only ones it counts
        if metrics["exact"].update_count > 0:
            values[f"{stage}/exact"] = metrics["exact"].compute()
        fitting = self.trainer.state.fn == TrainerFn.FITTING and not self.trainer.sanity_checking
        if stage == "val" and fitting:
            if not math.isfinite(float(loss)):  # every rank sees the same synced mean
                step = self.trainer.global_step
                raise TrainingDiverged(
                    f"training diverged by step {step}: val/loss is {float(loss)} (the weights "
                    "no longer give finite predictions); lower model.learning_rate",
                    step=step,
                )
            self.best_val_loss = min(self.best_val_loss, float(loss))
            values["val/best_loss"] = torch.tensor(self.best_val_loss)
        self.log_dict(values, prog_bar=stage == "val", sync_dist=True)
        metrics.reset()

    def validation_step(self, batch: Batch, batch_idx: int) -> None:
        self._evaluate(batch, self.val_metrics)

    def on_validation_epoch_end(self) -> None:
        self._log_stage(self.val_metrics, "val")

    def test_step(self, batch: Batch, batch_idx: int) -> None:
        self._evaluate(batch, self.test_metrics)

    def on_test_epoch_end(self) -> None:
        self._log_stage(self.test_metrics, "test")

    def predict_step(self, batch: Batch, batch_idx: int) -> Tensor:
        """The most likely token at each position ``[B, L]``, the tokens placed as
        validation places them (a batch's ``position_ids``, segments)."""
        return self(batch["input_ids"], *placement(batch)).argmax(-1)

    # -- the run lifecycle (RunModule) ----------------------------------------------------

    def warmup_steps(self, total: int) -> int:
        return self._warmup_steps

    def position_parameters(self) -> list[torch.nn.Parameter]:
        """The position schemes' own parameters (``model.position_lr_scale``)."""
        return self.encoder.position_parameters()

    def save_run_state(self, checkpoint: dict[str, Any]) -> None:
        checkpoint[COMPONENTS_KEY] = record(
            self.config,
            checkpoint.get("datamodule_hyper_parameters"),  # a task's origin
        )
        # the architecture record sealed: an edit of it is refused by every reader
        checkpoint[DIGEST_KEY] = architecture_digest(self.config.as_dict())
        checkpoint["best_val_loss"] = self.best_val_loss
        checkpoint["skipped_batches"] = self.skipped_batches

    def load_run_state(self, checkpoint: Mapping[str, Any]) -> None:
        # the checkpoint has passed the one reader's checks (RunModule.on_load_checkpoint)
        self.best_val_loss = checkpoint.get("best_val_loss", math.inf)
        self.skipped_batches = int(checkpoint.get("skipped_batches", 0))


def _cross_entropy(logits: Tensor, targets: Tensor) -> Tensor:
    """Mean cross-entropy in float32; 0 (still differentiable) when nothing is labelled."""
    if targets.numel() == 0:
        return logits.sum() * 0.0
    return F.cross_entropy(logits.float(), targets)


def _exact_match(logits: Tensor, labels: Tensor) -> tuple[Tensor, Tensor]:
    """(fraction of rows whose every labelled position's argmax is right, number of rows
    with a labelled position): ``logits [N, V]`` are at the N labelled positions of
    ``labels [B, L]`` in row-major order (:meth:`MaskedLM.masked_logits`)."""
    selected = labels != IGNORE_INDEX
    wrong = (logits.argmax(-1) != labels[selected]).long()
    rows = selected.nonzero()[:, 0]
    wrong_per_row = torch.zeros(labels.shape[0], dtype=torch.long, device=labels.device)
    wrong_per_row.index_add_(0, rows, wrong)
    labelled = selected.any(dim=1)
    exact = (wrong_per_row[labelled] == 0).float()
    return exact.mean(), labelled.sum().float()


# The flat spelling (module docstring of :mod:`roformer_lit.module_arguments`): what
# jsonargparse reads to make the ``--model.<key>`` options, with each field's help.
_FLAT_SIGNATURE = flat_signature()
MaskedLM.__init__.__signature__ = _FLAT_SIGNATURE  # type: ignore[attr-defined]
MaskedLM.__init__.__annotations__ = {
    p.name: p.annotation for p in _FLAT_SIGNATURE.parameters.values() if p.name != "self"
} | {"return": None}
MaskedLM.__doc__ = f"{MaskedLM.__doc__.rstrip()}\n\n    " + flat_help().replace("\n", "\n    ")
