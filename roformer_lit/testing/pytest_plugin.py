"""A pytest plugin: the scheme kit over every registered position scheme, no test file needed.

Enable it and ask for the tests::

    python -m pytest -p roformer_lit.testing.pytest_plugin --scheme-kit
    python -m pytest -p roformer_lit.testing.pytest_plugin --scheme-kit=cope,rope

(or ``pytest_plugins = ["roformer_lit.testing.pytest_plugin"]`` in a ``conftest.py`` and
``--scheme-kit`` on the command line). It adds one test per registered scheme, attention
kernel and applicable check, named ``scheme-kit[<scheme>-<kernel>-<check>]``: the same
functions as ``check_scheme`` and the suite's own tests/test_scheme_kit.py. "Registered"
is whatever the position registry resolves by name, the built-ins and the schemes of
installed packages' ``roformer_lit.positions`` entry points alike. Without ``--scheme-kit``
the plugin adds nothing.
"""

from __future__ import annotations

import pytest

from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.positions.base import PositionScheme
from roformer_lit.testing import run_check, scheme_checks

ALL = "all"


def registered_schemes() -> dict[str, type[PositionScheme]]:
    """Every scheme the registry resolves by name."""
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


def _selected(config: pytest.Config) -> dict[str, type[PositionScheme]]:
    schemes = registered_schemes()
    wanted = config.getoption("--scheme-kit")
    if wanted == ALL:
        return schemes
    names = [name.strip() for name in wanted.split(",") if name.strip()]
    unknown = [name for name in names if name not in schemes]
    if unknown:
        raise pytest.UsageError(
            f"--scheme-kit: unknown scheme(s) {', '.join(unknown)}; "
            f"valid choices: {', '.join(sorted(schemes))}"
        )
    return {name: schemes[name] for name in names}


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    if config.getoption("--scheme-kit") is None:
        return
    for scheme, cls in _selected(config).items():
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
