"""What the task kit is given: the task (an object, a registered name or an import path)
and its options (the run's ``data.probe_*`` settings it builds with), each checked first
in one ``ConfigError`` line, as a run would refuse them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roformer_lit.data.probes.tasks import ProbeTask, probe_task
from roformer_lit.errors import ConfigError
from roformer_lit.testing.task_checks import DEFAULTS


def task_of(task: ProbeTask | str) -> ProbeTask:
    """``task`` itself, or the task a name or import path (``my_pkg.tasks:SHIFT``) resolves
    to, as ``--data.probe`` does; anything else is a TypeError."""
    if isinstance(task, ProbeTask):
        return task
    if isinstance(task, str):
        return probe_task(task)
    raise TypeError(f"check_task takes a ProbeTask, a task name or an import path, got {task!r}")


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def task_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` over :data:`~roformer_lit.testing.task_checks.DEFAULTS`; an unknown
    name, a length or symbol count that is not a positive int, ``min_length`` over
    ``max_length``, or a hint outside ``[0, 1)`` is one ConfigError line."""
    unknown = sorted(set(options) - set(DEFAULTS))
    if unknown:
        raise ConfigError(
            f"check_task: unknown option(s) {', '.join(unknown)}; valid: {', '.join(DEFAULTS)}"
        )
    resolved = {**DEFAULTS, **options}
    for name in ("symbols", "min_length", "max_length"):
        if not _positive_int(resolved[name]):
            raise ConfigError(f"check_task: {name}={resolved[name]!r} must be an int >= 1")
    if resolved["symbols"] < 2:
        raise ConfigError(f"check_task: symbols={resolved['symbols']} must be >= 2")
    if resolved["min_length"] > resolved["max_length"]:
        raise ConfigError(
            f"check_task: min_length={resolved['min_length']} must be <= "
            f"max_length={resolved['max_length']}"
        )
    last = resolved["extrapolate_to"]
    if last is not None and not (_positive_int(last) and last >= resolved["max_length"]):
        raise ConfigError(
            f"check_task: extrapolate_to={last!r} must be None or an int >= max_length"
        )
    hint = resolved["hint"]
    if isinstance(hint, bool) or not isinstance(hint, (int, float)) or not 0 <= hint < 1:
        raise ConfigError(f"check_task: hint={hint!r} must be a number in [0, 1)")
    if not isinstance(resolved["seed"], int) or isinstance(resolved["seed"], bool):
        raise ConfigError(f"check_task: seed={resolved['seed']!r} must be an int")
    return resolved
