"""A plugin scheme through the command line, in fresh processes: ``fit`` with an import
path, then ``validate`` where the plugin is importable (it loads) and where it is not (one
``error:`` line naming it, exit 2, the checkpoint untouched)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest
from cli_helpers import REPO, fit_args
from test_plugins import PLUGIN

pytestmark = pytest.mark.trainer


def run(args: list[str], cwd, plugin_path: str | None):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), plugin_path) if p)
    return subprocess.run(
        [sys.executable, "-m", "roformer_lit", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_a_plugin_run_loads_where_the_plugin_is_and_is_refused_where_it_is_not(tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "my_plugin.py").write_text(PLUGIN)
    fitted = run(
        fit_args("rope.yaml", 2, "--model.position", "my_plugin:MyScheme"), tmp_path, str(plugins)
    )
    assert fitted.returncode == 0, fitted.stderr[-2000:]
    (run_dir,) = [p for p in (tmp_path / "runs" / "mlm").iterdir() if p.is_dir()]
    assert run_dir.name.startswith("my_plugin_MyScheme-softmax-seed0"), run_dir.name
    checkpoint = run_dir / "checkpoints" / "last.ckpt"
    before = hashlib.sha256(checkpoint.read_bytes()).hexdigest()

    loaded = run(["validate", "--ckpt_path", str(checkpoint)], tmp_path, str(plugins))
    assert loaded.returncode == 0, loaded.stderr[-2000:]

    for args in (
        ["validate", "--ckpt_path", str(checkpoint)],
        ["extrapolate", str(checkpoint), "--lengths", "32"],
    ):
        refused = run(args, tmp_path, None)
        lines = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
        assert refused.returncode == 2, refused.stderr[-2000:]
        assert len(lines) == 1 and "Traceback" not in refused.stderr, refused.stderr[-2000:]
        assert "'my_plugin:MyScheme'" in lines[0] and "cannot import 'my_plugin'" in lines[0]
        # every command names where the checkpoint's scheme came from, to find it again
        assert "the checkpoint records position 'my_plugin:MyScheme' from" in lines[0], lines
    exported = run(
        ["export", "--ckpt_path", str(checkpoint), "--out", str(tmp_path / "hf")],
        tmp_path,
        str(plugins),
    )
    assert (
        exported.returncode == 2 and "'my_plugin:MyScheme' has no Hugging Face" in exported.stderr
    )
    assert hashlib.sha256(checkpoint.read_bytes()).hexdigest() == before
