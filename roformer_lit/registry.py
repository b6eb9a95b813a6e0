"""Build a registered class by name, refusing unknown names, options and option values.

A registry is a plain ``dict[str, type]``. Options a registered class accepts are the
keyword-only parameters of its ``__init__``; anything else is a user error that names
the valid choices. Each option's *type* is checked against its annotation with
jsonargparse (the CLI's own type system), so a newly registered class gets typed options
from its signature alone; its *range* is checked by the class itself, in ``__init__``
(with the rules of :mod:`roformer_lit.validation`).
"""

from __future__ import annotations

import functools
import inspect
import math
import types
import typing
from collections.abc import Mapping
from typing import Any

from roformer_lit.errors import ConfigError


def option_names(cls: type) -> list[str]:
    """The keyword-only ``__init__`` parameters of ``cls``: its user-facing options."""
    params = inspect.signature(cls.__init__).parameters.values()
    return [p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]


def option_hints(cls: type) -> dict[str, Any]:
    """Each option's resolved type annotation (``typing.Any`` where there is none)."""
    try:
        hints = typing.get_type_hints(cls.__init__)
    except Exception:  # an annotation that does not resolve: those options stay unchecked
        hints = {}
    return {name: hints.get(name, Any) for name in option_names(cls)}


def describe_type(hint: Any) -> str:
    """A type annotation in words: ``float``, ``int or null``, ``one of 'a', 'b'``."""
    if hint is type(None):
        return "null"
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        return " or ".join(describe_type(arg) for arg in typing.get_args(hint))
    if origin is typing.Literal:
        return "one of " + ", ".join(map(repr, typing.get_args(hint)))
    if isinstance(hint, type):
        return hint.__name__
    return str(hint).replace("typing.", "")


@functools.cache
def _option_parser(cls: type) -> Any:
    """A jsonargparse parser with one typed argument per option of ``cls``."""
    from jsonargparse import ArgumentParser

    parser = ArgumentParser(exit_on_error=False)
    for name, hint in option_hints(cls).items():
        if hint is not Any:
            parser.add_argument(f"--{name}", type=hint)
    return parser


def _has_nonfinite_float(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, Mapping):
        return any(_has_nonfinite_float(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_nonfinite_float(v) for v in value)
    return False


def check_option_value(cls: type, key: str, value: Any, what: str, name: str) -> Any:
    """``value`` converted to option ``key``'s annotated type (as the CLI would: ``"1e4"``
    for a float is ``10000.0``), or a ConfigError naming the option, the value, the
    class's registered name and the expected type. NaN and inf are never accepted."""
    hint = option_hints(cls)[key]
    label = f"model.{what}_kwargs.{key}={value!r} for {what} {name!r}"
    if hint is not Any:
        from jsonargparse import ArgumentError

        try:
            value = _option_parser(cls).parse_object({key: value})[key]
        except (ArgumentError, TypeError, ValueError):
            raise ConfigError(
                f"{label} has the wrong type: expected {describe_type(hint)}"
            ) from None
    if _has_nonfinite_float(value):
        raise ConfigError(f"{label} must be finite (not NaN or inf)")
    return value


def lookup(registry: Mapping[str, type], name: str, what: str) -> type:
    """``registry[name]``, or a ConfigError listing the valid names."""
    if not isinstance(name, str) or name not in registry:
        valid = ", ".join(sorted(registry))
        raise ConfigError(f"unknown {what} {name!r}; valid choices: {valid}")
    return registry[name]


def check_options(cls: type, options: Mapping[str, Any] | None, what: str, name: str) -> dict:
    """``options`` as a dict of values of the annotated types, or a ConfigError naming
    unknown keys and the valid ones, or a value of the wrong type (see
    :func:`check_option_value`)."""
    if options is not None and not isinstance(options, Mapping):
        raise ConfigError(
            f"model.{what}_kwargs must be a mapping of option names to values, got {options!r}"
        )
    options = dict(options or {})
    valid = option_names(cls)
    unknown = sorted(map(repr, set(options) - set(valid)))
    if unknown:
        listed = ", ".join(valid) if valid else "none"
        raise ConfigError(
            f"unknown {what}_kwargs key(s) {', '.join(unknown)} for {what} {name!r}; "
            f"valid keys: {listed}"
        )
    return {key: check_option_value(cls, key, value, what, name) for key, value in options.items()}
