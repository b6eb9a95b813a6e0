"""A plugin scheme or kernel that raises while the model runs is one ``error:`` line.

A scheme's ``prepare`` or a kernel's ``forward`` that raises (an option range its
``__init__`` did not check) is the plugin's bug, as a constructor that raises is: one line
naming the plugin, the exception and the plugin's own line, exit 2, in ``fit``,
``validate`` and ``extrapolate`` alike (:mod:`roformer_lit.plugin_faults`); a checkpoint already written is
kept. An exception of the package's own code stays a traceback."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from cli_helpers import probe_fit_args

from roformer_lit.attention import ATTENTION_KERNELS
from roformer_lit.attention.block import SelfAttention
from roformer_lit.commands import EXIT_USER_ERROR, main
from roformer_lit.positions import POSITION_SCHEMES

pytestmark = pytest.mark.trainer

MODULE = """
import os
import sys
from roformer_lit.attention.softmax import SoftmaxAttention
from roformer_lit.positions.alibi import AlibiPosition
from roformer_lit.positions.base import PositionScheme


class Blocked(PositionScheme):
    def __init__(self, shape, *, block: int = 1):
        super().__init__(shape)
        self.block = block  # not checked: 0 is taken

    def prepare(self, length, device, dtype, positions=None, **kwargs):
        if os.environ.get("PLUGIN_FAILS"):
            raise ValueError("scheme gave up")
        starts = list(range(0, length, self.block))
        return None if starts else None


class Broken(PositionScheme):
    def __init__(self, shape):
        super().__init__(shape)
        raise RuntimeError("boom in init")


class Claims(AlibiPosition):
    def __init__(self, shape):
        super().__init__(shape)
        self.learnable_slopes = True  # but no learned slopes were made


class Quits(PositionScheme):
    def prepare(self, length, device, dtype, positions=None, **kwargs):
        if os.environ.get("PLUGIN_FAILS"):
            sys.exit(0)
        return None


class Flaky(SoftmaxAttention):
    def forward(self, q, k, v, **kwargs):
        if os.environ.get("PLUGIN_FAILS"):
            raise RuntimeError("kernel gave up")
        return super().forward(q, k, v, **kwargs)
"""


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """A module ``runtime_plugin`` on ``sys.path``; the work directory ``tmp_path`` with
    an empty ``runs/``."""
    (tmp_path / "runtime_plugin.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    yield tmp_path / "runtime_plugin.py"
    for registry in (POSITION_SCHEMES, ATTENTION_KERNELS):
        registry._resolved.clear()
    sys.modules.pop("runtime_plugin", None)


def one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``argv``: exit 2, one ``error:`` line and no traceback; returns the line."""
    capsys.readouterr()
    code = main(argv)
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == EXIT_USER_ERROR, err[-2000:]
    assert len(errors) == 1 and "Traceback" not in err, err[-2000:]
    return errors[0]


SCHEME = ["--model.position", "runtime_plugin:Blocked"]
KERNEL = ["--model.attention", "runtime_plugin:Flaky"]


def checkpoints(root: Path) -> list[Path]:
    return sorted(root.glob("runs/**/*.ckpt"))


def test_fit_with_a_scheme_that_raises_in_prepare_is_one_line(plugin, tmp_path, capsys):
    argv = probe_fit_args("copy", 2, 1, 4, *SCHEME, "--model.position_kwargs", "{block: 0}")
    line = one_line(argv, capsys)
    assert line.startswith(
        "error: position 'runtime_plugin:Blocked' raised while the model ran: "
        "ValueError: range() arg 3 must not be zero "
        f"(at {plugin}, line "
    ), line
    assert line.endswith(", in prepare); ROFORMER_LIT_TRACEBACK=1 shows its traceback"), line


def test_fit_with_a_kernel_that_raises_in_forward_is_one_line(
    plugin, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("PLUGIN_FAILS", "1")
    line = one_line(probe_fit_args("copy", 2, 1, 4, *KERNEL), capsys)
    assert line.startswith(
        "error: attention 'runtime_plugin:Flaky' raised while the model ran: "
        f"RuntimeError: kernel gave up (at {plugin}, line "
    ), line
    assert ", in forward)" in line, line


def test_a_plugin_that_breaks_a_method_it_inherits_is_one_line_naming_both(plugin, capsys):
    """The frame that raised is the built-in base's; its ``self`` is the plugin's."""
    line = one_line(
        probe_fit_args("copy", 2, 1, 4, "--model.position", "runtime_plugin:Claims"), capsys
    )
    assert line.startswith(
        "error: position 'runtime_plugin:Claims' raised while the model ran: AttributeError: "
    ), line
    assert "log_slopes" in line and "positions/alibi.py, line " in line, line
    assert ", in slopes, which Claims inherits from roformer_lit.positions.alibi)" in line, line


def test_a_plugin_that_calls_sys_exit_while_the_model_runs_is_one_line_not_exit_0(
    plugin, capsys, monkeypatch
):
    """``sys.exit(0)`` in a scheme's ``prepare`` ended ``fit`` with exit 0 and no run."""
    monkeypatch.setenv("PLUGIN_FAILS", "1")
    line = one_line(
        probe_fit_args("copy", 2, 1, 4, "--model.position", "runtime_plugin:Quits"), capsys
    )
    assert line.startswith(
        "error: position 'runtime_plugin:Quits' raised while the model ran: SystemExit: 0 "
        f"(at {plugin}, line "
    ), line


def test_the_traceback_is_shown_on_request(plugin, tmp_path, capsys, monkeypatch):
    """For the plugin's author: the full traceback before the same one line."""
    monkeypatch.setenv("PLUGIN_FAILS", "1")
    monkeypatch.setenv("ROFORMER_LIT_TRACEBACK", "1")
    capsys.readouterr()
    assert main(probe_fit_args("copy", 2, 1, 4, *KERNEL)) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert "Traceback" in err and 'raise RuntimeError("kernel gave up")' in err, err[-2000:]
    assert err.strip().splitlines()[-1].startswith("error: attention 'runtime_plugin:Flaky'")


def test_the_constructors_traceback_is_shown_on_request_too(plugin, capsys, monkeypatch):
    """The same switch for a plugin whose ``__init__`` raises (its line is unchanged)."""
    monkeypatch.setenv("ROFORMER_LIT_TRACEBACK", "1")
    capsys.readouterr()
    argv = probe_fit_args("copy", 2, 1, 4, "--model.position", "runtime_plugin:Broken")
    assert main(argv) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert "Traceback" in err and 'raise RuntimeError("boom in init")' in err, err[-2000:]
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "'runtime_plugin:Broken' failed to build" in errors[0], err


@pytest.mark.parametrize("which", ["scheme", "kernel"])
def test_commands_on_a_checkpoint_with_a_plugin_that_raises_are_one_line_and_keep_it(
    plugin, tmp_path, capsys, monkeypatch, which
):
    """``validate`` and ``extrapolate`` alike (``export`` refuses a plugin before it runs
    the model): one line, and the run's checkpoints as they were."""
    chosen = SCHEME if which == "scheme" else KERNEL
    assert main(probe_fit_args("copy", 2, 1, 4, *chosen)) == 0
    (ckpt, *_) = checkpoints(tmp_path)
    before = checkpoints(tmp_path)
    monkeypatch.setenv("PLUGIN_FAILS", "1")
    if which == "scheme":
        lead, where = "position 'runtime_plugin:Blocked'", "ValueError: scheme gave up"
    else:
        lead, where = "attention 'runtime_plugin:Flaky'", "RuntimeError: kernel gave up"
    config = str(Path(__file__).resolve().parents[1] / "configs" / "probes" / "copy.yaml")
    commands = [
        ["validate", "--config", config, "--ckpt_path", str(ckpt)],
        ["extrapolate", str(ckpt), "--lengths", "16"],
    ]
    for argv in commands:
        line = one_line(argv, capsys)
        assert line.startswith(f"error: {lead} raised while the model ran: "), (argv[0], line)
        assert where in line and f"(at {plugin}, line " in line, (argv[0], line)
        assert checkpoints(tmp_path) == before


def test_a_bug_of_our_own_code_stays_a_traceback(plugin, tmp_path, monkeypatch):
    """With a plugin loaded and running, an exception raised by the package itself (here
    its output check, made to fail) is not dressed as the plugin's."""

    def broken(self, out, q):
        raise RuntimeError("our own bug")

    monkeypatch.setattr(SelfAttention, "check_output", broken)
    with pytest.raises(RuntimeError, match="our own bug"):
        main(probe_fit_args("copy", 2, 1, 4, *SCHEME))
