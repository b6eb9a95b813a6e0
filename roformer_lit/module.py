"""``MaskedLM``: the LightningModule every experiment trains.

    loss = mean over {i : labels_i != -100} of  -log softmax(head(h_i))[labels_i]

The output head runs only at labelled positions. AdamW with linear warmup then linear
decay (to ``min_lr_ratio * learning_rate``), stepped per optimiser step. Logged scalars:
``train/loss``, ``train/lr``, ``val/loss``, ``val/acc`` (micro masked-token accuracy),
``val/exact`` (the fraction of sequences with a masked token whose every masked token is
predicted right: exact match of a probe's answers), ``val/ppl``, ``perf/tokens_per_s``,
``perf/peak_mem_mb`` (and ``train/skipped_batches`` with ``skip_nonfinite``).

Fault tolerance: a non-finite training loss or gradient stops the run with
:class:`TrainingDiverged` naming the step, before the optimiser touches the weights (so no
later checkpoint holds NaN weights), unless ``skip_nonfinite`` is set, in which case the
batch is skipped (no optimiser step) and counted. Checkpoints carry the random number
generators' states (torch CPU and CUDA, Python, NumPy), restored just before the first
training batch after a resume, so dropout continues exactly where it stopped.
"""

from __future__ import annotations

import inspect
import math
import os
import random
import resource
import time
from collections.abc import Mapping, Sequence
from typing import Any

import lightning as L
import torch
import torch.nn.functional as F
from lightning.pytorch.trainer.states import TrainerFn
from lightning.pytorch.utilities import rank_zero_only
from torch import Tensor, nn
from torchmetrics import MeanMetric, MetricCollection
from torchmetrics.classification import MulticlassAccuracy

from roformer_lit.checkpoint_io import PRETRAINING, read_checkpoint, refuse_nonfinite
from roformer_lit.errors import ConfigError, TrainingDiverged
from roformer_lit.model import Encoder, MLMHead, init_bert_weights
from roformer_lit.run_files import warn
from roformer_lit.stored_tokenizer import TOKENIZER_KEY, trainer_tokenizer_json
from roformer_lit.validation import MODEL_RULES, check_model_arguments

IGNORE_INDEX = -100
#: Arguments the ``Encoder`` receives and validates itself.
_ENCODER_ARGUMENTS = frozenset(inspect.signature(Encoder.__init__).parameters) - {"self"}
#: With ``skip_nonfinite``, this many non-finite batches in a row still stop the run.
MAX_CONSECUTIVE_SKIPS = 20


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:  # pragma: no cover - numpy comes with tensorboard
        return None
    return numpy


def collect_rng_states() -> dict[str, Any]:
    """The global generators' states: torch CPU (and CUDA if initialised), Python, NumPy."""
    states: dict[str, Any] = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if (np := _numpy()) is not None:  # as plain types and a tensor: loads with weights_only
        name, keys, pos, has_gauss, gauss = np.random.get_state()
        states["numpy"] = [name, torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, gauss]
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        states["torch.cuda"] = torch.cuda.get_rng_state_all()
    return states


def restore_rng_states(states: Mapping[str, Any]) -> None:
    """Inverse of :func:`collect_rng_states` (keys that are missing are left alone)."""
    if "torch" in states:
        torch.set_rng_state(torch.as_tensor(states["torch"]).cpu())
    if "python" in states:
        version, internal, gauss = states["python"]
        random.setstate((version, tuple(internal), gauss))
    if "numpy" in states and (np := _numpy()) is not None:
        name, keys, pos, has_gauss, gauss = states["numpy"]
        np.random.set_state((name, np.asarray(keys).astype(np.uint32), pos, has_gauss, gauss))
    cuda = states.get("torch.cuda")
    if cuda is not None and torch.cuda.is_available() and len(cuda) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all([torch.as_tensor(s).cpu() for s in cuda])


def _peak_memory_mb(device: torch.device) -> float:
    """Peak accelerator memory allocated, or the process's peak RSS on CPU, in MiB."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def adamw(
    module: nn.Module,
    learning_rate: float,
    weight_decay: float,
    betas: Sequence[float],
    position_lr_scale: float = 1.0,
) -> torch.optim.AdamW:
    """AdamW with weight decay on matrices only (none on biases, norms and embeddings);
    fused into one kernel when every parameter is on the GPU.

    The position scheme's own parameters (every ``Encoder.position`` below ``module``: T5's
    bucket table, FIRE's MLP, KERPLE's and learnable ALiBi's per-head scalars, learned
    tables, XL's and DeBERTa's projections) train at ``position_lr_scale * learning_rate``
    (the schedule multiplies every group alike); with 1 there is one rate for everything.
    """
    positional = {
        id(p) for m in module.modules() if isinstance(m, Encoder) for p in m.position.parameters()
    }
    split = position_lr_scale != 1.0  # else the two groups checkpoints have always had
    if split and not positional:
        rank_zero_only(warn)(
            f"model.position_lr_scale={position_lr_scale:g} has no effect: the position "
            "scheme has no parameters"
        )
    groups: dict[tuple[bool, bool], list[nn.Parameter]] = {(True, False): [], (False, False): []}
    for name, param in module.named_parameters():
        if param.requires_grad:
            decays = not (param.ndim < 2 or "embeddings" in name)
            groups.setdefault((decays, split and id(param) in positional), []).append(param)
    everything = [p for params in groups.values() for p in params]
    return torch.optim.AdamW(
        [
            {
                "params": params,
                "weight_decay": weight_decay if decays else 0.0,
                "lr": learning_rate * (position_lr_scale if scaled else 1.0),
            }
            for (decays, scaled), params in groups.items()
        ],
        lr=learning_rate,
        betas=tuple(betas),
        fused=all(p.is_cuda for p in everything) or None,
    )


class MaskedLM(L.LightningModule):
    """An encoder MLM with a registered position scheme and attention kernel.

    Args:
        position: a key of ``POSITION_SCHEMES`` (nope, learned, sinusoidal, xl, deberta, rope).
        attention: a key of ``ATTENTION_KERNELS`` (softmax, linear).
        vocab_size: tokenizer vocabulary size (linked from the data module by the CLI).
        hidden_size, num_layers, num_heads, intermediate_size: encoder dimensions.
        max_positions: size of position tables (a hard limit only for ``learned``).
        dropout: hidden dropout; ``attention_dropout`` defaults to it.
        layer_norm_eps: LayerNorm epsilon everywhere.
        pre_norm: pre-LN blocks instead of BERT's post-LN.
        position_kwargs, attention_kwargs: options of the scheme / kernel.
        learning_rate, weight_decay, betas, warmup_steps, min_lr_ratio: AdamW and schedule;
            the decay runs to ``trainer.max_steps`` (or the trainer's estimate).
        position_lr_scale: the position scheme's parameters train at this multiple of
            ``learning_rate`` (1: one rate). Learned biases that start at zero (T5, FIRE)
            move about one learning rate per AdamW step, so a short run leaves them near
            uniform; a larger scale lets a short study tell such schemes apart.
        init_std: standard deviation of the normal initialisation.
        compile: wrap the encoder in ``torch.compile``.
        skip_nonfinite: skip (no optimiser step) a batch whose loss or gradient is NaN/inf
            and count it in ``train/skipped_batches``, instead of stopping the run with
            :class:`TrainingDiverged` (which still stops it after ``MAX_CONSECUTIVE_SKIPS``
            such batches in a row).
    """

    def __init__(
        self,
        position: str = "rope",
        attention: str = "softmax",
        vocab_size: int = 8192,
        hidden_size: int = 256,
        num_layers: int = 4,
        num_heads: int = 4,
        intermediate_size: int = 1024,
        max_positions: int = 512,
        dropout: float = 0.1,
        attention_dropout: float | None = None,
        layer_norm_eps: float = 1e-12,
        pre_norm: bool = False,
        position_kwargs: dict[str, Any] | None = None,
        attention_kwargs: dict[str, Any] | None = None,
        learning_rate: float = 5e-4,
        weight_decay: float = 0.01,
        betas: tuple[float, float] = (0.9, 0.98),
        warmup_steps: int = 100,
        min_lr_ratio: float = 0.0,
        position_lr_scale: float = 1.0,
        init_std: float = 0.02,
        compile: bool = False,
        skip_nonfinite: bool = False,
    ) -> None:
        super().__init__()
        # The optimiser's and training's arguments; the Encoder checks its own (once).
        arguments = {
            name: value
            for name, value in locals().items()
            if name in MODEL_RULES and name not in _ENCODER_ARGUMENTS
        }
        check_model_arguments(arguments)  # one error line naming model.<argument>
        self.save_hyperparameters()
        try:
            self.encoder = Encoder(
                position=position,
                attention=attention,
                vocab_size=vocab_size,
                hidden_size=hidden_size,
                num_layers=num_layers,
                num_heads=num_heads,
                intermediate_size=intermediate_size,
                max_positions=max_positions,
                dropout=dropout,
                attention_dropout=dropout if attention_dropout is None else attention_dropout,
                layer_norm_eps=layer_norm_eps,
                pre_norm=pre_norm,
                position_kwargs=position_kwargs,
                attention_kwargs=attention_kwargs,
            )
            self.head = MLMHead(vocab_size, hidden_size, layer_norm_eps)
        except RuntimeError as exc:  # torch's CPU allocator and CUDA OOM say "allocate"
            if "allocate" not in str(exc):
                raise
            raise ConfigError(
                "cannot allocate the model's weights (model.vocab_size, hidden_size, "
                "num_layers, intermediate_size, max_positions are too large for this machine): "
                + " ".join(str(exc).split())[:200]
            ) from None
        self.apply(lambda m: init_bert_weights(m, init_std))
        self._encode = torch.compile(self.encoder) if compile else self.encoder
        self.train_acc = MulticlassAccuracy(vocab_size, average="micro")
        self.val_metrics = self._stage_metrics(vocab_size)
        self.test_metrics = self._stage_metrics(vocab_size)
        self.best_val_loss = math.inf
        self.skipped_batches = 0
        self._consecutive_skips = 0
        self._last_batch_end: float | None = None
        self._rng_to_restore: Mapping[str, Any] | None = None

    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike[str]) -> MaskedLM:
        """The model of a pretraining checkpoint, on the CPU: the one loader every command
        that reads a checkpoint's model uses (``export``, ``extrapolate``, ``locality``).
        The file is checked by :func:`~roformer_lit.checkpoint_io.read_checkpoint` (a
        regular file, a PyTorch archive, a pretraining checkpoint; one ConfigError line
        otherwise) and unpickled with ``weights_only=True``, so a crafted checkpoint cannot
        run code; a checkpoint that does not fit its own hyperparameters is one line too."""
        read_checkpoint(path, kind=PRETRAINING)
        try:
            return cls.load_from_checkpoint(path, map_location="cpu", weights_only=True)
        except ConfigError:
            raise
        except Exception as exc:  # a truncated or foreign file that passed the checks
            detail = " ".join(str(exc).split())[:200]
            raise ConfigError(
                f"cannot load checkpoint {path}: {type(exc).__name__}: {detail}"
            ) from exc

    @staticmethod
    def _stage_metrics(vocab_size: int) -> MetricCollection:
        return MetricCollection(
            {
                "loss": MeanMetric(),
                "acc": MulticlassAccuracy(vocab_size, average="micro", ignore_index=IGNORE_INDEX),
                "exact": MeanMetric(),
            }
        )

    @property
    def max_length(self) -> int | None:
        """The longest input the position scheme accepts (None: unbounded)."""
        return self.encoder.position.max_length

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
        (``[B, L]``, increasing along each row) places the tokens at those positions
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
        selected = labels != IGNORE_INDEX
        where = {"segment_ids": segment_ids, "position_ids": position_ids}
        if self._encode is self.encoder:
            hidden = self.encoder(input_ids, attention_mask, rows=selected, **where)
        else:
            hidden = self._encode(input_ids, attention_mask, **where)[selected]
        logits = self.head(hidden, self.encoder.word_embeddings.weight)
        return logits, labels[selected]

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

    def on_train_batch_start(self, batch: Any, batch_idx: int) -> None:
        if self._rng_to_restore is not None:  # the first batch after a resume
            if self._trainer is not None and self.trainer.ckpt_path is not None:
                restore_rng_states(self._rng_to_restore)
            self._rng_to_restore = None

    def training_step(self, batch: Mapping[str, Tensor], batch_idx: int) -> Tensor | None:
        """One step; a batch's ``position_ids`` (randomized positions, training batches
        only) place its tokens (evaluation always uses the ordinary positions)."""
        logits, targets = self.masked_logits(
            batch["input_ids"],
            batch["labels"],
            batch.get("attention_mask"),
            batch.get("segment_ids"),
            batch.get("position_ids"),
        )
        loss = _cross_entropy(logits, targets)
        finite_here = bool(torch.isfinite(loss.detach()))
        # Under DDP every rank must skip or stop together (a rank that returned None while
        # the others ran backward would hang the gradient all-reduce).
        finite = self._all_ranks_agree(finite_here)
        if finite:
            self._consecutive_skips = 0
        else:
            if finite_here:
                what = "train/loss is not finite on another rank"
            else:
                what = f"train/loss is {loss.detach().item()}"
                what += f" on rank {self.global_rank}" if self._world_size() > 1 else ""
            self._nonfinite(what)
        if self.hparams.get("skip_nonfinite", False):
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

    def on_before_optimizer_step(self, optimizer: torch.optim.Optimizer) -> None:
        if getattr(self.trainer.precision_plugin, "scaler", None) is not None:
            return  # fp16 loss scaling: the GradScaler skips overflowing steps itself
        grads = [p.grad for p in self.parameters() if p.grad is not None]
        if not grads or bool(torch.stack([torch.isfinite(g).all() for g in grads]).all()):
            return
        self._nonfinite("a gradient is not finite")
        for group in optimizer.param_groups:  # skipped: AdamW leaves params without grads
            for param in group["params"]:
                param.grad = None

    def _nonfinite(self, what: str) -> None:
        """Count and skip the batch (``skip_nonfinite``) or stop the run."""
        step = self.trainer.global_step + 1 if self._trainer is not None else 0
        if self.hparams.get("skip_nonfinite", False):
            self.skipped_batches += 1
            self._consecutive_skips += 1
            if self._consecutive_skips <= MAX_CONSECUTIVE_SKIPS:
                return
            what = f"{what} ({self._consecutive_skips} batches in a row were skipped)"
        raise TrainingDiverged(
            f"training diverged at step {step}: {what}; the weights of step {step - 1} are "
            "kept (no update was made); lower model.learning_rate, or set "
            "model.skip_nonfinite true to skip such batches",
            step=step,
        )

    def on_train_batch_end(self, outputs: Any, batch: Mapping[str, Tensor], batch_idx: int) -> None:
        now = time.perf_counter()
        if self._last_batch_end is not None:
            tokens = batch["input_ids"].numel() * self.trainer.world_size
            self.log("perf/tokens_per_s", tokens / max(now - self._last_batch_end, 1e-9))
            self.log("perf/peak_mem_mb", _peak_memory_mb(self.device))
        self._last_batch_end = now

    def on_train_epoch_start(self) -> None:
        self._last_batch_end = None

    def _evaluate(self, batch: Mapping[str, Tensor], metrics: MetricCollection, stage: str) -> None:
        logits, targets = self.masked_logits(
            batch["input_ids"],
            batch["labels"],
            batch.get("attention_mask"),
            batch.get("segment_ids"),
        )
        if targets.numel() == 0:
            return
        loss = F.cross_entropy(logits.float(), targets)
        metrics["loss"].update(loss, weight=targets.numel())
        metrics["acc"].update(logits, targets)
        metrics["exact"].update(*_exact_match(logits, batch["labels"]))

    def _log_stage(self, metrics: MetricCollection, stage: str) -> None:
        if metrics["loss"].update_count == 0:
            return
        loss = metrics["loss"].compute()
        values = {
            f"{stage}/loss": loss,
            f"{stage}/acc": metrics["acc"].compute(),
            f"{stage}/exact": metrics["exact"].compute(),
            f"{stage}/ppl": torch.exp(loss.clamp(max=50.0)),
        }
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

    def _world_size(self) -> int:
        return self.trainer.world_size if self._trainer is not None else 1

    def _all_ranks_agree(self, decision: bool) -> bool:
        """True iff ``decision`` is True on every rank (itself on one device)."""
        if self._world_size() == 1:
            return decision
        return bool(self.trainer.strategy.reduce_boolean_decision(decision, all=True))

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        refuse_nonfinite(checkpoint, "the checkpoint")  # on every rank: they stop together
        checkpoint["best_val_loss"] = self.best_val_loss
        checkpoint["skipped_batches"] = self.skipped_batches
        checkpoint["rng_states"] = collect_rng_states()
        tokenizer_json = trainer_tokenizer_json(self._trainer)
        if tokenizer_json is not None:  # the run's tokenizer travels with its weights
            checkpoint[TOKENIZER_KEY] = tokenizer_json
        if self._world_size() > 1:  # every rank's generators, not only rank 0's
            # Lightning builds the checkpoint on every rank (and meets them all at a
            # barrier after writing it), so this collective cannot be left waiting.
            per_rank: list[Any] = [None] * self._world_size()
            torch.distributed.all_gather_object(per_rank, checkpoint["rng_states"])
            checkpoint["rng_states_per_rank"] = per_rank

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        self.best_val_loss = checkpoint.get("best_val_loss", math.inf)
        self.skipped_batches = int(checkpoint.get("skipped_batches", 0))
        # Restored at the first training batch, not now: creating the trainer's loaders and
        # loops between here and there must not shift the generators. Each rank takes its
        # own states when the world size is unchanged, else rank 0's.
        per_rank = checkpoint.get("rng_states_per_rank")
        if per_rank is not None and len(per_rank) == self._world_size():
            self._rng_to_restore = per_rank[self.global_rank]
        else:
            self._rng_to_restore = checkpoint.get("rng_states")

    def validation_step(self, batch: Mapping[str, Tensor], batch_idx: int) -> None:
        self._evaluate(batch, self.val_metrics, "val")

    def on_validation_epoch_end(self) -> None:
        self._log_stage(self.val_metrics, "val")

    def test_step(self, batch: Mapping[str, Tensor], batch_idx: int) -> None:
        self._evaluate(batch, self.test_metrics, "test")

    def on_test_epoch_end(self) -> None:
        self._log_stage(self.test_metrics, "test")

    def predict_step(self, batch: Mapping[str, Tensor], batch_idx: int) -> Tensor:
        """The most likely token at each position ``[B, L]``."""
        return self(
            batch["input_ids"], batch.get("attention_mask"), batch.get("segment_ids")
        ).argmax(-1)

    def configure_optimizers(self) -> dict[str, Any]:
        hp = self.hparams
        optimizer = adamw(
            self,
            hp.learning_rate,
            hp.weight_decay,
            hp.betas,
            hp.position_lr_scale,
        )
        total = self._total_steps()
        warmup = min(hp.warmup_steps, max(total - 1, 0))

        def schedule(step: int) -> float:
            if step < warmup:
                return (step + 1) / (warmup + 1)
            progress = min((step - warmup) / max(total - warmup, 1), 1.0)
            return hp.min_lr_ratio + (1.0 - hp.min_lr_ratio) * (1.0 - progress)

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
        return {
            "optimizer": optimizer,
            "lr_scheduler": {"scheduler": scheduler, "interval": "step"},
        }

    def _total_steps(self) -> int:
        trainer = self._trainer
        if trainer is None:
            return 1
        if trainer.max_steps and trainer.max_steps > 0:
            return trainer.max_steps
        estimate = trainer.estimated_stepping_batches
        return int(estimate) if math.isfinite(estimate) else 100_000


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
