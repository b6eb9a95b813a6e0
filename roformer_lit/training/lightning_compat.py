"""Every reach into Lightning's (and torch's DataLoader's) private API, in one module.

Lightning has no public hook for a few things the framework needs; each reach is one
function here, so a Lightning release that moves an internal breaks one place, and
``tests/test_lightning_compat.py`` has one test per reach that fails when it stops working
(``pyproject.toml`` bounds ``lightning`` to the releases those tests have passed on).

========================================  ==================================================
reach                                     what for
========================================  ==================================================
:func:`validation_follows_batch`          stop on a signal after the validation that follows
                                          the current batch (``callbacks.Preemption``)
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
========================================  ==================================================

One private reach into torch stays where it must, as a property override:
``data.dataset.ResumableDataLoader._index_sampler`` (exact resume inside an epoch); its
test is beside these.

A reach that fails at run time (an internal gone) answers as if the feature were off: the
run goes on, and only the test says the reach broke.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import yaml
from lightning.pytorch import Trainer

#: LightningCLI methods (private in Lightning) that ``commands.pretrain.RoformerCLI`` and
#: ``finetune.cli`` override; the test checks Lightning still calls each one.
CLI_OVERRIDES = ("_parse_ckpt_path", "_set_seed")


def validation_follows_batch(trainer: Trainer) -> bool:
    """Whether Lightning validates after the training batch now ending."""
    loop = trainer.fit_loop.epoch_loop
    try:
        return bool(loop._should_check_val_fx(trainer.fit_loop._data_fetcher))
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
    ``_option_string_actions``), to resolve what was typed, abbreviations included."""
    return dict(getattr(cli._subcommand_parsers[subcommand], "_option_string_actions", {}))


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
        try:
            value = yaml.safe_load(found.group(2))
        except yaml.YAMLError:
            value = found.group(2)
    if key is None:
        found = re.search(r"Option '([^']+)' is not accepted", text)
        key = found.group(1) if found else None
    if key is None:
        return None
    named = re.search(r"class_path '([^']+)'", text)
    return key, value, named.group(1) if named else None
