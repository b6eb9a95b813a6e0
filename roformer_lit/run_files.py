"""Reading the files a run left on disk without trusting them (``compare``, ``extrapolate``).

Run files can be truncated, hand-edited, half-copied or unreadable. Each reader here either
returns something usable or raises :class:`RunFileError` whose message is one short
sentence saying why (no traceback); the commands turn it into a ``warning:`` line (skip the
file, keep going) or an ``error:`` line (nothing usable left). Also: command-line paths
that may be quoted globs (:func:`expand_arguments`), and the one check every command that
writes a file the user names goes through (:func:`output_target`): no output ever
overwrites a checkpoint, a file it reads, or anything inside a run directory; and the one
line that says which existing files an output replaces (:func:`note_replaced`).
"""

from __future__ import annotations

import glob
import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from roformer_lit.errors import ConfigError
from roformer_lit.safe_input import PlainNumbersLoader, YAMLBombError, check_yaml_size
from roformer_lit.tool_arguments import output_path_problem

#: A run's YAML files are a few KB; anything larger is not one.
MAX_YAML_BYTES = 16 * 1024 * 1024


class RunFileError(Exception):
    """A run file that cannot be used; ``str(exc)`` says why in one short sentence."""


def warn(message: str) -> None:
    """One ``warning: ...`` line on stderr."""
    print(f"warning: {' '.join(message.split())}", file=sys.stderr)


def note_replaced(option: str, targets: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The files among ``targets`` (those an output option writes, each checked by
    :func:`output_target`) that exist already, named in one ``note:`` line on stderr before
    anything is computed: the command replaces them (a user's file is never lost without a
    word; a run's is never reached, :func:`output_target`). Nothing is printed when none
    exists."""
    existing = [Path(t) for t in targets if os.path.lexists(t) and not os.path.isdir(t)]
    if existing:
        names = ", ".join(str(path) for path in existing)
        print(
            f"note: {option} {names} exist{'s' * (len(existing) == 1)} and will be replaced",
            file=sys.stderr,
        )
    return existing


def has_glob(text: str) -> bool:
    """Whether ``text`` has glob characters (``*``, ``?``, ``[``)."""
    return any(c in text for c in "*?[")


def expand_arguments(arguments: Sequence[str | Path]) -> tuple[list[Path], list[str]]:
    """Command-line paths, each used as is if it exists, else expanded as a glob if it has
    glob characters (a quoted ``'runs/*/checkpoints/last.ckpt'``, or one the shell left
    unexpanded because nothing matched). Returns (paths in order, without repeats; the
    arguments that name nothing: missing paths and globs matching nothing)."""
    paths: list[Path] = []
    unmatched: list[str] = []
    for argument in arguments:
        text = str(argument)
        if os.path.lexists(text) or not has_glob(text):
            found = [Path(text)] if os.path.lexists(text) else []
        else:
            found = [Path(p) for p in sorted(glob.glob(text, recursive=True))]
        if not found:
            unmatched.append(text)
        for path in found:
            if path not in paths:
                paths.append(path)
    return paths, unmatched


class _TolerantLoader(PlainNumbersLoader):
    """A SafeLoader that reads numbers as the CLI does and unknown tags (``!!python/tuple``
    ...) as plain values."""


def _plain(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)


_TolerantLoader.add_multi_constructor("", _plain)


def read_text(path: Path, max_bytes: int = MAX_YAML_BYTES) -> str:
    """The UTF-8 text of a regular file of at most ``max_bytes`` (never opens a FIFO)."""
    try:
        info = path.stat()
    except FileNotFoundError as exc:
        raise RunFileError("missing") from exc
    except OSError as exc:
        raise RunFileError(f"cannot be read ({exc.strerror or exc})") from exc
    if not stat.S_ISREG(info.st_mode):
        raise RunFileError("not a regular file")
    if info.st_size > max_bytes:
        raise RunFileError(f"{info.st_size} bytes, too large for a run file")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise RunFileError(f"not UTF-8 text (byte {exc.start})") from exc
    except OSError as exc:
        raise RunFileError(f"cannot be read ({exc.strerror or exc})") from exc


def read_yaml_mapping(path: Path) -> dict[str, Any]:
    """The mapping in the YAML file at ``path`` (``{}`` for an empty file).

    Unknown tags are read as plain values. Raises RunFileError if the file is missing, not
    a regular file, unreadable, not UTF-8, not YAML, not a mapping, or an alias bomb
    (:func:`roformer_lit.safe_input.check_yaml_size`).
    """
    text = read_text(path)
    try:
        check_yaml_size(text)
        data = yaml.load(text, Loader=_TolerantLoader)
    except YAMLBombError as exc:
        raise RunFileError(f"refused: {exc}") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise RunFileError(f"not valid YAML{where}") from exc
    except RecursionError as exc:
        raise RunFileError("nested too deeply") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise RunFileError(f"not a YAML mapping (a {type(data).__name__})")
    return data


#: Files that make a directory a run (besides TensorBoard event files).
RUN_FILES = ("config.yaml", "hparams.yaml")
#: How every TensorBoard event file's name starts.
EVENT_FILE_PREFIX = "events.out.tfevents."
#: The TensorBoard tag under which a ``fit`` records, when training starts (again, when
#: resumed), the optimiser steps it takes to its end, by steps or by epochs
#: (:func:`~roformer_lit.training.steps.total_steps`): a run that validated there finished,
#: one that did not stopped before its end (``compare``). Runs from before the record have
#: none.
TOTAL_STEPS_TAG = "run/total_steps"


def holds_run_files(names: Sequence[str]) -> bool:
    """Whether a directory listing is a run's: an event file, ``config.yaml`` or
    ``hparams.yaml`` (what ``compare`` reads runs from)."""
    return any(n.startswith(EVENT_FILE_PREFIX) or n in RUN_FILES for n in names)


def is_run_directory(folder: Path) -> bool:
    """A folder a run wrote (:func:`holds_run_files` of its listing)."""
    try:
        return holds_run_files(os.listdir(folder))
    except OSError:
        return False


def output_target(
    where: str | os.PathLike[str],
    option: str,
    reads: Sequence[str | os.PathLike[str]] = (),
    directory: bool = False,
) -> Path:
    """The path an output option (``--csv FILE``, ``--out DIR`` with ``directory``) writes
    to, or a one-line :class:`ConfigError` before anything is written where no write could
    reach it (:func:`~roformer_lit.tool_arguments.output_path_problem`: a directory where
    a file goes, a file where a directory goes or on the way to one, a directory that is
    not writable) or where writing there would change what a run left: a file the command
    reads (``reads``; hard links count), a checkpoint (``*.ckpt``), or anything inside a
    run directory (:func:`is_run_directory`: the target itself or a folder above it)."""
    target = Path(where)
    problem = output_path_problem(str(target), directory)
    if problem is not None:
        raise ConfigError(f"{option} {problem}")
    resolved = target.resolve()
    for read in reads:
        source = Path(read)
        same = source.resolve() == resolved
        if not same and target.exists() and source.exists():
            try:
                same = os.path.samefile(source, target)
            except OSError:
                same = False
        if same:
            raise ConfigError(f"{option} {target} is one of the files this command reads")
    if resolved.suffix == ".ckpt":
        raise ConfigError(f"{option} {target} names a checkpoint; write the output elsewhere")
    for folder in (resolved, *resolved.parents):
        if folder.is_dir() and is_run_directory(folder):
            raise ConfigError(
                f"{option} {target} lies inside the run directory {folder}, whose files are "
                f"the run's own; write the output elsewhere (beside the runs, in {folder.parent})"
            )
    return target
