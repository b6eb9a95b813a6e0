"""``command: finetune`` sweeps: checkpoint globs in the grid and the run names they get.

Grid values of ``model.pretrained`` that contain a glob character (``*``, ``?``, ``[``) are
replaced, where they stand, by the files they match, sorted, relative to the current
directory (as ``base`` is; the matches are kept as written, e.g.
``runs/positions/rope-softmax-seed0/checkpoints/last.ckpt``); a file matched twice is listed
once. Everything is checked when the sweep is loaded, before any run is prepared or
launched, each failure one ConfigError line naming the value: a pattern matching nothing,
or matching anything but ``*.ckpt`` files (a run directory, ``config.yaml``); a path that
is not an existing file; a glob in ``overrides`` (only the grid expands globs). The
fine-tune checks the files' contents when it starts.

In run names a checkpoint is its run directory's name (``<run>/checkpoints/<file>.ckpt`` ->
``<run>``; any other path -> its file name without ``.ckpt``). Where two checkpoints of the
sweep would share a name, every checkpoint is named ``<run>-<file stem>``, then
``<parent of run>.<run>-<file stem>``; :func:`roformer_lit.sweep.spec.version_names`
hashes whatever is still not unique.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any

from roformer_lit.errors import ConfigError
from roformer_lit.run_files import has_glob

#: The sweep key naming the pretrained checkpoint(s) a fine-tuning sweep starts from.
PRETRAINED_KEY = "model.pretrained"

#: What a glob of ``model.pretrained`` must match: the files ``fit`` writes.
CHECKPOINT_SUFFIX = ".ckpt"


def is_glob(value: Any) -> bool:
    return isinstance(value, str) and has_glob(value)


def expand_pretrained(
    grid: Mapping[str, list[Any]], where: str
) -> tuple[dict[str, list[Any]], dict[str, tuple[str, ...]]]:
    """``grid`` with the globs among its ``model.pretrained`` values expanded (sorted), every
    value checked to be a checkpoint file (:func:`check_pretrained`) before anything runs;
    and where each expanded path came from (path -> the grid values, globs or the path
    itself, that gave it), so an ``exclude`` naming a glob matches every file it matched."""
    out = {k: list(v) for k, v in grid.items()}
    origins: dict[str, tuple[str, ...]] = {}
    if PRETRAINED_KEY not in grid:
        return out, origins
    values: list[Any] = []
    for value in grid[PRETRAINED_KEY]:
        if not is_glob(value):
            values.append(check_pretrained(value, f"{where}: grid key {PRETRAINED_KEY!r}"))
            if isinstance(value, str):
                origins[value] = (*origins.get(value, ()), value)
            continue
        matches = sorted(glob.glob(value, recursive=True))
        if not matches:
            raise ConfigError(
                f"{where}: grid key {PRETRAINED_KEY!r}: no checkpoint matches {value!r} "
                "(relative paths are taken from the current directory)"
            )
        for match in matches:
            if not (os.path.isfile(match) and match.endswith(CHECKPOINT_SUFFIX)):
                what = "a directory" if os.path.isdir(match) else "not a checkpoint file"
                raise ConfigError(
                    f"{where}: grid key {PRETRAINED_KEY!r}: {value!r} matches {match}, which is "
                    f"{what} (*{CHECKPOINT_SUFFIX}); narrow the glob to checkpoints, e.g. "
                    "runs/<sweep>/*/checkpoints/last.ckpt"
                )
        values.extend(matches)
        for match in matches:
            origins[match] = (*origins.get(match, ()), value)
    out[PRETRAINED_KEY] = list(dict.fromkeys(values))  # a file matched twice: once
    return out, origins


def check_pretrained(value: Any, where: str) -> Any:
    """``value`` if it is not a path (the fine-tune's own parser judges it) or names an
    existing file; else one ConfigError line naming it. A glob outside the grid is refused:
    it would reach every run as a literal path."""
    if is_glob(value):
        raise ConfigError(
            f"{where}: {value!r} is a glob; only grid values of {PRETRAINED_KEY!r} are expanded "
            "(move it into the grid)"
        )
    if isinstance(value, str) and not os.path.isfile(value):
        what = "is a directory, not a checkpoint" if os.path.isdir(value) else "not found"
        raise ConfigError(
            f"{where}: checkpoint {value!r} {what} (relative paths are taken from the "
            "current directory)"
        )
    return value


def pretrained_labels(values: Sequence[Any]) -> dict[str, str]:
    """The run-name label of each checkpoint path in ``values`` (see the module docstring)."""
    paths = [v for v in values if isinstance(v, str)]
    levels = (_run_name, _run_and_stem, _sweep_run_and_stem)
    for level in levels:
        labels = {p: level(PurePath(p)) for p in paths}
        if len(set(labels.values())) == len(labels):
            return labels
    return labels


def _run_name(path: PurePath) -> str:
    if path.parent.name == "checkpoints" and path.parent.parent.name:
        return path.parent.parent.name
    return path.name.removesuffix(".ckpt") or path.name


def _run_and_stem(path: PurePath) -> str:
    run = _run_name(path)
    stem = path.name.removesuffix(".ckpt")
    return run if run == stem else f"{run}-{stem}"


def _sweep_run_and_stem(path: PurePath) -> str:
    above = path.parent.parent.parent if path.parent.name == "checkpoints" else path.parent
    return f"{above.name}.{_run_and_stem(path)}" if above.name else _run_and_stem(path)
