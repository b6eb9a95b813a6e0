"""Which plugin a run trained with, as ``compare`` tells runs apart.

A run's settings name its scheme and kernel (``position: logdist``), but a plugin's name is
not its code: the entry point ``logdist`` may name another class, or a class whose
defaults changed, by the next run. Its checkpoint records which object each name was and
a plugin's options over its defaults
(:func:`~roformer_lit.component_origins.record`); :func:`plugin_identity` reads that
record from the run's ``last.ckpt`` (``weights_only``, memory-mapped, a regular file only:
a FIFO never hangs) and gives the plugins' part of it as one identity. Runs whose
identities differ are never seeds of one variant, like runs on different data
(:mod:`~roformer_lit.results.compare.variants`); a run with none (built-ins only, no
checkpoint, one from before the record) splits from no run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path

import torch

from roformer_lit.component_origins import COMPONENTS_KEY, identity

#: The checkpoint whose record a run is identified by.
LAST = Path("checkpoints") / "last.ckpt"


def plugin_identity(run_dir: Path) -> tuple[str | None, str | None]:
    """Two sets of 64 hex digits identifying the plugins ``run_dir``'s last checkpoint
    records: which object each name was (:func:`~roformer_lit.component_origins.identity`),
    and their options over their defaults; each None where not recorded (no readable
    checkpoint, built-ins only, options in a checkpoint from before their record), so a
    run from before the options' record splits only by its classes."""
    path = run_dir / LAST
    if not path.is_file():
        return None, None
    try:
        record = torch.load(path, map_location="cpu", weights_only=True, mmap=True).get(
            COMPONENTS_KEY
        )
    except Exception:  # unreadable: the commands that load it say why; compare tables it
        return None, None
    if not isinstance(record, Mapping):
        return None, None
    plugins = {
        str(key): origin
        for key, origin in record.items()
        if isinstance(origin, Mapping) and origin.get("source") != "builtin"
    }
    if not plugins:
        return None, None
    options = {key: origin.get("options") for key, origin in plugins.items()}
    recorded = all(value is not None for value in options.values())
    return _digest({key: identity(o) for key, o in plugins.items()}), (
        _digest(options) if recorded else None
    )


def _digest(value: object) -> str:
    """64 hex digits of ``value`` as sorted JSON."""
    text = json.dumps(value, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()
