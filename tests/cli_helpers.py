"""Running the CLI in-process with tiny settings."""

from __future__ import annotations

import hashlib
import os
import signal
from collections.abc import Sequence
from pathlib import Path

import pytest
from lightning.pytorch import Callback

import roformer_lit.commands.pretrain as pretrain
from roformer_lit.commands import EXIT_USER_ERROR, main

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"

#: Overrides that make any config a few-second CPU run on the bundled corpus.
TINY = [
    "--model.hidden_size",
    "32",
    "--model.num_layers",
    "1",
    "--model.num_heads",
    "2",
    "--model.intermediate_size",
    "64",
    "--model.warmup_steps",
    "2",
    "--data.max_length",
    "32",
    "--data.batch_size",
    "8",
    "--data.max_train_blocks",
    "128",
    "--data.max_val_blocks",
    "16",
    "--trainer.enable_progress_bar",
    "false",
    "--trainer.enable_model_summary",
    "false",
]


def overridden(defaults: Sequence[str], extra: Sequence[str]) -> list[str]:
    """``defaults`` (``--option value`` pairs, ``--config`` files and words) then ``extra``,
    without the ``defaults`` of each option ``extra`` gives: ``fit`` refuses an option typed
    twice, so an extra value replaces the default rather than following it."""
    given = {word.partition("=")[0] for word in extra if word.startswith("--")} - {"--config"}
    kept: list[str] = []
    words = iter(defaults)
    for word in words:
        if word in given:
            next(words, None)  # and its value
            continue
        kept.append(word)
    return [*kept, *extra]


def epochs_args(*extra: str) -> list[str]:
    """A tiny run of one epoch of two steps and no step limit (``rope.yaml``, 4 steps of
    validation interval 1); ``extra`` replaces those (:func:`overridden`)."""
    defaults = fit_args(
        "rope.yaml",
        4,
        "--trainer.max_steps",
        "-1",
        "--trainer.max_epochs",
        "1",
        "--data.max_train_blocks",
        "16",
        "--trainer.val_check_interval",
        "1",
    )
    return overridden(defaults, extra)


def fit_args(config: str = "rope.yaml", steps: int = 30, *extra: str) -> list[str]:
    """``fit`` on ``configs/<config>`` with :data:`TINY` for ``steps`` steps, validating
    twice; ``extra`` options replace those defaults (:func:`overridden`)."""
    defaults = [
        "fit",
        "--config",
        str(CONFIGS / config),
        *TINY,
        "--trainer.max_steps",
        str(steps),
        "--trainer.val_check_interval",
        str(max(steps // 2, 1)),
    ]
    return overridden(defaults, extra)


def probe_fit_args(
    task: str = "copy", steps: int = 4, val_every: int = 2, min_length: int = 4, *extra: str
) -> list[str]:
    """``fit`` on ``configs/probes/<task>.yaml`` with a small encoder (hidden 32), inputs of
    ``min_length`` to 8 symbols and 16 validation sequences: a run of a few seconds; ``extra``
    options replace those defaults (:func:`overridden`)."""
    defaults = [
        "fit",
        "--config",
        str(CONFIGS / "probes" / f"{task}.yaml"),
        "--model.hidden_size",
        "32",
        "--model.intermediate_size",
        "64",
        "--data.probe_min_length",
        str(min_length),
        "--data.probe_max_length",
        "8",
        "--data.max_length",
        "17",
        "--data.max_val_blocks",
        "16",
        "--trainer.max_steps",
        str(steps),
        "--trainer.val_check_interval",
        str(val_every),
        "--trainer.enable_model_summary",
        "false",
    ]
    return overridden(defaults, extra)


class PreemptAt(Callback):
    """Sends SIGTERM to this process during optimiser step ``step`` (a preemption): the run
    saves its ``last.ckpt`` at that step and exits 75."""

    def __init__(self, step: int) -> None:
        self.step, self.sent = step, False

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if not self.sent and trainer.global_step + 1 == self.step:
            self.sent = True
            os.kill(os.getpid(), signal.SIGTERM)


def fit_preempted(argv: Sequence[str], step: int) -> int:
    """``main(argv)`` in this process, preempted during optimiser step ``step``
    (:class:`PreemptAt`): a run stopped before its end, which ``--ckpt_path`` continues (a
    finished run is not continued). Returns the exit code (75)."""
    original = pretrain.RoformerCLI.instantiate_trainer

    def with_preemption(self, **kwargs):
        trainer = original(self, **kwargs)
        trainer.callbacks.append(PreemptAt(step))
        return trainer

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pretrain.RoformerCLI, "instantiate_trainer", with_preemption)
        return main(list(argv))


def tokenizer_section(checkpoint: dict) -> dict:
    """The part of a loaded checkpoint that holds the run's tokenizer: the data module's
    state (Lightning saves it under the data module's class name)."""
    from roformer_lit.data.stored_tokenizer import TOKENIZER_KEY

    sections = [v for v in checkpoint.values() if isinstance(v, dict) and TOKENIZER_KEY in v]
    assert len(sections) == 1, f"{len(sections)} sections hold a tokenizer"
    return sections[0]


def tree_state(root: Path) -> dict[str, str]:
    """Every entry under ``root`` (directories too) -> its content hash ("" for a directory)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else ""
        for p in sorted(root.rglob("*"))
    }


def refused_unchanged(work: Path, capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run ``argv`` in ``work``: exit 2, one ``error:`` line and no traceback on stderr, and
    ``runs/`` as it was; returns the line."""
    before = tree_state(work / "runs")
    capsys.readouterr()
    assert main(argv) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in err, err[-2000:]
    assert tree_state(work / "runs") == before
    return errors[0]


def one_error_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``argv``: exit 2, exactly one ``error:`` line on stderr and no traceback."""
    capsys.readouterr()
    code = main(argv)
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == EXIT_USER_ERROR, err[-2000:]
    assert len(errors) == 1 and "Traceback" not in err, err[-2000:]
    return errors[0]


def write_fake_run_config(run_dir: Path, argv: Sequence[str]) -> None:
    """Write ``run_dir/config.yaml`` as a real ``fit`` or ``finetune`` launched with ``argv``
    (``python -m roformer_lit <command> ...``) writes it before its first step, for tests
    whose launch is faked: a sweep reads it to tell whether a run it would skip or resume is
    the run it asks for."""
    import json

    import yaml

    words = list(argv)
    if "--ckpt_path" in words:  # a resumed attempt: the config is the run's own
        at = words.index("--ckpt_path")
        del words[at : at + 2]
    command = words.index("finetune") if "finetune" in words else words.index("fit")
    if words[command] == "finetune":
        from roformer_lit.finetune.parse import validate_finetune_config as validate
    else:
        validate = pretrain.validate_config
    config = json.loads(json.dumps(validate(words[command + 1 :]).as_dict(), default=str))
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


def fit_in(factory: pytest.TempPathFactory, name: str, args: Sequence[str]) -> Path:
    """A new directory ``name`` of ``factory`` in which ``fit args`` ran to exit 0 (for a
    module fixture: a run several tests compare with or copy)."""
    work = factory.mktemp(name)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        assert main(args) == 0
    return work
