"""Which runs are the same experiment: variants are formed from hyperparameters, never seeds.

A variant is ``position-attention`` plus every other hyperparameter whose value differs
between the runs being compared (nested dicts such as ``position_kwargs`` are compared key
by key), written ``name=value``. Keys a run does not set are left out of its label (they
take the scheme's default); a top-level key a run does not save (a run from before the
option existed) compares as the constructors' default (:func:`saved_defaults`). A run whose hyperparameter files could not all be read
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

import functools
import inspect
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


@functools.cache
def saved_defaults() -> dict[str, Any]:
    """Constructor defaults of the classes whose arguments runs save as hyperparameters
    (the MLM and fine-tuning modules and data modules), for the names on which they all
    agree. A run made before a hyperparameter existed (``document_mask``, say) does not save
    it and had its default, so it is compared as having that value."""
    from roformer_lit.data.datamodule import MLMDataModule
    from roformer_lit.finetune.datamodule import TaskDataModule
    from roformer_lit.finetune.module import SequenceClassifier
    from roformer_lit.module import MaskedLM

    seen: dict[str, set[str]] = {}
    values: dict[str, Any] = {}
    for cls in (MaskedLM, MLMDataModule, SequenceClassifier, TaskDataModule):
        for name, param in inspect.signature(cls.__init__).parameters.items():
            if param.default is not inspect.Parameter.empty:
                seen.setdefault(name, set()).add(_format(param.default))
                values[name] = param.default
    return {name: values[name] for name, formats in seen.items() if len(formats) == 1}


def differing_keys(
    hparams_list: Sequence[Mapping[str, Any]], partial: Sequence[bool] | None = None
) -> list[str]:
    """Flattened keys (seeds and :data:`IGNORED_KEYS` excluded) whose values differ. A key
    a run lacks counts as its default (:func:`saved_defaults`) where one is known. Where
    ``partial[i]`` is true, a key missing from ``hparams_list[i]`` is unknown and ignored."""
    flats = [flatten(h) for h in hparams_list]
    partial = partial if partial is not None else [False] * len(flats)
    keys = sorted({k for f in flats for k in f})
    defaults = saved_defaults()
    out = []
    for key in keys:
        if key.rsplit(".", 1)[-1] in IGNORED_KEYS:
            continue
        values = {
            _format(f.get(key, defaults.get(key, _MISSING)))
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
