"""Whether a finished run is still the run the sweep asks for, before it is skipped.

A run's name comes from the grid's values, so a sweep file edited after a run finished can
ask for another run under the same name (a plan type renamed, a value whose label did not
change): skipping it as finished would table the old run as the new one. So a finished run
is skipped only when the settings it ran with (its ``config.yaml``) are those the sweep
gives it now: the seed, every model setting both name (a layer plan as what it builds,
:func:`~roformer_lit.plan_identity.same_plan`: ``layers:`` for ``pattern:`` is no change),
every data setting both name, machine settings aside, and the trainer's settings that
change what a run trains or measures, as the trainer holds them
(:func:`~roformer_lit.training.trainer_settings.measured_settings`: a sweep whose
``trainer.max_steps`` grew would otherwise skip the shorter runs as finished). Otherwise the
sweep is refused in one line before anything runs: the run is left as it is.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from roformer_lit.plan_identity import plain, same_plan
from roformer_lit.run_files import RunFileError, read_yaml_mapping
from roformer_lit.training.trainer_settings import measured_settings

#: Settings of the machine, not of the run (a finished run may have used other values).
MACHINE_KEYS = ("data.num_workers", "data.num_proc", "data.cache_dir", "model.vocab_size")


def _data(section: Any) -> dict[str, Any]:
    from roformer_lit.data.modules import settings_of

    try:
        return settings_of(plain(section) or {}, lenient=True)
    except Exception:  # a section that no longer reads: compared as written
        return dict(plain(section) or {})


def _sections(config: Mapping[str, Any]) -> dict[str, Any]:
    model = plain(config.get("model")) or {}
    found = {f"model.{k}": v for k, v in model.items()} if isinstance(model, Mapping) else {}
    found.update({f"data.{k}": v for k, v in _data(config.get("data")).items()})
    found["seed_everything"] = config.get("seed_everything")
    trainer = plain(config.get("trainer"))
    if isinstance(trainer, Mapping):
        found.update(measured_settings(trainer))
    return found


def first_difference(ran: Mapping[str, Any], asked: Any) -> str | None:
    """``key: <value the run had> -> <value asked now>`` for the first setting of the run's
    config ``ran`` that the parsed config ``asked`` sets otherwise; None where none does."""
    from roformer_lit.commands.checkpoint_settings import same_setting

    theirs, ours = _sections(ran), _sections(plain(asked))
    for key in sorted(set(theirs) & set(ours)):
        if key in MACHINE_KEYS:
            continue
        if key == "model.layer_plan":
            same = same_plan(plain(ran.get("model")) or {}, plain(asked.get("model")) or {})
        else:
            same = same_setting(theirs[key], ours[key])
        if not same:
            return f"{key}: {plain(theirs[key])!r} -> {plain(ours[key])!r}"
    return None


def check_finished(version: str, run_dir: str | Path, asked: Any) -> None:
    """Refuse (one ConfigError line) skipping the finished run ``version`` at ``run_dir``
    when it ran with other settings than ``asked`` (the parsed config the sweep gives it
    now). A run without a readable ``config.yaml`` is not compared."""
    from roformer_lit.errors import ConfigError

    path = Path(run_dir) / "config.yaml"
    if not os.path.isfile(path):
        return
    try:
        ran = read_yaml_mapping(path)
    except RunFileError:
        return
    difference = first_difference(ran, asked)
    if difference is not None:
        raise ConfigError(
            f"sweep: run {version} finished with other settings than the sweep now gives it "
            f"({difference}; {path}): it would be skipped as finished; move {run_dir} aside "
            "or give the sweep another name"
        )


__all__ = ["check_finished", "first_difference"]
