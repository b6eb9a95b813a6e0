"""Build a registered class by name, refusing unknown names and unknown options.

A registry is a plain ``dict[str, type]``. Options a registered class accepts are the
keyword-only parameters of its ``__init__``; anything else is a user error that names
the valid choices.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from roformer_lit.errors import ConfigError


def option_names(cls: type) -> list[str]:
    """The keyword-only ``__init__`` parameters of ``cls``: its user-facing options."""
    params = inspect.signature(cls.__init__).parameters.values()
    return [p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]


def lookup(registry: Mapping[str, type], name: str, what: str) -> type:
    """``registry[name]``, or a ConfigError listing the valid names."""
    if name not in registry:
        valid = ", ".join(sorted(registry))
        raise ConfigError(f"unknown {what} {name!r}; valid choices: {valid}")
    return registry[name]


def check_options(cls: type, options: Mapping[str, Any] | None, what: str, name: str) -> dict:
    """Return ``options`` as a dict, or a ConfigError naming unknown keys and the valid ones."""
    options = dict(options or {})
    valid = option_names(cls)
    unknown = sorted(set(options) - set(valid))
    if unknown:
        listed = ", ".join(valid) if valid else "none"
        raise ConfigError(
            f"unknown {what}_kwargs key(s) {', '.join(map(repr, unknown))} for {what} {name!r}; "
            f"valid keys: {listed}"
        )
    return options
