"""Someone else's broken plugin stops nothing that runs over every registered name by
default: ``bench`` (its ``--schemes`` and ``--kernels``), ``bench-flex`` and the
``schemes`` listing skip each name that does not load with one ``note:`` line naming it
and why, and run the rest; the kits with no names check the rest and fail the broken one
(one test); a name the user typed that does not load is refused in one ``error:`` line,
before anything runs. In fresh processes, with the plugin
installed as a distribution on the path (a ``.dist-info`` with ``entry_points.txt``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import REPO
from fake_distribution import write_distribution

from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.registry import _entry_points_of

pytestmark = pytest.mark.trainer

#: bench at the smallest shape, on the CPU, without the side tables.
TINY_BENCH = [
    *("--lengths", "16", "--hidden", "16", "--layers", "1", "--heads", "2"),
    *("--intermediate", "32", "--vocab", "64", "--batch", "1", "--rounds", "1"),
    *("--warmup", "0", "--no-memory", "--no-mfu", "--no-backends", "--device", "cpu"),
]

SCHEME_NOTE = (
    "note: {command}: skipped position 'broken', which cannot be loaded: position 'broken' "
    "(entry point 'broken_plugin:Anything' in group 'roformer_lit.positions') failed to "
    "load: RuntimeError: boom at import"
)
KERNEL_NOTE = (
    "note: {command}: skipped attention 'brokenkernel', which cannot be loaded: attention "
    "'brokenkernel' (entry point 'broken_plugin:Anything' in group 'roformer_lit.kernels') "
    "failed to load: RuntimeError: boom at import"
)


def install_broken_plugin(directory: Path) -> Path:
    """A distribution in ``directory`` whose scheme and kernel entry points raise on import."""
    (directory / "broken_plugin.py").write_text("raise RuntimeError('boom at import')\n")
    entry_points = """\
        [roformer_lit.positions]
        broken = broken_plugin:Anything
        [roformer_lit.kernels]
        brokenkernel = broken_plugin:Anything
        """
    write_distribution(directory, "broken-plugins", "0.1", entry_points)
    return directory


@pytest.fixture
def installed(tmp_path: Path) -> Path:
    return install_broken_plugin(tmp_path)


def run(directory: Path, *args: str, module: str = "roformer_lit") -> subprocess.CompletedProcess:
    """``python -m <module> <args>`` in ``directory``, with the plugin's distribution on the
    path."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(directory)])}
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def notes(run: subprocess.CompletedProcess) -> list[str]:
    return [line for line in run.stderr.splitlines() if line.startswith("note:")]


def test_bench_over_every_scheme_skips_a_broken_one_and_times_the_rest(installed):
    done = run(installed, "bench", "--kernels", "softmax", *TINY_BENCH)
    assert done.returncode == 0, done.stderr[-2000:]
    assert notes(done) == [SCHEME_NOTE.format(command="bench")]
    assert "error:" not in done.stderr
    for scheme in ("nope", "rope", "alibi"):
        assert f"| {scheme} | softmax | 16 |" in done.stdout
    assert "| broken |" not in done.stdout


def test_bench_over_every_kernel_skips_a_broken_one_and_times_the_rest(installed):
    done = run(installed, "bench", "--schemes", "nope", *TINY_BENCH)
    assert done.returncode == 0, done.stderr[-2000:]
    assert notes(done) == [KERNEL_NOTE.format(command="bench")]
    assert "| nope | softmax | 16 |" in done.stdout and "| nope | linear | 16 |" in done.stdout


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--schemes", "rope", "broken"], "argument --schemes: position 'broken' (entry point"),
        (["--kernels", "brokenkernel"], "argument --kernels: attention 'brokenkernel' (entry"),
    ],
)
def test_bench_refuses_a_broken_name_typed_before_any_timing(installed, flags, words):
    refused = run(installed, "bench", *flags, *TINY_BENCH)
    errors = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert len(errors) == 1 and "Traceback" not in refused.stderr, refused.stderr[-2000:]
    assert words in errors[0] and "boom at import" in errors[0], errors[0]
    assert refused.stdout == ""  # nothing timed


@pytest.fixture
def on_path(installed: Path, monkeypatch: pytest.MonkeyPatch):
    """The broken distribution on this process's path (registries read afresh)."""
    monkeypatch.syspath_prepend(str(installed))
    _entry_points_of.cache_clear()
    yield installed
    POSITION_SCHEMES._resolved.clear()
    _entry_points_of.cache_clear()
    sys.modules.pop("broken_plugin", None)


def test_bench_flex_defaults_to_the_bias_schemes_that_load(on_path, capsys):
    """``bench-flex`` read every scheme when imported: a broken one ended it, whatever
    ``--schemes`` said."""
    from roformer_lit.benchmarks.flex_vs_sdpa import parse_args

    ns = parse_args([])
    builtins = POSITION_SCHEMES.builtin_names()
    biased = [name for name in builtins if POSITION_SCHEMES[name].needs_score_bias]
    assert ns.schemes == ["nope", *biased] and {"alibi", "t5"} <= set(biased)
    assert capsys.readouterr().err.splitlines() == [SCHEME_NOTE.format(command="bench-flex")]
    assert parse_args(["--schemes", "rope"]).schemes == ["rope"]


@pytest.mark.skipif(
    __import__("torch").cuda.is_available(), reason="on a GPU bench-flex runs BERT-base"
)
def test_bench_flex_goes_past_a_broken_plugin_to_its_own_checks(installed):
    done = run(installed, "bench-flex")
    assert notes(done) == [SCHEME_NOTE.format(command="bench-flex")]
    assert done.returncode == 2 and "error: bench-flex needs a CUDA GPU" in done.stderr
    typed = run(installed, "bench-flex", "--schemes", "broken")
    assert typed.returncode == 2 and notes(typed) == []
    assert "error: bench-flex: argument --schemes: position 'broken'" in typed.stderr


def test_the_schemes_listing_notes_a_broken_plugin_and_lists_the_rest(installed):
    listed = run(installed, "schemes")
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert notes(listed) == [
        SCHEME_NOTE.format(command="schemes"),
        KERNEL_NOTE.format(command="schemes"),
    ]
    assert "  rope  (built-in)" in listed.stdout and "  softmax  (built-in)" in listed.stdout
    assert "broken" not in listed.stdout
    typed = run(installed, "schemes", "--import", "broken_plugin:Anything")
    assert typed.returncode == 2 and "error: schemes: --import" in typed.stderr


KITS = {
    "--scheme-kit": (SCHEME_NOTE, "broken", "broken or (nope and shapes)"),
    "--kernel-kit": (KERNEL_NOTE, "brokenkernel", "broken or (linear and shapes)"),
}


@pytest.mark.parametrize("kit", sorted(KITS))
def test_a_kit_over_every_name_fails_a_broken_one_and_checks_the_rest(installed, kit):
    """Over every registered name the kit checks those that load, and the broken one is
    one failing test with the registry's line (the kit says whether what is installed
    works; bench and the listing skip it). Named, it is a usage error."""
    _, name, wanted = KITS[kit]
    plugin = ("-p", "roformer_lit.testing.pytest_plugin", "-p", "no:cacheprovider")
    done = run(installed, *plugin, kit, "-k", wanted, module="pytest")
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    summary = done.stdout.strip().splitlines()[-1]
    assert "1 failed" in summary and "passed" in summary, done.stdout
    assert f"{kit.lstrip('-')}[{name}-load]" in done.stdout and "boom at import" in done.stdout
    named = run(installed, *plugin, f"{kit}={name}", module="pytest")
    assert named.returncode == 4 and "boom at import" in named.stderr, named.stderr[-2000:]
