"""The author's test kits: check a position scheme, an attention kernel, or a position task
the way the suite checks the built-ins.

One call in the author's test::

    from roformer_lit.testing import check_kernel, check_scheme, check_task

    def test_my_scheme():
        check_scheme(MyScheme)                    # its default options
        check_scheme(MyScheme, inner="rope")      # keyword arguments are its options

    def test_my_kernel():
        check_kernel(MyKernel)                    # its default options
        check_kernel(MyKernel, block=4)           # keyword arguments are its options

    def test_my_task():
        check_task(MY_TASK)                       # a ProbeTask, or "my_pkg.tasks:MY_TASK"
        check_task(MY_TASK, symbols=8, max_length=16)  # the data.probe_* settings it builds with

``check_scheme`` runs every check of :data:`CHECKS` (:mod:`roformer_lit.testing.checks`
states each one) on every registered attention kernel that can run the class;
a scheme with ``test_kwargs`` is checked with them and again at its default options (what a
run builds), a failure there naming them. ``check_kernel`` runs every check of
:data:`KERNEL_CHECKS`
(:mod:`roformer_lit.testing.kernel_checks`) that the kernel's capabilities call for. Both
check the options first as a run would (one ``ConfigError`` line for a wrong type or
range) and raise ``AssertionError`` naming the check, the class (and the kernel) at the
first failure. ``check_task`` runs every check of :data:`TASK_CHECKS`
(:mod:`roformer_lit.testing.task_checks`: its fields, alphabet, every length from
``min_length`` to ``max_length`` and past it to ``extrapolate_to``, determinism, that two
seeds differ, its baselines), each batch through the harness's own checks
(:mod:`roformer_lit.data.probes.built`), so passing it is passing what ``fit`` checks; its
options are checked first too, and a failure is ``<check> check failed for task <name>``.
The class need not be registered: it is built under a temporary name. The
suite's own tests of the built-in schemes and kernels call the same check functions,
parametrised over ``POSITION_SCHEMES``, ``ATTENTION_KERNELS`` and ``PROBE_TASKS``, so the kits are what the
suite checks.

Over every registered scheme or kernel at once, without a test file: enable the pytest
plugin, ``python -m pytest -p roformer_lit.testing.pytest_plugin --scheme-kit`` (or
``--kernel-kit``, or ``--task-kit``; one test per class, kernel and check; see
:mod:`roformer_lit.testing.pytest_plugin`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from roformer_lit.attention.base import AttentionKernel
from roformer_lit.data.probes.tasks import ProbeTask
from roformer_lit.positions.base import PositionScheme
from roformer_lit.testing.checks import CHECKS, finite_logits
from roformer_lit.testing.kernel_checks import KERNEL_CHECKS
from roformer_lit.testing.kit import Check, check_named, kernel_named, reported, wanted_checks
from roformer_lit.testing.models import (
    at_defaults,
    checked_options,
    compatible_kernels,
    component_label,
    differs_at_defaults,
)
from roformer_lit.testing.task_checks import TASK_CHECKS
from roformer_lit.testing.task_options import task_of, task_options

__all__ = [
    "CHECKS",
    "KERNEL_CHECKS",
    "TASK_CHECKS",
    "Check",
    "check_kernel",
    "check_scheme",
    "check_task",
    "kernel_checks",
    "run_check",
    "run_kernel_check",
    "run_task_check",
    "scheme_checks",
    "task_checks",
]


def run_check(
    name: str, scheme: type[PositionScheme], attention: str = "softmax", **options: Any
) -> None:
    """Run check ``name`` on ``scheme`` (built with ``options``) over kernel ``attention``;
    any failure, an exception included, is an ``AssertionError`` naming both. A check or
    kernel name that does not exist is a ``ValueError`` listing the valid ones."""
    check = check_named(CHECKS, name)
    kernel_named(attention)
    label = component_label(scheme)
    context = f"attention {attention!r}, options {options}"
    with finite_logits():  # NaN fails as NaN, not as the first comparison it meets
        reported(name, "scheme", label, context, lambda: check.run(scheme, attention, options))
        if not differs_at_defaults(scheme, options):
            return
        context = (
            f"attention {attention!r}, at its default options: options {options} without its "
            f"test_kwargs {dict(scheme.test_kwargs)}"
        )
        with at_defaults():  # what a run builds: a scheme broken there alone fails here
            reported(name, "scheme", label, context, lambda: check.run(scheme, attention, options))


def scheme_checks(
    scheme: type[PositionScheme], attention: str | None = None
) -> list[tuple[str, str]]:
    """The (check, kernel) pairs that apply to ``scheme``: over ``attention`` or every
    registered kernel that can run it."""
    kernels = compatible_kernels(scheme) if attention is None else [kernel_named(attention)]
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
    ``options``, over ``attention`` or every registered kernel that can run it. Options a
    run would refuse are refused first, in one ConfigError line."""
    if not (isinstance(scheme, type) and issubclass(scheme, PositionScheme)):
        raise TypeError(f"check_scheme takes a PositionScheme subclass, got {scheme!r}")
    wanted = wanted_checks(CHECKS, checks)
    checked_options(scheme, options)
    for name, kernel in scheme_checks(scheme, attention):
        if name in wanted:
            run_check(name, scheme, kernel, **options)


def run_kernel_check(name: str, kernel: type[AttentionKernel], **options: Any) -> None:
    """Run kernel check ``name`` on ``kernel`` built with ``options``; any failure, an
    exception included, is an ``AssertionError`` naming both. A check name that does not
    exist is a ``ValueError`` listing the valid ones."""
    check = check_named(KERNEL_CHECKS, name)
    reported(
        name,
        "kernel",
        component_label(kernel),
        f"options {options}",
        lambda: check.run(kernel, options),
    )


def kernel_checks(kernel: type[AttentionKernel], **options: Any) -> list[str]:
    """The checks that apply to ``kernel`` with ``options`` (its claimed capabilities)."""
    return [name for name, check in KERNEL_CHECKS.items() if check.applies(kernel, options)]


def check_kernel(
    kernel: type[AttentionKernel], *, checks: Iterable[str] | None = None, **options: Any
) -> None:
    """Run every applicable check (or those named in ``checks``) on ``kernel`` built with
    ``options``. Options a run would refuse are refused first, in one ConfigError line."""
    if not (isinstance(kernel, type) and issubclass(kernel, AttentionKernel)):
        raise TypeError(f"check_kernel takes an AttentionKernel subclass, got {kernel!r}")
    wanted = wanted_checks(KERNEL_CHECKS, checks)
    checked_options(kernel, options)
    for name in kernel_checks(kernel, **options):
        if name in wanted:
            run_kernel_check(name, kernel, **options)


def run_task_check(name: str, task: ProbeTask | str, **options: Any) -> None:
    """Run task check ``name`` on ``task`` (a ProbeTask, a name or an import path) with
    ``options``; any failure, an exception included, is an ``AssertionError`` naming both.
    A check name that does not exist is a ``ValueError`` listing the valid ones."""
    check = check_named(TASK_CHECKS, name)
    probe = task_of(task)
    resolved = task_options(options)
    reported(
        name, "task", repr(probe.name), f"options {options}", lambda: check.run(probe, resolved)
    )


def task_checks(task: ProbeTask | str, **options: Any) -> list[str]:
    """The checks that apply to ``task`` with ``options``."""
    probe, resolved = task_of(task), task_options(options)
    return [name for name, check in TASK_CHECKS.items() if check.applies(probe, resolved)]


def check_task(
    task: ProbeTask | str, *, checks: Iterable[str] | None = None, **options: Any
) -> None:
    """Run every applicable check (or those named in ``checks``) on ``task``, a ProbeTask,
    a registered name or an import path, built with ``options`` (``symbols``,
    ``min_length``, ``max_length``, ``extrapolate_to``, ``hint``, ``seed``). Options the
    kit does not take, or out of range, are refused first, in one ConfigError line."""
    probe = task_of(task)
    wanted = wanted_checks(TASK_CHECKS, checks)
    task_options(options)
    for name in task_checks(probe, **options):
        if name in wanted:
            run_task_check(name, probe, **options)
