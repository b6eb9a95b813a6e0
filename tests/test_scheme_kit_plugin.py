"""The scheme kit's pytest plugin, run as an author runs it: pytest in a fresh process, in a
directory of its own, with ``-p roformer_lit.testing.pytest_plugin --scheme-kit``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_distribution import write_distribution

from roformer_lit import POSITION_SCHEMES
from roformer_lit.testing import scheme_checks

ROOT = Path(__file__).resolve().parents[1]

#: A conftest that registers a scheme leaking padded slots into the real tokens.
LEAKY_CONFTEST = '''
from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.positions.nope import NoPosition


class Leaky(NoPosition):
    """Adds the mean of every slot, padded ones included."""

    def embed(self, x, positions=None):
        return x + x.mean(dim=1, keepdim=True)


POSITION_SCHEMES.register("leaky", Leaky)
'''


def pytest_in(directory: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    command = [sys.executable, "-m", "pytest", "-p", "roformer_lit.testing.pytest_plugin"]
    return subprocess.run(
        [*command, "-p", "no:cacheprovider", "-q", *args],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_one_test_per_registered_scheme_kernel_and_check(tmp_path):
    listed = pytest_in(tmp_path, "--scheme-kit", "--collect-only")
    items = [line for line in listed.stdout.splitlines() if "scheme-kit[" in line]
    expected = [
        f"scheme-kit[{name}-{attention}-{check}]"
        for name, cls in POSITION_SCHEMES.items()
        for check, attention in scheme_checks(cls)
    ]
    assert [item.split("::")[-1] for item in items] == expected
    assert pytest_in(tmp_path, "--collect-only").stdout.count("scheme-kit[") == 0


def test_a_failing_check_is_reported_by_name_and_an_unknown_scheme_refused(tmp_path):
    (tmp_path / "conftest.py").write_text(LEAKY_CONFTEST, encoding="utf-8")
    run = pytest_in(tmp_path, "--scheme-kit=leaky,nope", "-k", "padding or shapes")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "2 failed, 6 passed" in run.stdout  # padding fails on both kernels, run.stdout
    assert "padding check failed for scheme leaky" in run.stdout
    refused = pytest_in(tmp_path, "--scheme-kit=lekay")
    assert refused.returncode != 0
    assert "unknown scheme(s) lekay; valid choices: alibi" in refused.stderr


def broken_plugin_installed(directory: Path) -> None:
    """A distribution in ``directory`` whose scheme entry point raises on import."""
    (directory / "broken_scheme.py").write_text("raise RuntimeError('boom at import')\n")
    write_distribution(
        directory,
        "broken-schemes",
        "0.1",
        "[roformer_lit.positions]\nbroken = broken_scheme:Anything\n",
    )


@pytest.mark.parametrize(
    ("args", "code", "stream", "expected"),
    [
        # another package's broken plugin does not stop the kit over the schemes asked for
        (["--scheme-kit=nope", "-k", "shapes"], 0, "stdout", "2 passed"),
        # an import path is a scheme too
        (
            ["--scheme-kit=roformer_lit.positions.nope:NoPosition", "-k", "shapes"],
            0,
            "stdout",
            "2 passed",
        ),
        # the broken one asked for by name: one usage line naming it
        (["--scheme-kit=broken"], 4, "stderr", "--scheme-kit: position 'broken' (entry point"),
        # over every scheme it is one failing test with the registry's line
        (["--scheme-kit", "-k", "broken"], 1, "stdout", "RuntimeError: boom at import"),
    ],
)
def test_a_broken_scheme_plugin_is_reported_not_an_internal_error(
    tmp_path, args, code, stream, expected
):
    broken_plugin_installed(tmp_path)
    run = pytest_in(tmp_path, *args)
    assert run.returncode == code, run.stdout + run.stderr
    assert expected in getattr(run, stream), run.stdout + run.stderr
    assert "INTERNALERROR" not in run.stdout + run.stderr
