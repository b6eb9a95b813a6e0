"""What ``fit``/``validate``/``test``/``predict --ckpt_path`` take from the checkpoint.

**The rule.** Given a checkpoint, every model and data setting of its run comes from the
checkpoint; only a flag typed on the command line (``--data.max_length 64``,
``--model.position_kwargs '{...}'``, ``--data '{max_length: 64}'``) changes one. Values
from ``--config`` files -- the shipped ``configs/base.yaml`` read first, a scheme config,
a run's ``config.yaml``, your own -- never replace the run's own (one ``note:`` line lists
those that differed), so ``validate --config configs/rope.yaml --ckpt_path RUN`` evaluates
exactly as the run validated itself, whatever the config says. What was typed is read
from the command line by :func:`typed_keys`, not from equality with a default: a typed
``--data.validation_positions ordinary`` counts as typed.

**A typed value that differs from the run's** is handled per key and per use by
:data:`CHECKPOINT_SETTINGS` (``evaluate``: validate, test, predict; ``resume``: fit):

* ``refuse`` -- one ``error:`` line naming the key, the typed value and the run's;
* ``notice`` -- it wins, with one ``note:`` line ("evaluating at data.max_length=512, the
  run trained at 128");
* ``quiet`` -- it wins silently (it does not change what is measured or trained:
  ``batch_size`` of an evaluation, the learning rate of an evaluation);
* ``exact`` -- a notice where the resumed run is the run that was planned so from the
  start (:data:`EXACT_BY`), else one ``error:`` line saying why.

**A resumed run is the run it was.** A resumed ``fit`` also takes the trainer's settings
that shape the run from the checkpoint (its ``trainer_settings`` record,
:data:`~roformer_lit.training.trainer_settings.RECORDED_TRAINER_SETTINGS`; a ``--config`` file
cannot change them, and one ``note:`` line says what it replaced), compared as the trainer
holds them (:data:`TRAINER_HOLDS`: ``max_epochs: null`` is 1000 or -1, ``precision: 32`` is
``32-true``). Only what a checkpoint recorded is compared: one from before a key was
recorded keeps the command's value. What a typed value that differs does, per setting:

* ``trainer.max_steps``, ``trainer.max_epochs``: ``exact`` -- the run's length; taken where
  the steps already taken keep their learning rates (:func:`changed_steps`,
  :func:`changed_epochs`), else refused;
* ``trainer.accumulate_grad_batches``, ``trainer.gradient_clip_val``,
  ``trainer.gradient_clip_algorithm``, ``trainer.precision``: ``refuse`` -- they change what
  one optimiser step is (its batch, its update, its rounding; an fp16 run's loss scaler),
  and accumulation also the steps an epoch has, so the schedule's length;
* the optimiser and schedule (``model.learning_rate``, ``weight_decay``, ``betas``,
  ``warmup_steps``, ``min_lr_ratio``, ``lr_schedule``, ``decay_fraction``,
  ``position_lr_scale``; fine-tuning's ``warmup_ratio``): ``refuse`` -- the optimiser's
  moments and the schedule's steps so far were taken for the run's values, so the resumed
  run would be neither that run nor one planned with the new values; a new run is;
* ``trainer.limit_train_batches``, ``trainer.overfit_batches``: ``refuse`` -- they change
  what the run trains on and the batches an epoch has, so the steps an epoch makes and a
  schedule planned from them;
* ``trainer.limit_val_batches``: ``refuse`` -- it changes what validation measures: the
  best val/loss so far (and ``best.ckpt``) was measured on the run's validation set;
* ``trainer.val_check_interval``, ``trainer.check_val_every_n_epoch``: ``refuse`` -- they
  change when validation runs, and so which steps' val/loss the run's curve, its best
  val/loss and ``best.ckpt`` are taken from. A run that validated on two schedules has no
  one value its ``config.yaml`` could record, and ``compare`` and a sweep read that value
  as the run's for its whole length: to validate otherwise, start a new run (or evaluate a
  checkpoint with ``validate``);
* the dropouts: ``notice`` (they change no state the run carries).

The batch limits and the validation schedule are recorded since the
:data:`~roformer_lit.training.trainer_settings.MEASURED_TRAINER_SETTINGS` that identify a
run for ``compare`` and a sweep are the recorded ones: whatever the run directory's
``config.yaml`` (and a ``config-resumed-<k>.yaml``) says of them is true for the whole run.
A run that never held one as a value records it not
(:mod:`~roformer_lit.training.trainer_record`: the limits under ``overfit_batches``, an
interval on the clock), and it is not compared.

Every refusal is one ``error:`` line naming the setting and both values, and saying to leave
the flag out or start a new run without ``--ckpt_path``. :func:`check_steps_left` refuses,
in one line, a run with nothing left to train: at its ``max_steps``, or, without a step
limit, at its ``max_epochs``. The learning-rate schedule is planned from the run's
length, so a typed ``--trainer.max_steps`` is ``exact`` (:func:`changed_steps`):
taken by a run stopped before its end whose steps so far keep their learning rates (a
``constant`` schedule, or a decaying one still warming up), refused otherwise; a finished
run is never continued. Checkpoints from before the length was recorded are not compared.

The data module's class comes from the checkpoint too: its saved settings name a
position task (``probe``) or not (:func:`~roformer_lit.data.modules.data_class_for`, which
reads the flat settings of earlier versions alike), unless ``--data.probe`` was typed;
the keys the other class takes are left out.

Settings of the machine rather than the run (:data:`MACHINE_SETTINGS`: workers, cache) are
always the command's. A tokenizer change is refused after the data module is built
(``pretrain._check_same_tokenizer``), whatever the keys say, and so is a resume on data
whose content differs from the run's (:mod:`roformer_lit.commands.checkpoint_data`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from lightning.pytorch.callbacks import Timer

from roformer_lit.data.modules import class_path, complete_settings, data_class_for, refusal
from roformer_lit.encoder_config import ENCODER_FIELDS, canonical_name, same_architecture_field
from roformer_lit.errors import ConfigError
from roformer_lit.plan_identity import plain, same_plan
from roformer_lit.training.checkpoint_io import SCHEDULE_STEPS_KEY, TRAINER_SETTINGS_KEY
from roformer_lit.training.lifecycle import same_rates_until
from roformer_lit.training.lightning_compat import batches_into_epoch, epochs_trained
from roformer_lit.training.trainer_settings import TRAINER_HOLDS, held
from roformer_lit.training_config import TrainingConfig

REFUSE, NOTICE, QUIET, EXACT = "refuse", "notice", "quiet", "exact"

#: Setting -> (what a typed value that differs from the run's does in an evaluation, and
#: in a resumed ``fit``). The one place these choices are made; docs/guide/runs.md shows it.
#: Settings of the machine, not of the run: always the command's own (``model.vocab_size``
#: is linked from the data module's tokenizer).
#: ``model.pretrained`` (fine-tuning) is the pretrained checkpoint's path, which may move: a
#: resume checks it names the run's own file (``check_resumed_pretrained``).
MACHINE_SETTINGS = (
    "model.vocab_size",
    "model.pretrained",
    "data.num_workers",
    "data.num_proc",
    "data.cache_dir",
)

#: What a typed architecture field (:class:`~roformer_lit.encoder_config.EncoderConfig`)
#: that differs from the run's does, where it is not :data:`SHAPE`: the field's row of
#: :data:`CHECKPOINT_SETTINGS`.
ARCHITECTURE_SETTINGS: dict[str, tuple[str, str]] = {
    # another layer plan (windows at evaluation) can be evaluated, not resumed
    "layer_plan": (NOTICE, REFUSE),
    # the scheme's options (RoPE scaling at evaluation), tables, numerics
    "position_kwargs": (NOTICE, REFUSE),
    "attention_kwargs": (NOTICE, NOTICE),
    "max_positions": (NOTICE, REFUSE),
    "layer_norm_eps": (NOTICE, REFUSE),
    # training only
    "dropout": (QUIET, NOTICE),
    "attention_dropout": (QUIET, NOTICE),
}
#: Every other architecture field -- the network's shape, which cannot change under its
#: weights (position, attention, sizes, pre_norm, block), and any field added later -- is
#: refused in both uses.
SHAPE = (REFUSE, REFUSE)

#: Setting -> (what a typed value that differs from the run's does in an evaluation, and
#: in a resumed ``fit``). The one place these choices are made; docs/guide/runs.md shows it.
#: Its ``model.*`` rows of the architecture are one per field of ``EncoderConfig``.
CHECKPOINT_SETTINGS: dict[str, tuple[str, str]] = {
    **{
        f"model.{name}": ARCHITECTURE_SETTINGS.get(name, SHAPE)
        for name in ENCODER_FIELDS
        if f"model.{name}" not in MACHINE_SETTINGS
    },
    # the optimiser and its schedule: its state and the steps so far were taken for these
    "model.learning_rate": (QUIET, REFUSE),
    "model.weight_decay": (QUIET, REFUSE),
    "model.betas": (QUIET, REFUSE),
    "model.warmup_steps": (QUIET, REFUSE),
    "model.min_lr_ratio": (QUIET, REFUSE),
    "model.lr_schedule": (QUIET, REFUSE),
    "model.decay_fraction": (QUIET, REFUSE),
    "model.position_lr_scale": (QUIET, REFUSE),
    # a fine-tuning classifier's own (SequenceClassifier)
    "model.warmup_ratio": (QUIET, REFUSE),
    "model.pooling": (REFUSE, REFUSE),
    "model.classifier_dropout": (QUIET, NOTICE),
    "model.init_std": (QUIET, QUIET),
    "model.compile": (QUIET, QUIET),
    "model.skip_nonfinite": (QUIET, QUIET),
    # a fine-tuning run's task and its head's size (recorded by its model: SET_THROUGH):
    # the head's shape and the metric are the task's
    "data.task": (REFUSE, REFUSE),
    "data.num_labels": (REFUSE, REFUSE),
    # the corpus: another corpus can be evaluated (with the run's tokenizer), not resumed on
    "data.train_files": (NOTICE, REFUSE),
    "data.val_files": (NOTICE, REFUSE),
    "data.val_fraction": (NOTICE, REFUSE),
    "data.text_field": (NOTICE, REFUSE),
    "data.dataset": (NOTICE, REFUSE),
    "data.dataset_config": (NOTICE, REFUSE),
    "data.dataset_split": (NOTICE, REFUSE),
    "data.dataset_val_split": (NOTICE, REFUSE),
    "data.dataset_streaming": (NOTICE, REFUSE),
    # the tokenizer: refused after the data module is built if it gives another tokenizer
    "data.tokenizer_file": (NOTICE, NOTICE),
    "data.vocab_size": (NOTICE, NOTICE),
    "data.tokenizer_sample_mb": (NOTICE, NOTICE),
    # what validation measures, and what training sees
    "data.max_length": (NOTICE, REFUSE),
    "data.max_val_blocks": (NOTICE, REFUSE),
    "data.mlm_probability": (NOTICE, REFUSE),
    "data.seed": (NOTICE, REFUSE),
    "data.document_mask": (NOTICE, REFUSE),
    "data.random_positions": (NOTICE, REFUSE),
    "data.validation_positions": (NOTICE, REFUSE),
    "data.probe": (NOTICE, REFUSE),
    "data.probe_min_length": (NOTICE, REFUSE),
    "data.probe_max_length": (NOTICE, REFUSE),
    "data.probe_symbols": (NOTICE, REFUSE),
    "data.probe_hint": (QUIET, REFUSE),
    "data.batch_size": (QUIET, REFUSE),
    "data.max_train_blocks": (QUIET, REFUSE),
    # the trainer's settings of the run (its trainer_settings record): a resume only
    "trainer.max_steps": (QUIET, EXACT),
    "trainer.max_epochs": (QUIET, EXACT),
    "trainer.accumulate_grad_batches": (QUIET, REFUSE),
    "trainer.gradient_clip_val": (QUIET, REFUSE),
    "trainer.gradient_clip_algorithm": (QUIET, REFUSE),
    "trainer.precision": (QUIET, REFUSE),
    # what an epoch trains on (and so the steps it has), what validation measures, and
    # when it runs: the best val/loss so far was taken on the run's set at its steps
    "trainer.limit_train_batches": (QUIET, REFUSE),
    "trainer.overfit_batches": (QUIET, REFUSE),
    "trainer.limit_val_batches": (QUIET, REFUSE),
    "trainer.val_check_interval": (QUIET, REFUSE),
    "trainer.check_val_every_n_epoch": (QUIET, REFUSE),
}


def _same_field(name: str) -> Callable[[Mapping[str, Any], Mapping[str, Any]], bool]:
    return lambda ours, theirs: same_architecture_field(name, ours, theirs)


def _same_held(key: str) -> Callable[[Mapping[str, Any], Mapping[str, Any]], bool]:
    return lambda ours, theirs: same_setting(held(key, ours), held(key, theirs))


#: Settings whose value is compared as what it builds, given the two sections holding it
#: (the command's, the run's): a layer plan written with ``layers:`` is the run's
#: ``pattern:`` plan (:func:`~roformer_lit.plan_identity.same_plan`), a built-in scheme or
#: kernel named by its import path is its short name (:func:`same_component`), every
#: other architecture field as the config holds it (a run's ``block`` recorded as written,
#: ``{mlp: swiglu, norm: layernorm}``, is ``{mlp: swiglu}``:
#: :func:`~roformer_lit.encoder_config.same_architecture_field`), a trainer
#: setting is what the trainer holds (:data:`TRAINER_HOLDS`). Every other setting
#: compares as plain data (:func:`same_setting`).
SAME_BY: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], bool]] = {
    **{f"model.{name}": _same_field(name) for name in ENCODER_FIELDS},
    "model.layer_plan": same_plan,
    "model.position": lambda ours, theirs: same_component("position", ours, theirs),
    "model.attention": lambda ours, theirs: same_component("attention", ours, theirs),
    **{f"trainer.{key}": _same_held(key) for key in TRAINER_HOLDS},
}


def same_component(key: str, ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> bool:
    """Whether two model sections name one scheme (``key`` ``position``) or kernel
    (``attention``), however spelled: a built-in by its short name or its import path
    (:func:`~roformer_lit.encoder_config.canonical_name`)."""
    return canonical_name(key, ours.get(key)) == canonical_name(key, theirs.get(key))


#: Sections a checkpoint fills, and where the checkpoint keeps each one's settings.
SECTIONS = {
    "model": "hyper_parameters",
    "data": "datamodule_hyper_parameters",
    "trainer": TRAINER_SETTINGS_KEY,
}
#: Sections filled in a resumed ``fit`` only: the run's length means nothing to an evaluation.
TRAINING_SECTIONS = ("trainer",)
#: The data module saves ``data.vocab_size`` under this name.
_SAVED_AS = {"data.vocab_size": "requested_vocab_size"}
#: Settings a fine-tuning run's model records that its command sets through the data
#: section: ``FinetuneCLI`` links ``data.task -> model.task`` and the data's label count
#: (``data.num_labels`` where given) to ``model.num_labels``, and its data module saves no
#: settings of its own. They are compared, refused and taken as the data settings a user
#: types; a ``model.task`` filled alone would be replaced by the link from the command's
#: ``data.task``.
SET_THROUGH = {"model.task": "data.task", "model.num_labels": "data.num_labels"}


def _option_dest(name: str, options: Mapping[str, Any]) -> str | None:
    """The parser destination of a command-line option: the exact option or a dotted key
    inside one (``--model.position_kwargs.base``); None for anything else (an abbreviation
    never gets here: the parser refuses it, :mod:`~roformer_lit.commands.whole_options`)."""
    if name in options:
        return getattr(options[name], "dest", None)
    while "." in name:
        name = name.rsplit(".", 1)[0]
        if name in options:
            return getattr(options[name], "dest", None)
    return None


def _inline_keys(value: str) -> list[str]:
    """The keys of an inline YAML mapping given to a whole section (``--data '{...}'``);
    none for a file name (a config file) or anything else."""
    from roformer_lit.safe_input import safe_yaml_load

    try:
        parsed = safe_yaml_load(value)
    except Exception:
        return []
    if not isinstance(parsed, dict):
        return []
    inner = parsed.get("init_args")
    return [str(k) for k in (inner if isinstance(inner, dict) else parsed)]


def _nested_key(name: str, section: str) -> str:
    """The setting a dotted option inside a section named by its class sets
    (``--data.max_length``, ``--data.init_args.max_length``: ``max_length``); "" for the
    section itself, its ``class_path`` or its help."""
    prefix = f"--{section}."
    if not name.startswith(prefix):
        return ""
    rest = name[len(prefix) :]
    rest = rest[len("init_args.") :] if rest.startswith("init_args.") else rest
    first = rest.split(".")[0]
    return "" if first in ("class_path", "init_args", "help") else first


def typed_keys(args: Sequence[str], options: Mapping[str, Any]) -> set[str]:
    """The ``model.*``/``data.*`` settings typed on the command line ``args``: the one
    function that says what the user typed (``options``: the parser's option strings ->
    actions). ``--data.max_length 64``, ``--model.hidden_size=64``, ``--data.train_files+
    x`` and the keys of an inline ``--data '{max_length: 64}'`` count; ``--config`` files
    and ``--data file.yaml`` do not (see the module)."""
    typed: set[str] = set()
    for i, arg in enumerate(args):
        if not arg.startswith("--"):
            continue
        name, equals, value = arg.partition("=")
        dest = _option_dest(name.rstrip("+"), options)
        if dest is None:
            continue
        section, _, key = dest.partition(".")
        if section not in SECTIONS:
            continue
        key = key or _nested_key(name.rstrip("+"), section)
        if key:
            typed.add(f"{section}.{key.split('.')[0]}")
            continue
        if not equals:
            value = args[i + 1] if i + 1 < len(args) else ""
        typed.update(f"{section}.{k}" for k in _inline_keys(value))
    return typed


def config_file_keys(args: Sequence[str], options: Mapping[str, Any]) -> set[str]:
    """The ``model.*``/``data.*`` settings the ``--config`` files of ``args`` (and a section
    given as a file, ``--data my_data.yaml``) set: what the ``note:`` line of replaced
    values looks at. Unreadable files give nothing here (the parser reports them)."""
    from roformer_lit.safe_input import read_text_file, safe_yaml_load

    found: set[str] = set()
    for i, arg in enumerate(args):
        name, equals, value = arg.partition("=")
        dest = _option_dest(name, options) if name.startswith("--") or name == "-c" else None
        if name == "-c":
            dest = "config"
        if dest not in ("config", *SECTIONS):
            continue
        if not equals:
            value = args[i + 1] if i + 1 < len(args) else ""
        try:
            document = safe_yaml_load(read_text_file(value, "config file"))
        except Exception:
            continue
        if not isinstance(document, dict):
            continue
        sections = {dest: document} if dest in SECTIONS else document
        for section in SECTIONS:
            values = sections.get(section)
            if isinstance(values, dict):
                inner = values.get("init_args")
                found.update(
                    f"{section}.{k}" for k in (inner if isinstance(inner, dict) else values)
                )
    return found


def _shown(value: Any) -> Any:
    """``value`` as a message shows it: :func:`_plain`, but an empty mapping as ``{}``
    (what the run stored), not the None it compares as."""
    plain = _plain(value)
    empty_mapping = isinstance(value, Mapping) or callable(getattr(value, "as_dict", None))
    return {} if plain is None and empty_mapping else plain


def _plain(value: Any) -> Any:
    """``value`` as plain data for comparison: mappings as dicts (an empty one as None,
    as jsonargparse reads ``{}``), tuples as lists."""
    as_dict = getattr(value, "as_dict", None)
    if callable(as_dict):
        value = as_dict()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()} or None
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def same_setting(a: Any, b: Any) -> bool:
    """Whether two values of a setting are the same: as plain data (:func:`_plain`), a
    single file name equal to a list holding only it (``own.txt`` and ``[own.txt]``)."""
    a, b = _plain(a), _plain(b)
    if isinstance(a, str) and isinstance(b, list):
        a = [a]
    if isinstance(b, str) and isinstance(a, list):
        b = [b]
    return a == b


def saved_settings(checkpoint: Mapping[str, Any]) -> dict[str, Any]:
    """``section.key`` -> value of every model and data setting a checkpoint's run had."""
    found: dict[str, Any] = {}
    for section, where in SECTIONS.items():
        saved = checkpoint.get(where)
        if not isinstance(saved, Mapping):
            continue
        for key, value in saved.items():
            found[f"{section}.{key}"] = value
    for name, saved_as in _SAVED_AS.items():
        section = name.split(".")[0]
        if f"{section}.{saved_as}" in found:
            found[name] = found.pop(f"{section}.{saved_as}")
    for recorded, name in SET_THROUGH.items():
        if recorded in found:
            found.setdefault(name, found.pop(recorded))
    return found


def _data_section(
    section: Any, saved: Mapping[str, Any], typed: set[str], path: str = "the checkpoint"
) -> tuple[type | None, dict[str, Any]]:
    """(the data module class the run had, None: the command's; the command's data
    settings as that class has them). The class follows the checkpoint's settings
    (:func:`~roformer_lit.data.modules.data_class_for`: ``probe`` picks it, in an earlier
    version's flat settings too) unless ``data.probe`` was typed; :func:`checkpoint_settings`
    names it in the fill even where the command's is the same: values filled without a
    ``class_path`` are read against the parser's default class (the corpus), which refused
    a position task's keys when the task's own config was given (``validate --config
    configs/probes/copy.yaml``). A switch leaves the command's values of the keys both
    classes take; a key typed for the command's class that the run's does not take is one
    ConfigError line naming it."""
    ours_class, ours = complete_settings(section)
    theirs = {k.split(".", 1)[1]: v for k, v in saved.items() if k.startswith("data.")}
    if not theirs:
        return None, ours
    if "data.probe" in typed:  # the typed task picks the class; named in the fill, whose
        return ours_class, ours  # values would otherwise be read against the corpus's
    theirs_class = data_class_for(theirs)
    if theirs_class is ours_class:
        return theirs_class, ours
    accepted = theirs_class.arguments()
    for name in sorted(typed):  # typed for the command's class, which the run's takes not
        key = name.split(".", 1)[1] if name.startswith("data.") else ""
        if key and key not in accepted and key in ours:
            raise ConfigError(
                f"checkpoint {path} is a run of {theirs_class.__name__}"
                + (f" (data.probe={theirs['probe']!r})" if theirs.get("probe") else "")
                + ": "
                + refusal(theirs_class, key, ours[key], theirs.get("probe"))
            )
    switched = {**accepted, **{k: v for k, v in ours.items() if k in accepted}}
    return theirs_class, switched


def _equivalent(name: str, section: Any, saved: Mapping[str, Any]) -> bool:
    """Whether setting ``name`` of the command's ``section`` (the one holding it) builds what
    the run's (``saved``: :func:`saved_settings`) built, for a setting of :data:`SAME_BY`."""
    same = SAME_BY.get(name)
    if same is None or section is None:
        return False
    prefix = name.split(".", 1)[0] + "."
    theirs = {k[len(prefix) :]: v for k, v in saved.items() if k.startswith(prefix)}
    return same(plain(section), theirs)


def _same(name: str, values: tuple[Any, Any], section: Any, saved: Mapping[str, Any]) -> bool:
    """Whether the command's value of setting ``name`` is the run's (``values``: the
    command's, the run's; ``section``: the command's section holding it; ``saved``:
    :func:`saved_settings`). A trainer setting is what the trainer holds
    (:data:`TRAINER_HOLDS`) and nothing else: ``limit_val_batches: 1`` (one batch) is not
    the run's ``1.0`` (every batch), though the two compare equal as numbers. Any other
    setting is the same as plain data (:func:`same_setting`) or as what it builds
    (:data:`SAME_BY`)."""
    if name.startswith("trainer.") and name.split(".", 1)[1] in TRAINER_HOLDS:
        return _equivalent(name, section, saved)
    return same_setting(*values) or _equivalent(name, section, saved)


#: The run's schedule settings where a checkpoint does not name them (its version's defaults).
_SCHEDULE_DEFAULTS = {
    key: getattr(TrainingConfig, key)
    for key in ("warmup_steps", "min_lr_ratio", "lr_schedule", "decay_fraction")
}


def _schedule(checkpoint: Mapping[str, Any]) -> dict[str, Any]:
    """The run's learning-rate schedule settings (``model.warmup_steps``, ``min_lr_ratio``,
    ``lr_schedule``, ``decay_fraction``) as its checkpoint saved them."""
    saved = checkpoint.get("hyper_parameters")
    saved = saved if isinstance(saved, Mapping) else {}
    return {key: saved.get(key, default) for key, default in _SCHEDULE_DEFAULTS.items()}


#: Why a finished run is not continued: what its checkpoint at the end closed.
FINISHED = (
    "the run has finished, and a finished run cannot be continued exactly (its last "
    "checkpoint closed the epoch, and a decaying learning rate ended there)"
)


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def changed_steps(checkpoint: Mapping[str, Any], trainer: Any) -> str | None:
    """Why resuming with the command's ``trainer`` section (its ``max_steps``) would not give
    the run that was planned for ``max_steps`` from the start, or None where it would: the
    checkpoint is from before the run's end (its ``global_step`` below the total its
    schedule was planned for, the ``schedule_steps`` record; the checkpoint at the end has
    closed the epoch, so the data would not continue where they were), and the run's
    schedule gives the steps it took the same learning rates over either total
    (:func:`~roformer_lit.training.lifecycle.same_rates_until`: ``constant`` always,
    ``wsd`` while stable, any schedule while warming up). Not where a total is unknown: no
    record, no step limit, or a ``max_epochs`` that may end the run first."""
    trainer = trainer if trainer is not None else {}
    total, epochs = trainer.get("max_steps"), trainer.get("max_epochs")
    planned, step = checkpoint.get(SCHEDULE_STEPS_KEY), checkpoint.get("global_step")
    why = _not_stopped_early(checkpoint)
    if why is not None:
        return why
    if not _int(total) or total <= 0 or (epochs is not None and epochs >= 0):
        return (
            f"its learning rates were planned for {planned} steps, and this run's length "
            "would not be a trainer.max_steps alone"
        )
    schedule = _schedule(checkpoint)
    kept = same_rates_until(
        step,
        (planned, total),
        int(schedule["warmup_steps"]),
        float(schedule["min_lr_ratio"]),
        str(schedule["lr_schedule"]),
        float(schedule["decay_fraction"]),
    )
    if kept:
        return None
    return (
        f"its {schedule['lr_schedule']!r} learning-rate schedule planned the rates of the "
        f"{step} steps it took for its own length"
    )


def _not_stopped_early(checkpoint: Mapping[str, Any]) -> str | None:
    """Why no other length can continue the checkpoint's run exactly, whatever the schedule:
    no record of the length its rates were planned for, a run at its end
    (:data:`FINISHED`), or a warm-up planned as a share of the run (:func:`_warmup_share`);
    None for a run stopped before its end."""
    planned, step = checkpoint.get(SCHEDULE_STEPS_KEY), checkpoint.get("global_step")
    if not _int(planned) or not _int(step):
        return "the checkpoint does not record the length its learning rates were planned for"
    if step >= planned:
        return FINISHED
    return _warmup_share(checkpoint, planned)


def _warmup_share(checkpoint: Mapping[str, Any], planned: int) -> str | None:
    """Why a fine-tuning run's rates depend on its length (its warm-up is a share of it,
    ``model.warmup_ratio``), or None for a run whose warm-up is a number of steps."""
    saved = checkpoint.get("hyper_parameters")
    saved = saved if isinstance(saved, Mapping) else {}
    if "warmup_ratio" not in saved or "warmup_steps" in saved:
        return None
    return (
        f"its warm-up and decay were planned as shares of its {planned} steps "
        f"(model.warmup_ratio={saved['warmup_ratio']!r})"
    )


def changed_epochs(checkpoint: Mapping[str, Any], trainer: Any) -> str | None:
    """Why resuming with the command's ``trainer.max_epochs`` would not give the run that was
    planned for it from the start, or None where it would: a run stopped before its end
    (below its ``schedule_steps``) whose rates do not depend on its length (``constant``;
    the steps a number of epochs makes are not known before the data are built, so a
    decaying schedule is never taken as exact)."""
    planned, step = checkpoint.get(SCHEDULE_STEPS_KEY), checkpoint.get("global_step")
    why = _not_stopped_early(checkpoint)
    if why is not None:
        return why
    schedule = _schedule(checkpoint)["lr_schedule"]
    if schedule == "constant":
        return None
    return (
        f"its {schedule!r} learning-rate schedule planned the rates of the {step} steps it "
        f"took for its own length of {planned} steps"
    )


#: The test of each ``exact`` setting: (the checkpoint, the command's section holding the
#: setting) -> why the resumed run would not be the run planned so, or None.
EXACT_BY: dict[str, Callable[[Mapping[str, Any], Any], str | None]] = {
    "trainer.max_steps": changed_steps,
    "trainer.max_epochs": changed_epochs,
}


def check_steps_left(checkpoint: Mapping[str, Any], config: Any, path: str) -> None:
    """Refuse, in one ConfigError line, to resume a run with nothing left to train: the
    checkpoint's step has reached the command's ``trainer.max_steps`` (the run's own unless
    typed), or, without a step limit, its epoch the command's ``trainer.max_epochs``.
    Lightning would train nothing (or one more epoch) and still write into the finished run
    (an events file, a config). The line says how to train further: a larger limit where
    one keeps the steps taken (:func:`changed_steps`, :func:`changed_epochs`: a run
    stopped before its end, given a smaller one), else a new run."""
    trainer = config.get("trainer") if config.get("trainer") is not None else {}
    step, max_steps = checkpoint.get("global_step"), trainer.get("max_steps")
    if not _int(max_steps) or max_steps <= 0:
        _check_epochs_left(checkpoint, trainer, path)
        return
    if not _int(step) or step < max_steps:
        return
    longer = {"max_steps": step + 1, "max_epochs": trainer.get("max_epochs")}
    why = changed_steps(checkpoint, longer)
    how = (
        "to train on, leave the flag out or pass a larger --trainer.max_steps"
        if why is None
        else f"{why}: to train longer, train a new run with a larger --trainer.max_steps"
    )
    raise ConfigError(
        f"checkpoint {path} is at step {step} and trainer.max_steps is {max_steps}: nothing "
        f"is left to train; {how}"
    )


def check_time_left(checkpoint: Mapping[str, Any], config: Any, path: str) -> None:
    """Refuse, in one ConfigError line, to resume a run whose ``trainer.max_time`` (the
    command's) is already spent: Lightning's ``Timer`` counts from the run's start (its
    time so far is in the checkpoint), so a run stopped by ``max_time`` and resumed with it
    trained nothing, and still wrote into the run (an events file, a
    ``config-resumed-<k>.yaml``) with exit 0. A duration or a record that cannot be read is
    left to Lightning."""
    trainer = config.get("trainer") if config.get("trainer") is not None else {}
    duration = _plain(trainer.get("max_time"))
    callbacks = checkpoint.get("callbacks")
    state = callbacks.get(Timer.__qualname__) if isinstance(callbacks, Mapping) else None
    if duration is None or not isinstance(state, Mapping):
        return
    try:
        timer = Timer(duration=duration)
        timer.load_state_dict(dict(state))
        left, spent = timer.time_remaining("train"), timer.time_elapsed("train")
    except Exception:  # noqa: BLE001 - Lightning refuses a bad duration itself
        return
    if left is None or left > 0:
        return
    raise ConfigError(
        f"checkpoint {path} has trained for {spent:.1f} s and trainer.max_time is "
        f"{duration} ({spent + left:.1f} s, counted from the run's start): nothing is left "
        "to train; pass a larger --trainer.max_time, or leave it out to train to the run's "
        "max_steps"
    )


def check_step_boundary(checkpoint: Mapping[str, Any], path: str) -> None:
    """Refuse, in one ConfigError line, to resume from a checkpoint saved inside an
    optimiser step: under ``accumulate_grad_batches`` > 1, after a batch that only
    accumulated gradients (a ``best.ckpt`` or ``last.ckpt`` written at a validation that
    ``val_check_interval``, counted in batches, put between two batches of one step). Its
    weights are the step before, its loader and generators are past that batch, and the
    batch's gradients are not in it: the resumed run would train on other numbers than the
    run did, with no sign of it. A checkpoint that records neither is not checked."""
    recorded = checkpoint.get(TRAINER_SETTINGS_KEY)
    accumulate = recorded.get("accumulate_grad_batches") if isinstance(recorded, Mapping) else None
    where = batches_into_epoch(checkpoint)
    if not _int(accumulate) or accumulate <= 1 or where is None:
        return
    batches, epoch_ended = where
    taken = batches % accumulate
    if taken == 0 or epoch_ended:
        return
    step = checkpoint.get("global_step")
    raise ConfigError(
        f"checkpoint {path} was saved inside an optimiser step: step "
        f"{step + 1 if _int(step) else '?'} had taken {taken} of its "
        f"trainer.accumulate_grad_batches={accumulate} batches, whose gradients it does not "
        "hold, so a resume would not continue the run; resume from a checkpoint saved at the "
        "end of a step (a run stopped by a signal saves one), or start a new run without "
        "--ckpt_path"
    )


def _check_epochs_left(checkpoint: Mapping[str, Any], trainer: Any, path: str) -> None:
    """:func:`check_steps_left` for a run limited by ``max_epochs`` alone: the epochs whose
    batches the checkpoint's run has all trained
    (:func:`~roformer_lit.training.lightning_compat.epochs_trained`: a ``best.ckpt`` saved at
    the validation after the last epoch's last batch records the epoch before) have reached
    the command's."""
    epoch, epochs = epochs_trained(checkpoint), held("max_epochs", trainer)
    if not _int(epoch) or not _int(epochs) or epochs <= 0 or epoch < epochs:
        return
    why = changed_epochs(checkpoint, {"max_epochs": epoch + 1})
    how = (
        "to train on, leave the flag out or pass a larger --trainer.max_epochs"
        if why is None
        else f"{why}: to train longer, train a new run with a larger --trainer.max_epochs"
    )
    raise ConfigError(
        f"checkpoint {path} is at epoch {epoch} (step {checkpoint.get('global_step')}) and "
        f"trainer.max_epochs is {epochs}: nothing is left to train; {how}"
    )


def _typed_value(
    checkpoint: Mapping[str, Any],
    name: str,
    values: tuple[Any, Any],
    section: Any,
    resume: bool,
    path: str,
) -> str | None:
    """What a typed value of setting ``name`` that differs from the run's does, as
    :data:`CHECKPOINT_SETTINGS` says (``values``: the command's, the run's; ``section``: the
    command's section holding it): the ``note:`` line, None (quiet), or a ConfigError line."""
    ours, saved = values
    key = name.split(".", 1)[1]
    action = CHECKPOINT_SETTINGS.get(name, (QUIET, QUIET))[resume]
    if action == EXACT:
        why = EXACT_BY[name](checkpoint, section)
        if why is not None:
            advice = (
                "train a new run" if why == FINISHED else "leave the flag out, or train a new run"
            )
            raise ConfigError(
                f"checkpoint {path} was trained with {key}={_shown(saved)!r}, this run has "
                f"{name}={_shown(ours)!r}; {why}: {advice}"
            )
        action = NOTICE
    if action == REFUSE:
        advice = (
            "a resumed run continues as it trained: leave the flag out, or train a new run "
            "(the command without --ckpt_path)"
            if resume
            else "its weights were trained for that: leave the flag out"
        )
        raise ConfigError(
            f"checkpoint {path} was trained with {key}={_shown(saved)!r}, this run has "
            f"{name}={_shown(ours)!r}; {advice}"
        )
    if action == NOTICE:
        doing = "resuming with" if resume else "evaluating at"
        return f"note: {doing} {name}={_shown(ours)!r}, the run trained at {_shown(saved)!r}"
    return None


#: The run's seed, a top-level setting: a resumed ``fit`` takes it from its run directory's
#: ``config.yaml`` (:func:`resumed_seed`).
SEED = "seed_everything"


def seed_typed(args: Sequence[str], options: Mapping[str, Any]) -> bool:
    """Whether ``--seed_everything`` was typed on the command line ``args``."""
    return any(
        arg.startswith("--") and _option_dest(arg.partition("=")[0], options) == SEED
        for arg in args
    )


def _same_seed(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b  # ``false`` is not the seed 0, nor ``true`` 1


def resumed_seed(run_seed: Any, ours: Any, typed: bool, path: str) -> str | None:
    """A resumed ``fit`` is its run's seed (``run_seed``: the ``seed_everything`` its run
    directory's ``config.yaml`` records; ``ours``: the command's, as it seeds). The resume
    restores the random states the run saved, so another seed would draw nothing other and
    be recorded only, in the run's ``config-resumed-<k>.yaml``, as a seed the run never
    trained with. A typed seed that differs is refused in one line; any other (the
    default, a ``--config`` file's) is replaced by the run's: returns the ``note:`` line, or
    None where they agree."""
    if _same_seed(ours, run_seed):
        return None
    if typed:
        raise ConfigError(
            f"checkpoint {path} was trained with {SEED}={run_seed!r}, this run has "
            f"{SEED}={ours!r}; a resumed run continues as it trained (its random states "
            "are restored): leave the flag out, or train a new run (the command without "
            "--ckpt_path)"
        )
    return f"note: resuming with the run's {SEED}={run_seed!r} (its config.yaml), not {ours!r}"


def checkpoint_settings(
    checkpoint: Mapping[str, Any],
    config: Any,
    typed: Iterable[str],
    resume: bool,
    path: str,
    from_files: Iterable[str] = (),
    pretraining_data: bool = True,
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Apply the rule and the table to a command's parsed ``config`` (its ``model`` and
    ``data`` sections): returns ``({section: {key: the run's value}}`` to set, the ``note:``
    lines to print), or raises ConfigError (one line) for a typed value the table refuses.
    ``from_files``: the settings ``--config`` files gave (for the note).
    ``pretraining_data``: the command's ``data`` section builds a pretraining data module
    (corpus or position task, whose class follows the checkpoint's); False for a command
    with a data module of its own (fine-tuning), whose section is taken as it is."""
    typed, from_files = set(typed), set(from_files)
    fill: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    replaced: list[str] = []
    saved_all = saved_settings(checkpoint)
    sections: dict[str, Any] = {"model": config.get("model")}
    if resume:
        sections.update({name: config.get(name) for name in TRAINING_SECTIONS})
    data_class = None
    if config.get("data") is not None and not pretraining_data:
        sections["data"] = config.get("data")
    elif config.get("data") is not None:
        data_class, sections["data"] = _data_section(config.get("data"), saved_all, typed, path)
        if data_class is not None and data_class is not complete_settings(config["data"])[0]:
            fill["data"] = {"class_path": class_path(data_class), "init_args": {}}
    for name, saved in sorted(saved_all.items()):
        section, key = name.split(".", 1)
        current = sections.get(section)
        if current is None or key not in current or name in MACHINE_SETTINGS:
            continue
        ours = current.get(key)
        if _same(name, (ours, saved), current, saved_all):
            continue
        if name not in typed:
            target = fill.setdefault(section, {})
            (target["init_args"] if "init_args" in target else target)[key] = saved
            if name in from_files:
                replaced.append(f"{name}={_shown(ours)!r} -> {_shown(saved)!r}")
            continue
        note = _typed_value(checkpoint, name, (ours, saved), current, resume, path)
        if note is not None:
            notes.append(note)
    if data_class is not None and "data" in fill and "init_args" not in fill["data"]:
        # named even where the command's class is the run's: values given without it are
        # read against the parser's default class (the corpus)
        fill["data"] = {"class_path": class_path(data_class), "init_args": fill["data"]}
    if replaced:
        notes.insert(
            0,
            f"note: the run's own settings (from {path}) replace the --config files': "
            + ", ".join(replaced),
        )
    return fill, notes


__all__ = [
    "CHECKPOINT_SETTINGS",
    "EXACT",
    "EXACT_BY",
    "FINISHED",
    "MACHINE_SETTINGS",
    "NOTICE",
    "QUIET",
    "REFUSE",
    "SEED",
    "SET_THROUGH",
    "TRAINER_HOLDS",
    "TRAINING_SECTIONS",
    "changed_epochs",
    "changed_steps",
    "check_steps_left",
    "checkpoint_settings",
    "config_file_keys",
    "held",
    "resumed_seed",
    "same_setting",
    "saved_settings",
    "seed_typed",
    "typed_keys",
]
