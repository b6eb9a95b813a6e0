"""``--print_config`` prints only a configuration the command would build, in fresh
processes: a model section the build refuses is the build's own one ``error:`` line (exit
2, nothing on stdout) for ``fit``, ``validate``, ``test``, ``predict`` and ``finetune``;
a possible one prints exactly what jsonargparse prints without the check."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from cli_helpers import CONFIGS, REPO

pytestmark = pytest.mark.trainer

ROPE = str(CONFIGS / "rope.yaml")

#: Model settings the build refuses (roformer_lit/architecture_rules.py, the training
#: settings' table), each with a word of the line that refuses it.
IMPOSSIBLE = {
    "a score bias on a kernel without one": (
        ["--model.position", "alibi", "--model.attention", "linear"],
        "adds a score bias",
    ),
    "heads that do not divide the hidden size": (["--model.num_heads", "5"], "not divisible"),
    "a window on a kernel without windows": (
        [
            *("--model.attention", "linear", "--model.layer_plan"),
            json.dumps({"pattern": ["l"], "types": {"l": {"window": 8}}}),
        ],
        "window 8",
    ),
    "an unknown option of the scheme": (
        ["--model.position_kwargs", json.dumps({"bse": 500})],
        "'bse'",
    ),
    "a training setting out of range": (["--model.learning_rate", "-1"], "learning_rate"),
}


def cli(args: list[str], cwd, code: str | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m roformer_lit <args>`` (or ``python -c code <args>``) in ``cwd``."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = ["-m", "roformer_lit"] if code is None else ["-c", code]
    return subprocess.run(
        [sys.executable, *command, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def error_line(run: subprocess.CompletedProcess[str]) -> str:
    """The one ``error:`` line of a refused command (exit 2, no traceback)."""
    lines = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert run.returncode == 2, run.stdout[-2000:] + run.stderr[-2000:]
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr[-2000:]
    return lines[0]


@pytest.mark.parametrize("case", sorted(IMPOSSIBLE))
def test_print_config_refuses_what_fit_refuses_with_its_line(case, tmp_path):
    settings, word = IMPOSSIBLE[case]
    printed = cli(["fit", "--config", ROPE, *settings, "--print_config"], tmp_path)
    line = error_line(printed)
    assert printed.stdout == "", printed.stdout[:2000]
    assert word in line, line
    built = cli(["fit", "--config", ROPE, *settings], tmp_path)  # refused before a run starts
    assert error_line(built) == line
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("subcommand", ["validate", "test", "predict"])
def test_every_command_that_prints_the_model_checks_it(subcommand, tmp_path):
    settings = ["--model.position", "alibi", "--model.attention", "linear"]
    printed = cli([subcommand, "--config", ROPE, *settings, "--print_config"], tmp_path)
    assert printed.stdout == "", printed.stdout[:2000]
    assert "'alibi' adds a score bias" in error_line(printed)


#: ``main`` with the print's check taken out: what jsonargparse prints by itself.
UNCHECKED = (
    "import sys; from roformer_lit.commands import main; "
    "from roformer_lit.commands.pretrain import RoformerCLI; "
    "RoformerCLI.check_printed = lambda self, config: None; "
    "sys.exit(main(sys.argv[1:]))"
)


@pytest.mark.parametrize(
    "flags", [["--print_config"], ["--print_config=skip_default"]], ids=["plain", "skip_default"]
)
def test_a_possible_configuration_prints_as_it_did(flags, tmp_path):
    """Linear attention under RoPE builds: printed whole, exit 0, exactly what the parser
    prints without the check (the check reads the section, it changes nothing)."""
    args = ["fit", "--config", ROPE, "--model.attention", "linear", "--model.num_heads", "8"]
    printed = cli([*args, *flags], tmp_path)
    assert printed.returncode == 0, printed.stderr[-2000:]
    assert "attention: linear" in printed.stdout
    unchecked = cli([*args, *flags], tmp_path, code=UNCHECKED)
    assert unchecked.returncode == 0, unchecked.stderr[-2000:]
    assert printed.stdout == unchecked.stdout
    assert not (tmp_path / "runs").exists()


def test_finetune_print_config_checks_the_classifier(tmp_path):
    """``finetune``'s model section is the classifier's: its table refuses a dropout past
    1 as the build would; its valid settings print as before."""
    config = str(CONFIGS / "finetune" / "local.yaml")
    refused = cli(
        ["finetune", "--config", config, "--model.classifier_dropout", "2", "--print_config"],
        tmp_path,
    )
    assert refused.stdout == "", refused.stdout[:2000]
    assert "model.classifier_dropout" in error_line(refused)
    printed = cli(["finetune", "--config", config, "--print_config"], tmp_path)
    assert printed.returncode == 0, printed.stderr[-2000:]
    assert "classifier_dropout:" in printed.stdout
