"""Which data module a ``data`` section builds: the one place that decides.

A section names its class as LightningCLI does (torchgeo's pattern)::

    data:
      class_path: roformer_lit.data.probe_module.ProbeDataModule
      init_args: {probe: copy, max_length: 33}

or is flat, as every config, run ``config.yaml`` and checkpoint of an earlier version
(one class took every argument) is: then ``probe`` picks the class -- a task name:
:class:`~roformer_lit.data.probe_module.ProbeDataModule`; absent or null:
:class:`~roformer_lit.data.corpus_module.CorpusDataModule`, the default
(:func:`data_class_for`). A flat section's keys of the other class are dropped where they
hold that class's default (an earlier version saved every key, a run's ``config.yaml``
composed on ``configs/base.yaml`` holds the corpus's); any other value is one
ConfigError line naming the chosen class's settings (:func:`split_flat`). Settings saved
in a checkpoint of an earlier version are read leniently (``lenient=True``): the other
class's keys are dropped whatever their value, as that version ignored them.

A new data source is one subclass of
:class:`~roformer_lit.data.datamodule.PretrainDataModule`, chosen in YAML by its
``class_path``, and one entry of :data:`DATA_MODULES`.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from roformer_lit.data.corpus_module import CorpusDataModule
from roformer_lit.data.datamodule import PretrainDataModule
from roformer_lit.data.probe_module import ProbeDataModule
from roformer_lit.errors import ConfigError

#: The data modules a ``data`` section can build; the first is the default.
DATA_MODULES: tuple[type[PretrainDataModule], ...] = (CorpusDataModule, ProbeDataModule)
#: Saved hyperparameter -> the argument it holds (``CorpusDataModule``'s ``vocab_size``).
SAVED_AS = {saved: name for cls in DATA_MODULES for name, saved in cls.SAVED_AS.items()}


def class_path(cls: type) -> str:
    """The ``class_path`` naming ``cls`` in YAML."""
    return f"{cls.__module__}.{cls.__qualname__}"


DEFAULT_CLASS_PATH = class_path(DATA_MODULES[0])


def data_class_for(flat: Mapping[str, Any]) -> type[PretrainDataModule]:
    """The class a flat section (an earlier version's config, ``config.yaml``, checkpoint
    settings) builds: a position task where ``probe`` names one, else the corpus."""
    return ProbeDataModule if flat.get("probe") is not None else CorpusDataModule


def _other_defaults(cls: type[PretrainDataModule]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for other in DATA_MODULES:
        if other is not cls:
            found.update(other.arguments())
    return found


def _shown(value: Any) -> str:
    if value is inspect.Parameter.empty:
        return ""
    return "=" + (str(value).lower() if isinstance(value, bool) else repr(value))


def refusal(cls: type[PretrainDataModule], key: str, value: Any, probe: Any = None) -> str:
    """The one line refusing setting ``key`` (given ``value``) for a section that builds
    ``cls``, naming the settings ``cls`` takes."""
    valid = ", ".join(sorted(cls.arguments()))
    if not any(key in other.arguments() for other in DATA_MODULES):
        return f"data.{key} is not a setting of {cls.__name__}; valid: {valid}"
    if cls is ProbeDataModule:
        task = "data.probe" if probe is None else f"data.probe={probe!r}"
        return (
            f"data.{key}{_shown(value)} cannot go with {task} (a position task builds its "
            f"own data): leave it out; valid: {valid}"
        )
    return (
        f"data.{key}{_shown(value)} needs data.probe (a position task's setting): leave it "
        f"out for a corpus ({cls.__name__}); valid: {valid}"
    )


def left_out(cls: type[PretrainDataModule], key: str, value: Any) -> bool:
    """Whether a flat section that builds ``cls`` leaves ``key: value`` out: a key only the
    other class takes, at that class's default (``probe: null`` for the corpus)."""
    if key in cls.arguments():
        return False
    if key == "probe" and value is None:
        return True
    others = _other_defaults(cls)
    return key in others and _same(value, others[key])


def split_flat(
    flat: Mapping[str, Any], lenient: bool = False
) -> tuple[type[PretrainDataModule], dict[str, Any]]:
    """(the class a flat section builds, the settings it takes) -- see the module."""
    flat = {SAVED_AS.get(k, k): v for k, v in flat.items()}
    cls = data_class_for(flat)
    accepted = cls.arguments()
    own: dict[str, Any] = {}
    for key, value in flat.items():
        if key in accepted:
            own[key] = value
        elif lenient or left_out(cls, key, value):
            continue
        else:
            raise ConfigError(refusal(cls, key, value, flat.get("probe")))
    return cls, own


def _same(value: Any, default: Any) -> bool:
    return value == default and isinstance(value, bool) == isinstance(default, bool)


def resolve(section: Any, lenient: bool = False) -> tuple[type[PretrainDataModule], dict[str, Any]]:
    """(class, settings) of a ``data`` section: a jsonargparse Namespace or a mapping, with
    ``class_path`` and ``init_args`` or flat (:func:`split_flat`)."""
    as_dict = getattr(section, "as_dict", None)
    values = dict(as_dict() if callable(as_dict) else (section or {}))
    named = values.get("class_path")
    if named is None:
        return split_flat(values, lenient)
    cls = data_class_named(str(named))
    init = values.get("init_args") or {}
    return cls, dict(init.as_dict() if hasattr(init, "as_dict") else init)


def data_class_named(named: str) -> type[PretrainDataModule]:
    """The data module a ``class_path`` names (its full path, or its class name)."""
    for cls in DATA_MODULES:  # jsonargparse may name a class where a package exports it
        if named in (class_path(cls), cls.__name__) or named.endswith(f".{cls.__name__}"):
            return cls
    valid = ", ".join(class_path(cls) for cls in DATA_MODULES)
    raise ConfigError(f"data.class_path={named!r} is not a data module; valid: {valid}")


def settings_of(section: Any, lenient: bool = False) -> dict[str, Any]:
    """A ``data`` section's settings as one flat dict (see :func:`resolve`)."""
    return resolve(section, lenient)[1]


def complete_settings(section: Any) -> tuple[type[PretrainDataModule], dict[str, Any]]:
    """(class, every argument of it: the section's values over the defaults)."""
    cls, own = resolve(section)
    defaults = {k: v for k, v in cls.arguments().items() if v is not inspect.Parameter.empty}
    return cls, {**defaults, **own}


def check_data_section(section: Any) -> type[PretrainDataModule]:
    """Every check of a ``data`` section that reads and builds nothing (its class's
    :meth:`~roformer_lit.data.datamodule.PretrainDataModule.check_settings` on its
    complete settings); returns the class it builds."""
    cls, settings = complete_settings(section)
    cls.check_settings(settings)
    return cls


def data_module(settings: Any, lenient: bool = True) -> PretrainDataModule:
    """The data module a section (or a checkpoint's saved settings) builds."""
    cls, own = resolve(settings, lenient)
    return cls(**own)


def flat_sections(document: Any) -> Any:
    """A parsed config document with a flat ``data`` section that names a ``probe`` key
    turned into ``class_path`` + ``init_args`` (:func:`split_flat`); anything else as it
    is (a flat section without ``probe`` sets the class already chosen: the default, or
    an earlier file's)."""
    if not isinstance(document, dict):
        return document
    data = document.get("data")
    if not isinstance(data, dict) or "class_path" in data or "probe" not in data:
        return document
    cls, own = split_flat(data)
    return {**document, "data": {"class_path": class_path(cls), "init_args": own}}


__all__ = [
    "DATA_MODULES",
    "DEFAULT_CLASS_PATH",
    "check_data_section",
    "class_path",
    "complete_settings",
    "data_class_for",
    "data_class_named",
    "data_module",
    "flat_sections",
    "refusal",
    "resolve",
    "settings_of",
    "split_flat",
]
