"""Finding run directories and summarising each one (:func:`summarize_run`); the runs of a
logdir with their variants are :func:`roformer_lit.results.compare.collect.collect_runs`.

A run is a directory (at any depth under ``logdir``) holding ``events.out.tfevents.*``
files, a ``config.yaml`` or an ``hparams.yaml``; other files in it (``evaluations.jsonl``,
``checkpoints/`` ...) are ignored. Its scalars come from :func:`roformer_lit.results.events.read_run`,
its hyperparameters from ``hparams.yaml`` (model and data hyperparameters, flat) plus the
trainer settings of ``config.yaml`` that change what a run trains on or measures, as the
trainer holds them
(:func:`~roformer_lit.training.trainer_settings.measured_settings`: ``max_epochs``, the batch
limits, the validation schedule, precision ``32`` as ``32-true`` ...), and
its seed from ``config.yaml``'s ``seed_everything``, and what it trained on by content from
``data_identity.json`` (:mod:`roformer_lit.training.data_identity`; None for a run from
before the record or a position task, whose settings identify its data).

A run is **finished** when it validated at its last step (every ``fit`` validates there:
:class:`~roformer_lit.training.final_validation.ValidateAtEnd`): the step its logs record
as its end (:data:`~roformer_lit.run_files.TOTAL_STEPS_TAG`, by steps or by epochs, so a
run limited by epochs killed mid-epoch is unfinished and one that completed its epochs
before ``max_steps`` is finished), else, for a run from before that record, its
``config.yaml``'s ``trainer.max_steps``; a run with neither (an old run limited by epochs
alone) is taken as finished, as nothing says otherwise.

Evaluation-only runs (``validate``/``test``/``predict``, version ``...-validate[-k]``, or a
directory where no ``fit`` started: no training scalars, no length record, no checkpoints;
a fit that failed early is an unfinished training run) are summarised too but flagged
``evaluation_only``; the comparison table leaves them out and lists them separately.

Damaged runs never stop a comparison: a run whose files are partly unreadable (a truncated
event file, a ``config.yaml`` that is not YAML ...) is summarised from what can be read and
carries the problems in ``problems`` (the table's note column); a run with nothing to
table (no event file, no readable scalar, an unreadable directory) is skipped. Either way
one ``warning:`` line per problem goes to ``report`` (stderr by default).
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roformer_lit.encoder_config import canonical_model
from roformer_lit.errors import ConfigError
from roformer_lit.results.compare.components import plugin_identity
from roformer_lit.results.events import RunEvents, Scalar, read_run
from roformer_lit.run_files import (
    TOTAL_STEPS_TAG,
    RunFileError,
    holds_run_files,
    read_yaml_mapping,
    warn,
)
from roformer_lit.safe_input import missing_path_hint
from roformer_lit.training.data_identity import DATA_IDENTITY_FILE, read_record
from roformer_lit.training.divergence_record import Divergence, read_divergence
from roformer_lit.training.run_dir import is_moved_aside, moved_aside_note
from roformer_lit.training.trainer_settings import measured_settings

Report = Callable[[str], None]
#: A data setting ``config.yaml`` names otherwise than ``hparams.yaml`` saves it (the data
#: modules' ``SAVED_AS``: the corpus's ``vocab_size`` is saved as ``requested_vocab_size``,
#: ``vocab_size`` being the model's own).
DATA_SAVED_AS = {"vocab_size": "requested_vocab_size"}
#: Model settings a run saves in another spelling than its config gives them by design (a
#: built-in scheme or kernel named by its import path is saved by its short name, and a
#: layer plan's types likewise): never read as an edit.
RESPELLED = frozenset({"position", "attention", "layer_plan"})
#: Data settings that ``config.yaml`` leaves null by design and the run resolves as it
#: starts (a fine-tuning task's ``num_labels``: its own, or inferred from the labels, and
#: linked to the model's, which ``hparams.yaml`` saves under the same name): null there is
#: the request, the resolved value in ``hparams.yaml`` its answer, never an edit.
RESOLVED_WHEN_NULL = frozenset({"num_labels"})
#: How a run's note (and ``runs.csv``'s ``note`` column) starts when the run has not
#: validated at its last step: ``unfinished: last validated at step N of M``.
UNFINISHED = "unfinished"
#: How a run's note starts when it stopped on a non-finite loss or gradient (its
#: :data:`~roformer_lit.training.divergence_record.DIVERGED_FILE`): ``diverged at step N
#: of M``.
DIVERGED = "diverged"

_EVAL_VERSION = re.compile(r"-(validate|test|predict)(-\d+)?$")
_SEED_IN_NAME = re.compile(r"seed(-?\d+)")
_TRAINING_TAG = re.compile(r"^(train/|perf/|lr-|run/)")


@dataclass
class RunSummary:
    """One run's final numbers (None where the run never logged that scalar)."""

    path: Path
    position: str
    attention: str
    seed: int | None
    hparams: dict[str, Any]
    final_val_loss: float | None = None
    best_val_loss: float | None = None
    val_acc: float | None = None
    val_exact: float | None = None  # a position task's last val/exact
    val_ppl: float | None = None
    steps: int | None = None  # optimizer steps done: last (0-based) step of a metric + 1
    tokens_per_s: float | None = None  # median over the run
    peak_mem_mb: float | None = None  # max over the run
    #: Seconds from the start of training (the run's length record, logged then; the first
    #: scalar for a run from before it) to its last metric scalar.
    wall_time_s: float | None = None
    #: ``(step, seconds since training started (as wall_time_s), val/loss)`` in logging order.
    val_loss_series: list[tuple[int, float, float]] = field(default_factory=list)
    evaluation_only: bool = False
    #: Set by :func:`roformer_lit.results.compare.variants.assign_variants`; ``position-attention``
    #: until then.
    variant: str = ""
    #: Run files that could not be read completely, ``"<file>: <why>"`` each.
    problems: list[str] = field(default_factory=list)
    #: Why the run has nothing to table (it is then skipped), or None.
    unusable: str | None = None
    #: The run's ``trainer.max_steps`` (None: not set, or no ``config.yaml``).
    max_steps: int | None = None
    #: The steps to its end the run recorded (:data:`TOTAL_STEPS_TAG`; None: a run from
    #: before the record, or without a known end).
    total_steps: int | None = None
    #: Whether its ``config.yaml`` was found (without it, its trainer settings are unknown).
    has_config: bool = True
    #: The content identity of the data it trained and validated on (None: not recorded).
    data_identity: str | None = None
    #: Each plugin its checkpoint records (``position:logdist``) -> the identity of its
    #: class, and of its options (:func:`~roformer_lit.results.compare.components.
    #: plugin_identity`; empty: built-ins only, or not recorded).
    plugin_identity: dict[str, str] = field(default_factory=dict)
    plugin_options: dict[str, str] = field(default_factory=dict)
    #: The note of a run resumed at other model or data settings (:func:`_resumed_changes`),
    #: or "".
    resumed: str = ""
    #: Its record of a divergence (:func:`~roformer_lit.training.divergence_record.
    #: read_divergence`), or None.
    divergence: Divergence | None = None

    def __post_init__(self) -> None:
        if not self.variant:
            self.variant = f"{self.position}-{self.attention}"

    @property
    def notes(self) -> list[str]:
        """What a reader of its table row must know: a failed attempt a sweep moved aside
        (given by path: a logdir's walk skips them), file problems, a missing val/loss,
        an unfinished run."""
        aside = moved_aside_note(Path(self.path).name)
        missing = [] if self.final_val_loss is not None else ["no val/loss logged"]
        if not self.has_config and not self.evaluation_only:
            missing.append("no config.yaml: its trainer settings are unknown, tabled apart")
        unfinished = [] if self.finished else [self.stopped]
        resumed = [self.resumed] if self.resumed else []
        return [*([aside] if aside else []), *self.problems, *resumed, *missing, *unfinished]

    @property
    def last_validated_step(self) -> int | None:
        """Optimiser steps done at the last validation (its 0-based step + 1)."""
        return self.val_loss_series[-1][0] + 1 if self.val_loss_series else None

    @property
    def end(self) -> int | None:
        """The step the run ends at: the one it recorded (:attr:`total_steps`), else its
        ``max_steps``; None when neither is known."""
        return self.total_steps if self.total_steps is not None else self.max_steps

    @property
    def finished(self) -> bool:
        """Whether the run validated at its :attr:`end` (every fit validates after its last
        step): False for a run still training or stopped early; True when unknown."""
        if self.end is None or self.evaluation_only:
            return True
        return (self.last_validated_step or 0) >= self.end

    @property
    def diverged(self) -> bool:
        """Whether the run stopped on a non-finite loss or gradient (its record says so)
        and has not reached its end since (a resume that finished)."""
        return self.divergence is not None and not self.finished

    @property
    def diverged_at(self) -> str:
        """``diverged at step N of M`` (the note of a diverged run; the step where its
        record gives it)."""
        step = self.divergence.step if self.divergence is not None else None
        at = "" if step is None else f" at step {step}"
        of = "" if step is None or self.end is None else f" of {self.end}"
        return f"{DIVERGED}{at}{of}"

    @property
    def stopped(self) -> str:
        """How an unfinished run stopped, as its note says it: ``diverged at step N of M``
        (:attr:`diverged_at`), else ``unfinished: <progress>``."""
        return self.diverged_at if self.diverged else f"{UNFINISHED}: {self.progress}"

    @property
    def progress(self) -> str:
        """``last validated at step N of M`` (the notes of an unfinished run)."""
        done = self.last_validated_step
        at = "no validation yet" if done is None else f"last validated at step {done}"
        return f"{at} of {self.end}"


def find_run_dirs(logdir: str | Path, report: Report = warn) -> list[Path]:
    """Every directory under ``logdir`` (itself included) that holds an event file, a
    ``config.yaml`` or an ``hparams.yaml`` (not inside a run's ``checkpoints/``, and not a
    failed attempt a sweep moved aside, ``<version>.failed-<k>``: reported), sorted.
    Symbolic links to directories are followed, each real directory once (by a path
    without a link where there is one). Subdirectories that cannot be listed are reported
    and skipped; a ``logdir`` that is missing, not a directory or unreadable raises
    ConfigError."""
    root = Path(logdir)
    if not os.path.lexists(root):
        raise ConfigError(f"log directory not found: {root}{missing_path_hint(root)}")
    if not os.path.isdir(root):
        raise ConfigError(f"not a directory: {root}")
    try:
        os.scandir(root).close()
    except OSError as exc:
        raise ConfigError(f"cannot read log directory {root}: {exc.strerror or exc}") from exc

    def unreadable(exc: OSError) -> None:
        report(f"{exc.filename}: cannot be read ({exc.strerror or exc}); skipped")

    found = set()
    claimed = {os.path.realpath(root)}  # every directory once, however it is reached
    for current, subdirs, files in os.walk(root, onerror=unreadable, followlinks=True):
        for aside in sorted(d for d in subdirs if is_moved_aside(d)):
            report(f"{Path(current) / aside}: a failed attempt a sweep moved aside; skipped")
            subdirs.remove(aside)
        # a directory linked in (``latest -> rope-seed1``, a run gathered from elsewhere) is
        # walked once, by its real path first: never twice, never round a loop
        subdirs.sort(key=lambda d: (os.path.islink(os.path.join(current, d)), d))
        for name in list(subdirs):
            real = os.path.realpath(os.path.join(current, name))
            if real in claimed:
                subdirs.remove(name)
            claimed.add(real)
        if holds_run_files(files):
            found.add(Path(current))
            if "checkpoints" in subdirs:  # a run's checkpoints are never a run
                subdirs.remove("checkpoints")
    return sorted(found)


def summarize_run(run_dir: str | Path, events: RunEvents | None = None) -> RunSummary:
    """One run directory as a :class:`RunSummary` (variant label not yet assigned).

    Never raises for damaged run files: see ``problems`` and ``unusable``.
    """
    run_dir = Path(run_dir)
    try:
        events = events if events is not None else read_run(run_dir)
    except OSError as exc:  # the directory vanished or became unreadable meanwhile
        events = RunEvents(run_dir, problems=[f"cannot be read ({exc.strerror or exc})"])
    problems = list(events.problems)
    config = _read_yaml(run_dir, "config.yaml", problems)
    hparams = {
        k: v
        for k, v in _read_yaml(run_dir, "hparams.yaml", problems).items()
        if not str(k).startswith("_")
    }
    if not hparams and isinstance(config.get("model"), dict):  # no hparams.yaml: the config's
        hparams = {**_settings(config, "data"), **config["model"]}
    problems += _disagreements(config, hparams)
    resumed = _resumed_changes(run_dir, config, hparams, problems)
    trainer = config.get("trainer")
    trainer = trainer if isinstance(trainer, dict) else {}
    if trainer:  # a run without its config.yaml has unknown trainer settings
        hparams.update(measured_settings(trainer))
    series = {tag: points for tag, points in events.scalars.items() if tag != TOTAL_STEPS_TAG}
    all_points = [s for points in series.values() for s in points]
    # the clock starts with training: the length record is logged then, the first
    # metric only once log_every_n_steps steps have trained
    start = min(
        (s.wall_time for s in (*all_points, *events.scalars.get(TOTAL_STEPS_TAG, []))),
        default=0.0,
    )
    val_loss = series.get("val/loss", [])
    tokens = [s.value for s in series.get("perf/tokens_per_s", []) if math.isfinite(s.value)]
    memory = [s.value for s in series.get("perf/peak_mem_mb", []) if math.isfinite(s.value)]
    has_checkpoints = os.path.isdir(run_dir / "checkpoints")
    plugins = plugin_identity(run_dir)
    divergence = read_divergence(run_dir)
    trained = _fit_started(events, has_checkpoints) or divergence is not None
    return RunSummary(
        path=run_dir,
        position=str(hparams.get("position", "?")),
        attention=str(hparams.get("attention", "?")),
        seed=_seed(config, run_dir.name),
        hparams=hparams,
        final_val_loss=events.last("val/loss"),
        best_val_loss=min((s.value for s in val_loss), default=None),
        val_acc=events.last("val/acc"),
        val_exact=events.last("val/exact"),
        val_ppl=events.last("val/ppl"),
        steps=_steps(all_points),
        tokens_per_s=statistics.median(tokens) if tokens else None,
        peak_mem_mb=max(memory, default=None),
        wall_time_s=(max(s.wall_time for s in all_points) - start) if all_points else None,
        val_loss_series=[(s.step, s.wall_time - start, s.value) for s in val_loss],
        evaluation_only=bool(_EVAL_VERSION.search(run_dir.name)) or not trained,
        problems=problems,
        unusable=None if divergence is not None else _unusable(events),  # listed: diverged
        max_steps=_max_steps(trainer),
        total_steps=_count(events.last(TOTAL_STEPS_TAG)),
        has_config=os.path.lexists(run_dir / "config.yaml"),
        data_identity=_data_identity(run_dir, problems),
        plugin_identity=plugins[0],
        plugin_options=plugins[1],
        resumed=resumed,
        divergence=divergence,
    )


def _fit_started(events: RunEvents, has_checkpoints: bool) -> bool:
    """Whether a ``fit`` ran in the directory, however far it got: training scalars, the
    length record a fit logs as training starts (:data:`TOTAL_STEPS_TAG`, which the metric
    series leave out) or checkpoints. An evaluation writes none of them, so a fit that
    failed or was killed before its first checkpoint is an unfinished training run, never
    an evaluation run."""
    return has_checkpoints or any(_TRAINING_TAG.match(tag) for tag in events.scalars)


def _data_identity(run_dir: Path, problems: list[str]) -> str | None:
    """The run's recorded data identity; None (with the reason in ``problems`` where the
    record is there but unusable) where it has none."""
    try:
        return read_record(run_dir)
    except RunFileError as exc:
        problems.append(f"{DATA_IDENTITY_FILE}: {exc}")
        return None


def _disagreements(config: dict[str, Any], hparams: dict[str, Any]) -> list[str]:
    """``config.yaml``'s model and data settings that ``hparams.yaml`` saved otherwise: both
    are written as the run starts, from one configuration, so a difference is a file edited
    afterwards, and the run's variant (read from ``hparams.yaml``) may not be what it
    trained as. One problem per file pair, naming each such setting."""
    found = []
    for section, saved_as in (("model", {}), ("data", DATA_SAVED_AS)):
        skipped = RESPELLED if section == "model" else frozenset()
        settings = _settings(config, section)
        if not settings:
            continue
        # the architecture as the config holds it (and saves it since): block {mlp: swiglu,
        # norm: layernorm} in config.yaml is hparams.yaml's {mlp: swiglu}
        held, held_saved = (
            (canonical_model(settings), canonical_model(hparams))
            if section == "model"
            else (settings, hparams)
        )
        for key, value in settings.items():
            if key in skipped or (
                section == "data" and value is None and key in RESOLVED_WHEN_NULL
            ):
                continue
            saved = saved_as.get(key, key)
            if saved in hparams and _written(held_saved[saved]) != _written(held[key]):
                found.append(
                    f"{section}.{key} {_written(value)} in config.yaml, "
                    f"{_written(hparams[saved])} in hparams.yaml"
                )
    if not found:
        return []
    return [
        "config.yaml and hparams.yaml disagree (a file edited after the run?): "
        + "; ".join(found)
        + "; tabled by hparams.yaml"
    ]


#: Settings a resume takes from the command, as they belong to the machine (the table's
#: ``MACHINE_SETTINGS``: a moved pretrained checkpoint, workers, a cache): never a change.
_RESUME_MACHINE = frozenset({"pretrained", "num_workers", "num_proc", "cache_dir"})
_RESUMED_CONFIG = re.compile(r"^config-resumed-(\d+)\.yaml$")


def _settings(config: dict[str, Any], section: str) -> dict[str, Any]:
    """``config``'s ``section`` as a mapping of its settings (a data module named by its
    ``class_path``: its ``init_args``); ``{}`` where it holds none."""
    settings = config.get(section)
    if isinstance(settings, dict) and isinstance(settings.get("init_args"), dict):
        settings = settings["init_args"]  # a data module named by its class_path
    return settings if isinstance(settings, dict) else {}


def _resumed_changes(
    run_dir: Path, config: dict[str, Any], hparams: dict[str, Any], problems: list[str]
) -> str:
    """A run resumed at other model or data settings (``fit --ckpt_path`` takes a typed
    ``--model.dropout`` with a ``note:`` line, and writes the resumed configuration as
    ``config-resumed-<k>.yaml``) trained its steps at more than one value, while
    ``hparams.yaml`` keeps the first: each such setting's value in ``hparams`` becomes
    ``first then second`` (its own variant, never averaged with runs that trained at either
    throughout), and the returned note names them ("" where no resume changed one)."""
    resumes = []
    for path in run_dir.glob("config-resumed-*.yaml"):
        match = _RESUMED_CONFIG.match(path.name)
        if match:
            resumes.append((int(match.group(1)), path.name))
    changed: dict[tuple[str, str], list[str]] = {}
    for _, name in sorted(resumes):
        resumed = _read_yaml(run_dir, name, problems)
        for section in ("model", "data"):
            first = _settings(config, section)
            for key, value in _settings(resumed, section).items():
                if key in _RESUME_MACHINE or (section == "model" and key in RESPELLED):
                    continue
                if key not in first or (first[key] is None and key in RESOLVED_WHEN_NULL):
                    continue
                values = changed.setdefault((section, key), [_written(first[key])])
                if _written(value) != values[-1]:
                    values.append(_written(value))
    words = []
    for (section, key), values in sorted(changed.items()):
        if len(values) < 2:
            continue
        saved = (DATA_SAVED_AS if section == "data" else {}).get(key, key)
        hparams[saved] = " then ".join(values)
        words.append(f"{section}.{key} {' then '.join(values)}")
    if not words:
        return ""
    return "resumed at other settings (config-resumed-<k>.yaml): " + "; ".join(words)


def _written(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _max_steps(trainer: dict[str, Any]) -> int | None:
    value = trainer.get("max_steps")
    ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
    return value if ok else None


def _count(value: float | None) -> int | None:
    """A logged step count as an integer: None unless a whole number of at least one."""
    if value is None or not math.isfinite(value) or value < 1 or value != int(value):
        return None
    return int(value)


def _unusable(events: RunEvents) -> str | None:
    """Why a run has nothing to table: no event file, or no scalar that can be read."""
    if events.scalars:
        return None
    if events.problems:
        return "; ".join(events.problems)
    if events.files == 0:
        return "no event file (the run logged nothing, or it was removed)"
    return "its event files hold no scalars yet"


def _steps(points: list[Scalar]) -> int | None:
    """Lightning logs at the 0-based index of the last optimizer step: a 600-step run's
    last scalar sits at step 599."""
    return max(s.step for s in points) + 1 if points else None


def _seed(config: dict[str, Any], name: str) -> int | None:
    seed = config.get("seed_everything")
    if isinstance(seed, int) and not isinstance(seed, bool):
        return seed
    match = _SEED_IN_NAME.search(name)
    return int(match.group(1)) if match else None


def _read_yaml(run_dir: Path, name: str, problems: list[str]) -> dict[str, Any]:
    """The mapping in ``run_dir/name``; ``{}`` if the file is absent, or (recording why in
    ``problems``) if it cannot be used."""
    path = run_dir / name
    if not os.path.lexists(path):
        return {}
    try:
        return read_yaml_mapping(path)
    except RunFileError as exc:
        problems.append(f"{name}: {exc}")
        return {}
