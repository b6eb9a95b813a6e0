"""Downstream fine-tuning of pretrained checkpoints: ``python -m roformer_lit finetune``.

* :mod:`.tasks` -- the tasks by name (GLUE, the shipped ``movie_polarity``, ``local`` files);
* :mod:`.examples` -- reading a task's labelled examples;
* :mod:`.encoding` -- token ids with ``[CLS]``/``[SEP]``, dynamic padding;
* :mod:`.pretrained` -- the encoder and tokenizer of a ``fit`` checkpoint;
* :mod:`.encoder_record` -- a fine-tuned checkpoint's record of that encoder, checked on load;
* :mod:`.metrics` -- the tasks' metrics (torchmetrics);
* :mod:`.datamodule` -- :class:`TaskDataModule`;
* :mod:`.module` -- :class:`SequenceClassifier`;
* :mod:`.cli` -- the ``finetune`` command.
"""

from __future__ import annotations

from roformer_lit.finetune.datamodule import TaskDataModule
from roformer_lit.finetune.module import SequenceClassifier

__all__ = ["SequenceClassifier", "TaskDataModule"]
