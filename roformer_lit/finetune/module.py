"""``SequenceClassifier``: a pretrained encoder with a classification or regression head.

    h = Encoder(input_ids, attention_mask)                      [B, L, H]
    cls pooling:  p = h[:, 0]  (the first token of the input: [CLS] when the tokenizer
                  has it, which the task data module puts first)
    mean pooling: p = sum_i m_i h_i / sum_i m_i  (m = attention_mask: real tokens only)
    logits = W dropout(p) + b                                    [B, num_labels]
    loss = cross-entropy(logits, y)            (num_labels >= 2)
         = mean (logits[:, 0] - y)^2           (num_labels == 1: a regression)

The encoder (scheme, kernel, sizes, weights) comes from ``pretrained``, a checkpoint
written by ``fit`` (:mod:`roformer_lit.finetune.pretrained`). AdamW (no decay on biases,
norms and embeddings) with ``learning_rate`` warmed up linearly over the first
``warmup_ratio`` of the trainer's total steps, then decayed linearly to 0:

    lr(s) = lr * (s + 1) / (w + 1)        for s < w = floor(warmup_ratio * T)
    lr(s) = lr * (1 - (s - w) / (T - w))  afterwards

Logged: ``train/loss``, ``train/lr``, ``val/loss`` and ``val/<metric>`` for each of the
task's metrics (:mod:`roformer_lit.finetune.metrics`; a second validation split such as
MNLI's mismatched one logs ``val/<metric>_mismatched``). Checkpoints carry the random
generators (dropout continues exactly after a resume) and the tokenizer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import torch.nn.functional as F
from lightning.pytorch.trainer.states import TrainerFn
from torch import Tensor, nn

from roformer_lit.finetune.encoder_record import check_encoder_record, write_encoder_record
from roformer_lit.finetune.metrics import make_metrics
from roformer_lit.finetune.pretrained import check_resumed_pretrained, load_pretrained_encoder
from roformer_lit.finetune.pretrained_weights import PRETRAINED_WEIGHTS_KEY, weights_digest
from roformer_lit.finetune.tasks import get_task, metrics_for, val_suffixes
from roformer_lit.training.checkpoint_io import FINE_TUNING
from roformer_lit.training.lifecycle import OptimizerSettings, RunModule, evaluation_mean
from roformer_lit.validation import (
    Rule,
    check_arguments,
    finite_non_negative_float,
    finite_positive_float,
    one_of,
    optional,
    pair,
    size,
    unit_interval,
    unit_interval_open_right,
)

POOLINGS = ("cls", "mean")


def pool(hidden: Tensor, attention_mask: Tensor | None, pooling: str) -> Tensor:
    """``[B, H]`` from ``[B, L, H]``: the first token (``cls``) or the mean over real tokens."""
    if pooling == "cls":
        return hidden[:, 0]
    if attention_mask is None:
        return hidden.mean(dim=1)
    mask = attention_mask.to(hidden.dtype).unsqueeze(-1)
    return (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)


#: The arguments of :class:`SequenceClassifier` with a range of their own (checked by
#: :func:`~roformer_lit.validation.check_arguments`; ``pretrained`` by
#: :func:`~roformer_lit.finetune.pretrained.read_pretrained`).
CLASSIFIER_RULES: dict[str, Rule] = {
    "num_labels": size(),  # linked from the data module: 1 is a regression
    "pooling": one_of(*POOLINGS),
    "learning_rate": finite_non_negative_float,
    "weight_decay": finite_non_negative_float,
    "betas": pair(unit_interval_open_right),
    "warmup_ratio": unit_interval,
    "classifier_dropout": unit_interval_open_right,
    "dropout": optional(unit_interval_open_right),
    "init_std": finite_positive_float,
}


class SequenceClassifier(RunModule):
    """Fine-tunes a pretrained encoder on a sequence classification or regression task.

    Args:
        pretrained: a checkpoint written by ``python -m roformer_lit fit``.
        num_labels: classes (1: regression); linked from the data module by the CLI.
        task: the task's name (linked from ``data.task``); picks the metrics.
        pooling: ``cls`` (first token) or ``mean`` (mean over real tokens).
        learning_rate, weight_decay, betas: AdamW.
        warmup_ratio: share of the total steps spent warming the learning rate up.
        classifier_dropout: dropout before the linear head.
        dropout: the encoder's hidden dropout (None: the pretraining run's).
        init_std: standard deviation of the head's normal initialisation.
    """

    CHECKPOINT_KIND = FINE_TUNING  # finetune's checkpoints

    def __init__(
        self,
        pretrained: str | None = None,  # required; None only so a missing one gets one line
        num_labels: int | None = None,
        task: str = "local",
        pooling: Literal["cls", "mean"] = "cls",
        learning_rate: float = 4e-5,
        weight_decay: float = 0.01,
        betas: tuple[float, float] = (0.9, 0.98),
        warmup_ratio: float = 0.1,
        classifier_dropout: float = 0.1,
        dropout: float | None = None,
        init_std: float = 0.02,
    ) -> None:
        super().__init__(OptimizerSettings(learning_rate, weight_decay, betas))
        arguments = {k: v for k, v in locals().items() if k in CLASSIFIER_RULES}
        check_arguments(arguments, CLASSIFIER_RULES, "model.")
        self.save_hyperparameters()
        self.encoder, self.pretrained_config = load_pretrained_encoder(pretrained, dropout)
        #: the weights it starts from (a resume keeps the record of the first start)
        self.pretrained_weights = weights_digest(self.encoder.state_dict())
        hidden = self.encoder.word_embeddings.embedding_dim
        self.dropout = nn.Dropout(classifier_dropout)
        self.classifier = nn.Linear(hidden, num_labels)
        nn.init.normal_(self.classifier.weight, std=init_std)
        nn.init.zeros_(self.classifier.bias)
        self.regression = num_labels == 1
        spec = get_task(task)
        names = metrics_for(spec, num_labels)
        self.metric_names: tuple[str, ...] = names  # the first is the monitored one
        self.val_suffixes = val_suffixes(spec)
        self.val_metrics = nn.ModuleList(make_metrics(names, num_labels) for _ in self.val_suffixes)
        self.val_losses = nn.ModuleList(evaluation_mean() for _ in self.val_suffixes)

    @property
    def max_length(self) -> int | None:
        """The longest input the encoder's position scheme accepts (None: unbounded)."""
        return self.encoder.position.max_length

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        """Logits ``[B, num_labels]`` (``[B, 1]`` scores for a regression)."""
        hidden = self.encoder(input_ids, attention_mask)
        return self.classifier(self.dropout(pool(hidden, attention_mask, self.hparams.pooling)))

    def loss(self, logits: Tensor, labels: Tensor) -> Tensor:
        """Cross-entropy, or the mean squared error of a regression, in float32."""
        if self.regression:
            return F.mse_loss(logits[:, 0].float(), labels.float())
        return F.cross_entropy(logits.float(), labels)

    # -- training -------------------------------------------------------------------------
    def training_step(self, batch: Mapping[str, Tensor], batch_idx: int) -> Tensor:
        loss = self.loss(self(batch["input_ids"], batch["attention_mask"]), batch["labels"])
        self.loss_is_finite(loss)  # a non-finite loss stops the run (TrainingDiverged)
        self.log("train/loss", loss, prog_bar=True)
        self.log("train/lr", float(self.trainer.optimizers[0].param_groups[0]["lr"]))
        return loss

    # -- validation -----------------------------------------------------------------------
    def validation_step(
        self, batch: Mapping[str, Tensor], batch_idx: int, dataloader_idx: int = 0
    ) -> None:
        logits = self(batch["input_ids"], batch["attention_mask"])
        labels = batch["labels"]
        self.val_losses[dataloader_idx].update(self.loss(logits, labels), weight=labels.numel())
        predictions = logits[:, 0].float() if self.regression else logits.argmax(-1)
        self.val_metrics[dataloader_idx].update(predictions, labels)

    def on_validation_epoch_end(self) -> None:
        for suffix, losses, metrics in zip(
            self.val_suffixes, self.val_losses, self.val_metrics, strict=True
        ):
            if losses.update_count == 0:
                continue
            values = {f"val/loss{suffix}": losses.compute()}
            for name, value in metrics.compute().items():
                values[f"val/{name}{suffix}"] = value
            self.log_dict(values, prog_bar=suffix == "", add_dataloader_idx=False, sync_dist=True)
            losses.reset()
            metrics.reset()

    # -- checkpoints ----------------------------------------------------------------------
    def warmup_steps(self, total: int) -> int:
        return int(self.hparams.warmup_ratio * total)

    def schedule_note(self) -> str | None:
        """The ``note:`` line of a new fine-tune whose ``warmup_ratio`` is 1: its warm-up
        would take every step, which the schedule cuts to all but the last (a schedule that
        decays needs one step to decay on), so the last step trains at the peak rate and
        nothing decays. None for any ratio below 1, which always leaves steps to decay."""
        ratio = self.hparams.warmup_ratio
        if ratio < 1:
            return None
        return (
            f"note: model.warmup_ratio={ratio:g} warms the learning rate up over every step but "
            "the last, which trains at the peak rate: nothing decays; a ratio below 1 leaves "
            "steps to decay on"
        )

    def save_run_state(self, checkpoint: dict[str, Any]) -> None:
        """Record the pretrained encoder's architecture and its digest
        (:func:`write_encoder_record`): the checkpoint says what it was fine-tuned from."""
        write_encoder_record(checkpoint, self.pretrained_config)
        checkpoint[PRETRAINED_WEIGHTS_KEY] = self.pretrained_weights

    def load_run_state(self, checkpoint: Mapping[str, Any]) -> None:
        """Every load of a fine-tuned checkpoint (resume, ``validate``,
        ``load_from_checkpoint``) refuses one fine-tuned from another encoder than the one
        built from ``pretrained`` (:func:`check_encoder_record`; the dropouts count only
        when resuming); resuming (``fit``) also refuses another pretrained checkpoint than
        the recorded one (:func:`check_resumed_pretrained`). The CLI checks both before
        anything is built; this covers ``Trainer`` and the Python API."""
        trainer = self._trainer
        fitting = trainer is not None and trainer.state.fn == TrainerFn.FITTING
        ckpt = self.loaded_from()
        if fitting:
            recorded = (checkpoint.get("hyper_parameters") or {}).get("pretrained")
            check_resumed_pretrained(ckpt, recorded, self.hparams.pretrained)
        check_encoder_record(
            checkpoint, self.pretrained_config, ckpt, self.hparams.pretrained, training=fitting
        )
        recorded_weights = checkpoint.get(PRETRAINED_WEIGHTS_KEY)
        if isinstance(recorded_weights, str):  # what the run started from, kept
            self.pretrained_weights = recorded_weights
