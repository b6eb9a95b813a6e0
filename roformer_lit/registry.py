"""Registries of named components, open to the user's own code, and building a class by name.

A registry maps a short name to a component: a position scheme class, an attention kernel
class, a position task. Three sources, looked up in this order:

1. **built-ins**, registered in the package (``positions/__init__.py`` and so on);
2. **entry points** of installed distributions, in the registry's group
   (``roformer_lit.positions``, ``roformer_lit.kernels``, ``roformer_lit.tasks``): the
   entry point's name is the component's name, ``module:attribute`` its object;
3. **import paths** ``package.module:Attribute`` (``my_pkg.schemes:CoPE``): any name with
   a colon is imported as such, so a scheme in the user's own module is used from YAML and
   the command line without installing anything.

Every component is checked for its kind when it is resolved (a scheme must subclass
:class:`~roformer_lit.positions.base.PositionScheme`, a kernel
:class:`~roformer_lit.attention.base.AttentionKernel`, a task be a
:class:`~roformer_lit.data.probes.tasks.ProbeTask`); a name that imports nothing, an
object of the wrong kind or a plugin that raises (or exits) on import is one
:class:`~roformer_lit.errors.ConfigError` line naming it. An entry point named like a
built-in is never loaded (the name means the built-in); :meth:`Registry.shadowing` gives
its one line, which ``python -m roformer_lit schemes`` lists. A command that runs over every
registered name by default runs over those that load (:meth:`Registry.loadable`) and says,
in one ``note:`` line each, which it skipped and why; a name the user typed that does not
load is refused. A name that installed
distributions declare for different objects is refused when looked up, naming each entry
point (which one it meant would depend on the order of ``sys.path``). :meth:`Registry.origin`
says where a name comes from (built-in; distribution and version; import path), which
checkpoints record so that a run stays its own. A built-in is one component however it is
named: :meth:`Registry.canonical` gives its short name for its import path too, which the
architecture (:class:`~roformer_lit.encoder_config.EncoderConfig`) records.

Options a registered class accepts are the keyword-only parameters of its ``__init__``;
anything else is a user error that names the valid choices. Each option's *type* is
checked against its annotation with jsonargparse (the CLI's own type system), so a newly
registered class gets typed options from its signature alone; its *range* is checked by
the class itself, in ``__init__`` (with the rules of :mod:`roformer_lit.validation`).
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import inspect
import math
import os
import re
import traceback
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from roformer_lit.errors import ConfigError, PluginBuildFailed, one_line

T = TypeVar("T")

#: ``package.module:Attribute`` (the attribute may be dotted: ``module:Outer.Inner``).
IMPORT_PATH = re.compile(
    r"^([A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*):([A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*)$"
)


#: What a plugin's import may raise that is the plugin's fault, one ConfigError line naming
#: it: any exception, and ``SystemExit`` (a module that calls ``sys.exit`` or ``exit()`` at
#: import would otherwise end the command there, ``sys.exit(0)`` with status 0 and nothing
#: said). ``KeyboardInterrupt`` stays the user's.
PLUGIN_FAILURES: tuple[type[BaseException], ...] = (Exception, SystemExit)

#: Every plugin this process loaded (from an import path or an entry point): the module
#: that defines it -> the labels it was chosen by (``position 'my_pkg.mod:Class'``), with
#: the component itself, so an exception raised later inside it can be told to be the
#: plugin's (:mod:`roformer_lit.plugin_faults`).
_LOADED: dict[str, list[tuple[str, Any]]] = {}


def loaded_plugins() -> dict[str, list[tuple[str, Any]]]:
    """The modules of the plugins this process loaded -> ``(label, component)`` pairs: what
    the registry loaded from an import path or an entry point, never a built-in."""
    return {module: list(found) for module, found in _LOADED.items()}


def is_import_path(name: object) -> bool:
    """True if ``name`` is spelled as an import path (it contains a colon)."""
    return isinstance(name, str) and ":" in name


#: Every registry made in this process, by its entry-point group (:func:`loaded_registry`).
_BY_GROUP: dict[str, Registry[Any]] = {}


def loaded_registry(group: str) -> Registry[Any] | None:
    """The registry of entry-point group ``group`` if its module has been imported in this
    process (a registry of a lower layer can then be read from one below it without an
    import: the checkpoint reader reads a run's position task, ``roformer_lit.tasks``)."""
    return _BY_GROUP.get(group)


class Registry(Mapping[str, T], Generic[T]):
    """Built-in components by name, then the entry points of ``group``, then import paths
    (see the module). A read-only mapping: ``registry[name]``, ``name in registry`` (an
    import path is "in" the registry when it resolves), iteration over the built-ins and
    the installed entry points' names (import paths are not listed: they are open-ended).

    ``what`` names the setting in messages (``position``), ``kind`` the expected object in
    words, ``accepts(obj)`` checks an object's kind; ``check(obj, label)``, where given,
    then checks what an object of the right kind holds (a ConfigError line beginning with
    ``label``), so a plugin's object is refused when resolved rather than when first used."""

    def __init__(
        self,
        what: str,
        kind: str,
        accepts: Callable[[Any], bool],
        builtins: Mapping[str, T],
        group: str,
        check: Callable[[Any, str], None] | None = None,
    ) -> None:
        self.what, self.kind, self.accepts, self.group = what, kind, accepts, group
        self.check = check
        self._builtins: dict[str, T] = dict(builtins)
        self._resolved: dict[str, T] = {}
        _BY_GROUP.setdefault(group, self)  # the first: the package's own

    # -- the mapping ---------------------------------------------------------------------

    def __getitem__(self, name: str) -> T:
        if not isinstance(name, str):
            raise KeyError(name)
        if name in self._builtins:
            return self._builtins[name]
        if name not in self._resolved:
            self._resolved[name] = self._resolve(name)
        return self._resolved[name]

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        if name in self._builtins or name in self._resolved:
            return True
        if is_import_path(name):
            try:
                self[name]
            except (ConfigError, KeyError):
                return False
            return True
        return name in self._entry_points()

    def __iter__(self) -> Iterator[str]:
        yield from self._builtins
        yield from (name for name in self._entry_points() if name not in self._builtins)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def loadable(self) -> Loadable[T]:
        """Every registered name (built-ins, then installed entry points), each resolved on
        its own: those that load, and those that do not (a plugin that raises on import,
        an object of the wrong kind, an ambiguous name) with their one-line errors. What a
        command runs over when it takes every registered name by default (``bench``'s
        ``--schemes``, the listing, the valid choices a refusal lists): it runs the names
        that load and says which it skipped (:meth:`Loadable.notes`), so someone else's
        broken plugin stops nothing. The kits with no names run over it too, but fail each
        name that does not load (their job is to say whether what is installed works). A
        name the user typed is looked up (and refused) as ever."""
        components: dict[str, T] = {}
        failures: dict[str, ConfigError] = {}
        for name in self:
            try:
                components[name] = self[name]
            except ConfigError as exc:
                failures[name] = exc
        return Loadable(self.what, components, failures)

    def builtin_names(self) -> list[str]:
        """The names registered in the package itself."""
        return list(self._builtins)

    def register(self, name: str, component: T) -> None:
        """Add a component under ``name`` for this process (tests, notebooks); a name
        already taken is refused."""
        if name in self._builtins:
            raise ConfigError(f"{self.what} {name!r} is already registered")
        self._check_kind(component, name)
        self._builtins[name] = component

    def unregister(self, name: str) -> None:
        """Remove a name :meth:`register` added (built-ins of the package stay)."""
        self._builtins.pop(name, None)

    def shadowing(self) -> dict[str, ConfigError]:
        """The installed entry points named like a built-in, each with its one-line error:
        such an entry point is never loaded (the name means the built-in), so a plugin
        that means to replace ``rope`` is said to be unused rather than silently ignored."""
        found: dict[str, list[str]] = {}
        for name, points in _entry_points_of(self.group).items():
            if name not in self._builtins:
                continue
            for point in points:
                dist = getattr(point, "dist", None)
                where = f" ({dist.metadata['Name']} {dist.version})" if dist is not None else ""
                found.setdefault(name, []).append(
                    f"the entry point {point.value!r} in group {self.group!r}{where}"
                )
        return {
            name: ConfigError(
                f"{self.what} {name!r}: {' and '.join(points)} "
                f"{'has' if len(points) == 1 else 'have'} a built-in's name and "
                f"{'is' if len(points) == 1 else 'are'} never used (the name means the "
                "built-in); give the entry point another name"
            )
            for name, points in found.items()
        }

    def canonical(self, name: Any) -> Any:
        """The name ``name``'s component is known by: a built-in's short name for any other
        spelling that resolves to that very object (``roformer_lit.positions.rope:
        RotaryPosition`` is ``rope``), else ``name`` unchanged (a plugin's own name, or a
        name that does not resolve: looking it up reports that). What a model, its
        checkpoint and run name record, so every command reads one spelling."""
        if not isinstance(name, str) or name in self._builtins:
            return name
        try:
            component = self[name]
        except (ConfigError, KeyError):
            return name
        return next((short for short, c in self._builtins.items() if c is component), name)

    # -- where a name comes from ---------------------------------------------------------

    def origin(self, name: str) -> dict[str, str]:
        """Where ``name`` comes from, as data a checkpoint records: ``{"source":
        "builtin"}``, ``{"source": "entry_point", "distribution", "version", "value"}`` or
        ``{"source": "import_path", "module", "distribution", "version"}`` (the last two
        where the module belongs to an installed distribution)."""
        if name in self._builtins:
            module = getattr(self._builtins[name], "__module__", "") or ""
            if module.startswith("roformer_lit."):
                return {"source": "builtin"}
            return {"source": "registered", "module": module}
        point = self._entry_points().get(name)
        if point is not None:
            found = {"source": "entry_point", "group": self.group, "value": point.value}
            dist = getattr(point, "dist", None)
            if dist is not None:
                found.update(distribution=dist.metadata["Name"], version=dist.version)
            return found
        module = name.partition(":")[0]
        found = {"source": "import_path", "module": module}
        dist = _distribution_of(module)
        if dist is not None:
            found.update(distribution=dist[0], version=dist[1])
        return found

    # -- resolving -----------------------------------------------------------------------

    def _entry_points(self) -> dict[str, importlib.metadata.EntryPoint]:
        return {name: points[0] for name, points in _entry_points_of(self.group).items()}

    def _resolve(self, name: str) -> T:
        if is_import_path(name):
            return self._check_kind(self._import(name), name)
        points = _entry_points_of(self.group).get(name, ())
        if not points:
            raise KeyError(name)
        if len(points) > 1:  # which one wins would depend on the order of sys.path
            listed = ", ".join(map(_described_point, points))
            raise ConfigError(
                f"{self.what} {name!r} is ambiguous: {len(points)} installed entry points in "
                f"group {self.group!r} have that name: {listed}; uninstall all but one, or "
                f"name the one you mean by its import path (valid: "
                f"{', '.join(point.value for point in points)})"
            )
        point = points[0]
        if not importlib.metadata.EntryPoint.pattern.match(point.value):
            raise ConfigError(
                f"{self.what} {name!r}: the entry point's value {point.value!r} in group "
                f"{self.group!r} is not of the form package.module:attribute"
            )
        try:
            component = point.load()
        except PLUGIN_FAILURES as exc:  # a plugin that raises on import is the plugin's fault
            raise ConfigError(
                f"{self.what} {name!r} (entry point {point.value!r} in group {self.group!r}) "
                f"failed to load: {type(exc).__name__}: {one_line(exc)}"
            ) from None
        return self._check_kind(component, name)

    def _import(self, name: str) -> Any:
        if not IMPORT_PATH.match(name):
            raise ConfigError(
                f"{self.what} {name!r} is not an import path of the form package.module:Class"
            )
        module_name, _, attribute = name.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            missing = exc.name or ""
            if missing and module_name != missing and not module_name.startswith(f"{missing}."):
                raise ConfigError(  # the plugin is there; a module it imports is not
                    f"{self.what} {name!r}: importing {module_name!r} failed: it imports "
                    f"{missing!r}, which is not installed; install it (a dependency of the "
                    "plugin)"
                ) from None
            raise ConfigError(
                f"{self.what} {name!r}: cannot import {module_name!r} ({one_line(exc)}); "
                "install the package that provides it or put it on PYTHONPATH"
            ) from None
        except PLUGIN_FAILURES as exc:
            raise ConfigError(
                f"{self.what} {name!r}: importing {module_name!r} raised "
                f"{type(exc).__name__}: {one_line(exc)}"
            ) from None
        found: Any = module
        for part in attribute.split("."):
            if not hasattr(found, part):
                candidates = _candidates(module, self.accepts)
                listed = ", ".join(candidates) if candidates else "none"
                raise ConfigError(
                    f"{self.what} {name!r}: module {module_name!r} has no attribute "
                    f"{attribute!r}; candidates there: {listed}"
                )
            found = getattr(found, part)
        return found

    def _check_kind(self, component: Any, name: str) -> T:
        if not self.accepts(component):
            raise ConfigError(f"{self.what} {name!r} is {_described(component)}, not a {self.kind}")
        if self.check is not None:  # the kind is right; what its fields hold (one line)
            self.check(component, f"{self.what} {name!r}")
        module = getattr(component, "__module__", "") or ""
        if module != "roformer_lit" and not module.startswith("roformer_lit."):
            found = _LOADED.setdefault(module, [])
            if all(known is not component for _, known in found):
                found.append((f"{self.what} {name!r}", component))
        return component

    def unknown(self, name: object) -> ConfigError:
        """The one-line error for a name that is not registered."""
        valid = ", ".join(sorted(self))
        return ConfigError(
            f"unknown {self.what} {name!r}; valid choices: {valid}, or an import path "
            "package.module:Class"
        )


@dataclass(frozen=True)
class Loadable(Generic[T]):
    """A registry's names split by whether they load (:meth:`Registry.loadable`):
    ``components`` by name, in the registry's order, and ``failures``, each name's one-line
    error; ``what`` names the setting (``position``)."""

    what: str
    components: dict[str, T]
    failures: dict[str, ConfigError]

    @property
    def names(self) -> list[str]:
        """The names that load, in the registry's order."""
        return list(self.components)

    def notes(self, command: str) -> list[str]:
        """One ``note:`` line per name that does not load, naming it and why: what
        ``command``, run over every registered name, says it skipped."""
        return [
            f"note: {command}: skipped {self.what} {name!r}, which cannot be loaded: "
            f"{one_line(error)}"
            for name, error in self.failures.items()
        ]


def construct(cls: Callable[..., T], what: str, name: str, *args: Any, **options: Any) -> T:
    """``cls(*args, **options)``: a scheme or kernel built, the one place the harness calls
    a registered class. A plugin's constructor (a class outside ``roformer_lit``) that
    raises anything but :class:`~roformer_lit.errors.ConfigError` (a ``RuntimeError``, a
    ``TypeError`` from a signature the harness cannot call, ``sys.exit``) is the plugin's
    fault: one ConfigError line naming the setting, the options and where it raised. A
    built-in's own exception stays a traceback (a bug of the package). A ConfigError that
    names no option but whose message begins with a path of one of ``cls``'s options,
    wherever that was written (``model.position_kwargs.x must be > 0``), names that option
    (:func:`_naming_its_option`), so the line is led once, by where the user wrote it."""
    try:
        return cls(*args, **options)
    except ConfigError as exc:
        raise _naming_its_option(exc, cls, what) from None
    except PLUGIN_FAILURES as exc:
        module = getattr(cls, "__module__", "") or ""
        if module == "roformer_lit" or module.startswith("roformer_lit."):
            raise
        raise PluginBuildFailed(
            f"{what} {name!r} failed to build with options {options}: "
            f"{type(exc).__name__}: {one_line(exc)}{_raised_at(exc)}",
            raised=exc,
        ) from None


def call_plugin(function: Callable[..., T], label: str, *args: Any) -> T:
    """``function(*args)``: a plugin's callable that is not a class (a position task's
    ``build``) called by the harness. Outside ``roformer_lit``, anything it raises but a
    :class:`~roformer_lit.errors.ConfigError` (a ``RuntimeError``, a ``TypeError`` from a
    signature the harness cannot call, ``sys.exit``) is the plugin's bug: one
    :class:`~roformer_lit.errors.PluginBuildFailed` line beginning with ``label`` and
    naming where it raised. A built-in's own exception stays a traceback."""
    try:
        return function(*args)
    except ConfigError:
        raise
    except PLUGIN_FAILURES as exc:
        module = getattr(function, "__module__", "") or ""
        if module == "roformer_lit" or module.startswith("roformer_lit."):
            raise
        raise PluginBuildFailed(
            f"{label}: {type(exc).__name__}: {one_line(exc)}{_raised_at(exc)}",
            raised=exc,
        ) from None


#: A message's lead that is a path: dotted (``model.position_kwargs.x``), or any name
#: followed by a colon (``x: ...``); then what follows it.
_PATH_LEAD = re.compile(r"(?P<path>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?P<end>:\s*|\s+|$)")


def _naming_its_option(exc: ConfigError, cls: Any, what: str) -> ConfigError:
    """``exc``, or where it names no option (``ConfigError.option`` is None) and its
    message begins with a path of one of ``cls``'s options, the rest of the message naming
    that option: ``model.position_kwargs.x must be > 0`` (the path a plugin's author saw,
    written at the top level, where the user may have written ``x`` in a layer plan),
    ``model.layer_plan.types.local.position_kwargs.x: ...``, ``x: ...``. The option is
    what follows ``<what>_kwargs`` in the path, else the path from its first segment that
    is an option of ``cls`` (``scaling.factor``); the harness then leads the line with
    where the user wrote it, once. A message whose lead names no option is left as it is."""
    if exc.option is not None or isinstance(exc, PluginBuildFailed):
        return exc
    message = str(exc)
    lead = _PATH_LEAD.match(message)
    if lead is None or not (":" in lead["end"] or "." in lead["path"]):
        return exc
    rest = message[lead.end() :]
    try:
        options = set(option_names(cls))
    except (TypeError, ValueError):  # no signature to read: nothing to name
        return exc
    parts = lead["path"].split(".")
    if f"{what}_kwargs" in parts[:-1]:
        parts = parts[parts.index(f"{what}_kwargs") + 1 :]
    else:
        parts = parts[next((i for i, part in enumerate(parts) if part in options), len(parts)) :]
    if not rest or not parts or parts[0] not in options:
        return exc
    return ConfigError(rest, option=".".join(parts))


def _raised_at(exc: BaseException) -> str:
    """`` (at file.py, line 12)``: the innermost frame of ``exc`` outside this package (the
    plugin's own code, or code it called), so the one line still says where it failed;
    empty where every frame is the package's (the call itself did not fit the signature)."""
    package = str(Path(__file__).resolve().parent)
    outside = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if not str(Path(frame.filename).resolve()).startswith(package + os.sep)
    ]
    if not outside:
        return ""
    return f" (at {outside[-1].filename}, line {outside[-1].lineno})"


def _described(component: Any) -> str:
    """What an object of the wrong kind is, in words: ``the class pkg.Name``, ``a
    function``, ``an instance of int``."""
    if isinstance(component, type):
        return f"the class {component.__module__}.{component.__qualname__}"
    if isinstance(component, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        return "a function"
    cls = type(component)
    module = "" if cls.__module__ == "builtins" else f"{cls.__module__}."
    return f"an instance of {module}{cls.__qualname__}"


def subclass_of(base: type) -> Callable[[Any], bool]:
    """``accepts`` for a registry of classes: a subclass of ``base`` (not ``base`` itself)."""
    return lambda obj: isinstance(obj, type) and issubclass(obj, base) and obj is not base


def instance_of(cls: type) -> Callable[[Any], bool]:
    """``accepts`` for a registry of objects: an instance of ``cls``."""
    return lambda obj: isinstance(obj, cls)


@functools.cache
def _entry_points_of(group: str) -> dict[str, tuple[importlib.metadata.EntryPoint, ...]]:
    """The installed entry points of ``group`` by name (read once per process): each name's
    entry points of distinct values, more than one where installed distributions declare
    the name for different objects (an ambiguous name, refused when looked up)."""
    found: dict[str, list[importlib.metadata.EntryPoint]] = {}
    for point in importlib.metadata.entry_points(group=group):
        same = found.setdefault(point.name, [])
        if all(point.value != other.value for other in same):
            same.append(point)
    return {name: tuple(points) for name, points in found.items()}


def _described_point(point: importlib.metadata.EntryPoint) -> str:
    """An entry point in words: its value and, where known, its distribution and version."""
    dist = getattr(point, "dist", None)
    where = f" ({dist.metadata['Name']} {dist.version})" if dist is not None else ""
    return f"{point.value!r}{where}"


def _distribution_of(module: str) -> tuple[str, str] | None:
    """(distribution, version) of the installed distribution that provides ``module``'s
    top-level package, or None (a module on the path that no distribution installed)."""
    top = module.split(".")[0]
    names = importlib.metadata.packages_distributions().get(top)
    if not names:
        return None
    try:
        return names[0], importlib.metadata.version(names[0])
    except importlib.metadata.PackageNotFoundError:
        return None


def _candidates(module: types.ModuleType, accepts: Callable[[Any], bool]) -> list[str]:
    return sorted(name for name, obj in vars(module).items() if accepts(obj))


def option_names(cls: type) -> list[str]:
    """The keyword-only ``__init__`` parameters of ``cls``: its user-facing options."""
    params = inspect.signature(cls.__init__).parameters.values()
    return [p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]


def with_defaults(cls: type, options: Mapping[str, Any]) -> dict[str, Any]:
    """Every option's value: ``options`` (checked: :func:`check_options`) over the defaults
    of the keyword-only ``__init__`` parameters of ``cls``. What an instance *is*: an
    option written at its default (``num_buckets: 32`` for T5) or left out gives one
    instance, so layers share a scheme by it
    (:func:`~roformer_lit.architecture_rules.scheme_key`) and plans compare by it
    (:mod:`~roformer_lit.plan_identity`)."""
    defaults = {
        p.name: p.default
        for p in inspect.signature(cls.__init__).parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is not inspect.Parameter.empty
    }
    return {**defaults, **options}


def _not_keyword_only(cls: type, keys: list[str]) -> str:
    """Where some of ``keys`` are ``__init__`` parameters of ``cls`` that are not
    keyword-only (an author's ``def __init__(self, shape, x=1.0)``): what makes them
    options, so the refusal names the fix rather than only the valid keys."""
    params = inspect.signature(cls.__init__).parameters
    positional = [
        key
        for key in keys
        if key in params
        and key not in ("self", "shape")  # what the harness passes itself
        and params[key].kind
        in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.POSITIONAL_ONLY)
    ]
    if not positional:
        return ""
    names = ", ".join(map(repr, positional))
    return (
        f" ({names} {'is a parameter' if len(positional) == 1 else 'are parameters'} of "
        f"{cls.__qualname__}.__init__ but not keyword-only: options are the arguments after "
        "'*', e.g. def __init__(self, shape, *, x=1.0))"
    )


class UnresolvedHint(typing.NamedTuple):
    """An option's annotation that does not resolve (a typo, a name imported only under
    ``TYPE_CHECKING``): a value given for that option cannot be checked, so it is refused."""

    text: str
    error: str


def option_hints(cls: type) -> dict[str, Any]:
    """Each option's resolved type annotation (``typing.Any`` where there is none). Each is
    resolved on its own, so one annotation that does not resolve (an
    :class:`UnresolvedHint`) leaves the other options typed."""
    names = option_names(cls)
    try:
        hints = typing.get_type_hints(cls.__init__)
    except Exception:
        hints = {name: _resolve_hint(cls.__init__, name) for name in names}
    return {name: hints.get(name, Any) for name in names}


def _resolve_hint(function: Callable[..., Any], name: str) -> Any:
    """Parameter ``name``'s annotation in ``function``, or an :class:`UnresolvedHint`."""
    raw = getattr(function, "__annotations__", {}).get(name, Any)

    def one() -> None: ...

    one.__annotations__ = {name: raw}
    try:
        return typing.get_type_hints(one, getattr(function, "__globals__", None))[name]
    except Exception as exc:
        return UnresolvedHint(str(raw), f"{type(exc).__name__}: {one_line(exc)}")


def describe_type(hint: Any) -> str:
    """A type annotation in words: ``float``, ``int or null``, ``one of 'a', 'b'``."""
    if isinstance(hint, UnresolvedHint):
        return f"{hint.text!r} (does not resolve: {hint.error})"
    if hint is type(None):
        return "null"
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        return " or ".join(describe_type(arg) for arg in typing.get_args(hint))
    if origin is typing.Literal:
        return "one of " + ", ".join(map(repr, typing.get_args(hint)))
    if isinstance(hint, type):
        return hint.__name__
    return str(hint).replace("typing.", "")


@functools.cache
def _option_parser(cls: type) -> Any:
    """A jsonargparse parser with one typed argument per option of ``cls``."""
    from jsonargparse import ArgumentParser

    parser = ArgumentParser(exit_on_error=False)
    for name, hint in option_hints(cls).items():
        if hint is not Any and not isinstance(hint, UnresolvedHint):
            parser.add_argument(f"--{name}", type=hint)
    return parser


def _has_nonfinite_float(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, Mapping):
        return any(_has_nonfinite_float(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_nonfinite_float(v) for v in value)
    return False


#: ``path(key)``: where the user wrote option ``key`` (a dotted path, for messages).
OptionPath = Callable[[str], str]


def check_option_value(
    cls: type, key: str, value: Any, what: str, name: str, path: OptionPath | None = None
) -> Any:
    """``value`` converted to option ``key``'s annotated type (as the CLI would: ``"1e4"``
    for a float is ``10000.0``), or a ConfigError naming the option where the user wrote
    it (``path(key)``; default ``model.<what>_kwargs.<key>``), the value, the class's
    registered name and the expected type. NaN and inf are never accepted."""
    hint = option_hints(cls)[key]
    written = f"model.{what}_kwargs.{key}" if path is None else path(key)
    label = f"{written}={value!r} for {what} {name!r}"
    if isinstance(hint, UnresolvedHint):
        raise ConfigError(
            f"{label} cannot be checked: the option's annotation {hint.text!r} in "
            f"{cls.__module__}.{cls.__qualname__} does not resolve ({hint.error})"
        )
    if hint is not Any:
        from jsonargparse import ArgumentError

        try:
            value = _option_parser(cls).parse_object({key: value})[key]
        except (ArgumentError, TypeError, ValueError):
            raise ConfigError(
                f"{label} has the wrong type: expected {describe_type(hint)}"
            ) from None
    if _has_nonfinite_float(value):
        raise ConfigError(f"{label} must be finite (not NaN or inf)")
    return value


def lookup(registry: Mapping[str, Any], name: str, what: str) -> Any:
    """``registry[name]`` (a :class:`Registry` resolves entry points and import paths), or
    a ConfigError listing the valid names."""
    if isinstance(registry, Registry):
        try:
            return registry[name]
        except KeyError:
            raise registry.unknown(name) from None
    if not isinstance(name, str) or name not in registry:
        valid = ", ".join(sorted(registry))
        raise ConfigError(f"unknown {what} {name!r}; valid choices: {valid}")
    return registry[name]


def check_options(
    cls: type,
    options: Mapping[str, Any] | None,
    what: str,
    name: str,
    path: OptionPath | None = None,
) -> dict:
    """``options`` as a dict of values of the annotated types, or a ConfigError naming
    unknown keys where the user wrote them (``path(key)``, default
    ``model.<what>_kwargs.<key>``: a layer type's own options are under
    ``model.layer_plan.types``) and the valid ones, or a value of the wrong type (see
    :func:`check_option_value`)."""
    if options is not None and not isinstance(options, Mapping):
        raise ConfigError(
            f"model.{what}_kwargs must be a mapping of option names to values, got {options!r}"
        )
    options = dict(options or {})
    valid = option_names(cls)
    unknown = sorted(set(options) - set(valid), key=repr)
    if unknown:
        listed = ", ".join(valid) if valid else "none"
        where = ", ".join(f"model.{what}_kwargs.{k}" if path is None else path(k) for k in unknown)
        raise ConfigError(
            f"unknown {what}_kwargs key(s) {', '.join(map(repr, unknown))} for {what} "
            f"{name!r} ({where}); valid keys: {listed}{_not_keyword_only(cls, unknown)}"
        )
    return {
        key: check_option_value(cls, key, value, what, name, path) for key, value in options.items()
    }
