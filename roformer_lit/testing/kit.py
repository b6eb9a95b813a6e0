"""What the scheme kit and the kernel kit share: a check, how its failure is reported, how
a name the kit does not know is refused, and the dtype switch of float64 comparisons.

Both kits run named checks (:class:`Check`) and report the first failure the same way
(:func:`reported`): one ``AssertionError`` whose message begins ``<check> check failed for
<scheme or kernel> <label> (...)`` and ends with the exception the check raised, so an
author's test says which property broke, on which class, with which options.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from roformer_lit.attention import ATTENTION_KERNELS
from roformer_lit.errors import ConfigError
from roformer_lit.registry import lookup

Options = Mapping[str, Any]


@dataclass(frozen=True)
class Check:
    """One check: its name, the function, and when it applies. A scheme check runs as
    ``run(scheme, attention, options)`` and applies where ``applies(scheme, attention)``; a
    kernel check runs as ``run(kernel, options)`` and applies where
    ``applies(kernel, options)``."""

    name: str
    run: Callable[..., None]
    applies: Callable[..., bool] = lambda *args: True


def differs(a: Tensor, b: Tensor, at_least: float) -> bool:
    """Whether ``a`` and ``b`` differ somewhere by more than ``at_least``: what a check
    asserts where a change must show (a shifted row, a bias, a window's edge)."""
    return bool((a - b).abs().max() > at_least)


def nonfinite(
    values: Tensor, what: str, inputs: str, given: list[str], blame: str
) -> AssertionError:
    """The failure of a call whose ``values`` (the ones that count: logits, or a kernel's
    output at real queries) hold NaN or inf: how many, their dtype, the call's ``inputs``
    (a shape) and the optional arguments ``given``, then ``blame`` (what gives them)."""
    bad = int((~torch.isfinite(values)).sum())
    return AssertionError(
        f"non-finite {what}: {bad} of {values.numel()} are NaN or inf ({values.dtype}) "
        f"for {inputs}" + (f" with {', '.join(given)}" if given else "") + f"; {blame}"
    )


def reported(name: str, what: str, label: str, context: str, call: Callable[[], None]) -> None:
    """``call()``; any failure, an exception included, becomes an ``AssertionError``
    ``<name> check failed for <what> <label> (<context>): <type>: <message>``."""
    try:
        call()
    except Exception as error:  # AssertionError too: re-raised with the check's name
        raise AssertionError(
            f"{name} check failed for {what} {label} ({context}): {type(error).__name__}: {error}"
        ) from error


def check_named(checks: Mapping[str, Check], name: object) -> Check:
    """The check of ``checks`` called ``name``, or a ValueError listing the valid ones."""
    if not isinstance(name, str) or name not in checks:
        raise ValueError(f"unknown check {name!r}; valid: {', '.join(checks)}")
    return checks[name]


def wanted_checks(checks: Mapping[str, Check], names: Iterable[str] | str | None) -> set[str]:
    """The names of ``checks`` to run: all for None, one for a string (``"padding"`` is one
    check, not seven letters); an empty list or an unknown name is a ValueError."""
    if isinstance(names, str):
        names = [names]
    wanted = set(checks) if names is None else set(names)
    if not wanted:
        raise ValueError(f"checks is empty: nothing would be checked; valid: {', '.join(checks)}")
    for name in sorted(wanted):
        check_named(checks, name)
    return wanted


def kernel_named(name: str) -> str:
    """``name`` if it names an attention kernel that loads, or a ValueError saying why."""
    try:
        lookup(ATTENTION_KERNELS, name, "attention")
    except ConfigError as error:
        raise ValueError(str(error)) from None
    return name


@contextmanager
def default_dtype(dtype: torch.dtype) -> Iterator[None]:
    """PyTorch's default dtype set to ``dtype`` inside the block (models built in float64)."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)
