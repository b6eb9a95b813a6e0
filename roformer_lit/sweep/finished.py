"""Whether a run the sweep would skip or resume is still the run the sweep asks for, checked
for every such run before anything is launched.

A run's name comes from the grid's values, so a sweep file edited after a run started can
ask for another run under the same name (a plan type renamed, a value whose label did not
change, an override changed): skipping it as finished would table the old run as the new
one, and resuming an interrupted one would either continue it as a mix of both (a setting
``fit`` takes on resume, such as a dropout) or be refused by the resumed ``fit`` at its
launch, after other runs of the sweep had already run. So a finished or interrupted run is
skipped or resumed only when the settings it ran with (its ``config.yaml``) are those the
sweep gives it now: the seed, every model setting both name (a layer plan as what it
builds, :func:`~roformer_lit.plan_identity.same_plan`: ``layers:`` for ``pattern:`` is no
change; every other architecture field as the config holds it,
:func:`~roformer_lit.encoder_config.compared_model`: ``block: {norm: layernorm}``
is no block), every data setting both name (one a run's ``config.yaml`` does not name, a run
from before the setting existed, at its default: :func:`model_defaults`, the data
class's), machine settings aside, and the trainer's settings
that change what a run trains or measures, as the trainer holds them
(:func:`~roformer_lit.training.trainer_settings.measured_settings`: a sweep whose
``trainer.max_steps`` grew would otherwise skip the shorter runs as finished); a finished
run short of its end (its ``trainer.max_time`` or an early-stopping callback stopped it,
exit 0) is skipped only under the same ones (:func:`stop_difference`). Otherwise the
sweep is refused in one line naming the run and the setting, before anything runs
(:func:`check_continued`, for every such run at once): the run is left as it is.

Settings name files by path, so the same settings can give other data (a corpus edited
since the run, a regenerated tokenizer file). A run that recorded the content identity of
its data (``data_identity.json``, :mod:`roformer_lit.training.data_identity`) is skipped or
resumed only when the data the sweep gives it now have that identity; otherwise the sweep
is refused the same way, naming both identities (:func:`check_continued_data`: the sweep
prepares those data first, as it would to run them; a fine-tuning sweep reads the task's
examples, :mod:`roformer_lit.finetune.task_identity`). A run without a record, and a
``--dry-run`` (which prepares nothing), are not compared by data.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from roformer_lit.errors import ConfigError
from roformer_lit.plan_identity import plain, same_plan
from roformer_lit.run_files import RunFileError, read_yaml_mapping
from roformer_lit.training.data_identity import DATA_IDENTITY_FILE, read_record, short_identity
from roformer_lit.training.trainer_settings import duration_seconds, measured_settings

# The imports inside functions below are of modules that import Lightning (the data
# modules, the LightningModules, checkpoint reading): deferred so that reading a sweep file
# and planning its runs does not load it. None of them imports roformer_lit.sweep.

#: Settings of the machine, not of the run (a finished run may have used other values).
MACHINE_KEYS = ("data.num_workers", "data.num_proc", "data.cache_dir", "model.vocab_size")


def _data(section: Any, defaults: bool = True) -> dict[str, Any]:
    """A data section's settings, flat; with ``defaults``, over its class's defaults (a
    setting the section does not name, a run from before it existed, has its default)."""
    from roformer_lit.data.modules import resolve

    try:
        cls, own = resolve(plain(section) or {}, True)
        found = {
            k: plain(v) for k, v in cls.arguments().items() if v is not inspect.Parameter.empty
        }
        return {**(found if defaults else {}), **own}
    except Exception:  # a section that no longer reads: compared as written
        return dict(plain(section) or {})


def _model_class(command: str) -> type:
    """The class a ``command``'s ``model`` section builds (its settings' defaults)."""
    if command == "finetune":
        from roformer_lit.finetune.module import SequenceClassifier

        return SequenceClassifier
    from roformer_lit.module import MaskedLM

    return MaskedLM


@functools.cache
def model_defaults(command: str = "fit") -> dict[str, Any]:
    """Every model setting's default, the keyword arguments of the class ``command``'s
    ``model`` section builds (``fit``: :class:`~roformer_lit.module.MaskedLM`; ``finetune``:
    :class:`~roformer_lit.finetune.module.SequenceClassifier`): what a run whose
    ``config.yaml`` predates a setting built with."""
    return {
        name: plain(p.default)
        for name, p in inspect.signature(_model_class(command).__init__).parameters.items()
        if p.default is not inspect.Parameter.empty
    }


def _sections(config: Mapping[str, Any], command: str = "fit") -> dict[str, Any]:
    """``section.key`` -> value of every compared setting of ``config``; a model setting the
    config does not name (a run from before the setting existed) has its default, and so
    has a ``fit`` run's data setting."""
    model = plain(config.get("model")) or {}
    found = (
        {f"model.{k}": v for k, v in {**model_defaults(command), **model}.items()}
        if isinstance(model, Mapping)
        else {}
    )
    found.update({f"data.{k}": v for k, v in _data(config.get("data"), command == "fit").items()})
    found["seed_everything"] = config.get("seed_everything")
    trainer = plain(config.get("trainer"))
    if isinstance(trainer, Mapping):
        found.update(measured_settings(trainer))
    return found


def first_difference(ran: Mapping[str, Any], asked: Any, command: str = "fit") -> str | None:
    """``key: <value the run had> -> <value asked now>`` for the first setting of the run's
    config ``ran`` that the parsed config ``asked`` sets otherwise; None where none does."""
    from roformer_lit.commands.checkpoint_settings import same_setting
    from roformer_lit.encoder_config import ENCODER_FIELDS, compared_model

    theirs, ours = _sections(ran, command), _sections(plain(asked), command)
    # the architecture as the config holds it: a run's block {mlp: swiglu, norm: layernorm}
    # is the sweep's {mlp: swiglu}
    held = [
        compared_model({k[len("model.") :]: v for k, v in found.items() if k.startswith("model.")})
        for found in (theirs, ours)
    ]
    for key in sorted(set(theirs) & set(ours)):
        if key in MACHINE_KEYS:
            continue
        if key == "model.layer_plan":
            same = same_plan(plain(ran.get("model")) or {}, plain(asked.get("model")) or {})
        elif key.startswith("model.") and key[len("model.") :] in ENCODER_FIELDS:
            name = key[len("model.") :]
            same = same_setting(held[0].get(name), held[1].get(name))
        else:
            same = same_setting(theirs[key], ours[key])
        if not same:
            return f"{key}: {plain(theirs[key])!r} -> {plain(ours[key])!r}"
    return None


#: Trainer settings that can end a run before its ``max_steps``/``max_epochs`` with exit 0
#: (a time limit, an early-stopping callback and the minimum it keeps): a finished run
#: short of its end is skipped only under the same ones (:func:`stop_difference`).
STOPPING_KEYS = ("max_time", "callbacks", "min_steps", "min_epochs")


def _stopping(config: Any, key: str) -> Any:
    """Trainer setting ``key`` of ``config`` as compared: ``max_time`` as its seconds where
    it reads as a duration, no callbacks (None) as ``[]``, anything else as plain data."""
    trainer = plain(config.get("trainer"))
    value = plain(trainer.get(key)) if isinstance(trainer, Mapping) else None
    if key == "max_time" and value is not None:
        seconds = duration_seconds(value)
        return seconds if seconds is not None else value
    if key == "callbacks" and value is None:
        return []
    return value


def stop_difference(ran: Mapping[str, Any], asked: Any, last_ckpt: Path) -> str | None:
    """``trainer.<key>: <ran> -> <asked>`` for the first of :data:`STOPPING_KEYS` the sweep
    now sets otherwise, when the finished run stopped before its end (its ``last.ckpt``
    short of its ``max_steps``/``max_epochs``: its ``max_time`` or an early-stopping
    callback ended it, exit 0): skipping it would table a run cut short as the longer run
    asked for. None when they agree, or the run reached its end (they did not stop it)."""
    from roformer_lit.training.checkpoint_io import at_its_end

    asked = plain(asked)
    changed = [k for k in STOPPING_KEYS if _stopping(ran, k) != _stopping(asked, k)]
    if not changed or at_its_end(last_ckpt):
        return None
    key = changed[0]
    written = [(plain(c.get("trainer")) or {}).get(key) for c in (ran, asked)]
    return (
        f"trainer.{key}: {plain(written[0])!r} -> {plain(written[1])!r}; it stopped short of "
        "its end"
    )


#: What the sweep would do with an existing run -> how the refusal says it.
CONTINUED = {
    "skip": ("finished", "it would be skipped as finished"),
    "resume": ("was interrupted", "it would be resumed from its last.ckpt as the run asked for"),
}


def check_continued(
    version: str, run_dir: str | Path, asked: Any, action: str, command: str = "fit"
) -> None:
    """Refuse (one ConfigError line) to ``action`` (``skip`` or ``resume``,
    :data:`CONTINUED`) the run ``version`` at ``run_dir`` when it ran with other settings
    than ``asked`` (the parsed config the sweep gives it now), or when its ``config.yaml``
    cannot say which settings it ran with (missing, unreadable, or without a ``model``
    section: a damaged run would otherwise be skipped as the run asked for, whatever it
    ran with). Any other action (a fresh run, a partial one moved aside) is not compared."""
    if action not in CONTINUED:
        return
    path = Path(run_dir) / "config.yaml"
    state, what = CONTINUED[action]
    try:
        ran = read_yaml_mapping(path)
        if not isinstance(ran.get("model"), Mapping):
            raise RunFileError("it has no model section")
    except RunFileError as exc:
        raise ConfigError(
            f"sweep: run {version} {state} but its settings cannot be read ({path}: {exc}), "
            f"so the sweep cannot tell whether it is the run it asks for: {what}; move "
            f"{run_dir} aside or give the sweep another name"
        ) from exc
    difference = first_difference(ran, asked, command)
    if difference is None and action == "skip":
        difference = stop_difference(ran, asked, Path(run_dir) / "checkpoints" / "last.ckpt")
    if difference is not None:
        raise ConfigError(
            f"sweep: run {version} {state} with other settings than the sweep now gives it "
            f"({difference}; {path}): {what}; move {run_dir} aside or give the sweep another "
            "name"
        )


def ran_as_asked(run_dir: str | Path, asked: Any, command: str = "fit") -> bool:
    """Whether the finished run at ``run_dir`` ran with the settings ``asked`` (the parsed
    config the sweep gives a run now): the comparison :func:`check_continued` makes before
    it skips a finished run (:func:`first_difference`, :func:`stop_difference`); False
    where its ``config.yaml`` cannot say (missing, unreadable, no ``model`` section)."""
    try:
        ran = read_yaml_mapping(Path(run_dir) / "config.yaml")
    except RunFileError:
        return False
    if not isinstance(ran.get("model"), Mapping):
        return False
    if first_difference(ran, asked, command) is not None:
        return False
    return stop_difference(ran, asked, Path(run_dir) / "checkpoints" / "last.ckpt") is None


def finished_as(asked: Any, finished: Sequence[str | Path], command: str = "fit") -> Path | None:
    """The first of the ``finished`` run directories (finished runs of the sweep's
    directory under names the sweep does not give now) that ran with the settings
    ``asked``: the run a sweep file whose grid keys were reordered (every run name
    changes) asks for again under a new name. The sweep skips it as finished there, as it
    skips a finished run under its own name, rather than training it twice; None where
    none did."""
    for run_dir in finished:
        if ran_as_asked(run_dir, asked, command):
            return Path(run_dir)
    return None


def _recorded(run_dir: str | Path) -> str | None:
    """The data identity a run recorded; None without a usable record (not compared)."""
    try:
        return read_record(run_dir)
    except RunFileError:
        return None


#: A run's command arguments -> (the data module its command would build, a key naming its
#: data section: the same key, the same data).
DataSection = Callable[[Sequence[str]], tuple[Any, str]]


def check_continued_data(
    continued: Sequence[tuple[str, str | Path, str, Sequence[str]]],
    data_section: DataSection | None = None,
) -> None:
    """Refuse (one ConfigError line) to skip or resume a run that recorded another data
    identity than the data the sweep gives it now (module docstring). ``continued``: each
    run as ``(version, run directory, action, its command arguments)``; ``data_section``
    builds a run's data module (default: ``fit``'s,
    :func:`~roformer_lit.commands.prepare.data_section`; ``finetune``'s is
    :func:`~roformer_lit.finetune.parse.data_section`); the data of each distinct data
    section are prepared (where they are not) and identified once."""
    if data_section is None:
        from roformer_lit.commands.prepare import data_section
    given: dict[str, str | None] = {}
    for version, run_dir, action, fit_args in continued:
        recorded = _recorded(run_dir) if action in CONTINUED else None
        if recorded is None:
            continue
        dm, section = data_section(fit_args)
        if section not in given:
            given[section] = dm.data_identity()
        now = given[section]
        if now is None or now == recorded:
            continue
        state, what = CONTINUED[action]
        raise ConfigError(
            f"sweep: run {version} {state} on other data than the sweep now gives it (data "
            f"{short_identity(recorded)} -> {short_identity(now)}: its settings name files "
            f"whose content differs; {Path(run_dir) / DATA_IDENTITY_FILE}): {what}; move "
            f"{run_dir} aside or give the sweep another name"
        )


__all__ = [
    "CONTINUED",
    "STOPPING_KEYS",
    "DataSection",
    "check_continued",
    "check_continued_data",
    "finished_as",
    "first_difference",
    "model_defaults",
    "ran_as_asked",
    "stop_difference",
]
