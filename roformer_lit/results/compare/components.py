"""Which plugin a run trained with, as ``compare`` tells runs apart.

A run's settings name its scheme and kernel (``position: logdist``), but a plugin's name is
not its code: the entry point ``logdist`` may name another class, or a class whose
defaults changed, by the next run. Its checkpoint records which object each name was and
a plugin's options over its defaults
(:func:`~roformer_lit.component_origins.record`); :func:`plugin_identity` reads that
record from the run's ``last.ckpt`` (``weights_only``, memory-mapped, a regular file only:
a FIFO never hangs) and gives, for each plugin name, the identity of its class and of its options. Runs whose
identities for one name differ are never seeds of one variant, like runs on different
data (:mod:`~roformer_lit.results.compare.variants`); a run without one (built-ins only,
no checkpoint, one from before the record) splits from no run, and runs of two plugins
are told apart by their names, not by these.
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


def plugin_identity(run_dir: Path) -> tuple[dict[str, str], dict[str, str]]:
    """For each plugin ``run_dir``'s last checkpoint records (``position:logdist``), 64 hex
    digits identifying which object the name was
    (:func:`~roformer_lit.component_origins.identity`), and 64 identifying its options over
    its defaults; a name is left out where not recorded (no readable checkpoint, a
    built-in, options in a checkpoint from before their record), so it splits from no run
    and runs of other plugins never differ by it."""
    path = run_dir / LAST
    if not path.is_file():
        return {}, {}
    try:
        record = torch.load(path, map_location="cpu", weights_only=True, mmap=True).get(
            COMPONENTS_KEY
        )
    except Exception:  # unreadable: the commands that load it say why; compare tables it
        return {}, {}
    if not isinstance(record, Mapping):
        return {}, {}
    plugins = {
        str(key): origin
        for key, origin in record.items()
        if isinstance(origin, Mapping) and origin.get("source") != "builtin"
    }
    classes = {key: _digest(identity(origin)) for key, origin in plugins.items()}
    options = {
        key: _digest(origin["options"])
        for key, origin in plugins.items()
        if origin.get("options") is not None
    }
    return classes, options


def _digest(value: object) -> str:
    """64 hex digits of ``value`` as sorted JSON."""
    text = json.dumps(value, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()
