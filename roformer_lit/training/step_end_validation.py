"""Validation only at the end of an optimiser step: the one rule, checked before a new run
starts and again once its epoch's batches are known.

Under ``trainer.accumulate_grad_batches`` ``A > 1`` an optimiser step takes ``A`` batches,
counted within each epoch (Lightning steps at an epoch's last batch whatever the count,
and starts the next epoch's count anew). A validation after a batch that only accumulated
saves ``best.ckpt`` and ``last.ckpt`` inside a step: the weights of the step before, the
loader past the batch, the batch's gradients in none of them. No resume continues from
such a checkpoint (:func:`~roformer_lit.commands.checkpoint_settings.check_step_boundary`
refuses it), so a run killed after that validation had no checkpoint to go on from.

Where validation falls, in batches counted from 1 within an epoch of ``N``:

* ``val_check_interval`` an integer ``V`` counted within each epoch
  (``check_val_every_n_epoch`` set): ``V, 2V, ...``: safe when ``V`` is a multiple of
  ``A``;
* the same counted over the whole run (``check_val_every_n_epoch: null``, the configs'
  way): every ``V``-th batch of the run, which lands inside an epoch at ``kV mod N``; safe
  when ``V`` is a multiple of ``A`` and ``N`` is too (or ``V`` of ``N``);
* a fraction ``f`` of an epoch: every ``max(1, int(N f))`` batches within the epoch;
  ``1.0``, the epoch's end, is always safe;
* a duration: after whichever batch the time runs out on, so never safe under ``A > 1``.

:func:`check_validation_settings` applies what the settings alone decide (an integer
interval, a duration) in the pre-launch check, before any run directory exists;
:func:`check_validation_schedule` the rest once ``N`` is known, at the start of training
(:class:`~roformer_lit.training.callbacks.RunCheckpoint`, the callback that saves at
validation), where a refused new run's directory is removed again. A resumed run keeps
its schedule (the checkpoint-settings table refuses a new one) and is not checked: its
checkpoints saved at step ends resume, those saved inside a step are refused.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator, Mapping
from typing import Any

from roformer_lit.errors import ConfigError


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _multiples(accumulate: int) -> str:
    """The valid intervals, named: the multiples of ``accumulate``."""
    return f"a multiple of {accumulate} ({accumulate}, {2 * accumulate}, {3 * accumulate}, ...)"


def check_validation_settings(trainer: Mapping[str, Any]) -> None:
    """What the trainer settings alone decide (see the module): under
    ``accumulate_grad_batches`` ``A > 1`` an integer ``val_check_interval`` must be a
    multiple of ``A``, and a duration is refused; one ConfigError line naming both values
    and the valid ones."""
    accumulate = trainer.get("accumulate_grad_batches")
    if not _is_int(accumulate) or accumulate <= 1:
        return
    interval = trainer.get("val_check_interval")
    if interval is None or (isinstance(interval, numbers.Real) and not _is_int(interval)):
        return  # a fraction of an epoch: decided once the epoch's batches are known
    if not _is_int(interval):
        raise ConfigError(
            f"trainer.val_check_interval={interval!r} is a duration: validation would follow "
            "whichever batch the time runs out on, inside an optimiser step of "
            f"trainer.accumulate_grad_batches={accumulate} batches, and the checkpoints it "
            f"saves could not be resumed; give a number of batches, {_multiples(accumulate)}"
        )
    if interval % accumulate:
        raise ConfigError(
            f"trainer.val_check_interval={interval} is not a multiple of "
            f"trainer.accumulate_grad_batches={accumulate}: validation after batch "
            f"{interval} would fall inside optimiser step {interval // accumulate + 1} (unless "
            "an epoch ends there), and the checkpoints it saves could not be resumed; use "
            f"{_multiples(accumulate)}"
        )


def check_new_run(config: Any) -> None:
    """:func:`check_validation_settings` on a parsed ``fit`` configuration that starts a new
    run (no ``ckpt_path``: a resumed run keeps its own schedule; see the module)."""
    trainer = config.get("trainer")
    if trainer is None or config.get("ckpt_path") is not None:
        return
    as_dict = getattr(trainer, "as_dict", None)
    check_validation_settings(dict(as_dict() if callable(as_dict) else trainer))


def _positions(batches: int, every: int, per_epoch: bool) -> Iterator[int]:
    """The batches of an epoch (from 1) after which validation runs, every ``every``
    batches counted within the epoch (``per_epoch``) or over the whole run."""
    if per_epoch:
        yield from range(every, batches + 1, every)
        return
    for k in range(1, batches // math.gcd(batches, every) + 1):  # one cycle over the epochs
        yield (k * every - 1) % batches + 1


def inside_step(batches: int, accumulate: int, every: int, per_epoch: bool) -> int | None:
    """The first batch of an epoch of ``batches`` (from 1) after which validation every
    ``every`` batches would run inside an optimiser step of ``accumulate`` batches; None
    when every validation ends a step (the epoch's last batch always does)."""
    if accumulate <= 1 or every <= 0:
        return None
    for position in _positions(batches, every, per_epoch):
        if position % accumulate and position != batches:
            return position
    return None


def check_validation_schedule(
    batches: float, accumulate: int, every: Any, per_epoch: bool, interval: Any
) -> None:
    """The rule once an epoch's ``batches`` are known (Lightning's ``num_training_batches``
    and ``val_check_batch``; ``every`` None: validation on a clock, inf: at the epoch's
    end): one ConfigError line naming the settings, the batch and the valid choices."""
    if accumulate <= 1:
        return
    settings = {"accumulate_grad_batches": accumulate, "val_check_interval": interval}
    if every is None:  # a duration: the pre-launch check's line
        check_validation_settings(settings)
        return
    if not math.isfinite(batches) or not math.isfinite(every):
        return
    batches, every = int(batches), int(every)
    position = inside_step(batches, accumulate, every, per_epoch)
    if position is None:
        return
    check_validation_settings(settings)  # an interval that is no multiple: its own line
    where = (
        f"validation would follow batch {position} of an epoch of {batches} batches, "
        f"inside an optimiser step of trainer.accumulate_grad_batches={accumulate} batches "
        "(a step's count starts anew each epoch), and the checkpoints it saves could not "
        "be resumed"
    )
    if not _is_int(interval):
        raise ConfigError(
            f"trainer.val_check_interval={interval} of an epoch is every {every} batches: "
            f"{where}; use 1.0 (the epoch's end) or a number of batches, "
            f"{_multiples(accumulate)}"
        )
    raise ConfigError(
        f"trainer.val_check_interval={interval} counts batches over the whole run "
        f"(trainer.check_val_every_n_epoch=null), and an epoch has {batches}: {where}; "
        "count them within each epoch (--trainer.check_val_every_n_epoch 1), or make an "
        f"epoch's batches {_multiples(accumulate)}"
    )
