"""A sweep skips or resumes a run only while its checkpoint's schemes, kernels and task are
still, here, the ones it trained with.

A run's ``config.yaml`` names a plugin by import path or entry point, and the plugin can
change under the name (a default of one of its options edited, the entry point re-pointed)
while the path stays the same: the sweep skipped the run as finished, exit 0, though the
same settings now build another model, which ``validate``, ``extrapolate`` and a resume
refuse. :func:`check_components_unchanged` asks each run the sweep would skip or resume
the question those commands ask of its ``last.ckpt``
(:func:`~roformer_lit.component_origins.check_recorded_components`), before anything runs,
and refuses in one line naming the run. A run without a readable ``last.ckpt``, or one
that records no components, is not compared (the run's own checks say why when it runs).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from roformer_lit.errors import ConfigError
from roformer_lit.sweep.finished import CONTINUED

#: A run the sweep would skip or resume: (its name as said, its directory, the action).
Continued = tuple[str, str | Path, str]


def check_components_unchanged(continued: Sequence[Continued]) -> None:
    """Refuse (one ConfigError line) to skip or resume a run whose ``last.ckpt`` records a
    scheme, kernel or task that is here another object, or whose options now read
    otherwise (module docstring)."""
    import torch

    from roformer_lit.component_origins import COMPONENTS_KEY, check_recorded_components

    for version, run_dir, action in continued:
        last = Path(run_dir) / "checkpoints" / "last.ckpt"
        if action not in CONTINUED or not last.is_file():
            continue
        try:  # this record alone: a checkpoint damaged otherwise is as the sweep took it
            checkpoint = torch.load(last, map_location="cpu", weights_only=True, mmap=True)
        except Exception:
            continue
        if not isinstance(checkpoint, dict) or COMPONENTS_KEY not in checkpoint:
            continue
        try:
            check_recorded_components(checkpoint, last)
        except ConfigError as exc:
            state, what = CONTINUED[action]
            raise ConfigError(
                f"sweep: run {version} {state}, but {exc}: {what}; move {run_dir} aside to "
                "train it anew with the plugin installed now, or give the sweep another name"
            ) from None
