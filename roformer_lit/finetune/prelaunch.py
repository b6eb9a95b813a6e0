"""The one check before a fine-tuning run starts, shared by ``finetune`` and ``sweep``.

:func:`check_finetune_config` applies, to a parsed configuration (nothing instantiated,
no checkpoint or data read), ``seed_everything``'s and the trainer's rules, the data
module's (:data:`~roformer_lit.finetune.datamodule.TASK_DATA_RULES`) and the
classifier's (:data:`~roformer_lit.finetune.module.CLASSIFIER_RULES`) tables, the task's
name and that ``model.pretrained`` is set. ``finetune`` runs it before it picks a run
directory; a ``command: finetune`` sweep on every combination before anything starts.
"""

from __future__ import annotations

from typing import Any

from roformer_lit.errors import ConfigError
from roformer_lit.finetune.datamodule import TASK_DATA_RULES
from roformer_lit.finetune.module import CLASSIFIER_RULES
from roformer_lit.finetune.tasks import get_task
from roformer_lit.validation import check_arguments, check_run_arguments, check_trainer_arguments


def check_finetune_config(config: Any) -> None:
    """Every rule of a fine-tuning run that needs no file (see the module); one line."""
    check_run_arguments(config)
    if config.get("trainer") is not None:
        check_trainer_arguments(config.trainer)
    data, model = config.get("data"), config.get("model")
    if data is not None:
        check_arguments(dict(data.items()), TASK_DATA_RULES, "data.")
        get_task(data.get("task"))
    if model is not None:
        check_classifier_settings(model)
        if model.get("pretrained") is None:
            raise ConfigError("model.pretrained is required: a checkpoint written by fit")


def check_classifier_settings(model: Any) -> None:
    """The classifier's table (:data:`~roformer_lit.finetune.module.CLASSIFIER_RULES`) on a
    parsed ``model`` section: the rules the classifier's build runs on its settings alone
    (the encoder's are the pretrained checkpoint's), which ``finetune --print_config``
    checks too; one line."""
    check_arguments(dict(model.items()), CLASSIFIER_RULES, "model.")
