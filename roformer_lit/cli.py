"""The command line: ``python -m roformer_lit {fit,validate,test,predict,export} ...``.

``fit``/``validate``/``test``/``predict`` go through LightningCLI (every ``--model.*``,
``--data.*``, ``--trainer.*`` key, ``--config``, ``--print_config``); ``vocab_size`` is
linked from the data module to the model. Runs are logged under
``runs/<experiment>/<position>-<attention>-seed<N>[-k]/`` and never overwrite each other.
User mistakes end with one ``error:`` line and exit code 2, never a traceback.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from jsonargparse import ArgumentParser
from lightning.pytorch import LightningModule, Trainer
from lightning.pytorch.callbacks import LearningRateMonitor, ModelCheckpoint
from lightning.pytorch.cli import LightningArgumentParser, LightningCLI, SaveConfigCallback

from roformer_lit.callbacks import LastCheckpointAtEnd
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
                    {"class_path": f"{LearningRateMonitor.__module__}.LearningRateMonitor"},
                    {"class_path": f"{LastCheckpointAtEnd.__module__}.LastCheckpointAtEnd"},
                ],
            }
        )

    def before_instantiate_classes(self) -> None:
        """Pick the run directory: resume into a checkpoint's own run, or a new readable one."""
        config = self.config[self.subcommand] if self.subcommand else self.config
        logger = config.trainer.logger
        if not _is_run_logger(logger):
            return
        args = logger.init_args
        root, name = args.get("save_dir") or "runs", args.get("name") or "default"
        ckpt = config.get("ckpt_path") if self.subcommand == "fit" else None
        if args.get("version") is None:
            own_run = run_dir_of(ckpt) if ckpt else None
            if own_run is not None:  # a restart continues the run it came from
                args.save_dir, args.name, args.version = (
                    _relative_if_inside_cwd(own_run.parent.parent),
                    own_run.parent.name,
                    own_run.name,
                )
                return
            stem = f"{config.model.position}-{config.model.attention}-seed{config.seed_everything}"
            if self.subcommand != "fit":
                stem = f"{stem}-{self.subcommand}"
            args.version = unique_version(root, name, stem)
            return
        run_dir = Path(root) / name / str(args.version)
        resuming = ckpt is not None and _is_inside(Path(ckpt), run_dir)
        if run_dir.is_dir() and any(run_dir.iterdir()) and not resuming:
            raise ConfigError(
                f"run directory {run_dir} already exists; resume it with --ckpt_path "
                f"{run_dir / 'checkpoints' / 'last.ckpt'} or choose another "
                "--trainer.logger.init_args.version"
            )

    def instantiate_classes(self) -> None:
        super().instantiate_classes()
        _check_lengths(self.model, self.datamodule)


class RunConfigSaver(SaveConfigCallback):
    """Saves ``config.yaml`` beside the events; a resumed run keeps the original and, if its
    config differs, writes the new one as ``config-resumed-<k>.yaml``."""

    def setup(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        log_dir = trainer.log_dir
        if self.already_saved or log_dir is None or not trainer.is_global_zero:
            return super().setup(trainer, pl_module, stage)
        existing = Path(log_dir) / self.config_filename
        if existing.is_file():
            text = self.parser.dump(self.config, skip_none=False)
            if existing.read_text(encoding="utf-8") != text:
                k = 1
                while (Path(log_dir) / f"config-resumed-{k}.yaml").exists():
                    k += 1
                (Path(log_dir) / f"config-resumed-{k}.yaml").write_text(text, encoding="utf-8")
            self.already_saved = True
            return None
        return super().setup(trainer, pl_module, stage)


class _ParseOnly(RoformerCLI):
    """Parses and validates a configuration without building anything."""

    def before_instantiate_classes(self) -> None:
        pass

    def instantiate_classes(self) -> None:
        pass


def validate_config(args: Sequence[str]) -> Any:
    """Parse ``fit`` arguments (``--config`` files and ``--key value`` overrides) without
    instantiating anything; returns the namespace or raises ConfigError with one line."""
    try:
        cli = _ParseOnly(
            MaskedLM,
            MLMDataModule,
            args=list(args),
            run=False,
            seed_everything_default=0,
            parser_kwargs={"exit_on_error": False},
            auto_configure_optimizers=False,
        )
    except Exception as exc:
        if _is_argument_error(exc):
            raise ConfigError(_one_line(exc)) from exc
        raise
    return cli.config


def run_dir_of(ckpt_path: str | Path) -> Path | None:
    """The run directory a checkpoint at ``<run>/checkpoints/x.ckpt`` belongs to, if any."""
    ckpt = Path(ckpt_path)
    run = ckpt.parent.parent
    if ckpt.parent.name == "checkpoints" and (run / "config.yaml").is_file():
        return run
    return None


def _relative_if_inside_cwd(path: Path) -> str:
    cwd = Path.cwd().resolve()
    resolved = path.resolve()
    return str(resolved.relative_to(cwd)) if resolved.is_relative_to(cwd) else str(resolved)


def _is_inside(path: Path, directory: Path) -> bool:
    return path.resolve().is_relative_to(directory.resolve())


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
        save_config_callback=RunConfigSaver,
        save_config_kwargs={"overwrite": False},
        parser_kwargs={"exit_on_error": False},
        auto_configure_optimizers=False,
    )


def export_main(args: Sequence[str]) -> None:
    """``export --ckpt_path X --out DIR``: a checkpoint as a Hugging Face MLM directory."""
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
#: Extra subcommands beside LightningCLI's: name -> "module:function" taking the remaining
#: arguments and returning an exit code (or None for 0). Imported only when called.
EXTRA_COMMANDS: dict[str, str] = {
    "export": "roformer_lit.cli:export_main",
    "sweep": "roformer_lit.sweep:main",
    "compare": "roformer_lit.compare:main",
    "bench": "roformer_lit.benchmarks.models:main",
    "bench-data": "roformer_lit.benchmarks.data_pipeline:run",
    "extrapolate": "roformer_lit.extrapolate:main",
}


def _extra_command(name: str) -> Callable[[Sequence[str]], Any]:
    module_name, function = EXTRA_COMMANDS[name].split(":")
    return getattr(importlib.import_module(module_name), function)


def main(args: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 2 user error)."""
    argv = list(sys.argv[1:] if args is None else args)
    try:
        if argv and argv[0] in EXTRA_COMMANDS:
            result = _extra_command(argv[0])(argv[1:])
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
