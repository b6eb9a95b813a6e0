"""Whether the data a command gives are the data a checkpoint's run trained on, by content.

``fit``/``validate``/``test``/``predict --ckpt_path`` and ``finetune [validate] --ckpt_path``
take the run's data settings from the checkpoint
(:mod:`roformer_lit.commands.checkpoint_settings`), but settings name files by path: a
corpus or task file edited since the run, a regenerated tokenizer file or another machine's
copy give the same settings and other data. So once the data module is built, the content
identity of its data (:mod:`roformer_lit.training.data_identity`) is compared with the one
the checkpoint records, pretraining and fine-tuning alike:

* a resumed ``fit`` on other data is refused in one line naming both identities: the run
  would go on as a mix of two data sets under one name;
* an evaluation on other data is legitimate (another set, the same settings): one ``note:``
  line names both identities. It compares what an evaluation reads (the evaluated identity:
  a fine-tune's validation splits, which ``finetune validate`` reads without the training
  files).

A checkpoint without a record (from before it, a position task's) and data without an
identity are not compared; the data are prepared (if they are not yet) only when the
checkpoint records an identity.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roformer_lit.errors import ConfigError
from roformer_lit.training.data_identity import checkpoint_data_identity, short_identity


def current_data_identity(datamodule: Any, evaluated: bool = False) -> str | None:
    """The identity of the data ``datamodule`` gives (preparing them if needed), or of what
    an evaluation reads of them (``evaluated``); None for a data module whose data have
    none."""
    identity = getattr(datamodule, "evaluated_identity" if evaluated else "data_identity", None)
    return identity() if callable(identity) else None


def check_checkpoint_data(
    path: str, checkpoint: Mapping[str, Any], datamodule: Any, resume: bool
) -> str | None:
    """Compare the checkpoint's data identity with the data module's (see the module):
    None where they agree or either is unknown, the ``note:`` line of an evaluation on
    other data, or a ConfigError line for a resumed ``fit`` on other data."""
    recorded = checkpoint_data_identity(checkpoint, evaluated=not resume)
    if recorded is None:
        return None
    given = current_data_identity(datamodule, evaluated=not resume)
    found = other_data(path, recorded, given, resume)
    return None if found is None else f"note: {found}"


def other_data(path: str, recorded: str | None, given: str | None, resume: bool) -> str | None:
    """What :func:`check_checkpoint_data` says of a checkpoint that recorded ``recorded``
    given data of identity ``given``: None where they agree or either is unknown, the
    ``note:`` line's text (without ``note:``) for an evaluation, a ConfigError for a
    resumed ``fit``. ``extrapolate`` names its checkpoint before the text."""
    if recorded is None or given is None or given == recorded:
        return None
    ran, now = short_identity(recorded), short_identity(given)
    if resume:
        raise ConfigError(
            f"checkpoint {path} trained on other data (data {ran}) than these data settings "
            f"give (data {now}): the same settings name files whose content differs (an "
            "edited corpus or task file, a regenerated tokenizer, another copy); give the run's original "
            "data, or train a new run (the command without --ckpt_path)"
        )
    return (
        f"evaluating on other data (data {now}) than the run trained on (data {ran}): "
        "other files than the run's, or files whose content differs since"
    )


__all__ = ["check_checkpoint_data", "current_data_identity", "other_data"]
