"""Reading runs back through TensorBoard's own event reader."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


@dataclass
class Scalar:
    step: int
    wall_time: float
    value: float


@dataclass
class RunEvents:
    """Every scalar series of one run directory, and its hyperparameters' plugin data."""

    path: Path
    scalars: dict[str, list[Scalar]] = field(default_factory=dict)
    has_hparams: bool = False

    def last(self, tag: str) -> float | None:
        series = self.scalars.get(tag)
        return series[-1].value if series else None


def read_run(run_dir: str | Path) -> RunEvents:
    """All scalars of the event files in ``run_dir`` (not its subdirectories), by tag."""
    run_dir = Path(run_dir)
    accumulator = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    accumulator.Reload()
    tags = accumulator.Tags()
    scalars = {
        tag: [Scalar(e.step, e.wall_time, e.value) for e in accumulator.Scalars(tag)]
        for tag in tags.get("scalars", [])
    }
    return RunEvents(run_dir, scalars, has_hparams=bool(_hparams_tags(accumulator)))


def _hparams_tags(accumulator: EventAccumulator) -> list[str]:
    try:
        return list(accumulator.PluginTagToContent("hparams"))
    except KeyError:
        return []
