"""Which runs are the same experiment: variants are formed from hyperparameters, never seeds.

A variant is ``position-attention`` plus every other hyperparameter whose value differs
between the runs being compared (nested dicts such as ``position_kwargs`` are compared key
by key), written ``name=value``. Keys a run does not set are left out of its label (they
take the scheme's default). A run whose hyperparameter files could not all be read
(``RunSummary.problems``) is *partial*: a key it lacks is unknown, not unset, and does not
split it from the runs that have it. Seeds (``seed_everything``, the data ``seed``) and bookkeeping
keys (:data:`IGNORED_KEYS`) never split variants: runs differing only in them are the
seeds of one variant.

    rope-softmax
    deberta-softmax c2p=false
    deberta-softmax p2c=false
    rope-softmax max_length=512
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from roformer_lit.compare.runs import RunSummary

#: Hyperparameters that never tell variants apart.
IGNORED_KEYS = frozenset(
    {"seed", "seed_everything", "cache_dir", "num_workers", "position", "attention"}
)
_MISSING = object()


def flatten(hparams: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"position_kwargs": {"c2p": False}}`` -> ``{"position_kwargs.c2p": False}``."""
    flat: dict[str, Any] = {}
    for key, value in hparams.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, f"{name}."))
        elif not (isinstance(value, Mapping) and not value):  # {} adds nothing
            flat[name] = value
    return flat


def differing_keys(
    hparams_list: Sequence[Mapping[str, Any]], partial: Sequence[bool] | None = None
) -> list[str]:
    """Flattened keys (seeds and :data:`IGNORED_KEYS` excluded) whose values differ. Where
    ``partial[i]`` is true, a key missing from ``hparams_list[i]`` is unknown and ignored."""
    flats = [flatten(h) for h in hparams_list]
    partial = partial if partial is not None else [False] * len(flats)
    keys = sorted({k for f in flats for k in f})
    out = []
    for key in keys:
        if key.rsplit(".", 1)[-1] in IGNORED_KEYS:
            continue
        values = {
            _format(f.get(key, _MISSING))
            for f, unknown in zip(flats, partial, strict=True)
            if key in f or not unknown
        }
        if len(values) > 1:
            out.append(key)
    return out


def variant_labels(
    hparams_list: Sequence[Mapping[str, Any]], partial: Sequence[bool] | None = None
) -> list[str]:
    """One label per hyperparameter set; equal labels mean the same variant (``partial``:
    see :func:`differing_keys`)."""
    keys = differing_keys(hparams_list, partial)
    names = _short_names(keys)
    labels = []
    for hparams in hparams_list:
        flat = flatten(hparams)
        parts = [f"{hparams.get('position', '?')}-{hparams.get('attention', '?')}"]
        parts += [f"{names[k]}={_format(flat[k])}" for k in keys if k in flat]
        labels.append(" ".join(parts))
    return labels


def assign_variants(runs: Sequence[RunSummary]) -> list[RunSummary]:
    """Copies of ``runs`` with ``variant`` set from what differs among all of them."""
    labels = variant_labels([_identity(r) for r in runs], [bool(r.problems) for r in runs])
    return [replace(run, variant=label) for run, label in zip(runs, labels, strict=True)]


def _identity(run: RunSummary) -> dict[str, Any]:
    return {**run.hparams, "position": run.position, "attention": run.attention}


def _short_names(keys: list[str]) -> dict[str, str]:
    """The last dotted component of each key, or the whole key where that is ambiguous."""
    leaves = [k.rsplit(".", 1)[-1] for k in keys]
    return {k: leaf if leaves.count(leaf) == 1 else k for k, leaf in zip(keys, leaves, strict=True)}


def _format(value: Any) -> str:
    if value is _MISSING:
        return "<unset>"
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    except TypeError:
        return repr(value)
