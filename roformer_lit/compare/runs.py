"""Finding run directories and summarising each one: ``collect_runs(logdir)``.

A run is any directory (at any depth under ``logdir``) holding ``events.out.tfevents.*``
files. Its scalars come from :func:`roformer_lit.events.read_run`, its hyperparameters from
``hparams.yaml`` (model and data hyperparameters, flat) plus a few trainer keys of
``config.yaml`` that change what a run measures (:data:`TRAINER_KEYS`), and its seed from
``config.yaml``'s ``seed_everything``.

Evaluation-only runs (``validate``/``test``/``predict``, version ``...-validate[-k]``, or a
directory with neither training scalars nor checkpoints) are summarised too but flagged
``evaluation_only``; the comparison table leaves them out and lists them separately.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from roformer_lit.errors import ConfigError
from roformer_lit.events import RunEvents, Scalar, read_run

#: ``config.yaml`` keys that join the hyperparameters a variant is told apart by.
TRAINER_KEYS = ("max_steps", "precision", "accumulate_grad_batches", "gradient_clip_val")

_EVAL_VERSION = re.compile(r"-(validate|test|predict)(-\d+)?$")
_SEED_IN_NAME = re.compile(r"seed(-?\d+)")
_TRAINING_TAG = re.compile(r"^(train/|perf/|lr-)")


@dataclass
class RunSummary:
    """One run's final numbers (None where the run never logged that scalar)."""

    path: Path
    position: str
    attention: str
    seed: int | None
    hparams: dict[str, Any]
    final_val_loss: float | None = None
    best_val_loss: float | None = None
    val_acc: float | None = None
    val_ppl: float | None = None
    steps: int | None = None  # optimizer steps done: last logged step + 1 (0-based steps)
    tokens_per_s: float | None = None  # median over the run
    peak_mem_mb: float | None = None  # max over the run
    wall_time_s: float | None = None  # last minus first wall time over all scalars
    #: ``(step, seconds since the run's first scalar, val/loss)`` in logging order.
    val_loss_series: list[tuple[int, float, float]] = field(default_factory=list)
    evaluation_only: bool = False
    #: Set by :func:`roformer_lit.compare.variants.assign_variants`; ``position-attention``
    #: until then.
    variant: str = ""

    def __post_init__(self) -> None:
        if not self.variant:
            self.variant = f"{self.position}-{self.attention}"


def find_run_dirs(logdir: str | Path) -> list[Path]:
    """Every directory under ``logdir`` (itself included) that holds an event file, sorted."""
    root = Path(logdir)
    if not root.exists():
        raise ConfigError(f"log directory not found: {root}")
    if not root.is_dir():
        raise ConfigError(f"not a directory: {root}")
    return sorted({p.parent for p in root.rglob("events.out.tfevents.*") if p.is_file()})


def collect_runs(logdir: str | Path, *, with_evaluation: bool = False) -> list[RunSummary]:
    """Summaries of the training runs under ``logdir`` with variant labels assigned.

    ``with_evaluation=True`` keeps evaluation-only runs too (flagged ``evaluation_only``).
    Raises ConfigError if ``logdir`` does not exist or holds no run at all.
    """
    from roformer_lit.compare.variants import assign_variants

    dirs = find_run_dirs(logdir)
    if not dirs:
        raise ConfigError(f"no runs (TensorBoard event files) under {logdir}")
    runs = [summarize_run(d) for d in dirs]
    training = assign_variants([r for r in runs if not r.evaluation_only])
    if not with_evaluation:
        return training
    return training + [r for r in runs if r.evaluation_only]


def summarize_run(run_dir: str | Path, events: RunEvents | None = None) -> RunSummary:
    """One run directory as a :class:`RunSummary` (variant label not yet assigned)."""
    run_dir = Path(run_dir)
    events = events if events is not None else read_run(run_dir)
    config = _load_yaml(run_dir / "config.yaml")
    hparams = {
        k: v for k, v in _load_yaml(run_dir / "hparams.yaml").items() if not k.startswith("_")
    }
    if not hparams and isinstance(config.get("model"), dict):  # no hparams.yaml: the config's
        hparams = {**(config.get("data") or {}), **config["model"]}
    trainer = config.get("trainer") or {}
    for key in TRAINER_KEYS:
        if key in trainer:
            hparams[f"trainer.{key}"] = trainer[key]
    series = events.scalars
    all_points = [s for points in series.values() for s in points]
    start = min((s.wall_time for s in all_points), default=0.0)
    val_loss = series.get("val/loss", [])
    tokens = [s.value for s in series.get("perf/tokens_per_s", []) if math.isfinite(s.value)]
    memory = [s.value for s in series.get("perf/peak_mem_mb", []) if math.isfinite(s.value)]
    trained = any(_TRAINING_TAG.match(tag) for tag in series) or (run_dir / "checkpoints").is_dir()
    return RunSummary(
        path=run_dir,
        position=str(hparams.get("position", "?")),
        attention=str(hparams.get("attention", "?")),
        seed=_seed(config, run_dir.name),
        hparams=hparams,
        final_val_loss=events.last("val/loss"),
        best_val_loss=min((s.value for s in val_loss), default=None),
        val_acc=events.last("val/acc"),
        val_ppl=events.last("val/ppl"),
        steps=_steps(all_points),
        tokens_per_s=statistics.median(tokens) if tokens else None,
        peak_mem_mb=max(memory, default=None),
        wall_time_s=(max(s.wall_time for s in all_points) - start) if all_points else None,
        val_loss_series=[(s.step, s.wall_time - start, s.value) for s in val_loss],
        evaluation_only=bool(_EVAL_VERSION.search(run_dir.name)) or not trained,
    )


def _steps(points: list[Scalar]) -> int | None:
    """Lightning logs at the 0-based index of the last optimizer step: a 600-step run's
    last scalar sits at step 599."""
    return max(s.step for s in points) + 1 if points else None


def _seed(config: dict[str, Any], name: str) -> int | None:
    seed = config.get("seed_everything")
    if isinstance(seed, int) and not isinstance(seed, bool):
        return seed
    match = _SEED_IN_NAME.search(name)
    return int(match.group(1)) if match else None


class _TolerantLoader(yaml.SafeLoader):
    """SafeLoader that reads unknown tags (``!!python/tuple`` ...) as plain values."""


def _plain(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)


_TolerantLoader.add_multi_constructor("", _plain)


def _load_yaml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_TolerantLoader)
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}
