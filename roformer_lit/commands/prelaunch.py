"""The one check before a pretraining run starts, shared by ``fit`` and ``sweep``; the one
place that decides which combinations of model, data and trainer settings are valid.

:func:`check_fit_config` takes a parsed configuration (jsonargparse's namespace, nothing
instantiated) and applies every rule ``fit`` applies, without reading a corpus, training
a tokenizer or allocating a weight:

* ``seed_everything`` (:data:`~roformer_lit.validation.RUN_RULES`) and the trainer
  settings (:data:`~roformer_lit.validation.TRAINER_RULES`); for a new run, a ``note:``
  for a warm-up of ``trainer.max_steps`` or more under a schedule that decays
  (:func:`warmup_past_the_steps`; a run counted in epochs is noted when its training
  starts, :class:`WarmupPastTheEpochs`);
* the data settings, by the class the section builds
  (:func:`~roformer_lit.data.modules.complete_settings`, then its
  :meth:`~roformer_lit.data.datamodule.PretrainDataModule.check_settings`: the rule table,
  the settings that must agree, a position task and its lengths, the bytes the sizes
  allocate; for a run that trains, its ``check_training_settings``: randomized positions
  that randomize);
* the model settings: the training settings
  (:data:`~roformer_lit.validation.TRAINING_RULES`), the
  :class:`~roformer_lit.encoder_config.EncoderConfig` of its architecture (the one table of
  :mod:`roformer_lit.architecture_rules`, which the Python API runs too), then the host:
  the encoder built on PyTorch's ``meta`` device (shapes only, no memory), the bytes of
  the weights it would hold against this machine's memory, ``data.max_length`` against
  the scheme's position table;
* the rules that pair the sections (:data:`CROSS_SECTION_RULES`: ``data.document_mask``
  and every layer's kernel, ``data.random_positions`` and every layer's scheme and table);
  for a run that trains, a ``note:`` for a window that reaches every token of
  ``data.max_length`` or an odd one (:func:`note_windows_past_the_sequences`), and for a
  layer type the plan does not define (:func:`~roformer_lit.layer_plan.undefined_types`).

``fit`` (``validate``, ``test``, ``predict``) runs it before it picks a run directory;
``sweep`` and ``sweep --dry-run`` run it on every combination before anything is
launched. The first failure is one :class:`~roformer_lit.errors.ConfigError` line. The
network and the datasets keep plain assertions of the same facts, never a second copy
of a rule.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch
from lightning.pytorch.callbacks import Callback

from roformer_lit.architecture_rules import (
    kernel_options_take_effect,
    kernels_that,
    kernels_train_on,
    schemes_that,
)
from roformer_lit.attention.window import band_half_width
from roformer_lit.component_origins import recorded_registries
from roformer_lit.data.modules import complete_settings
from roformer_lit.encoder_config import ENCODER_FIELDS, EncoderConfig
from roformer_lit.errors import ConfigError, one_line
from roformer_lit.layer_plan import undefined_types
from roformer_lit.model import Encoder
from roformer_lit.training.lifecycle import planned_warmup
from roformer_lit.training.step_end_validation import check_new_run
from roformer_lit.training.steps import total_steps
from roformer_lit.validation import (
    check_fits_in_memory,
    check_run_arguments,
    check_trainer_arguments,
    check_training_arguments,
    check_weights_fit_in_memory,
)


def plain(section: Any) -> dict[str, Any]:
    """A config section (a jsonargparse Namespace or a mapping) as a plain dict."""
    if section is None:
        return {}
    as_dict = getattr(section, "as_dict", None)
    return dict(as_dict() if callable(as_dict) else section)


def check_fit_config(config: Any, training: bool = True) -> None:
    """Every rule of a pretraining run, on the parsed ``config`` (see the module);
    ``training`` False for ``validate``, ``test`` and ``predict`` (no kernel's backward runs,
    so :func:`kernels_train_on_the_device` does not apply). Its ``note:`` lines are printed
    once every rule has passed (:func:`notes_after_checks`)."""
    with notes_after_checks():
        _check_fit_config(config, training)


def _check_fit_config(config: Any, training: bool) -> None:
    check_run_arguments(config)
    trainer = config.get("trainer")
    if trainer is not None:
        check_trainer_arguments(trainer)
    if training:
        check_new_run(config)  # validation only at the end of an optimiser step
        note_once(warmup_past_the_steps(config))
    section = config.get("data")
    data: dict[str, Any] = {}
    if section:
        data_class, data = complete_settings(section)
        data_class.check_settings(data)
        if training:
            data_class.check_training_settings(data)
    model = plain(config.get("model"))
    if model:
        vocab = model.get("vocab_size")
        if section:  # linked from the data module: its tokenizer's (planned) size
            vocab = data_class.planned_vocab_size(data)
        architecture = check_model(
            model, vocab, data.get("max_length"), from_checkpoint=bool(config.get("ckpt_path"))
        )
        note_shadowed_names(architecture, data)
        if training:
            kernel_options_take_effect(architecture)
            note_once(undefined_types(architecture.layer_plan, architecture.num_layers))
        if training and data:
            note_windows_past_the_sequences(architecture, data)
        if data:
            for rule in CROSS_SECTION_RULES:
                rule(architecture, data)
        if training and trainer is not None:
            kernels_train_on_the_device(architecture, plain(trainer))


def warmup_past_the_steps(config: Any) -> str | None:
    """The note for a new run whose ``model.warmup_steps`` is not below its
    ``trainer.max_steps`` under a schedule that decays (None otherwise): such a schedule
    runs at most ``max_steps - 1`` warm-up steps
    (:func:`~roformer_lit.training.lifecycle.planned_warmup`), so the last step trains at
    the peak rate and nothing decays. Not refused: a short smoke run of a shipped config
    (``--trainer.max_steps 20`` under its warm-up of 60, as the examples run it) is such a
    run, and its schedule matters little. A resumed run (``ckpt_path`` set: it keeps the
    schedule it started with) and a schedule that takes any warm-up (``constant``) say
    nothing; a run counted in epochs has no step count until its data are read, and is
    noted then (:class:`WarmupPastTheEpochs`)."""
    if config.get("ckpt_path") is not None:
        return None
    model, trainer = plain(config.get("model")), plain(config.get("trainer"))
    warmup, steps = model.get("warmup_steps"), trainer.get("max_steps")
    schedule = str(model.get("lr_schedule", "linear"))
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (warmup, steps)):
        return None  # their own rules report a value of another type
    planned = planned_warmup(warmup, steps, schedule) if steps > 0 else warmup
    return _warmup_cut(warmup, planned, schedule, steps, f"trainer.max_steps={steps}", "max_steps")


def _warmup_cut(
    warmup: int, planned: int, schedule: str, total: int, steps: str, length: str
) -> str | None:
    """The note for ``warmup`` steps the schedule cuts to ``planned`` in a run of ``total``
    steps (``steps``: the run's step count in words; ``length``: the trainer setting that
    lengthens it); None when nothing is cut."""
    if planned == warmup:
        return None
    return (
        f"model.warmup_steps={warmup} is not below {steps}: lr_schedule {schedule!r} warms up "
        f"over {planned} steps and trains the last step at the peak rate, with no decay; a "
        f"warm-up of 0 to {total - 1} steps runs as given: shorten model.warmup_steps or "
        f"raise trainer.{length} for a decay"
    )


def warmup_past_the_epochs(trainer: Any, module: Any) -> str | None:
    """:func:`warmup_past_the_steps`' note for a new run whose step count its epochs set
    (``trainer.max_epochs`` with no ``trainer.max_steps``, or epochs that end it first):
    known once its data are read, as the schedule counts it
    (:func:`~roformer_lit.training.steps.total_steps`). None for a resumed run, a run that
    ``trainer.max_steps`` ends (noted before it started), a run without an end, a module
    without a ``warmup_steps`` setting, and a warm-up the schedule keeps."""
    hparams = getattr(module, "hparams", {})
    warmup = hparams.get("warmup_steps")
    if trainer.ckpt_path is not None or not isinstance(warmup, int) or isinstance(warmup, bool):
        return None
    total = total_steps(trainer)
    max_steps = trainer.max_steps if trainer.max_steps is not None else -1
    if total is None or total == max_steps:
        return None
    schedule = str(hparams.get("lr_schedule", "linear"))
    steps = (
        f"the run's {total} optimiser steps (trainer.max_epochs={trainer.max_epochs} of the "
        "training batches, over trainer.accumulate_grad_batches="
        f"{trainer.accumulate_grad_batches})"
    )
    return _warmup_cut(
        warmup, planned_warmup(warmup, total, schedule), schedule, total, steps, "max_epochs"
    )


class WarmupPastTheEpochs(Callback):
    """Prints :func:`warmup_past_the_epochs`' note (:func:`note_once`) when training
    starts: the step count of a run counted in epochs is known then."""

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        if trainer.is_global_zero:
            note_once(warmup_past_the_epochs(trainer, pl_module))


#: The notes :func:`note_shadowed_names` printed in this process (a sweep checks every run).
_noted: set[str] = set()


def note_shadowed_names(config: EncoderConfig, data: Mapping[str, Any]) -> None:
    """A ``note:`` line, once per process, for each built-in name the run uses (its layers'
    schemes and kernels, ``data.probe``) that an installed entry point also declares: the
    name means the built-in (:meth:`~roformer_lit.registry.Registry.shadowing`), so a user
    who installed a plugin to replace ``rope`` would otherwise train the built-in without
    a word."""
    used = [tuple(key.split(":", 1)) for key in config.origins()]
    if isinstance(data.get("probe"), str):
        used.append(("probe", data["probe"]))
    registries = recorded_registries()  # what a checkpoint records, by the same words
    for what, name in used:
        registry = registries.get(what)
        shadowed = registry.shadowing().get(name) if registry is not None else None
        if shadowed is not None:
            note_once(f"{shadowed}; this run uses the built-in")


class _HeldNotes(threading.local):
    """The notes of the check under way in this thread (:func:`notes_after_checks`), printed
    once it passes; None outside one. Per thread: a sweep checks its runs in threads at once,
    and one thread's check must neither hold nor print another's notes."""

    pending: list[str] | None = None


_held = _HeldNotes()


@contextlib.contextmanager
def notes_after_checks() -> Iterator[None]:
    """Hold back the ``note:`` lines of the checks run inside, and print them once every
    check has passed: a run refused in one ``error:`` line prints that line alone, not notes
    about a run that will not start."""
    outer, _held.pending = _held.pending, []
    try:
        yield
    except BaseException:
        _held.pending = outer
        raise
    held, _held.pending = _held.pending, outer
    for note in held:
        note_once(note)


def note_once(note: str | None) -> None:
    """``note`` as one ``note:`` line on stderr, unless None or printed already in this
    process (a sweep checks every run); held back inside :func:`notes_after_checks`."""
    if note is None or note in _noted:
        return
    pending = _held.pending
    if pending is not None:
        if note not in pending:
            pending.append(note)
        return
    _noted.add(note)
    print(f"note: {note}", file=sys.stderr)


def note_windows_past_the_sequences(config: EncoderConfig, data: Mapping[str, Any]) -> None:
    """A ``note:`` line, once per process, for each windowed layer type whose window
    reaches every token of the longest training sequence (``data.max_length``): its layers
    train as global ones, bit for bit (:func:`~roformer_lit.attention.window.band_half_width`),
    in a run whose name says ``local128``. Not refused: the window restricts the same
    weights at a longer evaluation, which may be what was meant. Else, for an odd window,
    the note of :func:`odd_window`."""
    length = data.get("max_length")
    for spec in {spec.type: spec for spec in config.layer_specs}.values():
        if spec.window is None:
            continue
        if isinstance(length, int) and band_half_width(spec.window, length) is None:
            note_once(
                f"model.layer_plan type {spec.type!r} has window {spec.window} ({spec.window // 2} "
                f"tokens each side), which reaches every token of data.max_length={length}: its "
                f"layers train as global ones (a window below {2 * (length - 1)} restricts them)"
            )
        else:
            note_once(odd_window(spec.type, spec.window))


def odd_window(name: str, window: int) -> str | None:
    """The note for layer type ``name``'s odd ``window`` (None for an even one): a query
    reads the keys within ``window // 2`` each side (ModernBERT's ``local_attention``
    convention, kept for parity), so ``2k + 1`` builds the layer ``2k`` builds, under
    another name. Window 1 (a query reads itself) is the only way to write its layer."""
    if window % 2 == 0 or window == 1:
        return None
    half = window // 2
    return (
        f"model.layer_plan type {name!r} has window {window}: a query reads the keys within "
        f"{half} tokens each side (window // 2, ModernBERT's local_attention), {2 * half + 1} "
        f"keys, the same layer as window {window - 1}; an odd window adds no key (use "
        f"{window - 1}, or {window + 1} for {half + 1} each side)"
    )


def document_mask_needs_segments(config: EncoderConfig, data: Mapping[str, Any]) -> None:
    """``data.document_mask`` with a layer whose kernel cannot keep documents apart: one
    line naming that kernel and those that can."""
    if not data.get("document_mask"):
        return
    for layer in config.layers:
        if not layer.kernel_capabilities.segments:
            valid = kernels_that(lambda c: c.segments)
            where = (
                f"model.attention={layer.spec.attention!r}"
                if layer.spec.attention == config.attention
                else f"model.layer_plan type {layer.spec.type!r} attention {layer.spec.attention!r}"
            )
            needs = "needs an attention kernel that keeps documents apart"
            raise ConfigError(f"data.document_mask true {needs}; {where} cannot; valid: {valid}")


def random_positions_need_a_reader(config: EncoderConfig, data: Mapping[str, Any]) -> None:
    """``data.random_positions`` (the range ``R`` randomized positions are drawn from) with
    no layer whose scheme reads positions (they would change nothing): one line naming
    the schemes that read them. Every layer's scheme counts (a plan giving RoPE to half
    the layers reads positions with ``model.position nope``)."""
    span = data.get("random_positions")
    if span is None:
        return
    if not any(layer.scheme_capabilities.reads_positions for layer in config.layers):
        valid = schemes_that(lambda c: c.reads_positions)
        schemes = ", ".join(dict.fromkeys(layer.spec.position for layer in config.layers))
        raise ConfigError(
            f"data.random_positions={span} needs a position scheme that reads positions; "
            f"model.position={config.position!r} (every layer: {schemes}) reads none; "
            f"valid: {valid}"
        )


def random_positions_fit_the_table(config: EncoderConfig, data: Mapping[str, Any]) -> None:
    """``data.random_positions`` past the table of a scheme bounded by one (its
    ``max_length``: ``learned``) when ``R > model.max_positions``: one line."""
    span, limit = data.get("random_positions"), config.max_positions
    if not isinstance(span, int) or span <= limit:
        return
    for layer in config.layers:
        if layer.scheme_capabilities.bounded:
            raise ConfigError(
                f"data.random_positions={span} exceeds model.max_positions={limit}, the size "
                f"of the {layer.spec.position!r} position table; lower data.random_positions "
                "or raise model.max_positions"
            )


#: The rules that pair the model's architecture with the data's settings, each
#: ``rule(config, data)`` on the checked :class:`EncoderConfig` (every layer's scheme and
#: kernel, as they declare themselves) and the plain data settings (complete: every
#: argument of its class), raising one ConfigError line. A new rule that needs several
#: sections at once is one function here and one entry of this table. (A rule inside one
#: section belongs to that section: :mod:`roformer_lit.architecture_rules` for the
#: architecture, a data module's ``check_combinations``.)
CROSS_SECTION_RULES: tuple[Callable[[EncoderConfig, Mapping[str, Any]], None], ...] = (
    document_mask_needs_segments,
    random_positions_need_a_reader,
    random_positions_fit_the_table,
)


def has_mps() -> bool:
    """Whether this machine has an Apple GPU PyTorch can use (MPS)."""
    mps = getattr(torch.backends, "mps", None)
    return mps is not None and mps.is_available()


def training_device(accelerator: Any) -> str | None:
    """The device type ``trainer.accelerator`` trains on here (``cpu``, ``cuda``, ``mps``),
    as Lightning picks it (``auto``: CUDA, else MPS, else the CPU); None for one this check
    does not know (an ``Accelerator`` object, ``tpu``): left to Lightning."""
    if not isinstance(accelerator, str):
        return None
    name = accelerator.lower()
    if name in ("auto", "gpu"):
        if torch.cuda.is_available():
            return "cuda"
        if has_mps():
            return "mps"
        return "cpu" if name == "auto" else None  # gpu without one: Lightning's own error
    return name if name in ("cpu", "cuda", "mps") else None


def available_accelerators() -> list[str]:
    """The ``trainer.accelerator`` names that have a device on this machine."""
    here = ["cpu", "auto"]
    if torch.cuda.is_available():
        here += ["gpu", "cuda"]
    elif has_mps():
        here += ["gpu", "mps"]
    return here


def accelerator_is_here(accelerator: Any) -> None:
    """``trainer.accelerator`` naming a device this machine does not have (``gpu``,
    ``cuda``, ``mps``): one line naming it and those it has, before anything is built
    (Lightning's own refusal, ``No supported gpu backend found!``, names neither). A
    command runs it where it trains; :func:`check_fit_config` does not, because ``sweep``
    runs that on a machine (a SLURM login node) that submits GPU runs elsewhere."""
    if not isinstance(accelerator, str) or accelerator.lower() not in ("gpu", "cuda", "mps"):
        return
    here = available_accelerators()
    if accelerator.lower() not in here:
        raise ConfigError(
            f"trainer.accelerator={accelerator!r}: this machine has no such device that "
            f"PyTorch can use; valid here: {', '.join(here)}"
        )


def kernels_train_on_the_device(config: EncoderConfig, trainer: Mapping[str, Any]) -> None:
    """A layer's kernel that declares the devices it trains on
    (:attr:`~roformer_lit.capabilities.KernelCapabilities.training_devices`: softmax's
    ``backend: flex`` has no backward on the CPU) with a run that trains on another: one
    line naming the kernel, the device and the kernels that train there, before the run
    starts (else the first training step fails, after the sanity validation)."""
    accelerator = trainer.get("accelerator", "auto")
    device = training_device(accelerator)
    if device is not None:
        here = f"trainer.accelerator={accelerator!r} trains on {device} here"
        kernels_train_on(config, device, here)


def check_model_settings(model: Mapping[str, Any], **overrides: Any) -> EncoderConfig:
    """The rules a model's build runs on its settings alone (``model``: a flat model
    section, then ``overrides``): the training settings' and the architecture's (its
    :class:`EncoderConfig`: every rule of :mod:`roformer_lit.architecture_rules`, each
    scheme and kernel built once on the ``meta`` device, no weight). Nothing of the data,
    the host or this machine: what ``--print_config`` checks. The checked config."""
    check_training_arguments({k: v for k, v in model.items() if k not in ENCODER_FIELDS})
    return EncoderConfig.from_settings(model, **overrides)


def check_printed_model(config: Any) -> None:
    """``--print_config``'s check of a pretraining command's section (``config``: its
    ``model``, ``data``, ``trainer``): :func:`check_model_settings` on its model section.
    The vocabulary, a link from the data module set when the classes are built, is the
    model's own where the section gives one (else the architecture's default)."""
    model = plain(config.get("model"))
    if model:
        vocab = model.pop("vocab_size", None)
        check_model_settings(model, **({"vocab_size": vocab} if vocab is not None else {}))


def check_model(
    model: Mapping[str, Any], vocab_size: Any, max_length: Any, from_checkpoint: bool = False
) -> EncoderConfig:
    """:func:`check_model_settings` (the training settings' and the architecture's rules),
    then the host's: the encoder built on the ``meta`` device (nothing allocated), the
    bytes of its weights against this machine's memory, and ``max_length`` against the
    scheme's position table, naming the lengths it takes; ``from_checkpoint`` when the
    weights come from a checkpoint, whose trained table cannot grow (raising
    ``model.max_positions`` would only fail to load it). The checked config."""
    config = check_model_settings(model, vocab_size=vocab_size)
    check_weights_fit_in_memory(config.as_dict())  # names the sizes; the exact bytes below
    try:
        with torch.random.fork_rng(devices=[]), torch.device("meta"):
            encoder = Encoder(config)
    except (RuntimeError, OverflowError, ValueError, TypeError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"cannot build the model with these settings: {one_line(exc)}") from None
    tensors = [*encoder.parameters(), *encoder.buffers()]
    need = sum(t.numel() * t.element_size() for t in tensors)
    check_fits_in_memory(need, f"the model's weights ({sum(t.numel() for t in tensors):,} values)")
    limit = encoder.position.max_length
    if limit is not None and isinstance(max_length, int) and max_length > limit:
        remedy = (
            " (a checkpoint's trained table cannot grow)"
            if from_checkpoint
            else ", or a larger model.max_positions, or a scheme that extends"
        )
        raise ConfigError(
            f"data.max_length={max_length} exceeds the {config.position!r} position "
            f"table (model.max_positions={limit}); valid: data.max_length up to {limit}{remedy}"
        )
    return config
