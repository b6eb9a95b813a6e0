"""Whether a sweep's keys name config settings in full.

``fit`` parses its options with argparse, which takes an unambiguous prefix of an option for
the option (``--seed_everythin 1`` sets ``seed_everything``). A sweep file is not typed at a
prompt: its keys name its runs (``seed_everythin1``) and are what a reader of the file
trusts, so a key that only abbreviates a setting is refused in one line naming the setting
it abbreviates."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from jsonargparse import Namespace

from roformer_lit.errors import ConfigError

_MISSING = object()


def _names(section: Namespace) -> set[str]:
    """The setting names directly under a section of a parsed config."""
    return {str(k).split(".", 1)[0] for k in section.keys()}


def _setting(section: Namespace, name: str) -> Any:
    """Setting ``name`` of ``section`` (a data module's under its ``init_args``), or
    :data:`_MISSING`."""
    if name in _names(section):
        return section[name]
    init = section["init_args"] if "init_args" in _names(section) else None
    if isinstance(init, Namespace) and name in _names(init):
        return init[name]
    return _MISSING


def _options(section: Namespace) -> list[str]:
    init = section["init_args"] if "init_args" in _names(section) else None
    names = _names(section) | (_names(init) if isinstance(init, Namespace) else set())
    return sorted(names - {"init_args", "class_path"})


def abbreviated(config: Namespace, key: str) -> list[str] | None:
    """None where the parsed ``config`` holds ``key`` as written, each dotted part a setting
    of its section (below a mapping-valued option such as ``position_kwargs``, the keys
    are the option's own to check); else the full keys of the settings whose names the
    first part it lacks begins (``seed_everythin`` -> ``["seed_everything"]``)."""
    node: Any = config
    parts = key.split(".")
    for index, part in enumerate(parts):
        if not isinstance(node, Namespace):
            return None
        found = _setting(node, part)
        if found is _MISSING:
            above = ".".join([*parts[:index], ""])
            return [above + name for name in _options(node) if name.startswith(part)]
        node = found
    return None


def check_written_keys(config: Namespace, keys: Iterable[str], where: str) -> None:
    """Refuse (one ConfigError line) the first of ``keys`` that ``config`` (a parsed run of
    the sweep) does not hold as written, naming the settings it abbreviates."""
    for key in keys:
        matches = abbreviated(config, key)
        if matches is not None:
            raise ConfigError(
                f"{where}: key {key!r} abbreviates {' or '.join(matches) or 'no setting'}: "
                "write the setting's name in full"
            )
