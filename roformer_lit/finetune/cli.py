"""``python -m roformer_lit finetune --config configs/finetune/<task>.yaml --model.pretrained X``
and ``python -m roformer_lit finetune validate --config ... --ckpt_path <fine-tuned ckpt>``.

LightningCLI ``fit`` of a :class:`SequenceClassifier` on a :class:`TaskDataModule`, with
everything :class:`~roformer_lit.commands.pretrain.RoformerCLI` gives ``fit`` (run directories, atomic
last/best checkpoints, exact resume with ``--ckpt_path``, preemption, progress, one-line
errors). What differs:

* links: ``model.pretrained -> data.pretrained`` (the tokenizer comes from the checkpoint),
  ``data.task -> model.task``, ``seed_everything -> data.seed`` and, at instantiation,
  ``data.label_count -> model.num_labels``; no vocabulary link;
* runs are ``runs/finetune/<task>-<pretrained>-ftseed<N>[-k]/`` (``pretrained``: the
  pretrained run's name, or its architecture's words for a checkpoint outside a run:
  :func:`~roformer_lit.training.run_name.finetune_stem`);
* the best checkpoint is the one with the highest ``val/<main metric>`` of the task
  (accuracy, F1 for MRPC/QQP, Matthews for CoLA, Pearson for STS-B and local
  regressions), resolved once the model is built, unless ``--checkpoint.monitor`` names
  another metric (then set ``--checkpoint.mode`` to match);
* ``--ckpt_path`` must be a fine-tuning checkpoint; a pretraining one belongs in
  ``--model.pretrained``, which must be the one the resumed run was fine-tuned from (none
  given: that one, as the checkpoint records it, with one ``note:`` line); the
  resumed run takes its own settings and refuses other typed ones as a pretraining resume
  does (``RoformerCLI.take_checkpoint_settings``: the table of
  :mod:`~roformer_lit.commands.checkpoint_settings`), a finished run is refused, and so is
  a resume onto other data than the run's (files edited since: its data identity,
  ``RoformerCLI.check_checkpoint_data``);
* ``validate`` evaluates a fine-tuned checkpoint on its task's validation split (optionally
  at another ``--data.max_length``: the scheme's own extrapolation; ``learned`` refuses past
  its table), with the checkpoint's settings as every command given ``--ckpt_path`` takes
  them (the same table: its task and label count too, so a local task needs only
  ``--data.val_files``; a typed value the table refuses is one line), and appends the
  result to its run's ``evaluations.jsonl`` (a ``note:`` line where its validation files'
  content differs from the run's); the checkpoint's pretrained run must still be
  readable (its tokenizer and encoder settings: ``model.pretrained`` is the recorded one
  unless typed, and a typed one must be the run's: its tokenizer, encoder settings and
  weight shapes, :func:`~roformer_lit.finetune.pretrained.check_validated_pretrained`);
* a fine-tuning checkpoint records the encoder it was fine-tuned from (its architecture
  record and digest), and ``validate`` and a resume refuse, before anything is built or
  written, a ``model.pretrained`` that builds another encoder (one line naming each
  differing field: :func:`~roformer_lit.finetune.encoder_record.check_encoder_record`),
  whether or not the recorded pretrained file is still there; a checkpoint written before
  the record loads as before.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lightning.pytorch.cli import LightningArgumentParser, LightningCLI

from roformer_lit.commands.checkpoint_settings import config_file_keys, typed_keys
from roformer_lit.commands.pretrain import (
    LIGHTNING_SUBCOMMANDS,
    RUN_LOGGER,
    RoformerCLI,
    RunConfigSaver,
    is_run_logger,
    run_dir_of,
)
from roformer_lit.commands.seed_environment import seed_taken
from roformer_lit.commands.seed_line import say_seed
from roformer_lit.commands.special_ckpt_paths import left_to_lightning
from roformer_lit.errors import ConfigError, refused_settings
from roformer_lit.finetune.datamodule import TaskDataModule, task_files_problem
from roformer_lit.finetune.encoder_record import check_encoder_record
from roformer_lit.finetune.module import SequenceClassifier
from roformer_lit.finetune.prelaunch import check_classifier_settings, check_finetune_config
from roformer_lit.finetune.pretrained import (
    check_resumed_pretrained,
    check_validated_pretrained,
    encoder_config,
    pretrained_refusal,
    read_pretrained,
)
from roformer_lit.finetune.tasks import TASKS, get_task
from roformer_lit.safe_input import check_checkpoint_file
from roformer_lit.training import run_dir
from roformer_lit.training.callbacks import LastCheckpointAtEnd, RunCheckpoint
from roformer_lit.training.checkpoint_io import FINE_TUNING, checkpoint_kind, read_checkpoint
from roformer_lit.training.final_validation import ValidateAtEnd
from roformer_lit.training.lightning_compat import launch_rank, subcommand_options
from roformer_lit.training.resume_guard import file_identity
from roformer_lit.training.run_logger import unique_version
from roformer_lit.training.run_name import finetune_stem
from roformer_lit.training.step_end_validation import check_new_run

#: ``checkpoint.monitor`` default: replaced by ``val/<the task's main metric>``.
AUTO_MONITOR = "auto"
EXPERIMENT = "finetune"


def training_order_seed(seed_everything: Any) -> Any:
    """``data.seed`` (the training order) from ``seed_everything``: the seed it takes
    (:func:`~roformer_lit.commands.seed_environment.seed_taken`: ``true`` is Lightning's,
    ``PL_GLOBAL_SEED`` else 0); ``false`` seeds nothing else, and the order keeps
    ``data.seed``'s default, 0. A seed is passed as it is, checked by ``data.seed``'s rule."""
    taken = seed_taken(seed_everything)
    return 0 if taken is False else taken


class FinetuneCLI(RoformerCLI):
    """RoformerCLI for fine-tuning: task links, run naming and the monitored metric."""

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.link_arguments("model.pretrained", "data.pretrained", apply_on="parse")
        parser.link_arguments("data.task", "model.task", apply_on="parse")
        parser.link_arguments(
            "seed_everything", "data.seed", compute_fn=training_order_seed, apply_on="parse"
        )
        parser.link_arguments("data.label_count", "model.num_labels", apply_on="instantiate")
        parser.add_lightning_class_args(RunCheckpoint, "checkpoint")
        parser.set_defaults(
            {
                "checkpoint.monitor": AUTO_MONITOR,
                "checkpoint.mode": "max",
                "checkpoint.save_last": True,
                "checkpoint.save_top_k": 1,
                "checkpoint.filename": "best",
                "checkpoint.auto_insert_metric_name": False,
                "checkpoint.enable_version_counter": False,
                "trainer.logger": {
                    "class_path": RUN_LOGGER,
                    "init_args": {"save_dir": "runs", "name": EXPERIMENT},
                },
                "trainer.callbacks": [
                    {"class_path": f"{LastCheckpointAtEnd.__module__}.LastCheckpointAtEnd"},
                    {"class_path": f"{ValidateAtEnd.__module__}.ValidateAtEnd"},
                ],
            }
        )

    def check_ckpt_path(self) -> None:
        """``--ckpt_path`` must be a readable fine-tuning checkpoint (one line otherwise)."""
        self._checkpoint = None
        subcommand = self.config.get("subcommand")
        if not subcommand:
            return
        config = self.config[subcommand]
        ckpt = config.get("ckpt_path")
        if ckpt is None and subcommand == "validate":
            raise ConfigError(
                "finetune validate needs --ckpt_path: a fine-tuning checkpoint such as "
                "runs/finetune/<run>/checkpoints/best.ckpt"
            )
        root = (config.get("trainer") or {}).get("default_root_dir")
        if left_to_lightning(ckpt, root, "runs/finetune/<run>/checkpoints/last.ckpt"):
            return
        check_checkpoint_file(ckpt)  # a directory is not "not found"
        self._checkpoint_read = file_identity(ckpt)  # checked again under the run's lock
        checkpoint = read_checkpoint(ckpt)
        hparams = checkpoint.get("hyper_parameters") or {}
        if checkpoint_kind(checkpoint) != FINE_TUNING:
            refusal = pretrained_refusal(checkpoint, ckpt)
            hint = (
                "to fine-tune a pretrained model give it as --model.pretrained"
                if refusal is None
                else f"nor one to fine-tune from: {refusal}"
            )
            raise ConfigError(f"--ckpt_path {ckpt} is not a fine-tuning checkpoint; {hint}")
        given = None  # the pretrained checkpoint, read once
        if subcommand == "validate":  # the encoder it was fine-tuned from, unless typed
            self._take_pretrained_from(hparams.get("pretrained"))
            named = self.config[subcommand].model.pretrained
            given = check_validated_pretrained(ckpt, checkpoint, named)  # the run's, as it was
        else:  # the run's own pretrained checkpoint, then the table and the finished-run check
            named = config.model.pretrained
            if named is None:  # none given anywhere: the one the run was fine-tuned from
                named = self._resume_from_recorded(str(ckpt), hparams.get("pretrained"))
            check_resumed_pretrained(ckpt, hparams.get("pretrained"), named)
        if named is not None:  # the encoder it builds is the one the checkpoint records
            built = encoder_config(given if given is not None else read_pretrained(named))
            check_encoder_record(checkpoint, built, ckpt, named, training=subcommand == "fit")
        asked = self.config[subcommand].data.task
        self.take_checkpoint_settings(subcommand, str(ckpt), checkpoint)
        self._check_task_files(subcommand, str(ckpt), asked)
        self._checkpoint = (str(ckpt), checkpoint)  # its data, once the data module is built

    def _check_task_files(self, subcommand: str, ckpt: str, asked: str) -> None:
        """A checkpoint fine-tuned on another task than the ``--config`` file's takes its own
        (:meth:`take_checkpoint_settings`); where that task cannot take the command's files
        (a local task without ``data.val_files``, a named one given files), one line names
        the checkpoint's task and the file's, not only the files: the user asked for the
        file's task and never typed the checkpoint's."""
        data = self.config[subcommand].data
        if data.task == asked:
            return
        problem = task_files_problem(data.task, data.get("train_files"), data.get("val_files"))
        if problem is not None:
            doing = "evaluates" if subcommand == "validate" else "resumes"
            options = subcommand_options(self, subcommand)
            from_file = "data.task" in config_file_keys(getattr(self, "_argv", []), options)
            whose = "the --config file's task" if from_file else "the default task"
            raise ConfigError(
                f"checkpoint {ckpt} was fine-tuned on task {data.task!r}, not on {whose} "
                f"{asked!r}, and {doing} on its own task: {problem}; "
                f"give those, or a checkpoint fine-tuned on {asked!r}"
            )

    def _resume_from_recorded(self, ckpt: str, recorded: Any) -> Any:
        """A resumed fine-tune given no ``model.pretrained`` (typed or in a ``--config``
        file) takes the pretrained checkpoint its run was fine-tuned from (the checkpoint's
        ``hyper_parameters['pretrained']``), with one ``note:`` line saying so; one
        ``error:`` line where that file is not found from here (moved: give its new place).
        Returns it (None for a checkpoint that records none: the rule of a new fine-tune
        then asks for one)."""
        if recorded is None:
            return None
        if not Path(str(recorded)).expanduser().is_file():
            raise ConfigError(
                f"--ckpt_path {ckpt} was fine-tuned from {recorded}, which is not found from "
                f"here; give where it is now as --model.pretrained"
            )
        update = {"fit": {"model": {"pretrained": recorded}}}
        self.config = self.parser.parse_object(update, self.config)
        if launch_rank() in (None, 0):
            print(
                f"note: model.pretrained={recorded}: the pretrained checkpoint {ckpt} was "
                "fine-tuned from (recorded in it), as none was given",
                file=sys.stderr,
                flush=True,
            )
        return recorded

    def _take_pretrained_from(self, recorded: str | None) -> None:
        """``validate``: ``model.pretrained`` (the tokenizer and encoder settings the
        classifier is built on) is the pretrained checkpoint the run was fine-tuned from,
        unless typed. A path belongs to the machine, not the run
        (:data:`~roformer_lit.commands.checkpoint_settings.MACHINE_SETTINGS`), so the table
        leaves it to the command; every other setting is the table's."""
        options = subcommand_options(self, "validate")
        if recorded is None or "model.pretrained" in typed_keys(
            getattr(self, "_argv", []), options
        ):
            return
        update = {"validate": {"model": {"pretrained": recorded}}}
        self.config = self.parser.parse_object(update, self.config)

    def check_before_launch(self, config: Any) -> None:
        """The fine-tuning rules, shared with ``sweep`` (:func:`check_finetune_config`), and
        a new run's validation schedule (:func:`check_new_run`)."""
        check_finetune_config(config)
        if self.subcommand in (None, "fit"):
            check_new_run(config)

    def check_printed(self, config: Any) -> None:
        """``--print_config``'s check: the classifier's settings
        (:func:`check_classifier_settings`; the encoder's architecture is the pretrained
        checkpoint's, read when the classifier is built)."""
        model = config.get("model")
        if model is not None:
            check_classifier_settings(model)

    def before_instantiate_classes(self) -> None:
        """Resolve the monitored metric and name a new run ``<task>-<pretrained>-ftseed<N>``;
        the rest (resuming into a checkpoint's own run, locking) is RoformerCLI's."""
        config = self.config[self.subcommand] if self.subcommand else self.config
        self.check_before_launch(config)
        spec = get_task(config.data.task)
        checkpoint = read_pretrained(config.model.pretrained)  # one line if it is not one
        logger = config.trainer.logger
        if self.subcommand == "fit" and is_run_logger(logger):
            args = logger.init_args
            ckpt = config.get("ckpt_path")
            own_run = run_dir_of(ckpt) if ckpt else None
            if args.get("version") is None and own_run is None:
                stem = finetune_stem(
                    spec.name,
                    run_dir_of(config.model.pretrained),
                    checkpoint.get("hyper_parameters") or {},
                    config.seed_everything,
                )
                root, name = args.get("save_dir") or "runs", args.get("name") or EXPERIMENT
                claim = run_dir.claim_new if launch_rank() in (None, 0) else unique_version
                args.version = claim(root, name, stem)
        super().before_instantiate_classes()

    def instantiate_classes(self) -> None:
        try:
            LightningCLI.instantiate_classes(self)
        except (ValueError, TypeError) as exc:  # a class refused its arguments
            raise refused_settings(exc) from None  # the class's own line, or a new one
        limit = self.model.max_length
        if limit is not None and self.datamodule.max_length > limit:
            raise ConfigError(
                f"data.max_length={self.datamodule.max_length} exceeds the pretrained "
                f"encoder's {self.model.encoder.position.__class__.__name__} position table "
                f"({limit} positions); lower data.max_length (valid: <= {limit})"
            )
        for callback in self.trainer.checkpoint_callbacks:
            if getattr(callback, "monitor", None) == AUTO_MONITOR:
                callback.monitor = f"val/{self.model.metric_names[0]}"
        checkpoint, self._checkpoint = getattr(self, "_checkpoint", None), None
        if checkpoint is not None:
            self.check_checkpoint_data(*checkpoint)
            self.pin_evaluated(*checkpoint)
        notes = self.datamodule.notes() if self.subcommand == "fit" else []
        if self.subcommand == "fit" and self.config["fit"].get("ckpt_path") is None:  # new run
            notes += [note for note in [self.model.schedule_note()] if note]
        if launch_rank() in (None, 0):
            for note in notes:
                print(note, file=sys.stderr, flush=True)
        say_seed(self.setting(self.config, "seed_everything"))


def main(args: Sequence[str]) -> int:
    """The ``finetune`` command: LightningCLI ``fit`` with the fine-tuning classes."""
    argv = list(args)
    subcommand = "fit"
    if argv and argv[0] == "validate":
        subcommand, argv = "validate", argv[1:]
    elif argv and argv[0] in LIGHTNING_SUBCOMMANDS:
        raise ConfigError(
            f"finetune takes no subcommand {argv[0]!r}: it fits by default, and "
            "`finetune validate --ckpt_path CKPT` evaluates a fine-tuned checkpoint"
        )
    with warnings.catch_warnings():  # args always given: Lightning's "args and sys.argv" note
        warnings.filterwarnings("ignore", message=".*args parameter is intended")
        _run(subcommand, argv)
    return 0


def _run(subcommand: str, argv: list[str]) -> None:
    FinetuneCLI(
        SequenceClassifier,
        TaskDataModule,
        args=[subcommand, *argv],
        command="finetune" if subcommand == "fit" else f"finetune {subcommand}",
        seed_everything_default=0,
        save_config_callback=RunConfigSaver,
        save_config_kwargs={"overwrite": False},
        parser_kwargs={
            "exit_on_error": False,
            "prog": "python -m roformer_lit finetune",
            "description": f"Fine-tune a pretrained checkpoint; tasks: {', '.join(TASKS)}",
        },
        auto_configure_optimizers=False,
    )
