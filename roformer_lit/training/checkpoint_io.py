"""Atomic checkpoint writes: a kill during a save never leaves a truncated checkpoint.

Lightning's ``TorchCheckpointIO`` writes through an fsspec transaction; on a local disk that
stages the bytes in the system temporary directory and then *moves* them, which is a plain
copy (truncated if killed) when that directory is on another filesystem, as it usually is on
clusters, and is never flushed to disk. :class:`AtomicCheckpointIO` instead writes

    <dir>/.<name>.tmp-<pid>  ->  flush + fsync  ->  os.replace(<dir>/<name>)  ->  fsync <dir>

so ``<name>`` is at every instant either the previous complete checkpoint or the new
complete one. A failed save removes its temporary file and leaves the previous checkpoint
in place; a process killed mid-write leaves only a hidden ``.tmp-<pid>`` file, removed by
the next save into that directory. Remote paths (``s3://`` ...) go to Lightning unchanged.
The CLI installs it for every run (``RoformerCLI.instantiate_trainer``).

It is also the one place that refuses to write a diverged model: a checkpoint whose
``state_dict`` holds a NaN or inf (however the weights got there: an update that overflowed
while the gradients were finite, a poisoned resume) raises
:class:`~roformer_lit.errors.TrainingDiverged` instead of being written, so every
checkpoint on disk holds finite weights and the CLI names the last one (exit 3). The check
costs one ``sum`` per floating tensor and one host sync per device (:func:`first_nonfinite`).
A checkpoint whose weights were made non-finite after the save (edited, damaged) is refused
by the one reader, :func:`read_checkpoint` (:func:`check_finite_weights`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from lightning.fabric.utilities.cloud_io import get_filesystem
from lightning.pytorch.plugins.io import TorchCheckpointIO
from typing_extensions import override

from roformer_lit.architecture_rules import check_fields
from roformer_lit.component_origins import check_recorded_components, recorded_origins
from roformer_lit.encoder_config import (
    ENCODER_FIELDS,
    EncoderConfig,
    model_settings,
    unknown_settings,
)
from roformer_lit.errors import ConfigError, TrainingDiverged
from roformer_lit.safe_input import check_checkpoint_file
from roformer_lit.training.architecture_digest import (
    DIGEST_KEY,
    ENCODER_DIGEST_KEY,
    ENCODER_RECORD_KEY,
    PRETRAINED_WEIGHTS_KEY,
    check_digest,
    check_encoder_digest,
    is_digest,
)
from roformer_lit.training.lightning_compat import epochs_trained
from roformer_lit.training.settings_digest import SETTINGS_DIGEST_KEY, check_settings_digest
from roformer_lit.validation import check_training_arguments

TMP_MARK = ".tmp-"


def _is_local(path: str | os.PathLike[str]) -> bool:
    from fsspec.implementations.local import LocalFileSystem

    return isinstance(get_filesystem(path), LocalFileSystem)


def _fsync_directory(directory: Path) -> None:
    with contextlib.suppress(OSError):  # not every platform / filesystem allows it
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def remove_stale_temporaries(directory: Path) -> None:
    """Delete ``.<name>.tmp-<pid>`` files left by killed saves (of processes now gone)."""
    for tmp in directory.glob(f".*{TMP_MARK}*"):
        pid = tmp.name.rsplit(TMP_MARK, 1)[-1]
        if pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid)):
            with contextlib.suppress(OSError):
                tmp.unlink()


def atomic_torch_save(obj: Any, path: str | os.PathLike[str]) -> None:
    """``torch.save(obj, path)`` through a temporary file in the same directory, fsynced,
    then renamed over ``path``; on any error the temporary file is removed and ``path`` is
    untouched."""
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(final.parent)
    tmp = final.with_name(f".{final.name}{TMP_MARK}{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, (OSError, RuntimeError)) and _is_write_failure(exc):
            kept = "the previous one is kept" if final.exists() else "nothing was written"
            strerror = exc.strerror if isinstance(exc, OSError) else None
            detail = strerror or " ".join(str(exc).split())[:160] or "write failed"
            raise OSError(
                getattr(exc, "errno", None) or errno.EIO,
                f"cannot write checkpoint ({detail}; is the disk full or read-only?); {kept}",
                str(final),
            ) from exc
        raise
    _fsync_directory(final.parent)


def share_checkpoint(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> bool:
    """Make ``target`` a hard link to ``source`` (atomically: a link under a temporary name,
    renamed over ``target``), so two checkpoints holding the same state take the disk once.
    Every checkpoint write is a rename (:func:`atomic_torch_save`), so writing either name
    later replaces that name only and never changes the other. Returns False (nothing
    changed) where the file system has no hard links."""
    src, final = Path(source), Path(target)
    tmp = final.with_name(f".{final.name}{TMP_MARK}{os.getpid()}")
    try:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        os.link(src, tmp)
        os.replace(tmp, final)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        return False
    _fsync_directory(final.parent)
    return True


def _is_write_failure(exc: BaseException) -> bool:
    """An OSError, or the RuntimeError torch's zip writer raises when a write comes up short
    (``PytorchStreamWriter failed writing file``, ``unexpected pos``): how a full disk or a
    file-size limit shows up inside ``torch.save``."""
    return isinstance(exc, (OSError, RuntimeError))


def first_nonfinite(state_dict: Mapping[str, Any]) -> str | None:
    """The name of the first floating-point tensor of ``state_dict`` holding a NaN or inf,
    or None if all are finite.

    A sum is finite only if every summand is (NaN and inf propagate), so one ``sum`` per
    tensor, gathered per device into a single host sync, clears a finite model; only a
    tensor whose sum is not finite (a NaN, an inf, or an overflowing sum) is checked
    element-wise. Tied tensors are checked once. (About 10x faster on CPU than
    ``torch.isfinite(t).all()`` on every tensor.)
    """
    by_device: dict[torch.device, dict[tuple[int, int], tuple[str, torch.Tensor]]] = {}
    for name, value in state_dict.items():
        if isinstance(value, torch.Tensor) and value.is_floating_point() and not value.is_meta:
            tensors = by_device.setdefault(value.device, {})
            tensors.setdefault((value.data_ptr(), value.numel()), (name, value))
    for tensors in by_device.values():
        entries = list(tensors.values())
        sums = torch.stack([t.sum().float() for _, t in entries])
        for index in torch.nonzero(~torch.isfinite(sums)).flatten().tolist():
            name, tensor = entries[index]
            if not bool(torch.isfinite(tensor).all()):
                return name
    return None


def nonfinite_weight(checkpoint: Mapping[str, Any]) -> str | None:
    """The name of the first tensor of ``checkpoint["state_dict"]`` holding a NaN or inf
    (:func:`first_nonfinite`), None if all are finite or there is no state dict."""
    state_dict = checkpoint.get("state_dict")
    if not isinstance(state_dict, Mapping):
        return None
    return first_nonfinite(state_dict)


def refuse_nonfinite(checkpoint: Mapping[str, Any], path: Any) -> None:
    """Raise ``TrainingDiverged`` if ``checkpoint["state_dict"]`` is not all finite."""
    name = nonfinite_weight(checkpoint)
    if name is None:
        return
    step = int(checkpoint.get("global_step", 0))
    raise TrainingDiverged(
        f"training diverged by step {step}: the weights hold NaN or inf (first: {name}); "
        f"refused to save them to {path}; lower model.learning_rate",
        step=step,
    )


def check_finite_weights(checkpoint: Mapping[str, Any], path: Any) -> None:
    """Refuse, in one ConfigError line naming ``path``, a checkpoint whose ``state_dict``
    holds a NaN or inf, naming its first such tensor and how many of its values are.
    ``fit`` never writes one (:func:`refuse_nonfinite`; a diverged run stops before its
    update and keeps its last finite checkpoint), so such weights were edited or damaged
    after the save, and every reader would have evaluated, exported, fine-tuned or resumed
    them, NaN losses and exit 0. One pass over the weights (:func:`first_nonfinite`: one
    ``sum`` per tensor, read through the memory map, no copy), then a count over the one
    tensor it names."""
    name = nonfinite_weight(checkpoint)
    if name is None:
        return
    tensor = checkpoint["state_dict"][name]
    bad = int((~torch.isfinite(tensor)).sum())
    raise ConfigError(
        f"checkpoint {path} is damaged: its weight {name} holds {bad} NaN or inf value(s) of "
        f"{tensor.numel()} (the first such weight); weights must be finite, as fit saves "
        "them: use a checkpoint as fit wrote it"
    )


#: Prefixes of state_dict keys that name a tensor a second time: checkpoints written
#: before the model registered its encoder once hold every encoder tensor also under
#: ``_encode.`` (``_encode._orig_mod.`` when compiled). They are dropped on load.
DUPLICATE_WEIGHT_PREFIXES = ("_encode.",)


def drop_duplicate_weights(checkpoint: Any) -> None:
    """Remove, in place, the state_dict entries under :data:`DUPLICATE_WEIGHT_PREFIXES`
    (the same tensors as the ``encoder.*`` ones), so an old checkpoint loads strictly into
    today's model. Called by :func:`check_checkpoint` (:func:`read_checkpoint`, and
    ``RunModule.on_load_checkpoint``: Lightning's resume and ``load_from_checkpoint``)."""
    state_dict = checkpoint.get("state_dict") if isinstance(checkpoint, dict) else None
    if not isinstance(state_dict, dict):
        return
    for key in [k for k in state_dict if k.startswith(DUPLICATE_WEIGHT_PREFIXES)]:
        del state_dict[key]


PRETRAINING = "pretraining"
FINE_TUNING = "fine-tuning"


def checkpoint_kind(checkpoint: Mapping[str, Any]) -> str:
    """``"fine-tuning"`` for a checkpoint written by ``finetune`` (its hyperparameters name
    the ``pretrained`` checkpoint it started from), ``"pretraining"`` otherwise (``fit``)."""
    hparams = checkpoint.get("hyper_parameters")
    return FINE_TUNING if isinstance(hparams, Mapping) and "pretrained" in hparams else PRETRAINING


def _refuse_other_kind(checkpoint: Mapping[str, Any], path: Any, kind: str) -> None:
    found = checkpoint_kind(checkpoint)
    if found == kind:
        return

    if found == FINE_TUNING:
        raise ConfigError(
            f"{path} is a fine-tuning checkpoint (written by finetune); this command reads "
            "pretraining checkpoints (written by fit). Evaluate a fine-tuned model with: "
            f"python -m roformer_lit finetune validate --config <its task config> --ckpt_path {path}"
            "; resume its run with: python -m roformer_lit finetune --config <its task config> "
            f"--ckpt_path {path}"
        )
    raise ConfigError(
        f"{path} is a pretraining checkpoint (written by fit), not a fine-tuning one; "
        "fine-tune it with finetune --model.pretrained"
    )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


#: The checkpoint keys of a run's length (written by ``RunModule.on_save_checkpoint``): the
#: trainer's settings that end it (``max_steps``), and the total ``T`` its learning-rate
#: schedule was planned for. A resume compares them with its own
#: (:mod:`roformer_lit.commands.checkpoint_settings`).
TRAINER_SETTINGS_KEY = "trainer_settings"
SCHEDULE_STEPS_KEY = "schedule_steps"


def _max_steps_record(value: Any) -> bool:
    """A ``trainer_settings`` record: a mapping whose ``max_steps`` is an integer >= -1."""
    steps = value.get("max_steps") if isinstance(value, Mapping) else None
    return _is_int(steps) and steps >= -1


#: The records of a checkpoint that its readers use as they are (Lightning's counters, the
#: run's own state, the settings of its model and data), each with what it must be:
#: (checkpoint key, test, what a valid record is). A record a hand edited into another
#: type is refused in one line by :func:`check_records`, before anything reads it.
RECORDS: tuple[tuple[str, Any, str], ...] = (
    ("global_step", lambda v: _is_int(v) and v >= 0, "an integer >= 0"),
    ("epoch", lambda v: _is_int(v) and v >= 0, "an integer >= 0"),
    ("skipped_batches", lambda v: _is_int(v) and v >= 0, "an integer >= 0"),
    ("best_val_loss", _is_real, "a number"),
    ("hyper_parameters", lambda v: isinstance(v, Mapping), "a mapping of settings"),
    ("datamodule_hyper_parameters", lambda v: isinstance(v, Mapping), "a mapping of settings"),
    (TRAINER_SETTINGS_KEY, _max_steps_record, "a mapping of an integer max_steps >= -1"),
    (SCHEDULE_STEPS_KEY, lambda v: _is_int(v) and v >= 1, "an integer >= 1"),
    (DIGEST_KEY, is_digest, "'sha256:' and 64 hexadecimal digits"),
    (SETTINGS_DIGEST_KEY, is_digest, "'sha256:' and 64 hexadecimal digits"),
    (ENCODER_RECORD_KEY, lambda v: isinstance(v, Mapping), "a mapping of settings"),
    (ENCODER_DIGEST_KEY, is_digest, "'sha256:' and 64 hexadecimal digits"),
    (PRETRAINED_WEIGHTS_KEY, is_digest, "'sha256:' and 64 hexadecimal digits"),
)

#: The architecture settings every version of ``fit`` saved in ``hyper_parameters``: a
#: pretraining checkpoint without one of them cannot say which model its weights are
#: (a missing ``num_heads`` or ``position`` would be filled by a default or a config file,
#: with the same tensor shapes and other numbers).
ARCHITECTURE_RECORD = (
    "position",
    "attention",
    "vocab_size",
    "hidden_size",
    "num_layers",
    "num_heads",
    "intermediate_size",
)


def check_records(checkpoint: Mapping[str, Any], path: Any) -> None:
    """Refuse, in one ConfigError line, a checkpoint whose records (:data:`RECORDS`) are
    present but of another type (a ``global_step`` that is a string, ``hyper_parameters``
    that are a list or None): every reader would otherwise fail mid-run, or fall back to
    the command's own settings without a word."""
    for key, valid, what in RECORDS:
        if key in checkpoint and not valid(checkpoint[key]):
            value = checkpoint[key]
            shown = repr(value) if len(repr(value)) <= 40 else f"a {type(value).__name__}"
            raise ConfigError(
                f"checkpoint {path} is damaged: its {key} record is {shown}, not {what}; "
                "use a checkpoint as fit wrote it"
            )


def check_architecture_record(checkpoint: Mapping[str, Any], path: Any) -> None:
    """A pretraining checkpoint's ``hyper_parameters`` name its model: every setting of
    :data:`ARCHITECTURE_RECORD` is there."""
    saved = checkpoint.get("hyper_parameters")
    if saved is None:
        raise ConfigError(
            f"checkpoint {path} has no hyper_parameters record: it does not say which model "
            "its weights are; use a checkpoint as fit wrote it"
        )
    missing = [key for key in ARCHITECTURE_RECORD if key not in saved]
    if len(missing) == len(ARCHITECTURE_RECORD):  # not a damaged one of ours: another model's
        raise ConfigError(
            f"{path} is not a roformer_lit checkpoint: its hyper_parameters name none of "
            f"{', '.join(missing)} (another project's Lightning checkpoint?); give a "
            "checkpoint written by fit"
        )
    if missing:
        raise ConfigError(
            f"checkpoint {path} is damaged: its hyper_parameters lack {', '.join(missing)}, "
            "so it does not say which model its weights are; use a checkpoint as fit wrote it"
        )
    _check_recorded_values(saved, path)
    unknown = unknown_settings(saved)
    if unknown:
        raise ConfigError(
            f"checkpoint {path} records model setting(s) {', '.join(map(repr, unknown))}, which "
            f"this version of roformer_lit does not know (a newer version's checkpoint, or an "
            f"edited one): loading it without them may build another model than it trained; "
            f"known settings: {', '.join(model_settings())}"
        )
    _check_recorded_model(checkpoint, saved, path)


def _check_recorded_model(
    checkpoint: Mapping[str, Any], saved: Mapping[str, Any], path: Any
) -> None:
    """The recorded architecture passes every rule of the one table
    (:func:`~roformer_lit.architecture_rules.check_architecture`, run by building its
    :class:`~roformer_lit.encoder_config.EncoderConfig`), not only the fields' types and
    ranges: a record edited to break a rule (a window with a kernel without windows,
    ``block.first_norm false`` with post-norm blocks, a plan type naming an unknown
    scheme) in a checkpoint without a digest passed ``read_checkpoint`` and
    ``model.pretrained``'s check, and was refused later, or in other words, by whichever
    reader built the model. One line, led by the file, naming the plugins the checkpoint
    records (a scheme whose plugin is not installed here fails the same way)."""
    try:
        EncoderConfig.from_settings({key: saved[key] for key in ENCODER_FIELDS if key in saved})
    except ConfigError as exc:
        raise ConfigError(
            f"checkpoint {path} records a model that cannot be built here: "
            f"{exc}{recorded_origins(checkpoint, exc)}"
        ) from None


def _check_recorded_values(saved: Mapping[str, Any], path: Any) -> None:
    """Each recorded setting of the types and ranges the model's rules accept, as stored
    (:func:`~roformer_lit.architecture_rules.check_fields`, the training settings' rules):
    ``validate`` and resume read the record through the command line's parser, which
    turns ``'64'`` and ``4.0`` into ``64`` and ``4``, while ``extrapolate`` and ``export``
    refused them; every reader now refuses them here, in one line."""
    try:
        check_fields(saved)
        check_training_arguments({key: saved[key] for key in saved if not str(key).startswith("_")})
    except ConfigError as exc:
        raise ConfigError(
            f"checkpoint {path} is damaged: {exc}; use a checkpoint as fit wrote it"
        ) from None


#: The prefix of torch's C++ errors (``[enforce fail at inline_container.cc:180] . ``),
#: which says where torch failed, not what is wrong with the file.
_ENFORCE_FAIL = re.compile(r"^\[enforce fail at [^\]]*\]\s*\.?\s*")


class _DamagedLocation(Exception):
    """A storage of a checkpoint recorded at a location that is not a device name."""


def _on_cpu(storage: Any, location: Any) -> Any:
    """``map_location`` of the one reader: every storage stays on the CPU (memory-mapped),
    and the device each one records is a device name. Mapping to the CPU ignores it, but
    every other loader reads it (Lightning's ``load_from_checkpoint`` and a resume map each
    storage by its own), so a damaged one (``(96, 32)``, ``'xyz'``) that read here stopped
    them with torch's ``AttributeError`` or ``RuntimeError``."""
    try:
        torch.device(location)
    except (RuntimeError, TypeError, ValueError):
        raise _DamagedLocation(
            f"a weight's storage records the device {location!r}, not a device name"
        ) from None
    return storage


def _torch_detail(exc: BaseException) -> str:
    """The first sentence of what torch says about a file it cannot load, on one line and
    without the C++ prefix (:data:`_ENFORCE_FAIL`)."""
    detail = _ENFORCE_FAIL.sub("", " ".join(str(exc).split()))
    return detail.split(". ")[0][:160]


def read_checkpoint(
    path: str | os.PathLike[str], require_state_dict: bool = True, kind: str | None = None
) -> dict[str, Any]:
    """The checkpoint at ``path``, or a ConfigError naming the file and what is wrong with it.

    The one place that opens a checkpoint given by a user: a regular readable file
    (a FIFO never hangs), a PyTorch zip archive, unpickled with ``weights_only=True``
    (tensors memory-mapped) -- so a crafted checkpoint is refused, never run -- and, unless
    ``require_state_dict`` is False, one holding a ``state_dict``; its records of the
    types they are written in (:func:`check_records`), and its architecture record and
    training settings the ones it was saved with
    (:func:`~roformer_lit.training.architecture_digest.check_digest`,
    :func:`~roformer_lit.training.architecture_digest.check_encoder_digest`,
    :func:`~roformer_lit.training.settings_digest.check_settings_digest`), and, unless
    ``require_state_dict`` is False, its weights finite (:func:`check_finite_weights`).
    Given ``kind``
    (``"pretraining"`` or ``"fine-tuning"``, :func:`checkpoint_kind`), a checkpoint of the
    other kind is refused with one line saying which command reads it.
    """
    import pickle
    import zipfile

    check_checkpoint_file(path)
    if not zipfile.is_zipfile(path):
        raise ConfigError(
            f"cannot read checkpoint {path}: not a PyTorch checkpoint (truncated, or another "
            "kind of file)"
        )
    try:
        checkpoint = torch.load(path, map_location=_on_cpu, weights_only=True, mmap=True)
    except pickle.UnpicklingError as exc:
        detail = " ".join(str(exc).split())
        start = detail.find("Unsupported global")
        what = detail[start:].split(" was ")[0] if start >= 0 else "not tensors or plain data"
        raise ConfigError(
            f"refused checkpoint {path}: it holds pickled objects that a weights-only load "
            f"does not run ({what}); only checkpoints written by roformer_lit are loaded"
        ) from exc
    except (RuntimeError, zipfile.BadZipFile, EOFError, ValueError) as exc:
        raise ConfigError(
            f"cannot read checkpoint {path}: truncated or not a PyTorch checkpoint "
            f"({_torch_detail(exc)})"
        ) from exc
    except OSError as exc:
        raise ConfigError(f"cannot read checkpoint {path}: {exc.strerror or exc}") from exc
    except _DamagedLocation as exc:
        raise ConfigError(
            f"cannot read checkpoint {path}: it is damaged ({exc}); use a checkpoint as fit "
            "wrote it"
        ) from exc
    except Exception as exc:  # the unpickler on damaged bytes: a memo key, an empty stack
        raise ConfigError(
            f"cannot read checkpoint {path}: it is damaged (its pickled records do not "
            f"unpickle: {type(exc).__name__}: {_torch_detail(exc)}); use a checkpoint as fit "
            "wrote it"
        ) from exc
    return check_checkpoint(checkpoint, path, require_state_dict, kind)


def check_checkpoint(
    checkpoint: Any, path: Any, require_state_dict: bool = True, kind: str | None = None
) -> dict[str, Any]:
    """``checkpoint`` (as unpickled from ``path``), checked as :func:`read_checkpoint` checks
    what it reads, or a ConfigError naming ``path`` and what is wrong: every check of a
    checkpoint's content, in one place. :func:`read_checkpoint` calls it on what it read;
    ``RunModule.on_load_checkpoint`` on what Lightning read (``load_from_checkpoint``, a
    ``Trainer`` given ``ckpt_path``), so no way of loading a checkpoint skips them. Drops
    the duplicate weights (:func:`drop_duplicate_weights`) in place."""
    if not isinstance(checkpoint, dict):
        raise ConfigError(f"{path} is not a roformer_lit checkpoint")
    if require_state_dict and not isinstance(checkpoint.get("state_dict"), dict):
        raise ConfigError(f"{path} is not a roformer_lit checkpoint (it has no state_dict)")
    check_records(checkpoint, path)
    check_digest(checkpoint, path)  # its architecture record as it was saved
    check_encoder_digest(checkpoint, path)  # a fine-tune's record of its encoder, the same
    check_recorded_components(checkpoint, path)  # its schemes are, here, the ones it trained
    if kind is not None:
        _refuse_other_kind(checkpoint, path, kind)
    if kind == PRETRAINING:
        check_architecture_record(checkpoint, path)
    check_settings_digest(checkpoint, path)  # its training settings as they were saved
    drop_duplicate_weights(checkpoint)
    if require_state_dict:  # a reader of its records alone does not read its weights
        check_finite_weights(checkpoint, path)
    return checkpoint


def at_its_end(path: str | os.PathLike[str]) -> bool:
    """Whether the checkpoint at ``path`` is at its run's end: its ``global_step`` has
    reached the ``max_steps`` it records (:data:`TRAINER_SETTINGS_KEY`), or a run without a
    step limit has trained the ``max_epochs`` it records
    (:func:`~roformer_lit.training.lightning_compat.epochs_trained`), so a resume would
    have nothing left to train. False for a file that is missing or unreadable, or that
    records no end (a checkpoint from before the record, a run without a limit)."""
    if not Path(path).is_file():
        return False
    try:
        checkpoint = read_checkpoint(path, require_state_dict=False)
    except ConfigError:
        return False
    step = checkpoint.get("global_step")
    settings = checkpoint.get(TRAINER_SETTINGS_KEY) or {}
    max_steps, max_epochs = settings.get("max_steps"), settings.get("max_epochs")
    if _is_int(step) and _is_int(max_steps) and 0 < max_steps <= step:
        return True
    epoch = epochs_trained(checkpoint)
    by_epochs = _is_int(max_steps) and max_steps < 0 and _is_int(max_epochs) and max_epochs > 0
    return by_epochs and _is_int(epoch) and epoch >= max_epochs


class AtomicCheckpointIO(TorchCheckpointIO):
    """``TorchCheckpointIO`` whose local saves are atomic (see the module docstring). Non-finite
    weights are refused earlier, in ``MaskedLM.on_save_checkpoint`` (:func:`refuse_nonfinite`),
    which runs on every rank of a multi-process run, where this runs on rank 0 only.

    A checkpoint :meth:`pin`-ned for its path is what every load of that path returns."""

    def __init__(self) -> None:
        super().__init__()
        self._pinned: dict[str, dict[str, Any]] = {}

    def pin(self, path: str | os.PathLike[str], checkpoint: dict[str, Any]) -> None:
        """Serve ``checkpoint`` (read once by :func:`read_checkpoint`, memory-mapped: the file
        as it was then, even once a running ``fit`` has replaced it) for every later load of
        ``path``, so what is loaded is what was read and checked."""
        self._pinned[os.path.realpath(path)] = checkpoint

    @override
    def save_checkpoint(
        self, checkpoint: dict[str, Any], path: Any, storage_options: Any | None = None
    ) -> None:
        if storage_options is not None or not _is_local(path):
            return super().save_checkpoint(checkpoint, path, storage_options)
        atomic_torch_save(checkpoint, path)
        return None

    @override
    def load_checkpoint(
        self, path: Any, map_location: Any = None, weights_only: bool | None = None
    ) -> dict[str, Any]:
        """Always ``weights_only=True``: a checkpoint given to ``--ckpt_path`` is data, never
        code (a crafted pickle is refused instead of run); a pinned one (:meth:`pin`) as
        it was read."""
        pinned = self._pinned.get(os.path.realpath(path)) if _is_local(path) else None
        if pinned is not None:
            return dict(pinned)
        if map_location is None:
            return super().load_checkpoint(path, weights_only=True)
        return super().load_checkpoint(path, map_location=map_location, weights_only=True)
