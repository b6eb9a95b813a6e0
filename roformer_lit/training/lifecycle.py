"""``RunModule``: the run lifecycle every LightningModule of the project shares.

:class:`~roformer_lit.module.MaskedLM` (pretraining) and
:class:`~roformer_lit.finetune.module.SequenceClassifier` (fine-tuning) keep only what is
theirs (the network, the loss, the metrics); this base gives both

* **exact resume**: every checkpoint carries the random generators (torch CPU and CUDA,
  Python, NumPy; every rank's under DDP), restored just before the first training batch
  after a resume, so dropout continues exactly where it stopped; and the run's tokenizer,
  so a checkpoint is usable without the corpus (:mod:`roformer_lit.data.stored_tokenizer`);
  and the numerics it ran under (:func:`numerics_record`: processor, torch, CPU threads):
  a run resumed under others rounds differently, so it is not the uninterrupted run bit for
  bit, and says so in one ``warning:`` line (:func:`numerics_warning`); the history of every
  stretch's numerics is kept, and a damaged record reads as absent with a warning
  (:mod:`roformer_lit.training.numerics_history`); and the run's length
  (:func:`run_length_records`: ``trainer.max_steps`` and the total ``T`` its schedule was
  planned for) and the trainer's other settings that shape it (``max_epochs``, accumulation,
  clipping, precision, the batch limits, the validation schedule:
  :mod:`~roformer_lit.training.trainer_record`), which a resume compares with its own
  (:mod:`roformer_lit.commands.checkpoint_settings`);
* **the non-finite guard**: a NaN/inf training loss or gradient stops the run with
  :class:`~roformer_lit.errors.TrainingDiverged` naming the step, before the optimiser
  touches the weights (with a module's ``skip_nonfinite`` setting the batch is
  skipped and counted instead); under DDP the ranks decide together; no checkpoint with
  NaN/inf weights is ever written;
* **the optimiser and schedule**: AdamW with weight decay on matrices only
  (:func:`adamw`; the module's :meth:`RunModule.position_parameters` at
  ``position_lr_scale`` times the rate), from the module's :class:`OptimizerSettings`, and
  per optimiser step

      lr(s) = lr * (s + 1) / (w + 1)                               for s < w
      lr(s) = lr * (f + (1 - f) * (1 - min((s - w) / (T - w), 1)))  afterwards

  with ``w`` the module's warm-up steps (:meth:`RunModule.warmup_steps`), ``f`` its
  ``min_lr_ratio`` and ``T`` the run's total optimiser steps
  (:func:`roformer_lit.training.steps.total_steps`, the count the progress display and the
  final validation use too). That is ``lr_schedule: linear``, the default; a module's
  ``lr_schedule`` may instead ask for (:func:`lr_factor`)

      constant:  lr(s) = lr * (s + 1) / (w + 1) for s < w, then lr       (T plays no part)
      wsd:       warm-up, then lr until step T - D, then linearly down to f * lr at T,
                 with D = ceil(decay_fraction * (T - w)) decay steps (warm-up-stable-decay)

  A ``constant`` run's weights at step ``N`` are those of a ``constant`` run of ``N``
  steps: one run with checkpoints kept at several steps serves several budgets.
"""

from __future__ import annotations

import inspect
import math
import os
import random
from collections.abc import Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import lightning as L
import torch
from lightning.pytorch.utilities import rank_zero_only
from torch import nn
from torchmetrics import MeanMetric

from roformer_lit.errors import ConfigError, TrainingDiverged
from roformer_lit.machine import cpu_model
from roformer_lit.run_files import warn
from roformer_lit.training.checkpoint_io import (
    SCHEDULE_STEPS_KEY,
    TRAINER_SETTINGS_KEY,
    check_checkpoint,
    read_checkpoint,
    refuse_nonfinite,
)
from roformer_lit.training.numerics_history import HISTORY_KEY, extended, read_history, read_record
from roformer_lit.training.settings_digest import SETTINGS_DIGEST_KEY, settings_digest
from roformer_lit.training.steps import total_steps
from roformer_lit.training.trainer_record import trainer_settings_record

#: How an evaluation mean treats a NaN update: kept, so the mean is NaN. torchmetrics'
#: default (``"warn"``) drops it, so a batch whose loss is NaN vanished from ``val/loss``
#: (the mean of the others, the divergence check passed) and a length whose every batch was
#: NaN read as having no masked tokens at all; ``"disable"`` keeps NaN but drops the weights.
KEEP_NAN = math.nan


def evaluation_mean() -> MeanMetric:
    """A weighted ``MeanMetric`` in which one NaN update makes the mean NaN (:data:`KEEP_NAN`)."""
    return MeanMetric(nan_strategy=KEEP_NAN)


#: The schedule's length for a run without an end (no step limit, endless epochs).
ENDLESS_STEPS = 100_000
#: With ``skip_nonfinite``, this many non-finite batches in a row still stop the run.
MAX_CONSECUTIVE_SKIPS = 20


@dataclass(frozen=True)
class _Loading:
    """A checkpoint :meth:`RunModule.load_from_checkpoint` is loading: its ``name`` (the
    path as given; "" for an open file without one), for :meth:`RunModule.on_load_checkpoint`
    to name in an error, and whether the caller replaced training settings (overrides, an
    ``hparams_file``), which Lightning writes into the loaded ``hyper_parameters`` before
    the hook sees them: their seal (``training_settings_digest``) is then not theirs."""

    name: str
    settings_replaced: bool


#: The load :meth:`RunModule.load_from_checkpoint` is in; None outside one.
_LOADING: ContextVar[_Loading | None] = ContextVar("roformer_lit_loading", default=None)

#: The checkpoint key of :func:`numerics_record`.
NUMERICS_KEY = "numerics"


def run_length_records(trainer: Any, schedule_steps: int | None) -> dict[str, Any]:
    """What a checkpoint records of its run's settings for a resume to compare with its own
    (:data:`TRAINER_SETTINGS_KEY`:
    :func:`~roformer_lit.training.trainer_record.trainer_settings_record`;
    :data:`SCHEDULE_STEPS_KEY`: the schedule's total steps); nothing that is not known (no
    trainer, no schedule)."""
    records: dict[str, Any] = {}
    if trainer is not None:
        records[TRAINER_SETTINGS_KEY] = trainer_settings_record(trainer)
    if schedule_steps is not None:
        records[SCHEDULE_STEPS_KEY] = int(schedule_steps)
    return records


def numerics_record(device: torch.device) -> dict[str, Any]:
    """What a run's floating-point results depend on besides its code, settings and seeds:
    the processor (its kernels round differently), torch's version and, on the CPU, the
    intra-op thread count (sums split over another number of threads add in another order)."""
    if device.type == "cuda":
        processor = torch.cuda.get_device_name(device)
    else:
        processor = cpu_model()
    record: dict[str, Any] = {"processor": processor, "torch": str(torch.__version__)}
    if device.type == "cpu":
        record["cpu_threads"] = torch.get_num_threads()
    return record


def numerics_warning(saved: Mapping[str, Any] | None, now: Mapping[str, Any]) -> str | None:
    """The warning a resumed run prints when it continues under other numerics than it ran
    with, or None (also for a checkpoint written before they were recorded)."""
    if not saved:
        return None
    changed = [key for key in now if saved.get(key) != now[key]]
    if not changed:
        return None

    def values(record: Mapping[str, Any]) -> str:
        return ", ".join(f"{key} {record.get(key, 'unrecorded')}" for key in changed)

    hint = ""
    if changed == ["cpu_threads"]:
        hint = f" (set OMP_NUM_THREADS={saved['cpu_threads']} to match)"
    return (
        f"this run resumes with {values(now)} but ran with {values(saved)}: its sums round "
        f"differently, so it continues close to, not bit for bit, the uninterrupted run{hint}"
    )


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


def adamw(
    module: nn.Module,
    learning_rate: float,
    weight_decay: float,
    betas: Sequence[float],
    position_lr_scale: float = 1.0,
    position_parameters: Iterable[nn.Parameter] = (),
    clips_gradients: bool = False,
) -> torch.optim.AdamW:
    """AdamW with weight decay on matrices only (none on biases, norms and embeddings);
    fused into one kernel where :func:`fuses` says so.

    ``position_parameters`` (the position schemes' own: T5's bucket table, FIRE's MLP,
    KERPLE's and learnable ALiBi's per-head scalars, learned tables, XL's and DeBERTa's
    projections; :meth:`RunModule.position_parameters`) train at
    ``position_lr_scale * learning_rate`` (the schedule multiplies every group alike); with
    1 there is one rate for everything.
    """
    positional = {id(p) for p in position_parameters}
    split = position_lr_scale != 1.0
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
        fused=fuses(everything, clips_gradients) or None,
    )


def fuses(parameters: Sequence[Any], clips_gradients: bool) -> bool:
    """Whether AdamW runs fused: every parameter on the GPU, and no gradient clipping.
    Lightning's mixed-precision plugin refuses to clip the gradients of an optimiser that
    unscales them itself, which a fused one declares (``_step_supports_amp_scaling``), also
    in bf16 where there is nothing to unscale: fused, ``fit --config configs/size/base.yaml``
    (``gradient_clip_val: 1.0``, ``bf16-mixed``) stopped at its first step on a GPU."""
    return bool(parameters) and all(p.is_cuda for p in parameters) and not clips_gradients


#: The ``lr_schedule`` values (:func:`lr_factor`).
LR_SCHEDULES = ("linear", "constant", "wsd")


def lr_factor(
    step: int,
    warmup: int,
    total: int,
    floor: float = 0.0,
    schedule: str = "linear",
    decay_fraction: float = 0.2,
) -> float:
    """The learning-rate factor at optimiser step ``step`` under ``schedule`` (module
    docstring); ``linear`` is :func:`warmup_then_linear`."""
    if schedule == "linear":
        return warmup_then_linear(step, warmup, total, floor)
    if step < warmup:
        return (step + 1) / (warmup + 1)
    if schedule == "constant":
        return 1.0
    decay = max(math.ceil(decay_fraction * max(total - warmup, 0)), 1)
    start = total - decay
    if step < start:
        return 1.0
    progress = min((step - start) / decay, 1.0)
    return floor + (1.0 - floor) * (1.0 - progress)


def planned_warmup(warmup: int, total: int, schedule: str) -> int:
    """The warm-up steps a schedule of ``total`` steps runs: ``warmup``, at most ``total - 1``
    for a schedule that decays (its last step decays); ``constant`` takes it as it is."""
    return warmup if schedule == "constant" else min(warmup, max(total - 1, 0))


def same_rates_until(
    step: int, totals: tuple[int, int], warmup: int, floor: float, schedule: str, fraction: float
) -> bool:
    """Whether a schedule (:func:`lr_factor`, warm-up by :func:`planned_warmup`) gives
    optimiser steps ``0 .. step - 1`` the same factors, bit for bit, over either of two
    ``totals``: then the steps a run planned for one total took are those a run planned
    for the other takes (``constant`` always; ``wsd`` while both are stable; any schedule
    while warming up)."""
    first, second = totals
    if first == second:
        return True
    warmups = (planned_warmup(warmup, first, schedule), planned_warmup(warmup, second, schedule))
    return all(
        lr_factor(s, warmups[0], first, floor, schedule, fraction)
        == lr_factor(s, warmups[1], second, floor, schedule, fraction)
        for s in range(step)
    )


def warmup_then_linear(step: int, warmup: int, total: int, floor: float = 0.0) -> float:
    """The learning-rate factor at optimiser step ``step``: ``(step + 1) / (warmup + 1)``
    while warming up, then linear from 1 down to ``floor`` at ``total`` (and ``floor``
    after it)."""
    if step < warmup:
        return (step + 1) / (warmup + 1)
    progress = min((step - warmup) / max(total - warmup, 1), 1.0)
    return floor + (1.0 - floor) * (1.0 - progress)


@dataclass(frozen=True)
class OptimizerSettings:
    """What :meth:`RunModule.configure_optimizers` builds AdamW and the schedule from
    (module docstring); a subclass passes its own to ``RunModule.__init__``."""

    learning_rate: float
    weight_decay: float
    betas: tuple[float, float]
    min_lr_ratio: float = 0.0
    lr_schedule: str = "linear"
    decay_fraction: float = 0.2
    position_lr_scale: float = 1.0


class RunModule(L.LightningModule):
    """The lifecycle of a trained module (see the module docstring). A subclass passes its
    :class:`OptimizerSettings` and ``skip_nonfinite`` (None: it has no such setting, so the
    run always stops on a non-finite loss), implements :meth:`warmup_steps`, may name its
    position parameters (:meth:`position_parameters`), and may add its own state to
    checkpoints through :meth:`save_run_state` / :meth:`load_run_state`."""

    #: The kind of checkpoint the module loads (:func:`~roformer_lit.training.checkpoint_io.
    #: checkpoint_kind`: ``"pretraining"``, ``"fine-tuning"``); None: either.
    CHECKPOINT_KIND: str | None = None

    def __init__(self, optimizer: OptimizerSettings, skip_nonfinite: bool | None = None) -> None:
        super().__init__()
        self.optimizer_settings = optimizer
        #: None: the module has no ``skip_nonfinite`` setting (the advice on divergence omits it)
        self.skip_nonfinite_setting = skip_nonfinite
        self._rng_to_restore: Mapping[str, Any] | None = None
        self._saved_numerics: Mapping[str, Any] | None = None
        self._numerics_history: list[dict[str, Any]] = []
        self._resumed_at_step = 0
        self._schedule_steps: int | None = None
        self.skipped_batches = 0
        self._consecutive_skips = 0

    @property
    def skip_nonfinite(self) -> bool:
        """Whether a non-finite batch is skipped (and counted) rather than stopping the run."""
        return bool(self.skip_nonfinite_setting)

    # -- what a subclass provides -----------------------------------------------------------

    def warmup_steps(self, total: int) -> int:
        """Optimiser steps of linear warm-up, given ``total`` steps."""
        raise NotImplementedError

    def position_parameters(self) -> Iterable[nn.Parameter]:
        """The parameters that train at ``position_lr_scale`` times the rate (none here)."""
        return ()

    def save_run_state(self, checkpoint: dict[str, Any]) -> None:
        """Add the subclass's own state to a checkpoint being saved."""

    def load_run_state(self, checkpoint: Mapping[str, Any]) -> None:
        """Read the subclass's own state back from a checkpoint being restored."""

    @classmethod
    def load_overrides(cls) -> tuple[list[str], list[str]]:
        """(the hyperparameters ``load_from_checkpoint`` may replace, those it refuses to:
        the ones that define the weights). Here every argument of ``__init__``, none refused."""
        names = [n for n in inspect.signature(cls.__init__).parameters if n != "self"]
        return names, []

    @classmethod
    def load_from_checkpoint(  # type: ignore[override]
        cls,
        checkpoint_path: Any,
        map_location: Any = None,
        hparams_file: Any = None,
        strict: bool | None = None,
        weights_only: bool | None = None,
        **overrides: Any,
    ) -> Any:
        """Lightning's loader, its ``overrides`` checked against :meth:`load_overrides`
        first, and a local file read by the one reader
        (:func:`~roformer_lit.training.checkpoint_io.read_checkpoint`, of this module's
        :attr:`CHECKPOINT_KIND`) before anything is built: a directory, a truncated or
        foreign file, a crafted pickle, a checkpoint of the other kind, damaged records or
        NaN weights are each one ConfigError line naming the file, as on the command line.
        Lightning then loads it ``weights_only`` (whatever ``weights_only`` says: a
        checkpoint is data, never code), and :meth:`on_load_checkpoint` checks what it
        loaded again (a remote path or an open file is checked there only).

        Lightning drops a key a signature without ``**kwargs`` has not, without a
        word, so a misspelt one (``learning_rat=``) would load the checkpoint's own value;
        and a key that defines the weights (MaskedLM's ``dropout=``) would load them into
        another model than they trained. Either is one ConfigError line naming the key and
        the ones that may be replaced."""
        cls._check_overrides(overrides)
        if isinstance(checkpoint_path, (str, os.PathLike)) and "://" not in str(checkpoint_path):
            read_checkpoint(checkpoint_path, kind=cls.CHECKPOINT_KIND)
        return cls.load_read_checkpoint(
            checkpoint_path, map_location, hparams_file, strict, **overrides
        )

    @classmethod
    def load_read_checkpoint(
        cls,
        checkpoint_path: Any,
        map_location: Any = None,
        hparams_file: Any = None,
        strict: bool | None = None,
        **overrides: Any,
    ) -> Any:
        """:meth:`load_from_checkpoint` for a file its caller has just read with
        :func:`~roformer_lit.training.checkpoint_io.read_checkpoint` (so it is not read
        and checked a second time before Lightning loads it); :meth:`on_load_checkpoint`
        checks what Lightning loads, naming ``checkpoint_path``."""
        cls._check_overrides(overrides)
        named = isinstance(checkpoint_path, (str, os.PathLike))
        name = str(checkpoint_path if named else getattr(checkpoint_path, "name", ""))
        replaced = bool(overrides) or hparams_file is not None
        token = _LOADING.set(_Loading(name, replaced))
        try:
            return super().load_from_checkpoint(
                checkpoint_path, map_location, hparams_file, strict, True, **overrides
            )
        finally:
            _LOADING.reset(token)

    @classmethod
    def _check_overrides(cls, overrides: Mapping[str, Any]) -> None:
        """Refuse, in one line, an override :meth:`load_overrides` does not allow."""
        allowed, refused = cls.load_overrides()
        unknown = [k for k in overrides if k not in allowed and k not in refused]
        fixed = [k for k in overrides if k in refused]
        if unknown or fixed:
            what = (
                f"has no setting(s) {', '.join(map(repr, unknown))}"
                if unknown
                else "cannot change the checkpoint's architecture "
                f"({', '.join(f'model.{k}' for k in fixed)}: its weights are of that one)"
            )
            raise ConfigError(
                f"{cls.__name__}.load_from_checkpoint {what}; the settings it may replace: "
                f"{', '.join(allowed)}"
            )

    # -- exact resume -----------------------------------------------------------------------

    def on_train_batch_start(self, batch: Any, batch_idx: int) -> None:
        if self._rng_to_restore is not None:  # the first batch after a resume
            if self._trainer is not None and self.trainer.ckpt_path is not None:
                restore_rng_states(self._rng_to_restore)
                message = numerics_warning(self._saved_numerics, numerics_record(self.device))
                if message is not None and self.global_rank == 0:
                    warn(message)
            self._rng_to_restore = None

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        refuse_nonfinite(checkpoint, "the checkpoint")  # on every rank: they stop together
        self.save_run_state(checkpoint)
        checkpoint["rng_states"] = collect_rng_states()
        checkpoint[NUMERICS_KEY] = numerics_record(self.device)
        checkpoint[HISTORY_KEY] = extended(
            self._numerics_history, checkpoint[NUMERICS_KEY], self._resumed_at_step
        )
        checkpoint.update(run_length_records(self._trainer, self._schedule_steps))
        # the training settings sealed (after their records): an edit is refused on reading
        checkpoint[SETTINGS_DIGEST_KEY] = settings_digest(checkpoint)
        if self._world_size() > 1:  # every rank's generators, not only rank 0's
            # Lightning builds the checkpoint on every rank (and meets them all at a
            # barrier after writing it), so this collective cannot be left waiting.
            per_rank: list[Any] = [None] * self._world_size()
            torch.distributed.all_gather_object(per_rank, checkpoint["rng_states"])
            checkpoint["rng_states_per_rank"] = per_rank

    def loaded_from(self) -> str:
        """The checkpoint being loaded, as an error names it: the file
        :meth:`load_from_checkpoint` loads, the trainer's ``ckpt_path``, or neither known."""
        loading = _LOADING.get()
        if loading is not None and loading.name:  # an open file without a name: ""
            return loading.name
        ckpt = getattr(self._trainer, "ckpt_path", None) if self._trainer is not None else None
        return str(ckpt) if ckpt else "(the checkpoint being loaded)"

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Every load of a checkpoint into the module (``load_from_checkpoint``, a
        ``Trainer``'s ``ckpt_path``: resume, ``validate``, ``test``, ``predict``) passes the
        checks of the one reader first
        (:func:`~roformer_lit.training.checkpoint_io.check_checkpoint`, of
        :attr:`CHECKPOINT_KIND`): damaged records, an edited architecture or settings, NaN
        or inf weights, a checkpoint of the other kind are one ConfigError line naming the
        file, before a weight is loaded; then the run's state is read back. Training
        settings a ``load_from_checkpoint`` caller replaced are not held to the seal of the
        ones saved (the file, read before, was: :meth:`load_from_checkpoint`)."""
        checked = checkpoint
        loading = _LOADING.get()
        if loading is not None and loading.settings_replaced:
            checked = {k: v for k, v in checkpoint.items() if k != SETTINGS_DIGEST_KEY}
        check_checkpoint(checked, self.loaded_from(), kind=self.CHECKPOINT_KIND)
        self.load_run_state(checkpoint)
        self._resumed_at_step = int(checkpoint.get("global_step") or 0)
        where = "the resumed checkpoint"
        self._saved_numerics, damaged = read_record(checkpoint.get(NUMERICS_KEY), where)
        self._numerics_history, broken = read_history(
            checkpoint.get(HISTORY_KEY), self._saved_numerics, where
        )
        for message in (damaged, broken):
            if message is not None and self.global_rank == 0:
                warn(message)
        # Restored at the first training batch, not now: creating the trainer's loaders and
        # loops between here and there must not shift the generators. Each rank takes its
        # own states when the world size is unchanged, else rank 0's.
        per_rank = checkpoint.get("rng_states_per_rank")
        if per_rank is not None and len(per_rank) == self._world_size():
            self._rng_to_restore = per_rank[self.global_rank]
        else:
            self._rng_to_restore = checkpoint.get("rng_states")

    # -- the non-finite guard ---------------------------------------------------------------

    def _world_size(self) -> int:
        return self.trainer.world_size if self._trainer is not None else 1

    def _all_ranks_agree(self, decision: bool) -> bool:
        """True iff ``decision`` is True on every rank (itself on one device)."""
        if self._world_size() == 1:
            return decision
        return bool(self.trainer.strategy.reduce_boolean_decision(decision, all=True))

    def loss_is_finite(self, loss: torch.Tensor) -> bool:
        """Whether to train on this batch: True if the loss is finite on every rank; else
        the batch is skipped (``skip_nonfinite``; the caller returns None) or the run stops
        with :class:`TrainingDiverged`. Under DDP every rank decides the same (a rank that
        returned None while the others ran backward would hang the gradient all-reduce)."""
        finite_here = bool(torch.isfinite(loss.detach()))
        finite = self._all_ranks_agree(finite_here)
        if finite:
            self._consecutive_skips = 0
            return True
        self._nonfinite(self._nonfinite_loss(loss))
        return False

    def _nonfinite_loss(self, loss: torch.Tensor) -> str:
        """``train/loss is nan`` (``on rank 1``), the same words on every rank: under DDP
        the ranks' losses are gathered (every rank is here: they agreed the loss is not
        finite) and the first rank whose loss is not finite is named, so the one line the
        run reports says where, whichever rank reports it."""
        if self._world_size() == 1:
            return f"train/loss is {loss.detach().item()}"
        losses: list[Any] = [None] * self._world_size()
        torch.distributed.all_gather_object(losses, loss.detach().item())
        rank = next(r for r, value in enumerate(losses) if not math.isfinite(value))
        return f"train/loss is {losses[rank]} on rank {rank}"

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
        can_skip = self.skip_nonfinite_setting is not None
        if self.skip_nonfinite:
            self.skipped_batches += 1
            self._consecutive_skips += 1
            if self._consecutive_skips <= MAX_CONSECUTIVE_SKIPS:
                return
            what = f"{what} ({self._consecutive_skips} batches in a row were skipped)"
        skip = ", or set model.skip_nonfinite true to skip such batches" if can_skip else ""
        if step == 1:  # no update yet: the weights the run started from, whatever the rate
            raise TrainingDiverged(
                f"training diverged at step 1: {what} at the weights the run started from, "
                "before any update, so the learning rate played no part: the model gives "
                "non-finite values there (its position scheme or attention kernel: "
                "roformer_lit.testing.check_scheme and check_kernel check them) or the data "
                f"does{skip}",
                step=step,
            )
        raise TrainingDiverged(
            f"training diverged at step {step}: {what}; the weights of step {step - 1} are "
            f"kept (no update was made); lower model.learning_rate{skip}",
            step=step,
        )

    # -- optimiser and schedule -------------------------------------------------------------

    def configure_optimizers(self) -> dict[str, Any]:
        settings = self.optimizer_settings
        optimizer = adamw(
            self,
            settings.learning_rate,
            settings.weight_decay,
            settings.betas,
            settings.position_lr_scale,
            self.position_parameters(),
            clips_gradients=self._trainer is not None and bool(self.trainer.gradient_clip_val),
        )
        total = self.total_steps()
        self._schedule_steps = total  # recorded in every checkpoint (SCHEDULE_STEPS_KEY)
        schedule = str(settings.lr_schedule)
        warmup = planned_warmup(self.warmup_steps(total), total, schedule)
        floor = float(settings.min_lr_ratio)
        fraction = float(settings.decay_fraction)
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: lr_factor(step, warmup, total, floor, schedule, fraction)
        )
        return {
            "optimizer": optimizer,
            "lr_scheduler": {"scheduler": scheduler, "interval": "step"},
        }

    def total_steps(self) -> int:
        """The trainer's total optimiser steps (:func:`~roformer_lit.training.steps.total_steps`);
        1 without a trainer, 100,000 for a run without an end."""
        if self._trainer is None:
            return 1
        total = total_steps(self._trainer)
        return ENDLESS_STEPS if total is None else total
