"""A pytest plugin: the scheme kit over every registered position scheme, the kernel kit
over every registered attention kernel, and the task kit over every registered position
task, no test file needed.

Enable it and ask for the tests::

    python -m pytest -p roformer_lit.testing.pytest_plugin --scheme-kit
    python -m pytest -p roformer_lit.testing.pytest_plugin --scheme-kit=cope,rope
    python -m pytest -p roformer_lit.testing.pytest_plugin --kernel-kit
    python -m pytest -p roformer_lit.testing.pytest_plugin --kernel-kit=softmax,my_pkg:Mine
    python -m pytest -p roformer_lit.testing.pytest_plugin --task-kit
    python -m pytest -p roformer_lit.testing.pytest_plugin --task-kit=copy,my_pkg.tasks:SHIFT

(or ``pytest_plugins = ["roformer_lit.testing.pytest_plugin"]`` in a ``conftest.py`` and
``--scheme-kit`` on the command line). It adds one test per registered scheme, attention
kernel and applicable check, named ``scheme-kit[<scheme>-<kernel>-<check>]``: the same
functions as ``check_scheme`` and the suite's own tests/test_scheme_kit.py. "Registered"
is whatever the position registry resolves by name, the built-ins and the schemes of
installed packages' ``roformer_lit.positions`` entry points alike; a listed name may also be
an import path. Only the schemes asked for are loaded; a name asked for that does not load
is a usage error naming it. Over all of them (no names), the schemes that load are checked
and an entry point that fails to load is one failing test, ``scheme-kit[<name>-load]``,
with the registry's line (:meth:`~roformer_lit.registry.Registry.loadable`): the kit exists
to say whether the installed schemes work, so a broken one fails it, where ``bench`` and
the listing, which only run over what is there, skip it with a note. ``--kernel-kit`` does
the same for the attention registry (group ``roformer_lit.kernels``): one test per kernel
and applicable check (with its default options), named ``kernel-kit[<kernel>-<check>]``,
the functions of ``check_kernel`` and the suite's tests/test_kernel_kit.py; a kernel entry
point that fails to load is ``kernel-kit[<name>-load]``, failing. ``--task-kit`` does the
same for the position tasks (group ``roformer_lit.tasks``): one test per task and
applicable check (the kit's default options), named ``task-kit[<task>-<check>]``, the
functions of ``check_task`` and the suite's tests/test_task_kit.py; a task entry point
that fails to load is ``task-kit[<name>-load]``, failing. Without any of the three options
the plugin adds nothing.
"""

from __future__ import annotations

import pytest

from roformer_lit.attention import ATTENTION_KERNELS
from roformer_lit.attention.base import AttentionKernel
from roformer_lit.data.probes.tasks import PROBE_TASKS, ProbeTask
from roformer_lit.errors import ConfigError
from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.positions.base import PositionScheme
from roformer_lit.registry import Registry
from roformer_lit.testing import (
    kernel_checks,
    run_check,
    run_kernel_check,
    run_task_check,
    scheme_checks,
    task_checks,
)

ALL = "all"


def registered_schemes() -> dict[str, type[PositionScheme]]:
    """Every registered scheme that loads (a broken plugin is left out)."""
    return POSITION_SCHEMES.loadable().components


def registered_kernels() -> dict[str, type[AttentionKernel]]:
    """Every registered kernel that loads (a broken plugin is left out)."""
    return ATTENTION_KERNELS.loadable().components


#: Each kit's option and what it checks, in words.
KIT_OPTIONS = {
    "--scheme-kit": "scheme kit's checks on every registered position scheme",
    "--kernel-kit": "kernel kit's checks on every registered attention kernel",
    "--task-kit": "task kit's checks on every registered position task",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    for option, checks in KIT_OPTIONS.items():
        parser.addoption(
            option,
            nargs="?",
            const=ALL,
            default=None,
            metavar="NAMES",
            help=f"run the {checks} (or on the comma-separated NAMES)",
        )


class KitItem(pytest.Item):
    """One check of a kit: a failed check reads as the kit's own line (check, component,
    what failed), not a traceback into the kit; any other exception as pytest shows it."""

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, AssertionError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)


class SchemeCheckItem(KitItem):
    """One check of one scheme over one kernel."""

    def __init__(
        self,
        *,
        scheme: str,
        scheme_class: type[PositionScheme],
        attention: str,
        check: str,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.scheme, self.scheme_class = scheme, scheme_class
        self.attention, self.check = attention, check

    def runtest(self) -> None:
        run_check(self.check, self.scheme_class, self.attention)

    def reportinfo(self):
        return self.path, None, f"scheme-kit[{self.scheme}-{self.attention}-{self.check}]"


class KernelCheckItem(KitItem):
    """One check of one kernel (its default options)."""

    def __init__(
        self, *, kernel: str, kernel_class: type[AttentionKernel], check: str, **kwargs
    ) -> None:
        super().__init__(**kwargs)
        self.kernel, self.kernel_class, self.check = kernel, kernel_class, check

    def runtest(self) -> None:
        run_kernel_check(self.check, self.kernel_class)

    def reportinfo(self):
        return self.path, None, f"kernel-kit[{self.kernel}-{self.check}]"


class TaskCheckItem(KitItem):
    """One check of one position task (the kit's default options)."""

    def __init__(self, *, task: str, task_object: ProbeTask, check: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.task, self.task_object, self.check = task, task_object, check

    def runtest(self) -> None:
        run_task_check(self.check, self.task_object)

    def reportinfo(self):
        return self.path, None, f"task-kit[{self.task}-{self.check}]"


class LoadItem(pytest.Item):
    """A registered scheme, kernel or task that fails to load (a broken entry point), under
    ``--scheme-kit``, ``--kernel-kit`` or ``--task-kit`` over all of them: one failing test with the
    registry's line (``<kit>[<name>-load]``), the others still run."""

    def __init__(self, *, kit: str, name_: str, error: ConfigError, **kwargs) -> None:
        super().__init__(**kwargs)
        self.kit, self.component, self.error = kit, name_, error

    def runtest(self) -> None:
        raise AssertionError(str(self.error))

    def repr_failure(self, excinfo, style=None):
        return str(excinfo.value)

    def reportinfo(self):
        return self.path, None, f"{self.kit}[{self.component}-load]"


def _selected(config: pytest.Config, option: str, registry: Registry, what: str) -> dict:
    """The classes of the names ``option`` asks for, each resolved on its own: with no
    names, every registered one that loads and, for each that does not, its error (a
    failing test, :meth:`~roformer_lit.registry.Registry.loadable`); a name asked for that
    does not load is a usage error, and an unasked one is never loaded. A name may be an
    import path (``my_pkg.schemes:Mine``)."""
    wanted = config.getoption(option)
    if wanted == ALL:
        loaded = registry.loadable()
        return {**loaded.components, **loaded.failures}
    names = [name.strip() for name in wanted.split(",") if name.strip()]
    found: dict[str, type] = {}
    unknown = []
    for name in names:
        try:
            found[name] = registry[name]
        except KeyError:
            unknown.append(name)
        except ConfigError as error:
            raise pytest.UsageError(f"{option}: {error}") from None
    if unknown:
        raise pytest.UsageError(
            f"{option}: unknown {what}(s) {', '.join(unknown)}; "
            f"valid choices: {', '.join(sorted(registry))}, or an import path "
            "package.module:Class"
        )
    return found


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    if config.getoption("--scheme-kit") is not None:
        items.extend(_scheme_items(session, config))
    if config.getoption("--kernel-kit") is not None:
        items.extend(_kernel_items(session, config))
    if config.getoption("--task-kit") is not None:
        items.extend(_task_items(session, config))


def _load_item(session: pytest.Session, kit: str, name: str, error: ConfigError) -> pytest.Item:
    return LoadItem.from_parent(
        session, name=f"{kit}[{name}-load]", kit=kit, name_=name, error=error
    )


def _scheme_items(session: pytest.Session, config: pytest.Config) -> list[pytest.Item]:
    items: list[pytest.Item] = []
    for scheme, cls in _selected(config, "--scheme-kit", POSITION_SCHEMES, "scheme").items():
        if isinstance(cls, ConfigError):  # the error of a name that does not load
            items.append(_load_item(session, "scheme-kit", scheme, cls))
            continue
        for check, attention in scheme_checks(cls):
            items.append(
                SchemeCheckItem.from_parent(
                    session,
                    name=f"scheme-kit[{scheme}-{attention}-{check}]",
                    scheme=scheme,
                    scheme_class=cls,
                    attention=attention,
                    check=check,
                )
            )
    return items


def _kernel_items(session: pytest.Session, config: pytest.Config) -> list[pytest.Item]:
    items: list[pytest.Item] = []
    for kernel, cls in _selected(config, "--kernel-kit", ATTENTION_KERNELS, "kernel").items():
        if isinstance(cls, ConfigError):  # the error of a name that does not load
            items.append(_load_item(session, "kernel-kit", kernel, cls))
            continue
        for check in kernel_checks(cls):
            items.append(
                KernelCheckItem.from_parent(
                    session,
                    name=f"kernel-kit[{kernel}-{check}]",
                    kernel=kernel,
                    kernel_class=cls,
                    check=check,
                )
            )
    return items


def _task_items(session: pytest.Session, config: pytest.Config) -> list[pytest.Item]:
    items: list[pytest.Item] = []
    for task, probe in _selected(config, "--task-kit", PROBE_TASKS, "task").items():
        if isinstance(probe, ConfigError):  # the error of a name that does not load
            items.append(_load_item(session, "task-kit", task, probe))
            continue
        for check in task_checks(probe):
            items.append(
                TaskCheckItem.from_parent(
                    session,
                    name=f"task-kit[{task}-{check}]",
                    task=task,
                    task_object=probe,
                    check=check,
                )
            )
    return items
