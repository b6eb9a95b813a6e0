"""``DataRecord``: a ``fit`` writes its data's content identity into its run directory.

When training starts (after a resumed run's checkpoint is restored), the first process
writes ``<run>/data_identity.json``
(:func:`~roformer_lit.training.data_identity.write_record`) with the identity of the data
module's data (:meth:`~roformer_lit.data.resumable.ResumableDataModule.data_identity`) and,
where an evaluation reads less of them (a fine-tune's validation splits), the identity of
what it reads (:meth:`~roformer_lit.data.resumable.ResumableDataModule.evaluated_identity`),
where they have one and the run directory has no record yet: pretraining and fine-tuning
alike. A resumed run writes none unless its
checkpoint recorded that identity (the resume refuses another): a run from before the record
trained its first steps on data nothing names, and its directory keeps saying so. The same
identity goes into every checkpoint through the data module's state.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lightning.pytorch import Callback, LightningModule, Trainer

from roformer_lit.training.data_identity import (
    DATA_IDENTITY_FILE,
    checkpoint_data_identity,
    write_record,
)


class DataRecord(Callback):
    """Write the run directory's data identity record (see the module)."""

    def __init__(self) -> None:
        self._resumed: str | None = None
        self._restored = False

    def on_load_checkpoint(
        self, trainer: Trainer, pl_module: LightningModule, checkpoint: Mapping[str, Any]
    ) -> None:
        self._restored = True
        self._resumed = checkpoint_data_identity(checkpoint)

    def on_fit_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        # every process asks: trainer.log_dir is a collective under DDP
        log_dir = trainer.log_dir if trainer.logger is not None else None
        datamodule = getattr(trainer, "datamodule", None)
        if not trainer.is_global_zero or log_dir is None or datamodule is None:
            return
        identity = getattr(datamodule, "data_identity", lambda: None)()
        if identity is None or (Path(log_dir) / DATA_IDENTITY_FILE).exists():
            return
        if self._restored and self._resumed != identity:
            return  # resumed from a checkpoint that names no identity
        describe = getattr(datamodule, "describe", lambda: "")()
        evaluated = getattr(datamodule, "evaluated_identity", lambda: None)()
        write_record(log_dir, identity, describe, evaluated)
