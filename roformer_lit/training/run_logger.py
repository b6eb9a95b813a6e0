"""TensorBoard logging for comparable runs: ``runs/<experiment>/<version>/``.

Hyperparameters are written once at start with the metric tags the HPARAMS tab should
show; TensorBoard fills each with the last value logged under that tag, so every run's
final metrics sit beside its hyperparameters without placeholder points in the curves.
Private keys (a leading underscore, such as LightningCLI's ``_instantiator``) stay out of
the HPARAMS tab (``hparams.yaml`` keeps them). Events reach the disk every
:data:`FLUSH_SECS` seconds, so TensorBoard follows a run as it learns.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lightning.pytorch.loggers import TensorBoardLogger
from lightning.pytorch.utilities import rank_zero_only

from roformer_lit.training.lightning_compat import (
    event_file_writer,
    flat_hyperparameters,
    hyperparameters_as_dict,
)

#: Seconds between two flushes of the event file (TensorBoard's default is 120).
FLUSH_SECS = 5

#: Tags shown in TensorBoard's HPARAMS tab (their last logged value).
HPARAM_METRICS = (
    "val/loss",
    "val/acc",
    "val/ppl",
    "val/best_loss",
    "train/loss",
    "perf/tokens_per_s",
    "perf/peak_mem_mb",
)


def unique_version(root: str | Path, experiment: str, stem: str) -> str:
    """``stem`` if ``root/experiment/stem`` is free, else ``stem-2``, ``stem-3``, ..."""
    base = Path(root) / experiment
    version, n = stem, 1
    while (base / version).exists():
        n += 1
        version = f"{stem}-{n}"
    return version


def public_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` without private keys (a leading underscore), at every nesting level."""
    return {
        key: public_params(value) if isinstance(value, Mapping) else value
        for key, value in params.items()
        if not str(key).startswith("_")
    }


class RunLogger(TensorBoardLogger):
    """A TensorBoardLogger that writes hparams with declared metric tags, never placeholders."""

    def __init__(
        self,
        save_dir: str = "runs",
        name: str = "default",
        version: str | int | None = None,
        flush_secs: int = FLUSH_SECS,
        default_hp_metric: bool = False,
        **kwargs: Any,
    ) -> None:
        # flush_secs and default_hp_metric are parameters (not set behind kwargs) so that a
        # run's saved config.yaml shows the values the run used
        super().__init__(
            save_dir=save_dir,
            name=name,
            version=version,
            flush_secs=flush_secs,
            default_hp_metric=default_hp_metric,
            **kwargs,
        )

    @rank_zero_only
    def log_hyperparams(
        self, params: Any, metrics: dict[str, Any] | None = None, step: int | None = None
    ) -> None:
        from torch.utils.tensorboard.summary import hparams

        params = hyperparameters_as_dict(params)
        if metrics is not None:
            super().log_hyperparams(public_params(params), metrics, step)
            self.hparams.update(params)
            return
        self.hparams.update(params)
        flat = flat_hyperparameters(self, public_params(params))
        exp, ssi, sei = hparams(flat, {tag: 0.0 for tag in HPARAM_METRICS})
        writer = event_file_writer(self)
        for summary in (exp, ssi, sei):
            writer.add_summary(summary, step)
