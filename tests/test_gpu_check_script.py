"""``scripts/gpu_check.sh`` refuses wrong arguments before it writes anything."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cli_helpers import REPO

SCRIPT = REPO / "scripts" / "gpu_check.sh"


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        ([], {}, "expected one OUT_DIR after the options, got 0 arguments"),
        (["--dry-run", "{tmp}/out"], {}, "expected one OUT_DIR after the options, got 2"),
        (["--dry-run"], {}, "unknown option --dry-run; valid: --cpu-dry-run"),
        (["{tmp}/out"], {"STEPS": "2 5"}, "STEPS names step '5'; valid: 1 2 3 4"),
        (["{tmp}/full"], {}, "OUT_DIR {tmp}/full is not empty"),
        (["{tmp}/full/kept.txt"], {}, "exists and is not a folder"),
    ],
)
def test_refusals_are_one_error_line_and_write_nothing(tmp_path: Path, args, env, message):
    full = tmp_path / "full"
    full.mkdir()
    (full / "kept.txt").write_text("earlier outputs")
    argv = [a.format(tmp=tmp_path) for a in args]
    done = subprocess.run(
        ["bash", str(SCRIPT), *argv],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", **env},
    )
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: gpu_check.sh: ")
    assert message.format(tmp=tmp_path) in lines[0]
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["full", "kept.txt"]
    assert (full / "kept.txt").read_text() == "earlier outputs"
