"""Lightning's ``Seed set to N`` line comes once the classes are built: a configuration
they refuse prints its ``error:`` line alone, and a run that trains still says its seed."""

from __future__ import annotations

import subprocess
import sys

import pytest
from cli_helpers import fit_args


def _fit(tmp_path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "roformer_lit", *fit_args("rope.yaml", 1, *extra)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize(
    "extra",
    [
        ("--model.position", "rotary"),  # refused by the registry
        ("--model.position", "deberta", "--model.attention", "linear"),  # by the rule table
        ("--model.num_heads", "3"),  # by the model's shape
    ],
)
def test_a_refused_build_prints_its_error_line_alone(tmp_path, extra):
    proc = _fit(tmp_path, *extra)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert not (tmp_path / "runs").exists()


def test_a_run_that_builds_says_its_seed_once(tmp_path):
    seed = "7"
    proc = _fit(tmp_path, "--seed_everything", seed)
    assert proc.returncode == 0, proc.stderr[-2000:]
    said = (proc.stdout + proc.stderr).splitlines()
    assert said.count(f"Seed set to {seed}") == 1, said
