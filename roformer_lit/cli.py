"""The command line: ``python -m roformer_lit {fit,validate,test,predict,export} ...``.

``fit``/``validate``/``test``/``predict`` go through LightningCLI (every ``--model.*``,
``--data.*``, ``--trainer.*`` key, ``--config``, ``--print_config``); ``vocab_size`` is
linked from the data module to the model. Runs are logged under
``runs/<experiment>/<position>-<attention>-seed<N>[-k]/`` and never overwrite each other.
User mistakes end with one ``error:`` line and exit code 2, never a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from jsonargparse import ArgumentParser
from lightning.pytorch.callbacks import LearningRateMonitor, ModelCheckpoint
from lightning.pytorch.cli import LightningArgumentParser, LightningCLI

from roformer_lit.data.datamodule import MLMDataModule
from roformer_lit.errors import ConfigError
from roformer_lit.module import MaskedLM
from roformer_lit.run_logger import RunLogger, unique_version

LIGHTNING_SUBCOMMANDS = ("fit", "validate", "test", "predict")
RUN_LOGGER = f"{RunLogger.__module__}.{RunLogger.__qualname__}"


class RoformerCLI(LightningCLI):
    """LightningCLI with the data -> model links, a fixed checkpoint policy and run naming."""

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.link_arguments(
            "data.tokenizer_vocab_size", "model.vocab_size", apply_on="instantiate"
        )
        parser.add_lightning_class_args(ModelCheckpoint, "checkpoint")
        parser.set_defaults(
            {
                "checkpoint.monitor": "val/loss",
                "checkpoint.mode": "min",
                "checkpoint.save_last": True,
                "checkpoint.save_top_k": 1,
                "checkpoint.filename": "best",
                "checkpoint.auto_insert_metric_name": False,
                "trainer.logger": {"class_path": RUN_LOGGER, "init_args": {"save_dir": "runs"}},
                "trainer.callbacks": [
                    {"class_path": f"{LearningRateMonitor.__module__}.LearningRateMonitor"}
                ],
            }
        )

    def before_instantiate_classes(self) -> None:
        """Give the run a readable version that does not exist yet."""
        config = self.config[self.subcommand] if self.subcommand else self.config
        logger = config.trainer.logger
        if not _is_run_logger(logger):
            return
        args = logger.init_args
        if args.get("version") is None:
            seed = config.seed_everything
            stem = f"{config.model.position}-{config.model.attention}-seed{seed}"
            if self.subcommand != "fit":
                stem = f"{stem}-{self.subcommand}"
            args.version = unique_version(
                args.get("save_dir", "runs"), args.get("name", "default"), stem
            )

    def instantiate_classes(self) -> None:
        super().instantiate_classes()
        _check_lengths(self.model, self.datamodule)


def _is_run_logger(logger: Any) -> bool:
    return (
        logger is not None
        and not isinstance(logger, bool)
        and getattr(logger, "class_path", None) in (RUN_LOGGER, "RunLogger")
    )


def _check_lengths(model: MaskedLM, datamodule: MLMDataModule) -> None:
    """Refuse at start-up a block length the position scheme cannot encode."""
    limit = model.max_length
    if limit is not None and datamodule.max_length > limit:
        raise ConfigError(
            f"data.max_length={datamodule.max_length} exceeds the {model.hparams.position!r} "
            f"position table (model.max_positions={limit}); raise model.max_positions or "
            "use a scheme that extends"
        )


def lightning_main(args: Sequence[str] | None) -> None:
    RoformerCLI(
        MaskedLM,
        MLMDataModule,
        args=None if args is None else list(args),
        seed_everything_default=0,
        save_config_kwargs={"overwrite": False},
        parser_kwargs={"exit_on_error": False},
        auto_configure_optimizers=False,
    )


def export_main(args: Sequence[str]) -> None:
    """``export --ckpt_path X --out DIR``: a checkpoint as a Hugging Face MLM directory."""
    from pathlib import Path

    from roformer_lit import export_hf

    parser = ArgumentParser(prog="python -m roformer_lit export", exit_on_error=False)
    parser.add_argument("--ckpt_path", type=str, required=True, help="a .ckpt written by fit")
    parser.add_argument("--out", type=str, required=True, help="new HF model directory")
    ns = parser.parse_args(list(args))
    ckpt = Path(ns.ckpt_path)
    if not ckpt.is_file():
        raise ConfigError(f"checkpoint not found: {ckpt}")
    model = load_checkpoint(ckpt)
    print(export_hf(model, ns.out))


def load_checkpoint(path: Any) -> MaskedLM:
    """A MaskedLM from a checkpoint, or a ConfigError if the file is not one."""
    try:
        return MaskedLM.load_from_checkpoint(path, map_location="cpu")
    except ConfigError:
        raise
    except Exception as exc:  # a truncated or foreign file
        raise ConfigError(f"cannot load checkpoint {path}: {type(exc).__name__}: {exc}") from exc


#: Extra subcommands beside LightningCLI's: name -> function of the remaining arguments.
EXTRA_COMMANDS: dict[str, Callable[[Sequence[str]], Any]] = {"export": export_main}


def main(args: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 2 user error)."""
    argv = list(sys.argv[1:] if args is None else args)
    try:
        if argv and argv[0] in EXTRA_COMMANDS:
            result = EXTRA_COMMANDS[argv[0]](argv[1:])
            return result if isinstance(result, int) else 0
        lightning_main(argv if args is not None else None)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        if _is_argument_error(exc):
            print(f"error: {_one_line(exc)}", file=sys.stderr)
            return 2
        raise
    return 0


def _is_argument_error(exc: BaseException) -> bool:
    import argparse

    from jsonargparse import ArgumentError

    return isinstance(exc, (ArgumentError, argparse.ArgumentError))


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())
