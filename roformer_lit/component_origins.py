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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roformer_lit.encoder_config import NAMED_COMPONENTS
from roformer_lit.errors import ConfigError

#: The checkpoint key of where the run's schemes and kernels came from.
COMPONENTS_KEY = "components"

#: The fields of an origin that say which object a name is; the others (``version``,
#: ``distribution``, ``group``) may change without the object changing.
IDENTITY = ("source", "value", "module")


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
    """Refuse, in one ConfigError line, a checkpoint one of whose recorded schemes or
    kernels (:data:`COMPONENTS_KEY`) is, here, another object than the one it trained
    with (:data:`IDENTITY` differs). A checkpoint without the record (older ones), a
    record not of this form (its own check reports a damaged record), and a name that
    does not resolve here (the lookup reports it) pass."""
    record = checkpoint.get(COMPONENTS_KEY)
    if not isinstance(record, Mapping):
        return
    for key, recorded in record.items():
        what, _, name = str(key).partition(":")
        registry = NAMED_COMPONENTS.get(what)
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
                f"{described(recorded)}, but here {name!r} is {described(here)}: its weights "
                "would be loaded into another class than the one they trained in; install the "
                "plugin it was trained with (or uninstall the one that took its name)"
            )
