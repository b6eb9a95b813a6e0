"""docs/guide/your-scheme.md stays runnable: its scheme file passes the kit, its test file
is the one shown, and its sweep files are valid sweeps over the scheme by import path."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "guide" / "your-scheme.md"


def run_page_tests(module: str) -> None:
    """Run the two ``test_`` functions of the page's test file ``module``, as pytest would."""
    test_module = importlib.import_module(module)
    try:
        tests = [getattr(test_module, n) for n in dir(test_module) if n.startswith("test_")]
        assert len(tests) == 2
        for test in tests:
            test()
    finally:
        sys.modules.pop(module, None)


def blocks(language: str) -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    return re.findall(rf"^```{language}\n(.*?)^```$", text, flags=re.M | re.S)


@pytest.fixture
def my_schemes(tmp_path, monkeypatch) -> Path:
    """The page's ``my-schemes/`` project, written out and on ``sys.path``."""
    scheme_file, test_file = blocks("python")[:2]
    project = tmp_path / "my-schemes"
    (project / "my_pkg").mkdir(parents=True)
    (project / "my_pkg" / "__init__.py").write_text("", encoding="utf-8")
    (project / "my_pkg" / "schemes.py").write_text(scheme_file, encoding="utf-8")
    (project / "test_my_schemes.py").write_text(test_file, encoding="utf-8")
    (project / "pyproject.toml").write_text(blocks("toml")[0], encoding="utf-8")
    monkeypatch.syspath_prepend(str(project))
    for name in [m for m in sys.modules if m == "my_pkg" or m.startswith("my_pkg.")]:
        monkeypatch.delitem(sys.modules, name)
    return project


def test_the_pages_scheme_passes_the_kit_as_its_test_file_says(my_schemes):
    run_page_tests("test_my_schemes")


def test_the_pages_scheme_refuses_a_slope_out_of_range(my_schemes):
    from roformer_lit.errors import ConfigError
    from roformer_lit.testing.models import small_model

    scheme = importlib.import_module("my_pkg.schemes").LogDistance
    with pytest.raises(ConfigError, match="initial_slope must be > 0, got 0.0"):
        small_model(scheme, position_kwargs={"initial_slope": 0.0})


def test_the_pages_error_lines_are_what_the_harness_says(my_schemes):
    """The ``# error:`` lines the page shows for a misspelt class and an option out of range
    are the lines the harness prints (after ``error: ``) for those settings."""
    from roformer_lit.encoder_config import EncoderConfig
    from roformer_lit.errors import ConfigError

    shown = re.findall(r"^# error: (.*)$", PAGE.read_text(encoding="utf-8"), flags=re.M)
    settings = [
        {"position": "my_pkg.schemes:LogDistanse"},
        {"position": "my_pkg.schemes:LogDistance", "position_kwargs": {"initial_slope": 0.0}},
    ]
    said = []
    for setting in settings:
        with pytest.raises(ConfigError) as error:
            EncoderConfig(**setting)
        said.append(str(error.value))
    assert shown == said


def test_the_entry_point_names_the_pages_class(my_schemes):
    import tomllib

    declared = tomllib.loads((my_schemes / "pyproject.toml").read_text(encoding="utf-8"))
    target = declared["project"]["entry-points"]["roformer_lit.positions"]["logdist"]
    assert target == "my_pkg.schemes:LogDistance"


@pytest.mark.trainer
def test_the_pages_sweeps_are_valid(my_schemes, tmp_path):
    """``sweep --dry-run`` checks every combination as ``fit`` would before it starts."""
    expected_runs = {"my_scheme": 135, "my_scheme_smoke": 6}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(my_schemes)])}
    for text in blocks("yaml"):
        name = re.search(r"^name: (\w+)$", text, flags=re.M).group(1)
        sweep_file = tmp_path / f"{name}.yaml"
        sweep_file.write_text(text, encoding="utf-8")
        dry = subprocess.run(
            [
                sys.executable,
                "-m",
                "roformer_lit",
                "sweep",
                "--config",
                str(sweep_file),
                "--dry-run",
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert dry.returncode == 0, dry.stderr[-2000:]
        commands = [line for line in dry.stdout.splitlines() if " fit --config " in line]
        assert len(commands) == expected_runs.pop(name)
        assert sum("my_pkg.schemes:LogDistance" in c for c in commands) == len(commands) // 3
    assert expected_runs == {}


def test_the_pages_kernel_passes_the_kit_as_its_test_file_says(tmp_path, monkeypatch):
    """The kernel section: its kernel file passes ``check_kernel`` as its test file calls
    it, and an option out of range is the one line the page shows."""
    kernel_file, test_file = blocks("python")[2:4]
    project = tmp_path / "my-kernels"
    (project / "my_pkg").mkdir(parents=True)
    (project / "my_pkg" / "__init__.py").write_text("", encoding="utf-8")
    (project / "my_pkg" / "kernels.py").write_text(kernel_file, encoding="utf-8")
    (project / "test_my_kernels.py").write_text(test_file, encoding="utf-8")
    monkeypatch.syspath_prepend(str(project))
    for name in [m for m in sys.modules if m == "my_pkg" or m.startswith("my_pkg.")]:
        monkeypatch.delitem(sys.modules, name)
    run_page_tests("test_my_kernels")
    from roformer_lit.errors import ConfigError
    from roformer_lit.testing import check_kernel

    with pytest.raises(ConfigError) as refused:
        check_kernel(importlib.import_module("my_pkg.kernels").Blocked, block=0)
    assert str(refused.value) in PAGE.read_text(encoding="utf-8").replace("\n", " ")
