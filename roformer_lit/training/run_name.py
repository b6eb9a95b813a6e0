"""A new run's name: the scheme, the kernel, the seed, the corpus and every ablation switch.

``fit`` names a new run directory ``<position>-<attention>-seed<N>[-<corpus>][-<variant>...]``:

- ``<corpus>``: the training corpus when it is not the bundled one (:func:`corpus_label`);
- ``<variant>``: one part per setting that makes a variant of the same scheme, in the order
  of :data:`VARIANT_PARTS` (randomized positions ``rp1024``, validation positions
  ``valrandom``, a training hint ``hint0.5``, document masking ``docmask``), then every
  scheme and kernel option the run sets (``position_kwargs`` and ``attention_kwargs``, key by
  key: p-RoPE's ``unrotated_fraction0.25``, ``base500``), then the layer plan's label
  (``local128x2-global``, :func:`roformer_lit.layer_plan.plan_label`) and every block option
  the run sets (``mlpgeglu``).

So ``rope-softmax-seed0-copy-rp1024`` and ``rope-softmax-seed0-copy`` are told apart by name,
as ``compare`` tells them apart by their variant columns. Only letters, digits, ``.``, ``_``
and ``-`` appear; a name is cut to :data:`MAX_STEM` characters (the run's ``config.yaml``
always holds the whole configuration).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from roformer_lit.layer_plan import plan_label

#: Longest name stem (a run directory name stays well under the file system's 255 bytes,
#: leaving room for a ``-N`` counter).
MAX_STEM = 160

#: Data settings that make a variant: (key, how its value shows; ``None``: not shown).
VARIANT_PARTS: tuple[tuple[str, Callable[[Any], str | None]], ...] = (
    ("random_positions", lambda v: None if v is None else f"rp{v}"),
    ("validation_positions", lambda v: None if v in (None, "ordinary") else f"val{v}"),
    ("probe_hint", lambda v: f"hint{v:g}" if isinstance(v, int | float) and v else None),
    ("document_mask", lambda v: "docmask" if v is True else None),
)


def _get(section: Any, key: str) -> Any:
    if section is None:
        return None
    getter = getattr(section, "get", None)
    return getter(key) if getter is not None else getattr(section, key, None)


def _clean(text: str) -> str:
    """Letters, digits, ``.``, ``_`` and ``-`` only."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._-")


def component_label(name: Any) -> str:
    """A scheme's or kernel's name as a run name part: an import path's
    ``my_pkg.schemes:CoPE`` becomes ``my_pkg.schemes_CoPE`` (no colon in a directory name)."""
    return _clean(str(name))


def _compact(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, bool | int | str) or value is None:
        return str(value).lower() if isinstance(value, bool) else str(value)
    try:
        return json.dumps(_plain(value), sort_keys=True, separators=(",", ":"))
    except TypeError:
        return str(value)


def _plain(value: Any) -> Any:
    """A namespace or mapping as a dict, recursively (jsonargparse's Namespace included)."""
    as_dict = getattr(value, "as_dict", None)
    if callable(as_dict):
        value = as_dict()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def corpus_label(data: Any) -> str | None:
    """A short name for a run's training corpus when it is not the bundled one (``None``
    then): the dataset's name, or the first training file's (or directory's) name without
    its extensions, or the probe task's (``data.probe``); at most 40 characters."""
    if data is None:
        return None
    source = _get(data, "dataset") or _get(data, "probe")
    if source is None:
        files = _get(data, "train_files")
        if files is None:
            return None
        first = files if isinstance(files, str) else next(iter(files), None)
        if first is None:
            return None
        name = Path(str(first).rstrip("/")).name
        source = name.split(".")[0] or name
    label = _clean(Path(str(source).rstrip("/")).name)
    return label[:40] or None


def variant_parts(model: Any, data: Any) -> list[str]:
    """The name parts of the settings that make this run a variant (see the module doc)."""
    parts = []
    for key, show in VARIANT_PARTS:
        shown = show(_get(data, key)) if data is not None else None
        if shown:
            parts.append(shown)
    for section in ("position_kwargs", "attention_kwargs"):
        options = _plain(_get(model, section)) or {}
        if isinstance(options, Mapping):
            parts += [f"{key}{_compact(options[key])}" for key in sorted(options)]
    parts.append(plan_label(_plain(_get(model, "layer_plan"))))  # "" without a plan
    block = _plain(_get(model, "block"))
    if isinstance(block, Mapping):
        parts += [f"{key}{_compact(block[key])}" for key in sorted(block)]
    return [p for p in (_clean(part) for part in parts) if p]


def run_stem(config: Any) -> str:
    """The name stem of a new run of ``config`` (a ``fit`` configuration namespace)."""
    model, data = _get(config, "model"), _get(config, "data")
    if _get(data, "class_path") is not None:  # a data module named by its class
        data = _get(data, "init_args")
    position, attention = (component_label(_get(model, key)) for key in ("position", "attention"))
    stem = f"{position}-{attention}-seed{_get(config, 'seed_everything')}"
    corpus = corpus_label(data)
    parts = [stem, *([corpus] if corpus else []), *variant_parts(model, data)]
    return "-".join(parts)[:MAX_STEM].rstrip("._-")
