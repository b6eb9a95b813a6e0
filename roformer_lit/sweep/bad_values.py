"""Which grid values a sweep's failed runs blame: every bad value, not only the first run's.

A run is checked as a whole, and its check stops at the first rule it breaks, so with two
bad grid values (``model.position: [nope, foo]``, ``model.attention: [softmax, bar]``) the
first failed run named one of them and the user found the next only after fixing it.
:func:`grid_problems` reads the checks of every run of the sweep and names each value no
run could take:

* a value is *good* when a run that passed has it; the others are *suspects*;
* a failed run whose only suspect is a value blames it, in that run's own words
  (``run foo-softmax (model.position=foo, ...): unknown position 'foo'; ...``);
* a suspect in no such run (every run with it has another suspect) is checked on the
  base config's settings for the other suspects, and blamed when that fails too.

Where the base config's settings with the good values fail as well (an override every run
breaks), or no single value is to blame (a combination no run may have), nothing is
blamed: the caller names the first failed run, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Protocol

from roformer_lit.errors import ConfigError

#: The values of a run, in grid order: ``((key, value), ...)``.
Values = tuple[tuple[str, Any], ...]


class RunLike(Protocol):
    """A grid combination (:class:`roformer_lit.sweep.spec.Run`)."""

    version: str
    values: Values

    def describe(self) -> str: ...


def grid_problems(
    runs: Sequence[RunLike],
    failures: Mapping[str, ConfigError],
    check: Callable[[RunLike, Values], ConfigError | None],
    same: Callable[[Any, Any], bool],
    render: Callable[[Any], str],
    kept: Collection[str] = (),
) -> list[str]:
    """One line part per grid value to blame, in grid order; empty where no value is.

    ``failures``: version -> the error of each run that failed its check; ``check(run,
    values)``: the check of ``run`` with only ``values`` set by the grid (None when it
    passes); ``same``: whether two grid values are the same value; ``render``: a value as
    run names show it; ``kept``: keys the base config has no value for (a fine-tuning
    sweep's checkpoint), which a check on the base's settings keeps from the run."""
    passed = [run for run in runs if run.version not in failures]
    failed = [run for run in runs if run.version in failures]
    if not failed:
        return []

    def good(key: str, value: Any) -> bool:
        return any(k == key and same(v, value) for run in passed for k, v in run.values)

    def on_base(run: RunLike, suspect: str | None) -> Values:
        """``run``'s values less its suspects other than ``suspect`` (the base's then)."""
        return tuple((k, v) for k, v in run.values if k in (suspect, *kept) or good(k, v))

    def has(run: RunLike, key: str, value: Any) -> bool:
        return same(dict(run.values)[key], value)

    first = failed[0]
    if check(first, on_base(first, None)) is not None:
        return []  # the base config's settings fail with the good values: no value to blame
    problems: list[str] = []
    for key, _ in runs[0].values:  # in grid order
        seen: list[Any] = []
        for run in failed:
            value = dict(run.values)[key]
            if good(key, value) or any(same(value, s) for s in seen):
                continue
            seen.append(value)
            alone = [
                r
                for r in failed
                if has(r, key, value) and all(good(k, v) for k, v in r.values if k != key)
            ]
            if alone:  # a failed run whose only suspect is the value: its own words
                run = alone[0]
                problems.append(f"run {run.version} ({run.describe()}): {failures[run.version]}")
                continue
            error = check(run, on_base(run, key))
            if error is not None:
                others = [k for k, v in run.values if k not in (key, *kept) and not good(k, v)]
                problems.append(
                    f"{key}={render(value)} (on the base config's settings for "
                    f"{', '.join(others)}): {error}"
                )
    return problems
