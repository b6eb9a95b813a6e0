"""A pytest plugin: the scheme kit over every registered position scheme, no test file needed.

Enable it and ask for the tests::

    python -m pytest -p roformer_lit.testing.pytest_plugin --scheme-kit
    python -m pytest -p roformer_lit.testing.pytest_plugin --scheme-kit=cope,rope

(or ``pytest_plugins = ["roformer_lit.testing.pytest_plugin"]`` in a ``conftest.py`` and
``--scheme-kit`` on the command line). It adds one test per registered scheme, attention
kernel and applicable check, named ``scheme-kit[<scheme>-<kernel>-<check>]``: the same
functions as ``check_scheme`` and the suite's own tests/test_scheme_kit.py. "Registered"
is whatever the position registry resolves by name, the built-ins and the schemes of
installed packages' ``roformer_lit.positions`` entry points alike; a listed name may also be
an import path. Only the schemes asked for are loaded; over all of them, an entry point
that fails to load is one failing test, ``scheme-kit[<name>-load]``, with the registry's
line. Without ``--scheme-kit`` the plugin adds nothing.
"""

from __future__ import annotations

import pytest

from roformer_lit.errors import ConfigError
from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.positions.base import PositionScheme
from roformer_lit.testing import run_check, scheme_checks

ALL = "all"


def registered_schemes() -> dict[str, type[PositionScheme]]:
    """Every scheme the registry resolves by name (a broken plugin raises its ConfigError)."""
    return dict(POSITION_SCHEMES)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--scheme-kit",
        nargs="?",
        const=ALL,
        default=None,
        metavar="NAMES",
        help="run the scheme kit's checks on every registered position scheme "
        "(or on the comma-separated NAMES)",
    )


class SchemeCheckItem(pytest.Item):
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

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, AssertionError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"scheme-kit[{self.scheme}-{self.attention}-{self.check}]"


class SchemeLoadItem(pytest.Item):
    """A registered scheme that fails to load (a broken entry point), under ``--scheme-kit``
    over every scheme: one failing test with the registry's line, the others still run."""

    def __init__(self, *, scheme: str, error: ConfigError, **kwargs) -> None:
        super().__init__(**kwargs)
        self.scheme, self.error = scheme, error

    def runtest(self) -> None:
        raise AssertionError(str(self.error))

    def repr_failure(self, excinfo, style=None):
        return str(excinfo.value)

    def reportinfo(self):
        return self.path, None, f"scheme-kit[{self.scheme}-load]"


def _selected(config: pytest.Config) -> dict[str, type[PositionScheme] | ConfigError]:
    """The classes of the schemes asked for, each resolved on its own: a broken plugin
    among all of them is its error (a failing test), one named is a usage error, and an
    unasked one is never loaded. A name may be an import path (``my_pkg.schemes:Mine``)."""
    wanted = config.getoption("--scheme-kit")
    everything = wanted == ALL
    names = (
        list(POSITION_SCHEMES)
        if everything
        else [name.strip() for name in wanted.split(",") if name.strip()]
    )
    found: dict[str, type[PositionScheme] | ConfigError] = {}
    unknown = []
    for name in names:
        try:
            found[name] = POSITION_SCHEMES[name]
        except KeyError:
            unknown.append(name)
        except ConfigError as error:
            if not everything:
                raise pytest.UsageError(f"--scheme-kit: {error}") from None
            found[name] = error
    if unknown:
        raise pytest.UsageError(
            f"--scheme-kit: unknown scheme(s) {', '.join(unknown)}; "
            f"valid choices: {', '.join(sorted(POSITION_SCHEMES))}, or an import path "
            "package.module:Class"
        )
    return found


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    if config.getoption("--scheme-kit") is None:
        return
    for scheme, cls in _selected(config).items():
        if isinstance(cls, ConfigError):
            items.append(
                SchemeLoadItem.from_parent(
                    session, name=f"scheme-kit[{scheme}-load]", scheme=scheme, error=cls
                )
            )
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
