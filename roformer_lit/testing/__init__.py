"""A scheme author's test kit: check a position scheme the way the suite checks the built-ins.

One call in the author's test::

    from roformer_lit.testing import check_scheme

    def test_my_scheme():
        check_scheme(MyScheme)                    # its default options
        check_scheme(MyScheme, inner="rope")      # keyword arguments are its options

runs every check of :data:`CHECKS` (:mod:`roformer_lit.testing.checks` states each one) on
every registered attention kernel that can run the class, and raises ``AssertionError``
naming the check, the scheme and the kernel at the first failure. The class need not be
registered: it is built under a temporary name. The suite's own tests of the built-in
schemes call the same check functions, parametrised over ``POSITION_SCHEMES``, so the kit
is what the suite checks.

Over every registered scheme at once, without a test file: enable the pytest plugin,
``python -m pytest -p roformer_lit.testing.pytest_plugin --scheme-kit`` (one test per
scheme, kernel and check; see :mod:`roformer_lit.testing.pytest_plugin`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from roformer_lit.attention import ATTENTION_KERNELS
from roformer_lit.errors import ConfigError
from roformer_lit.positions.base import PositionScheme
from roformer_lit.registry import lookup
from roformer_lit.testing.checks import CHECKS, Check
from roformer_lit.testing.models import compatible_kernels, scheme_label

__all__ = ["CHECKS", "Check", "check_scheme", "run_check", "scheme_checks"]


def run_check(
    name: str, scheme: type[PositionScheme], attention: str = "softmax", **options: Any
) -> None:
    """Run check ``name`` on ``scheme`` (built with ``options``) over kernel ``attention``;
    any failure, an exception included, is an ``AssertionError`` naming both. A check or
    kernel name that does not exist is a ``ValueError`` listing the valid ones."""
    check = _check_named(name)
    _kernel_named(attention)
    try:
        check.run(scheme, attention, options)
    except Exception as error:  # AssertionError too: re-raised with the check's name
        raise AssertionError(
            f"{name} check failed for scheme {scheme_label(scheme)} (attention {attention!r}, "
            f"options {options}): {type(error).__name__}: {error}"
        ) from error


def _check_named(name: object) -> Check:
    """The check called ``name``, or a ValueError listing the valid ones."""
    if not isinstance(name, str) or name not in CHECKS:
        raise ValueError(f"unknown check {name!r}; valid: {', '.join(CHECKS)}")
    return CHECKS[name]


def _kernel_named(name: str) -> str:
    """``name`` if it names an attention kernel that loads, or a ValueError saying why."""
    try:
        lookup(ATTENTION_KERNELS, name, "attention")
    except ConfigError as error:
        raise ValueError(str(error)) from None
    return name


def scheme_checks(
    scheme: type[PositionScheme], attention: str | None = None
) -> list[tuple[str, str]]:
    """The (check, kernel) pairs that apply to ``scheme``: over ``attention`` or every
    registered kernel that can run it."""
    kernels = compatible_kernels(scheme) if attention is None else [_kernel_named(attention)]
    return [
        (name, kernel)
        for kernel in kernels
        for name, check in CHECKS.items()
        if check.applies(scheme, kernel)
    ]


def check_scheme(
    scheme: type[PositionScheme],
    *,
    attention: str | None = None,
    checks: Iterable[str] | None = None,
    **options: Any,
) -> None:
    """Run every applicable check (or those named in ``checks``) on ``scheme`` built with
    ``options``, over ``attention`` or every registered kernel that can run it."""
    if not (isinstance(scheme, type) and issubclass(scheme, PositionScheme)):
        raise TypeError(f"check_scheme takes a PositionScheme subclass, got {scheme!r}")
    if isinstance(checks, str):  # checks="padding" is one check, not seven letters
        checks = [checks]
    wanted = set(CHECKS) if checks is None else set(checks)
    if not wanted:
        raise ValueError(f"checks is empty: nothing would be checked; valid: {', '.join(CHECKS)}")
    for name in sorted(wanted):
        _check_named(name)
    for name, kernel in scheme_checks(scheme, attention):
        if name in wanted:
            run_check(name, scheme, kernel, **options)
