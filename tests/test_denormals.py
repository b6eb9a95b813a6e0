"""flush_denormals: subnormal floats read and are written as zero, in the main thread and
in torch's worker threads, when set before the first parallel operation (fresh
interpreters: the flags cannot be unset in a way that reaches threads already started);
opting out keeps them. ``python -m roformer_lit`` sets it before any command runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PROBE = """
import json, sys, torch
import roformer_lit.commands  # what python -m roformer_lit has imported when it sets it
from roformer_lit.training.denormals import flush_denormals
applied = flush_denormals()
torch.set_num_threads(2)
tiny = torch.full((1 << 20,), 1e-39)  # subnormal in float32; large enough to run in parallel
print(json.dumps({
    "applied": applied,
    "product_is_zero": bool((tiny * 1.0 == 0).all()),
    "sum": float((tiny * 3.0).sum()),
}))
"""


def probe(**env: str) -> dict:
    environment = {k: v for k, v in os.environ.items() if k != "ROFORMER_LIT_KEEP_SUBNORMALS"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        env={**environment, **env},
        timeout=300,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_subnormals_are_flushed_in_every_thread():
    result = probe()
    if not result["applied"]:
        pytest.skip("this CPU has no flush-to-zero flags torch can set")
    assert result["product_is_zero"] and result["sum"] == 0.0


def test_opting_out_keeps_subnormals():
    result = probe(ROFORMER_LIT_KEEP_SUBNORMALS="1")
    assert not result["applied"]
    assert not result["product_is_zero"]
    assert result["sum"] == pytest.approx(3e-39 * (1 << 20), rel=1e-3)


COMMAND_PROBE = """
import runpy, sys, torch
import roformer_lit.commands

def report():  # stands in for the command, run where python -m roformer_lit runs it
    print("flushed" if float(torch.tensor([1e-39]) * 1.0) == 0.0 else "kept")
    return 0

roformer_lit.commands.main = report
runpy.run_module("roformer_lit", run_name="__main__")
"""


def test_the_command_line_flushes_them_before_the_command_runs():
    environment = {k: v for k, v in os.environ.items() if k != "ROFORMER_LIT_KEEP_SUBNORMALS"}
    if not probe()["applied"]:
        pytest.skip("this CPU has no flush-to-zero flags torch can set")
    done = subprocess.run(
        [sys.executable, "-c", COMMAND_PROBE],
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "flushed"
