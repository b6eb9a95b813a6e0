"""``fit``, ``validate``, ``test``, ``predict``: pretraining through LightningCLI.

Every ``--model.*``, ``--data.*``, ``--trainer.*`` key, ``--config`` (composed on
:data:`BASE_CONFIG`), ``--print_config``; ``vocab_size`` is linked from the data module to
the model. Runs are logged under ``runs/<experiment>/<position>-<attention>-seed<N>[-k]/``
and never overwrite each other; the checkpoint options, the pairing of a checkpoint with
its corpus and tokenizer, and the checks before anything is built live here. The entry
point and exit codes: :mod:`roformer_lit.commands`.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml
from jsonargparse import ArgumentError, get_loader, set_loader
from lightning.pytorch import LightningModule, Trainer
from lightning.pytorch.callbacks import ModelSummary
from lightning.pytorch.cli import LightningArgumentParser, LightningCLI, SaveConfigCallback
from lightning.pytorch.plugins.io import TorchCheckpointIO

from roformer_lit.commands.argument_words import plain_argument_error
from roformer_lit.commands.checkpoint_data import check_checkpoint_data, current_data_identity
from roformer_lit.commands.checkpoint_settings import (
    SEED,
    check_step_boundary,
    check_steps_left,
    check_time_left,
    checkpoint_settings,
    config_file_keys,
    resumed_seed,
    seed_typed,
    typed_keys,
)
from roformer_lit.commands.evaluation_tokenizer import evaluation_tokenizer
from roformer_lit.commands.prelaunch import (
    WarmupPastTheEpochs,
    accelerator_is_here,
    check_fit_config,
    check_printed_model,
)
from roformer_lit.commands.printed_config import CheckedPrintParser
from roformer_lit.commands.repeated_options import refuse_repeated_options
from roformer_lit.commands.replaced_mappings import replaced_notes
from roformer_lit.commands.seed_environment import seed_environment_kept, seed_taken
from roformer_lit.commands.seed_line import say_seed, seed_line_held
from roformer_lit.commands.special_ckpt_paths import SPECIAL_CKPT_PATHS, left_to_lightning
from roformer_lit.component_origins import recorded_origins
from roformer_lit.data.datamodule import PretrainDataModule
from roformer_lit.data.modules import (
    DATA_MODULES,
    DEFAULT_CLASS_PATH,
    class_path,
    data_class_for,
    flat_sections,
    left_out,
    refusal,
    resolve,
    settings_of,
)
from roformer_lit.data.stored_tokenizer import run_tokenizer_given, stored_tokenizer_json
from roformer_lit.errors import ConfigError, refused_settings
from roformer_lit.module import MaskedLM
from roformer_lit.safe_input import check_checkpoint_file, safe_yaml_load, yaml_value
from roformer_lit.training import run_dir
from roformer_lit.training.callbacks import (
    LastCheckpointAtEnd,
    LastGoodCheckpoint,
    Preemption,
    RunCheckpoint,
    checkpoint_step,
)
from roformer_lit.training.checkpoint_io import PRETRAINING, AtomicCheckpointIO, read_checkpoint
from roformer_lit.training.data_record import DataRecord
from roformer_lit.training.final_validation import ValidateAtEnd
from roformer_lit.training.lightning_compat import (
    CompatCLI,
    command_options,
    launch_rank,
    refused_data_key,
    subcommand_options,
)
from roformer_lit.training.namesakes import namesakes_note
from roformer_lit.training.progress import default_progress_bar
from roformer_lit.training.quiet import SummaryWithoutFlops
from roformer_lit.training.resume_guard import check_unchanged, file_identity
from roformer_lit.training.run_logger import RunLogger, unique_version
from roformer_lit.training.run_name import run_stem
from roformer_lit.training.run_report import RunReport
from roformer_lit.training.throughput import Throughput
from roformer_lit.training.trainer_settings import held
from roformer_lit.validation import check_run_arguments

LIGHTNING_SUBCOMMANDS = ("fit", "validate", "test", "predict")
RUN_LOGGER = f"{RunLogger.__module__}.{RunLogger.__qualname__}"


#: ``--seed_everything``'s help: what Lightning's ``seed_everything`` does with each value.
SEED_TRUE_HELP = (
    "an integer seeds the model's initialisation, dropout and masking draws with it; true "
    "takes the seed in the environment variable PL_GLOBAL_SEED, else 0 (not a random seed: "
    "a run's config.yaml records the number it took); false seeds nothing"
)


class RoformerCLI(CompatCLI):
    """LightningCLI with the data -> model links, a fixed checkpoint policy and run naming.

    ``command``: the command the user typed, as its messages name it (``prepare``,
    ``finetune``); None: the subcommand of the command line, else ``fit``."""

    def __init__(self, *args: Any, command: str | None = None, **kwargs: Any) -> None:
        self.command = command  # read while parsing, inside LightningCLI's __init__
        parser_class = kwargs.pop("parser_class", CheckedPrintParser)
        if not issubclass(parser_class, CheckedPrintParser):
            raise TypeError(f"parser_class must be a CheckedPrintParser, not {parser_class}")
        super().__init__(*args, parser_class=parser_class, **kwargs)

    def init_parser(self, **kwargs: Any) -> LightningArgumentParser:
        """Every parser of the CLI -- the main one and each subcommand's, which LightningCLI
        builds here too -- is a :class:`~roformer_lit.commands.printed_config.CheckedPrintParser`:
        an abbreviated option (``--trainer.max_step``) is one line naming the option(s) it
        abbreviates, never taken for one of them
        (:class:`~roformer_lit.commands.whole_options.WholeOptionParser`), and
        ``--print_config`` runs :meth:`check_printed` before it prints."""
        parser = super().init_parser(command=self.command, **kwargs)
        parser.check_printed = self.check_printed
        return parser

    def check_printed(self, config: Any) -> None:
        """``--print_config``'s check of the section it prints: the rules the model's build
        runs, on its settings alone (:func:`~roformer_lit.commands.prelaunch.check_printed_model`:
        the typed architecture, no weight built), so a configuration ``fit`` would refuse
        is its one line, not printed."""
        check_printed_model(config)

    def add_default_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        """``--seed_everything`` as Lightning adds it, with help that says what ``true``
        does (Lightning's own says "a random seed"; its ``seed_everything`` takes
        ``PL_GLOBAL_SEED``, else 0: :data:`SEED_TRUE_HELP`)."""
        parser.add_argument(
            "--seed_everything",
            type=bool | int,
            default=self.seed_everything_default,
            help=SEED_TRUE_HELP,
        )

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.link_arguments(
            "data.tokenizer_vocab_size", "model.vocab_size", apply_on="instantiate"
        )
        parser.add_lightning_class_args(RunCheckpoint, "checkpoint")
        parser.set_defaults(
            {
                # a section without class_path builds the corpus (roformer_lit.data.modules)
                "data": {"class_path": DEFAULT_CLASS_PATH},
                "checkpoint.monitor": "val/loss",
                "checkpoint.mode": "min",
                "checkpoint.save_last": True,
                "checkpoint.save_top_k": 1,
                "checkpoint.filename": "best",
                "checkpoint.auto_insert_metric_name": False,
                # a run owns its directory: a resumed run overwrites its own best/last.ckpt
                # (a counter would write last-v1.ckpt beside the last.ckpt it resumed from)
                "checkpoint.enable_version_counter": False,
                "trainer.logger": {"class_path": RUN_LOGGER, "init_args": {"save_dir": "runs"}},
                "trainer.callbacks": [
                    {"class_path": f"{LastCheckpointAtEnd.__module__}.LastCheckpointAtEnd"},
                    {"class_path": f"{ValidateAtEnd.__module__}.ValidateAtEnd"},
                ],
            }
        )

    def parse_arguments(self, parser: LightningArgumentParser, args: Any) -> None:
        """Parse as LightningCLI does, keeping the command line for :meth:`check_ckpt_path`
        (what the user typed, :func:`~roformer_lit.commands.checkpoint_settings.typed_keys`)."""
        self._argv = (
            [str(a) for a in (sys.argv[1:] if args is None else args)]
            if (args is None or isinstance(args, (list, tuple)))
            else []
        )
        self.refuse_repeated_options()
        try:
            if self.subclass_mode_data and (args is None or isinstance(args, (list, tuple))):
                # what LightningCLI does with a list, after a --data.probe flag's class
                self.config = parser.parse_args(probe_flags_pick_the_class(self._argv))
            else:
                super().parse_arguments(parser, args)
        except Exception as exc:
            # a data module chosen by class (pretraining; fine-tuning has one data class)
            chosen = self.subclass_mode_data and is_argument_error(exc)
            line = data_key_refusal(exc) if chosen else None
            if line is not None:
                raise ConfigError(line) from exc
            raise
        if launch_rank() in (None, 0):  # a mapping typed whole replaces the files' (the rule)
            for note in replaced_notes(self._argv):
                print(note, file=sys.stderr, flush=True)

    def refuse_repeated_options(self) -> None:
        """An option typed twice (``--model.hidden_size 64 --model.hidden_size 128``) is one
        line naming it and both values, before anything is parsed
        (:mod:`~roformer_lit.commands.repeated_options`: ``--config`` files and appends may
        repeat). The subcommand's own options, where the command line names one."""
        argv = self._argv
        subcommand = argv[0] if argv and argv[0] in LIGHTNING_SUBCOMMANDS else None
        words = argv[1:] if subcommand is not None else argv
        command = self.command or subcommand or "fit"
        refuse_repeated_options(command, words, command_options(self, subcommand))

    def check_ckpt_path(self) -> None:
        """Check ``--ckpt_path`` before anything is built: it must be a readable pretraining
        checkpoint (one ``error:`` line, not a PyTorch traceback). Its run's model and data
        settings then replace the command's, except those typed on the command line, which
        the table of :mod:`~roformer_lit.commands.checkpoint_settings` lets win (with a
        ``note:`` line) or refuses in one line. A resumed ``fit`` takes the run's
        ``trainer.max_steps`` too, and a run with nothing left to train is refused here,
        before anything is written (:func:`check_steps_left`)."""
        self._checkpoint = None
        self._run_tokenizer = None
        subcommand = self.config.get("subcommand")
        if not subcommand:
            return
        config = self.config[subcommand]
        self._checkpoint_read = file_identity(config.get("ckpt_path"))  # before it is read
        root = (config.get("trainer") or {}).get("default_root_dir")
        self._checkpoint = _inspect_checkpoint(config.get("ckpt_path"), root)
        if self._checkpoint is None:
            return
        path, checkpoint = self._checkpoint
        self.take_checkpoint_settings(subcommand, path, checkpoint)

    def take_checkpoint_settings(
        self, subcommand: str, path: str, checkpoint: dict[str, Any]
    ) -> None:
        """The one place a command given ``--ckpt_path`` takes the run's settings
        (:func:`~roformer_lit.commands.checkpoint_settings.checkpoint_settings`: the table),
        prints its ``note:`` lines, and, for a resumed ``fit``, refuses a run with nothing
        left to train (:func:`check_steps_left`); pretraining and fine-tuning alike."""
        options = subcommand_options(self, subcommand)
        argv = getattr(self, "_argv", [])
        typed = typed_keys(argv, options)
        fill, notes = checkpoint_settings(
            checkpoint,
            self.config[subcommand],
            typed,
            resume=subcommand == "fit",
            path=path,
            from_files=config_file_keys(argv, options),
            pretraining_data=self.subclass_mode_data,
        )
        if subcommand == "fit":
            notes += self.take_run_seed(path, seed_typed(argv, options))
        if launch_rank() in (None, 0):
            for note in notes:
                print(note, file=sys.stderr, flush=True)
        if fill:
            self.config = self.parser.parse_object({subcommand: fill}, self.config)
        if subcommand != "fit" and self.subclass_mode_data:  # the run's ids, on any files
            self._run_tokenizer = evaluation_tokenizer(
                checkpoint, self.config[subcommand], typed, path
            )
        if subcommand == "fit":
            check_steps_left(checkpoint, self.config[subcommand], path)
            check_step_boundary(checkpoint, path)
            check_time_left(checkpoint, self.config[subcommand], path)

    def take_run_seed(self, path: str, typed: bool) -> list[str]:
        """A resumed ``fit`` takes its run's ``seed_everything``, as its run directory's
        ``config.yaml`` records it (:func:`resumed_seed`: a typed other seed is refused);
        a checkpoint outside a run directory, or a record without a seed, keeps the
        command's. Returns the ``note:`` lines."""
        run = run_dir_of(path)
        if run is None:
            return []
        try:
            recorded = safe_yaml_load((run / "config.yaml").read_text(encoding="utf-8"))
        except (OSError, ValueError, yaml.YAMLError, ConfigError):
            return []
        if not isinstance(recorded, dict) or SEED not in recorded:
            return []
        section = self.config[self.config["subcommand"]]
        note = resumed_seed(recorded[SEED], seed_taken(section.get(SEED)), typed, path)
        if note is None:
            return []
        section[SEED] = recorded[SEED]
        return [note]

    def before_instantiate_classes(self) -> None:
        """Pick and claim the run directory (:mod:`roformer_lit.training.run_dir`): resume into a
        checkpoint's own run (refused where another process replaced the checkpoint since
        it was read: :mod:`~roformer_lit.training.resume_guard`), or a new readable one.
        ``validate``/``test``/``predict`` make no run of their own: their results are
        appended to the evaluated run's ``evaluations.jsonl`` (:meth:`after_validate`,
        :meth:`after_test`)."""
        config = self.config[self.subcommand] if self.subcommand else self.config
        try:
            self.check_before_launch(config)  # before anything is built or created
        except ConfigError as exc:  # a plugin gone: name where the run's came from
            read = getattr(self, "_checkpoint", None)  # (path, checkpoint), read when parsed
            raise ConfigError(f"{exc}{recorded_origins(read[1], exc) if read else ''}") from None
        accelerator_is_here(config.trainer.get("accelerator", "auto"))  # here, not in sweep's
        logger = config.trainer.logger
        if self.subcommand != "fit":
            if is_run_logger(logger):
                config.trainer.logger = False
            return
        check_checkpoint_placement(config)
        if not is_run_logger(logger):
            return
        self.claim_run_directory(config)
        note_unplaced_root(config)

    def claim_run_directory(self, config: Any) -> None:
        """Resume into a checkpoint's own run, or claim a new (or named) one."""
        args = config.trainer.logger.init_args
        root, name = args.get("save_dir") or "runs", args.get("name") or "default"
        ckpt = config.get("ckpt_path")
        leader = launch_rank() in (None, 0)  # only one process of a multi-process run claims
        if args.get("version") is None:
            own_run = run_dir_of(ckpt) if ckpt else None
            if own_run is not None:  # a restart continues the run it came from
                check_resume_keeps_later_steps(ckpt, own_run)
                if leader:
                    run_dir.lock(own_run)
                    check_unchanged(ckpt, getattr(self, "_checkpoint_read", None))
                args.save_dir, args.name, args.version = (
                    _relative_if_inside_cwd(own_run.parent.parent),
                    own_run.parent.name,
                    own_run.name,
                )
                return
            claim = run_dir.claim_new if leader else unique_version
            stem = run_stem(config)
            args.version = claim(root, name, stem)
            note = namesakes_note(Path(root) / name, stem, args.version) if leader else None
            if note:
                print(f"note: {note}", file=sys.stderr)
            return
        version = str(args.version)
        resuming = ckpt is not None and _is_inside(Path(ckpt), Path(root) / name / version)
        if resuming:
            check_resume_keeps_later_steps(ckpt, Path(root) / name / version)
        if leader:
            run_dir.claim_named(root, name, version, resuming)
            if resuming:
                check_unchanged(ckpt, getattr(self, "_checkpoint_read", None))

    def check_before_launch(self, config: Any) -> None:
        """The pre-launch check ``sweep`` runs on each combination too
        (:func:`roformer_lit.commands.prelaunch.check_fit_config`); ``test`` and
        ``predict`` are refused first, as no pretraining data has a test split to report
        or a place for predictions
        (:meth:`~roformer_lit.data.datamodule.PretrainDataModule.check_subcommand`)."""
        if self.subcommand in ("test", "predict"):
            resolve(config.get("data"))[0].check_subcommand(self.subcommand)
        check_fit_config(config, training=self.subcommand in (None, "fit"))

    def set_seed(self) -> None:
        """Seed everything, refusing a seed numpy cannot take with one line."""
        check_run_arguments({"seed_everything": self.setting(self.config, "seed_everything")})
        with seed_line_held():  # said once the classes are built (say_seed)
            super().set_seed()

    def setting(self, config: Any, key: str, default: Any = None) -> Any:
        """``key`` of ``config``, inside the running subcommand's section when there is one."""
        return config.get(str(self.subcommand), config).get(key, default)

    def after_validate(self) -> None:
        """LightningCLI's hook after ``validate``: the result goes to the run's record."""
        self.record_evaluation("validate")

    def after_test(self) -> None:
        """LightningCLI's hook after ``test``: the result goes to the run's record."""
        self.record_evaluation("test")

    def record_evaluation(self, subcommand: str) -> None:
        """Append the result of ``subcommand`` (``validate``/``test``) to the evaluated run's
        ``evaluations.jsonl``, with the identity of the data it evaluated (what an evaluation
        reads: :func:`~roformer_lit.commands.checkpoint_data.current_data_identity`);
        pretraining and fine-tuning alike."""
        check_measured(subcommand, self.trainer, self.subclass_mode_data)
        identity = current_data_identity(self.datamodule, evaluated=True)
        config = self.config[subcommand]
        step = getattr(self, "_evaluated_step", None)  # of the checkpoint evaluated (pinned)
        _record_evaluation(
            subcommand, config, self.trainer, self.subclass_mode_data, identity, step
        )

    def instantiate_classes(self) -> None:
        """The classes, the data module of an evaluation given the run's own tokenizer
        (:mod:`~roformer_lit.commands.evaluation_tokenizer`), then the checks of a
        checkpoint against what was built."""
        try:
            with run_tokenizer_given(getattr(self, "_run_tokenizer", None)):
                super().instantiate_classes()
        except (ValueError, TypeError) as exc:  # a class refused its arguments
            raise refused_settings(exc) from None  # the class's own line, or a new one
        checkpoint, self._checkpoint = getattr(self, "_checkpoint", None), None
        if checkpoint is not None:
            _check_checkpoint_fits(*checkpoint, self.model)
            _check_same_tokenizer(*checkpoint, self.datamodule)
            self.check_checkpoint_data(*checkpoint)
            self.pin_evaluated(*checkpoint)
        say_seed(self.setting(self.config, "seed_everything"))

    def pin_evaluated(self, path: str, checkpoint: dict[str, Any]) -> None:
        """An evaluation (``validate``) evaluates the checkpoint it read and checked when it
        parsed, and its record names that checkpoint's step: the trainer loads that reading
        (:meth:`~roformer_lit.training.checkpoint_io.AtomicCheckpointIO.pin`), not the file
        again, which a ``fit`` running on the same run may have replaced since with a later
        step. A resumed ``fit`` holds its run's lock, so nothing replaces its checkpoint;
        pretraining and fine-tuning alike."""
        self._evaluated_step = checkpoint.get("global_step")
        io = self.trainer.strategy.checkpoint_io
        if self.subcommand != "fit" and isinstance(io, AtomicCheckpointIO):
            io.pin(path, checkpoint)

    def check_checkpoint_data(self, path: str, checkpoint: dict[str, Any]) -> None:
        """The one place a command given ``--ckpt_path`` compares the data it built with the
        data the checkpoint's run trained on, by content
        (:func:`~roformer_lit.commands.checkpoint_data.check_checkpoint_data`): a resumed
        ``fit`` on other data is refused in one line, an evaluation's is one ``note:``
        line; pretraining and fine-tuning alike."""
        note = check_checkpoint_data(path, checkpoint, self.datamodule, self.subcommand == "fit")
        if note is not None and launch_rank() in (None, 0):
            print(note, file=sys.stderr, flush=True)

    def instantiate_trainer(self, **kwargs: Any) -> Trainer:
        """The trainer, plus preemption handling, divergence reporting, atomic saves and the
        note of a warm-up a run counted in epochs cuts."""
        trainer_config = self.setting(self.config_init, "trainer", default={})
        extras = default_progress_bar(trainer_config)
        if trainer_config.get("enable_model_summary") is not False:
            configured = extras.get("callbacks", trainer_config.get("callbacks")) or []
            configured = configured if isinstance(configured, list) else [configured]
            if not any(isinstance(c, ModelSummary) for c in configured):
                extras["callbacks"] = [*configured, SummaryWithoutFlops()]
        trainer = super().instantiate_trainer(**{**extras, **kwargs})
        for callback_class in (
            Preemption,
            LastGoodCheckpoint,
            RunReport,
            Throughput,
            DataRecord,
            WarmupPastTheEpochs,
        ):
            if not any(isinstance(c, callback_class) for c in trainer.callbacks):
                trainer.callbacks.append(callback_class())
        if type(trainer.strategy.checkpoint_io) is TorchCheckpointIO:
            trainer.strategy.checkpoint_io = AtomicCheckpointIO()
        return trainer


def check_checkpoint_placement(config: Any) -> None:
    """Where a run's checkpoints go is the run's business, decided here for every ``fit``:
    ``<runs root>/<experiment>/<version>/checkpoints/`` (Lightning's place beside the
    logger's events). ``--checkpoint.dirpath`` could point into another run (its
    ``best.ckpt`` and ``last.ckpt`` silently overwritten) or outside the runs root, so it is
    refused; ``--checkpoint.filename`` must be one file name. Without a logger
    (``--trainer.logger false``) Lightning writes to ``<default_root_dir>/checkpoints``,
    shared by every such run: refused when it holds another run's checkpoints."""
    section = config.get("checkpoint")
    if section is None:
        return
    if section.get("dirpath") is not None:
        raise ConfigError(
            f"checkpoint.dirpath={section.get('dirpath')!r} is not a setting: a run's "
            "checkpoints go to <save_dir>/<name>/<version>/checkpoints; choose the run with "
            "--trainer.logger.init_args.save_dir, .name and .version"
        )
    filename = section.get("filename")
    if filename is not None:
        run_dir.check_name(filename, "checkpoint.filename", kind="file")
    if config.trainer.get("logger") is False:
        shared = Path(config.trainer.get("default_root_dir") or ".") / "checkpoints"
        ckpt = config.get("ckpt_path")
        resuming = ckpt is not None and _is_inside(Path(str(ckpt)), shared)
        if not resuming and any(shared.glob("*.ckpt")):
            raise ConfigError(
                f"without a logger checkpoints go to {shared}, which holds another run's "
                "checkpoints; keep the default logger (each run its own directory) or set "
                "--trainer.default_root_dir to a new directory"
            )


def note_unplaced_root(config: Any) -> None:
    """``--trainer.default_root_dir`` does not place a run that has a logger (Lightning keeps
    only its own files there, such as SLURM's ``hpc_ckpt_<k>.ckpt``): the run goes to
    ``<save_dir>/<name>/<version>``. Where that run is neither inside it nor holds it, one
    ``note:`` line says where the run went and which flag chooses the root."""
    root = config.trainer.get("default_root_dir")
    if root is None:
        return
    args = config.trainer.logger.init_args
    run = Path(args.get("save_dir") or "runs") / (args.get("name") or "default")
    run = run / str(args.get("version"))
    if _is_inside(run, Path(root)) or _is_inside(Path(root), run):
        return
    print(
        f"note: trainer.default_root_dir={str(root)!r} does not place the run, which goes to "
        f"{run} (<save_dir>/<name>/<version>); choose its root with "
        "--trainer.logger.init_args.save_dir",
        file=sys.stderr,
        flush=True,
    )


def check_resume_keeps_later_steps(ckpt: Any, run: Path) -> None:
    """Resuming a run from one of its earlier checkpoints (``best.ckpt``) would replace its
    ``last.ckpt`` with the branch and drop the later steps without a word: refused, naming
    both steps and the two ways on."""
    ckpt_path = Path(str(ckpt))
    last = run / "checkpoints" / "last.ckpt"
    if not last.is_file() or ckpt_path.resolve() == last.resolve():
        return
    resumed_step, last_step = checkpoint_step(ckpt_path), checkpoint_step(last)
    if resumed_step is not None and last_step is not None and last_step > resumed_step:
        raise ConfigError(
            f"{ckpt_path} is at step {resumed_step} but the run's {last} is at step "
            f"{last_step}: resuming would overwrite the later steps; resume from {last}, or "
            "branch into a new run with --trainer.logger.init_args.version <new name>"
        )


EVALUATIONS_FILE = "evaluations.jsonl"
#: The trainer's settings an evaluation's record keeps, as the trainer holds them
#: (:func:`~roformer_lit.training.trainer_settings.held`): ``validate --trainer.
#: limit_val_batches 1`` measures one batch of the split, ``--trainer.precision bf16-mixed``
#: rounds otherwise, and either is taken quietly (the run is not changed by it).
EVALUATED_WITH = ("limit_val_batches", "precision")


def check_measured(subcommand: str, trainer: Trainer, pretraining_data: bool) -> None:
    """Refuse, in one line and before anything is recorded, an evaluation that measured
    nothing: no metric logged, as where no token of the data was masked for prediction
    (every token special: ``[UNK]`` for text the run's tokenizer does not know). It was
    an empty record, exit 0, a result that is none."""
    if any(getattr(v, "numel", lambda: 0)() == 1 for v in trainer.callback_metrics.values()):
        return
    why = (
        "no token of the data was masked for prediction (every token is a special one, "
        "as [UNK] for text the run's tokenizer does not know)"
        if pretraining_data
        else "no metric was logged"
    )
    raise ConfigError(
        f"{subcommand} measured nothing: {why}; nothing was recorded: give data whose "
        "text the run's tokenizer knows"
    )


def _record_evaluation(
    subcommand: str,
    config: Any,
    trainer: Trainer,
    pretraining_data: bool = True,
    data_identity: str | None = None,
    step: int | None = None,
) -> Path | None:
    """Append a ``validate``/``test`` result to the evaluated run's ``evaluations.jsonl``:
    one JSON line with the time, command, checkpoint (and its step), the data and model
    settings it was evaluated with, the content identity of the data it evaluated
    (``data_identity``: :mod:`roformer_lit.training.data_identity`, null for data without
    one; records from before it have no such key), the trainer's :data:`EVALUATED_WITH`
    (records from before them lack the key), and the metrics; ``step``: the step of
    the checkpoint evaluated (read from the file when not given). A checkpoint outside a
    run directory, or in one this process cannot write, gets no record (Lightning's printed
    table is the result; a ``note:`` line says so for the second)."""

    ckpt = config.get("ckpt_path")
    if not trainer.is_global_zero or ckpt is None or str(ckpt) in SPECIAL_CKPT_PATHS:
        return None
    run = run_dir_of(ckpt)
    if run is None:
        return None
    metrics = {
        key: float(value)
        for key, value in trainer.callback_metrics.items()
        if getattr(value, "numel", lambda: 0)() == 1
    }
    record = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "command": subcommand,
        "checkpoint": str(ckpt),
        "step": read_checkpoint(ckpt).get("global_step") if step is None else step,
        # a pretraining section as one flat dict of its class's settings; fine-tuning's as it is
        "data": settings_of(config.get("data")) if pretraining_data else _plain(config.get("data")),
        "model": _plain(config.get("model")),
        # what else decides the metrics: how much of the split, at which precision
        "trainer": {key: held(key, _plain(config.get("trainer"))) for key in EVALUATED_WITH},
        "data_identity": data_identity,
        "metrics": metrics,
    }
    path = run / EVALUATIONS_FILE
    line = json.dumps(record, sort_keys=True, default=str) + "\n"
    try:
        with open(path, "a", encoding="utf-8") as f:  # one write per record: never interleaved
            f.write(line)
    except OSError as exc:  # a read-only (archived, shared) run: the printed table stands
        print(
            f"note: {subcommand} results not appended to {path}: {exc.strerror}; the table "
            "above is the result",
            file=sys.stderr,
        )
        return None
    print(f"{subcommand} results appended to {path}")
    return path


def _plain(namespace: Any) -> Any:
    """A jsonargparse Namespace (or anything) as plain JSON-able data."""
    as_dict = getattr(namespace, "as_dict", None)
    return as_dict() if callable(as_dict) else namespace


def _inspect_checkpoint(ckpt_path: Any, root: Any = None) -> tuple[str, dict[str, Any]] | None:
    """Read ``--ckpt_path`` (memory-mapped) and refuse, with one line, a missing or unreadable
    file, or a file that is not a roformer_lit pretraining checkpoint, and a word Lightning
    resolves to no checkpoint here (:func:`left_to_lightning`; ``root``: the trainer's
    ``default_root_dir``). Returns (path, checkpoint) for the settings it decides and the
    checks after instantiation."""
    if left_to_lightning(ckpt_path, root, "runs/mlm/<run>/checkpoints/last.ckpt"):
        return None
    path = str(ckpt_path)
    check_checkpoint_file(path)  # as typed; a directory is not "not found"
    return path, read_checkpoint(path, kind=PRETRAINING)


def _check_checkpoint_fits(path: str, checkpoint: dict[str, Any], model: MaskedLM) -> None:
    """Refuse, with one line, a checkpoint whose vocabulary or weights do not fit ``model``
    (what Lightning's restore would otherwise report as a raw PyTorch error)."""
    saved_vocab = (checkpoint.get("hyper_parameters") or {}).get("vocab_size")
    vocab = model.hparams.vocab_size
    if saved_vocab is not None and saved_vocab != vocab:
        raise ConfigError(
            f"checkpoint {path} has vocab_size={saved_vocab}, this run's tokenizer has "
            f"{vocab}; use the tokenizer of the checkpoint's run (data.vocab_size, "
            "data.tokenizer_file, data.train_files)"
        )
    theirs = checkpoint["state_dict"]
    ours = model.state_dict()
    for name, tensor in ours.items():
        if name in theirs and tuple(theirs[name].shape) != tuple(tensor.shape):
            raise ConfigError(
                f"checkpoint {path} does not fit this model: {name} has shape "
                f"{tuple(theirs[name].shape)} there and {tuple(tensor.shape)} here"
            )
    if getattr(model, "strict_loading", True):
        missing = sorted(set(ours) - set(theirs))
        unexpected = sorted(set(theirs) - set(ours))
        if missing or unexpected:
            what = f"missing {', '.join(missing[:3])}" if missing else ""
            if unexpected:
                what += ("; " if what else "") + f"unexpected {', '.join(unexpected[:3])}"
            raise ConfigError(f"checkpoint {path} does not fit this model: {what}")


def _tokenizer_identity(tokenizer_json: str) -> dict[str, Any]:
    """What makes two tokenizers give the same ids: their JSON without the run-time
    padding and truncation settings."""
    identity = json.loads(tokenizer_json)
    return {k: v for k, v in identity.items() if k not in ("padding", "truncation")}


def _check_same_tokenizer(path: str, checkpoint: dict[str, Any], datamodule: Any) -> None:
    """Refuse, with one line, to pair a checkpoint with a tokenizer it was not trained with
    (same vocabulary size, other tokens: every figure would be silently wrong). Checkpoints
    from before tokenizers were stored are checked by vocabulary size only."""
    stored = stored_tokenizer_json(checkpoint)
    tokenizer = getattr(datamodule, "tokenizer", None)
    if not isinstance(stored, str) or tokenizer is None:
        return
    try:
        same = _tokenizer_identity(stored) == _tokenizer_identity(tokenizer.to_str())
    except ValueError:
        raise ConfigError(f"the tokenizer stored in checkpoint {path} is corrupt") from None
    if not same:
        raise ConfigError(
            f"checkpoint {path} was trained with another tokenizer than the one these data "
            "settings give; use the run's own data settings (leave the --data.* options out, "
            "or pass the run's config.yaml)" + _other_cache(checkpoint, datamodule)
        )


def _other_cache(checkpoint: dict[str, Any], datamodule: Any) -> str:
    """Where the run's data were prepared under another ``data.cache_dir`` than this
    command's (a machine setting, not taken from the checkpoint): the tokenizer was trained
    anew here, and WordPiece training differs between processes, so the words that say to
    give the run's cache; else ``""``."""
    saved = checkpoint.get("datamodule_hyper_parameters")
    if not isinstance(saved, dict) or "cache_dir" not in saved:
        return ""
    ran, here = saved["cache_dir"], getattr(datamodule, "cache_dir", None)
    if ran == here:
        return ""
    give = "leave --data.cache_dir out" if ran is None else f"pass --data.cache_dir {ran}"

    def where(cache: Any) -> str:
        return "the default cache" if cache is None else f"data.cache_dir={cache!r}"

    return (
        f"; the run prepared its data under {where(ran)} and this command under "
        f"{where(here)} (not taken from the checkpoint: a machine setting), where the "
        f"tokenizer is trained anew: {give}"
    )


class RunConfigSaver(SaveConfigCallback):
    """Saves ``config.yaml`` beside the events; a resumed run keeps the original and, if its
    config differs, writes the new one as ``config-resumed-<k>.yaml``."""

    def setup(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        if self.already_saved or stage != "fit":  # evaluations make no run of their own
            return None
        log_dir = trainer.log_dir  # a collective under DDP: every rank takes the same path
        if log_dir is None:
            return super().setup(trainer, pl_module, stage)
        existing = Path(log_dir) / self.config_filename
        resumed = trainer.strategy.broadcast(trainer.is_global_zero and existing.is_file())
        if not resumed:
            return super().setup(trainer, pl_module, stage)
        if trainer.is_global_zero:
            text = self.parser.dump(self.config, skip_none=False)
            if existing.read_text(encoding="utf-8") != text:
                k = 1
                while (Path(log_dir) / f"config-resumed-{k}.yaml").exists():
                    k += 1
                (Path(log_dir) / f"config-resumed-{k}.yaml").write_text(text, encoding="utf-8")
        self.already_saved = True
        return None


#: Keys of ``fit`` itself (not of a section) that every run's ``config.yaml`` holds, written
#: ``null``: a parse without the ``fit`` subcommand (``prepare``, a sweep's) accepts them null.
FIT_ONLY_KEYS = ("ckpt_path", "weights_only")


class _ParseOnly(RoformerCLI):
    """Parses and validates a configuration without building anything."""

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        super().add_arguments_to_parser(parser)
        parser.add_argument("--ckpt_path", type=str | None, default=None)
        parser.add_argument("--weights_only", type=bool | None, default=None)

    def before_instantiate_classes(self) -> None:
        pass

    def instantiate_classes(self) -> None:
        pass


def validate_config(
    args: Sequence[str],
    model_class: type = MaskedLM,
    data_class: type = PretrainDataModule,
    parse_only: type[LightningCLI] | None = None,
    prelaunch: bool = True,
    command: str = "fit",
) -> Any:
    """Parse ``fit`` arguments (``--config`` files and ``--key value`` overrides) for the given
    model and data classes, with ``parse_only`` (a CLI class that builds nothing; default
    :class:`_ParseOnly`), without instantiating anything, then apply the CLI's pre-launch
    check (``check_before_launch``: every rule ``fit`` applies before it starts) unless
    ``prelaunch`` is False (a partial config: parsed only); returns the namespace or
    raises ConfigError with one line (an option typed twice names ``command``, the command
    the user typed: ``prepare``, ``finetune``)."""
    try:
        with warnings.catch_warnings():
            # LightningCLI warns whenever ``args`` is given while ``sys.argv`` holds a command
            # line (``prepare``, ``sweep``): here parsing a given list is the intent.
            warnings.filterwarnings("ignore", message=".*args parameter is intended.*")
            # ``true``: the seed fit would take, said by fit itself, not by a parse
            warnings.filterwarnings("ignore", message="No seed found, seed set to")
            with seed_environment_kept():  # the seed parsed is this run's, not the process's
                cli = (parse_only or _ParseOnly)(
                    model_class,
                    data_class,
                    subclass_mode_data=data_class is PretrainDataModule,
                    args=list(args),
                    run=False,
                    seed_everything_default=0,
                    parser_kwargs=(
                        mlm_parser_kwargs(subcommands=False)
                        if model_class is MaskedLM
                        else {"exit_on_error": False}
                    ),
                    auto_configure_optimizers=False,
                    command=command,
                )
    except Exception as exc:
        if is_argument_error(exc):
            raise ConfigError(plain_argument_error(exc)) from exc
        raise
    for key in FIT_ONLY_KEYS if parse_only is None else ():
        value = cli.config.get(key)
        if value is not None:
            raise ConfigError(
                f"{key}={value!r}: no checkpoint is read here (a run's config.yaml holds "
                f"{key}: null); leave it out or set it to null"
            )
    if prelaunch:
        cli.check_before_launch(cli.config)  # the very check fit runs before it starts
    return cli.config


def run_dir_of(ckpt_path: str | Path) -> Path | None:
    """The run directory a checkpoint at ``<run>/checkpoints/x.ckpt`` belongs to, if any,
    found where the file is: a symlink to it (or a path through a linked directory) names
    the run the file is in, whose lock a resume then takes, not a new run beside it."""
    try:
        ckpt = Path(ckpt_path).resolve()
    except (OSError, RuntimeError, ValueError):  # a symlink loop: the reader reports it
        return None
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


def is_run_logger(logger: Any) -> bool:
    return (
        logger is not None
        and not isinstance(logger, bool)
        and getattr(logger, "class_path", None) in (RUN_LOGGER, "RunLogger")
    )


#: The base experiment every pretraining config composes on: the per-scheme files in
#: ``configs/`` hold only what their ablation changes. In a source checkout (the README's
#: editable install) it lies beside the package.
BASE_CONFIG = Path(__file__).resolve().parents[2] / "configs" / "base.yaml"


#: jsonargparse's parser mode of the pretraining commands: YAML, each document's flat
#: ``data`` section resolved to its class (:func:`~roformer_lit.data.modules.flat_sections`).
PARSER_MODE = "roformer_pretraining"


def _load_pretraining_yaml(text: str) -> Any:
    """jsonargparse's current ``yaml`` loader (the alias guard's, in ``main``), then a flat
    ``data`` section that names ``probe`` turned into its class."""
    return flat_sections(get_loader("yaml")(text))


set_loader(PARSER_MODE, _load_pretraining_yaml, exceptions=(yaml.YAMLError,))


def _flags(argv: Sequence[str]) -> Iterator[tuple[list[str], str, Any]]:
    """Each command-line flag with its value: ``(the words it spans, its name, its value
    parsed as YAML)``: ``--name=value`` is one word, ``--name value`` two; a flag followed
    by another flag (or by nothing) has no value (``inspect.Parameter.empty``); a word that
    is not a flag is ``([word], word, None)``."""
    i = 0
    while i < len(argv):
        name, equals, value = argv[i].partition("=")
        if not name.startswith("--"):
            yield [argv[i]], argv[i], None
            i += 1
            continue
        if not equals and (i + 1 == len(argv) or argv[i + 1].startswith("--")):
            yield [argv[i]], name, inspect.Parameter.empty
            i += 1
            continue
        words = [argv[i]] if equals else list(argv[i : i + 2])
        if not equals:
            value = argv[i + 1]
        parsed = yaml_value(value)
        yield words, name, parsed
        i += len(words)


def probe_flags_pick_the_class(argv: Sequence[str]) -> list[str]:
    """``argv`` with the data module's class named where the data flags start, as the last
    ``--data.probe`` flag picks it (``probe`` picks it in a flat section too:
    :func:`~roformer_lit.data.modules.data_class_for`): ``--data.probe copy`` builds the
    position task's module over any config, whatever order its settings' flags come in;
    ``--data.probe null`` the corpus's (the flag is then left out: a corpus has no
    ``probe``). Without a ``--data.probe`` flag, ``argv`` as it is."""
    names = ("--data.probe", "--data.init_args.probe")
    flags = list(_flags(argv))
    probes = [value for _, name, value in flags if name in names]
    if not probes:
        return list(argv)
    task = probes[-1]
    cls = data_class_for({"probe": task})
    kept: list[str] = []  # without the other class's settings at their defaults
    for words, name, value in flags:
        if name in names and value is None:  # the corpus: no probe setting
            continue
        one_data_key = name.startswith("--data.") and name.count(".") == 1
        if one_data_key and name not in names and left_out(cls, name[len("--data.") :], value):
            continue
        kept.extend(words)
    first = next((i for i, a in enumerate(kept) if a.startswith("--data.")), len(kept))
    return [*kept[:first], "--data", class_path(cls), *kept[first:]]


def data_key_refusal(exc: BaseException) -> str | None:
    """The one line for jsonargparse's refusal of a ``data`` key the chosen data module
    does not take (``--data.train_files x`` with a position task), naming its valid keys;
    None for any other error. The error text is read by
    :func:`~roformer_lit.training.lightning_compat.refused_data_key`."""
    refused = refused_data_key(exc)
    if refused is None:
        return None
    key, value, named = refused
    lacking = [cls for cls in DATA_MODULES if key not in cls.arguments()]
    chosen = [cls for cls in lacking if named and named.endswith(cls.__name__)]
    cls = (chosen or lacking or [None])[0]
    if cls is None:
        return None
    return refusal(cls, key, value)


def mlm_parser_kwargs(subcommands: bool = True, **extra: Any) -> dict[str, Any]:
    """LightningCLI's ``parser_kwargs`` for the pretraining commands: errors raised (one line
    at the top level), :data:`PARSER_MODE`, and :data:`BASE_CONFIG` read before any
    ``--config`` of ``fit``, ``validate``, ``test`` and ``predict``, so ``--config
    configs/alibi.yaml`` (a few lines) means base + alibi, and later ``--config`` files
    override earlier ones."""
    kwargs: dict[str, Any] = {"exit_on_error": False, "parser_mode": PARSER_MODE, **extra}
    if BASE_CONFIG.is_file():
        if subcommands:
            for subcommand in LIGHTNING_SUBCOMMANDS:
                kwargs[subcommand] = {"default_config_files": [str(BASE_CONFIG)]}
        else:  # one parser without subcommands (LightningCLI with run=False)
            kwargs["default_config_files"] = [str(BASE_CONFIG)]
    return kwargs


def lightning_main(args: Sequence[str] | None) -> None:
    RoformerCLI(
        MaskedLM,
        PretrainDataModule,
        subclass_mode_data=True,
        args=None if args is None else list(args),
        seed_everything_default=0,
        save_config_callback=RunConfigSaver,
        save_config_kwargs={"overwrite": False},
        parser_kwargs=mlm_parser_kwargs(prog="python -m roformer_lit"),
        auto_configure_optimizers=False,
    )


def is_argument_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a command-line parsing error (argparse's or jsonargparse's)."""
    return isinstance(exc, (ArgumentError, argparse.ArgumentError))
