"""A checkpoint's record of where its schemes and kernels came from, held against what
their names resolve to here.

``fit`` records, under :data:`COMPONENTS_KEY`, each scheme and kernel its layers use with
its origin (:meth:`~roformer_lit.encoder_config.EncoderConfig.origins`): built-in, an
entry point's value and distribution, an import path's module. A short name is not an
object: the entry point ``logdist`` may name another class once another distribution is
installed, or a later version of the package may make it a built-in. A checkpoint read
where its name resolves to another object than the one it trained with would load its
weights into another scheme, and every metric after that would be of a model that never
existed, exit 0. :func:`check_recorded_components`, called by the one reader of
checkpoints (:func:`~roformer_lit.training.checkpoint_io.read_checkpoint`), refuses such
a checkpoint in one line naming both. What may differ is the version of one distribution
(a plugin's bug fix); a name that no longer resolves is left to the lookup, which
refuses it naming the valid ones.

The record also holds each plugin's options as its layers built it, every option over
its class's defaults (:func:`record`): a checkpoint records only the options written, so a
plugin whose default changed since (``power: float = 1.0`` become ``2.0``, in place or in
a later version) would build, from the same record, another model than the one the
weights trained in. Such a checkpoint is refused too, naming the options that differ.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import torch

from roformer_lit.encoder_config import NAMED_COMPONENTS, EncoderConfig
from roformer_lit.errors import ConfigError
from roformer_lit.plan_identity import number, plain
from roformer_lit.registry import loaded_registry, with_defaults

#: The checkpoint key of where the run's schemes and kernels came from.
COMPONENTS_KEY = "components"


#: The entry-point group of the position tasks, recorded as ``probe:<name>``.
TASKS_GROUP = "roformer_lit.tasks"


def recorded_registries() -> dict[str, Any]:
    """Every registry a record names, by the word before its key's ``:``: the layers'
    schemes and kernels, and the position tasks (``data.probe``) where their registry is
    loaded in this process (a command that builds data has it; a model loaded through the
    Python API uses no task)."""
    tasks = loaded_registry(TASKS_GROUP)
    return {**NAMED_COMPONENTS, **({"probe": tasks} if tasks is not None else {})}


#: The fields of an origin that say which object a name is; the others (``version``,
#: ``distribution``, ``group``) may change without the object changing.
IDENTITY = ("source", "value", "module")


def record(
    config: EncoderConfig, data: Mapping[str, Any] | None = None
) -> dict[str, dict[str, Any]]:
    """What a checkpoint records of ``config``'s schemes and kernels: each one's origin
    (:meth:`~roformer_lit.encoder_config.EncoderConfig.origins`) and, for a plugin's,
    ``options``: the distinct option sets its layers built it with, in layer order, every
    option over its class's defaults, as plain data (a default that is not, an enum say,
    by its ``repr``: a checkpoint is read with ``weights_only``). With ``data`` (the data
    module's settings) naming a position task, ``probe:<name>`` and the task's origin too:
    a task is generated from its settings and seed, which identify its data only while
    its name means the same code."""
    found = {key: dict(origin) for key, origin in config.origins().items()}
    task = (data or {}).get("probe")
    tasks = recorded_registries().get("probe")
    if isinstance(task, str) and tasks is not None and task in tasks:
        found[f"probe:{task}"] = dict(tasks.origin(task))
    for layer in config.layers:
        built = (
            ("position", layer.spec.position, layer.scheme, layer.scheme_options),
            ("attention", layer.spec.attention, layer.kernel, layer.kernel_options),
        )
        for what, name, cls, options in built:
            if found[f"{what}:{name}"].get("source") == "builtin":
                continue  # the package's own defaults: its earlier checkpoints' tests hold them
            listed = found[f"{what}:{name}"].setdefault("options", [])
            resolved = json.loads(
                json.dumps(number(plain(with_defaults(cls, options))), default=repr)
            )
            if resolved not in listed:
                listed.append(resolved)
    return found


def identity(origin: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of ``origin`` that say which object it is (:data:`IDENTITY`)."""
    return {key: origin[key] for key in IDENTITY if key in origin}


def described(origin: Mapping[str, Any]) -> str:
    """An origin in words: ``the built-in``, ``the entry point 'pkg.mod:Class' (dist
    1.0)``, ``the import path's module 'pkg.mod'``."""
    source = origin.get("source")
    dist = origin.get("distribution")
    where = f" ({dist} {origin.get('version', '')})".replace(" )", ")") if dist else ""
    if source == "builtin":
        return "the built-in"
    if source == "entry_point":
        return f"the entry point {origin.get('value')!r}{where}"
    if source == "registered":
        return f"a class registered from module {origin.get('module')!r}"
    return f"{source} {origin.get('module')!r}{where}"


def check_recorded_components(checkpoint: Mapping[str, Any], path: Any) -> None:
    """Refuse, in one ConfigError line, a checkpoint one of whose recorded schemes,
    kernels or position task (:data:`COMPONENTS_KEY`, :func:`recorded_registries`) is, here, another
    object than the one it trained with (:data:`IDENTITY` differs). A checkpoint without
    the record (older ones), a record not of this form (its own check reports a damaged
    record), and a name that does not resolve here (the lookup reports it) pass."""
    recorded_all = checkpoint.get(COMPONENTS_KEY)
    if not isinstance(recorded_all, Mapping):
        return
    registries = recorded_registries()
    for key, recorded in recorded_all.items():
        what, _, name = str(key).partition(":")
        registry = registries.get(what)
        if registry is None or not isinstance(recorded, Mapping) or not name:
            continue
        try:
            registry[name]  # resolves it, or says why not when the model is built
        except (ConfigError, KeyError):
            continue
        here = registry.origin(name)
        if identity(recorded) != identity(here):
            raise ConfigError(
                f"checkpoint {path} was trained with {what} {name!r} from "
                f"{described(recorded)}, but here {name!r} is {described(here)}: the run "
                f"would be read with another {what} than the one it trained with; install the "
                "plugin it was trained with (or uninstall the one that took its name)"
            )
    _check_recorded_options(checkpoint, recorded_all, path)


def _check_recorded_options(
    checkpoint: Mapping[str, Any], recorded: Mapping[str, Any], path: Any
) -> None:
    """Refuse a checkpoint whose components' options (:func:`record`), read here from its
    settings over the classes' defaults, differ from those it recorded (a default changed
    since). A record without options (older checkpoints), or settings that do not build
    a config here (the command refuses them in its own line), pass."""
    try:
        here = record(EncoderConfig.from_settings(checkpoint.get("hyper_parameters") or {}))
    except Exception:  # not a config here: the command that builds it says why, in one line
        return
    for key, origin in recorded.items():
        then = origin.get("options") if isinstance(origin, Mapping) else None
        now = here.get(str(key), {}).get("options")
        if then is None or now is None or then == now:
            continue
        what, _, name = str(key).partition(":")
        changed = sorted(
            {
                option
                for old, new in zip(then, now, strict=False)
                for option in set(old) & set(new)  # one added since: its default is its old way
                if old[option] != new[option]
            }
        )
        if not changed and len(then) == len(now):
            continue
        detail = "; ".join(
            f"{option}: {_values(then, option)} then, {_values(now, option)} here"
            for option in changed
        )
        raise ConfigError(
            f"checkpoint {path} was trained with {what} {name!r} whose options have changed "
            f"since ({detail or f'{then} then, {now} here'}): the same settings now build "
            f"another model than its weights trained in (a default of "
            f"{described(here[str(key)])} changed?); install the version it was trained with"
        )


def _values(options: list[dict[str, Any]], option: str) -> str:
    """Option ``option``'s value in each option set, ``(none)`` where it has none."""
    return ", ".join(repr(one[option]) if option in one else "(none)" for one in options)


def recorded_origins(
    checkpoint: str | os.PathLike[str] | Mapping[str, Any], about: BaseException
) -> str:
    """``"; the checkpoint records position 'x' from <distribution> <version>, ..."`` for
    the plugins a checkpoint records that the error ``about`` names and that do not load
    here: an error about a plugin gone then says where the checkpoint's came from, to find
    it again, and any other error (a plugin that loads, a setting refused for another
    reason) is left as it is (``""``; also for built-ins only, or an older checkpoint).
    ``checkpoint`` is one already loaded, or the path of one to read."""
    if not isinstance(checkpoint, Mapping):
        try:
            checkpoint = torch.load(checkpoint, map_location="cpu", weights_only=True)
        except Exception:
            return ""
    found = checkpoint.get(COMPONENTS_KEY)
    if not isinstance(found, Mapping):
        return ""
    registries = recorded_registries()
    message = str(about)
    parts = []
    for key, origin in found.items():
        if not isinstance(origin, Mapping) or origin.get("source") == "builtin":
            continue
        what, _, name = str(key).partition(":")
        if repr(name) not in message or _loads_here(registries.get(what), name):
            continue
        where = origin.get("distribution") or origin.get("module") or origin.get("source")
        version = f" {origin['version']}" if origin.get("version") else ""
        parts.append(f"{what} {name!r} from {where}{version}")
    return f"; the checkpoint records {', '.join(parts)}" if parts else ""


def _loads_here(registry: Any, name: str) -> bool:
    """Whether ``name`` resolves in ``registry`` here (a registry this process has not
    loaded, as a model read without data has no tasks', is not what failed: True)."""
    if registry is None:
        return True
    try:
        registry[name]
    except Exception:  # a name unknown, a plugin that fails to import: it does not load
        return False
    return True
