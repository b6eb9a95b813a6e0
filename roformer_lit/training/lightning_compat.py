"""Every reach into Lightning's (and torch's) private API, in one module.

Lightning has no public hook for a few things the framework needs; each reach is one
function here, so a Lightning release that moves an internal breaks one place, and
``tests/test_lightning_compat.py`` has one test per reach that fails when it stops working
(``pyproject.toml`` bounds ``lightning`` to the releases those tests have passed on).

========================================  ==================================================
reach                                     what for
========================================  ==================================================
:func:`validation_follows_batch`          stop on a signal after the validation that follows
                                          the current batch (``callbacks.Preemption``)
:func:`accumulating`                      the same: never inside an accumulation, only at
                                          the end of an optimiser step
:func:`validates_after_batch`             validate after the last step when the schedule
                                          does not (``final_validation.ValidateAtEnd``)
:func:`can_stop_early`                    the same: ``min_steps``/``min_epochs`` met
:func:`ready_batches_reached`             the same: the epoch's last batch, by count
:func:`stop_as_if_sigterm`                end the loop as Lightning's own SIGTERM handler does
:func:`subcommand_options`                one LightningCLI subcommand's option strings,
                                          to tell what the user typed
:data:`CLI_OVERRIDES`                     LightningCLI's private methods the CLI overrides
:func:`refused_data_key`                  the ``data`` key (and value) jsonargparse's error
                                          text names when a chosen data module does not take
                                          it (jsonargparse raises no structured error)
:class:`CompatCLI`                        LightningCLI's private steps the CLI replaces
                                          (``_parse_ckpt_path``, ``_set_seed``: the names in
                                          :data:`CLI_OVERRIDES`), under public names
:func:`launch_rank`                       this process's rank from the launcher's
                                          environment, before the trainer exists
:func:`refresh_last_checkpoint`           write ``last.ckpt`` now (``callbacks.RunCheckpoint``)
:func:`saves_on_train_epoch_end`          whether a ModelCheckpoint saves at epoch ends
:func:`batches_into_epoch`                the batches a checkpoint's epoch had trained when
                                          it was saved (a save inside an accumulation)
:func:`epochs_trained`                    the epochs whose batches a checkpoint's run has
                                          all trained, from the loops' state it records
                                          (a finished ``max_epochs`` run, on resume)
:func:`validates_by_time`                 whether validation runs on a clock
                                          (``final_validation.schedule_gap``)
:func:`validation_seconds`                and every how many seconds
                                          (``trainer_record``)
:func:`hyperparameters_as_dict`           the TensorBoard logger's conversion, flattening
:func:`flat_hyperparameters`              and sanitising of hyper-parameters, and its event
:func:`event_file_writer`                 file writer (``run_logger.RunLogger``)
:class:`IndexSamplerHook`                 torch ``DataLoader``'s index sampler, under a public
                                          name (``data.dataset.ResumableDataLoader``: exact
                                          resume inside an epoch)
========================================  ==================================================

``tests/test_private_reaches.py`` scans the package and fails on a private name of
Lightning or torch used anywhere else.

A reach that fails at run time (an internal gone) answers as if the feature were off: the
run goes on, and only the test says the reach broke.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping
from typing import Any

from lightning.fabric.loggers.tensorboard import _convert_params, _flatten_dict
from lightning.fabric.utilities.rank_zero import _get_rank
from lightning.pytorch import Trainer
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.cli import LightningCLI
from lightning.pytorch.loggers import TensorBoardLogger
from torch.utils.data import DataLoader

from roformer_lit.safe_input import yaml_value

#: LightningCLI methods (private in Lightning) that :class:`CompatCLI` replaces with public
#: ones; the test checks Lightning still calls each one.
CLI_OVERRIDES = ("_parse_ckpt_path", "_set_seed")


class CompatCLI(LightningCLI):
    """LightningCLI whose private steps the CLI replaces have public names.

    Lightning's ``__init__`` calls ``_parse_ckpt_path`` (after parsing) and ``_set_seed``
    (before building the classes); here they call :meth:`check_ckpt_path` and
    :meth:`set_seed`, which ``commands.pretrain.RoformerCLI`` and ``finetune.cli`` override.
    Each defaults to Lightning's own step."""

    def _parse_ckpt_path(self) -> None:
        self.check_ckpt_path()

    def _set_seed(self) -> None:
        self.set_seed()

    def check_ckpt_path(self) -> None:
        """What ``--ckpt_path`` brings before anything is built (Lightning's own: the
        checkpoint's hyper-parameters fill the model's arguments)."""
        super()._parse_ckpt_path()

    def set_seed(self) -> None:
        """Seed everything from ``seed_everything`` (Lightning's own)."""
        super()._set_seed()


def launch_rank() -> int | None:
    """This process's rank as the launcher's environment gives it (``RANK``, ``LOCAL_RANK``,
    ``SLURM_PROCID``, ...), ``None`` where none is set: the rank before a trainer exists."""
    return _get_rank()


def refresh_last_checkpoint(callback: ModelCheckpoint, trainer: Trainer) -> None:
    """Write the callback's ``last.ckpt`` now, unless it is off (``save_last``) or Lightning
    would skip saving at this point (sanity check, fast dev run, already saved this step)."""
    if callback.save_last and not callback._should_skip_saving_checkpoint(trainer):
        callback._save_last_checkpoint(trainer, callback._monitor_candidates(trainer))


def saves_on_train_epoch_end(callback: ModelCheckpoint, trainer: Trainer) -> bool:
    """Whether the callback saves at the end of a training epoch rather than after
    validation (its ``save_on_train_epoch_end``, else Lightning's rule)."""
    return bool(callback._should_save_on_train_epoch_end(trainer))


def batches_into_epoch(checkpoint: Mapping[str, Any]) -> tuple[int, bool] | None:
    """The training batches of the epoch in progress that the run of ``checkpoint`` (a
    loaded Lightning checkpoint) had taken when it was saved, and whether the last of them
    was the epoch's last batch: the fit loop's ``epoch_loop.batch_progress`` (``current``
    ``ready``, ``is_last_batch``). None where the checkpoint does not record it."""
    try:
        batches = checkpoint["loops"]["fit_loop"]["epoch_loop.batch_progress"]
        ready = batches["current"]["ready"]
        last = batches.get("is_last_batch", False)
    except (KeyError, TypeError, AttributeError):
        return None
    if not isinstance(ready, int) or isinstance(ready, bool) or ready < 0:
        return None
    return ready, bool(last)


def epochs_trained(checkpoint: Mapping[str, Any]) -> int | None:
    """The epochs whose batches the run of ``checkpoint`` (a loaded Lightning checkpoint) has
    all trained: its ``epoch`` (the epochs its fit loop had closed), plus the epoch in
    progress when the save came after that epoch's last batch -- a ``ModelCheckpoint`` save
    at the validation that follows the last batch, or in ``on_train_epoch_end``, is taken
    before the loop closes the epoch, so it records the epoch before. What says so is the
    fit loop's state in ``loops.fit_loop``: its ``epoch_progress`` has started an epoch it
    has not completed, and that epoch's ``epoch_loop.batch_progress.is_last_batch`` is set
    (or its ``processed`` count is ahead). A save inside an epoch (a validation every
    ``val_check_interval`` batches) counts the epoch before: resuming it finishes the
    epoch. None where ``epoch`` is not an integer; a checkpoint without the loops' record
    (or of another layout) counts its ``epoch``."""
    epoch = checkpoint.get("epoch")
    if not isinstance(epoch, int) or isinstance(epoch, bool):
        return None
    try:
        fit_loop = checkpoint["loops"]["fit_loop"]
        epochs = fit_loop["epoch_progress"]["current"]
        batches = fit_loop["epoch_loop.batch_progress"]
        in_progress = int(epochs["started"]) > int(epochs["completed"])
        last_batch_done = bool(batches["is_last_batch"]) or int(epochs["processed"]) > int(
            epochs["completed"]
        )
    except (KeyError, TypeError, ValueError):
        return epoch
    return epoch + 1 if in_progress and last_batch_done else epoch


def validation_seconds(trainer: Trainer) -> float | None:
    """The seconds between validations of a trainer whose ``val_check_interval`` is a
    duration (validation on a clock: Lightning holds its seconds, not the setting), or
    None where validation is counted in batches."""
    seconds = getattr(trainer, "_val_check_time_interval", None)
    return None if seconds is None else float(seconds)


def validates_by_time(trainer: Trainer) -> bool:
    """Whether ``val_check_interval`` is a duration (validation on a clock, not by batch)."""
    return validation_seconds(trainer) is not None


def hyperparameters_as_dict(params: Any) -> dict[str, Any]:
    """Hyper-parameters as the TensorBoard logger takes them: a ``Namespace`` or mapping
    made a plain ``dict``."""
    return _convert_params(params)


def flat_hyperparameters(logger: TensorBoardLogger, params: dict[str, Any]) -> dict[str, Any]:
    """Nested hyper-parameters flattened (``model/hidden_size``) and made values TensorBoard
    stores (anything else its string), as the logger writes them."""
    return logger._sanitize_params(_flatten_dict(params))


def event_file_writer(logger: TensorBoardLogger) -> Any:
    """The logger's event-file writer (``add_summary``), to write summaries the public
    ``SummaryWriter`` methods do not build."""
    return logger.experiment._get_file_writer()


class IndexSamplerHook(DataLoader):
    """A ``DataLoader`` whose index sampler (torch's private ``_index_sampler``: the batch
    sampler when batching, else the sampler) goes through :meth:`wrap_index_sampler`."""

    @property
    def _index_sampler(self) -> Any:
        return self.wrap_index_sampler(super()._index_sampler)

    def wrap_index_sampler(self, sampler: Any) -> Any:
        """The index sampler the loader iterates (this one: ``sampler`` itself)."""
        return sampler


def validation_follows_batch(trainer: Trainer) -> bool:
    """Whether Lightning validates after the training batch now ending."""
    loop = trainer.fit_loop.epoch_loop
    try:
        return bool(loop._should_check_val_fx(trainer.fit_loop._data_fetcher))
    except Exception:  # a Lightning without these internals
        return False


def accumulating(trainer: Trainer) -> bool:
    """Whether the training batch now ending only accumulated gradients (no optimiser step
    yet, ``accumulate_grad_batches`` > 1): a run stopped or saved here would lose them, and
    its loader and generators would be past a step its weights never took."""
    loop = trainer.fit_loop.epoch_loop
    try:
        return bool(loop._should_accumulate())
    except Exception:  # a Lightning without these internals
        return False


def validates_after_batch(trainer: Trainer) -> bool | None:
    """Whether the schedule validates after this batch anyway (``True``), validation is off
    for this epoch (``True``: nothing to add), or it does not (``False``); ``None`` when the
    internals are gone."""
    loop = trainer.fit_loop.epoch_loop
    try:
        if not loop._should_check_val_epoch():
            return True
        return bool(loop._should_check_val_fx(trainer.fit_loop._data_fetcher))
    except Exception:
        return None


def can_stop_early(trainer: Trainer) -> bool:
    """Whether the fit loop would stop now if asked (``min_steps``/``min_epochs`` met)."""
    try:
        return bool(trainer.fit_loop._can_stop_early)
    except Exception:
        return False


def ready_batches_reached(trainer: Trainer) -> bool:
    """Whether the epoch's batches are used up (its last batch, by count)."""
    loop = trainer.fit_loop.epoch_loop
    try:
        return bool(loop.batch_progress.is_last_batch or loop._num_ready_batches_reached())
    except Exception:
        return False


def stop_as_if_sigterm(trainer: Trainer) -> None:
    """Make the loop raise ``SIGTERMException`` after the current step, as Lightning's own
    SIGTERM handler does (``trainer.received_sigterm`` is read-only)."""
    trainer._signal_connector.received_sigterm = True


def subcommand_options(cli: Any, subcommand: str) -> dict[str, Any]:
    """One LightningCLI subcommand's option strings -> argparse actions (its parser's
    ``_option_string_actions``), to resolve what was typed."""
    return dict(getattr(cli._subcommand_parsers[subcommand], "_option_string_actions", {}))


def command_options(cli: Any, subcommand: str | None) -> dict[str, Any]:
    """The option strings -> argparse actions of the parser that reads the command line:
    ``subcommand``'s parser, or the CLI's one parser where it has no subcommands (built
    with ``run=False``) or none is named."""
    parsers = getattr(cli, "_subcommand_parsers", None) or {}
    parser = parsers.get(subcommand, cli.parser)
    return dict(getattr(parser, "_option_string_actions", {}))


def refused_data_key(exc: BaseException) -> tuple[str, Any, str | None] | None:
    """``(key, value, class path named)`` of jsonargparse's refusal of a ``data`` key the
    chosen data module does not take, read from its error text (``value`` is
    ``inspect.Parameter.empty`` where the text gives none, the class path None where it names
    none); None for any other error."""
    text = str(exc)
    if 'key "data"' not in text:
        return None
    found = re.search(r"NestedArg\(key='([^']+)', val='([^']*)'\)", text)
    key = found.group(1) if found else None
    value: Any = inspect.Parameter.empty
    if found:
        value = yaml_value(found.group(2))
    if key is None:
        found = re.search(r"Option '([^']+)' is not accepted", text)
        key = found.group(1) if found else None
    if key is None:
        return None
    named = re.search(r"class_path '([^']+)'", text)
    return key, value, named.group(1) if named else None
