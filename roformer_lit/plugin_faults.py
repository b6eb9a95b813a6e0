"""A plugin that raised while the model ran: the one ``error:`` line naming it.

A plugin's constructor that raises is one line (:func:`roformer_lit.registry.construct`);
a plugin that raises later, in a scheme's ``prepare``/``embed``/``score``/``rotate`` or a
kernel's ``forward`` (an option range it did not check), is the same plugin's bug. The CLI
asks :func:`plugin_fault` about any exception it would otherwise show as a traceback: where
the traceback passes through a module the registry loaded a plugin from (an import path or
an entry point: :func:`roformer_lit.registry.loaded_plugins`), the answer is one line naming
the plugin, the exception and the plugin's own line where it raised. A plugin class that
raised inside a method it inherits from a built-in base (its own state or overrides broke
what the base computes) is the plugin's too: the frame is the base's, its ``self`` the
plugin's instance, and the line names the method and the class it inherits it from. An
exception whose traceback never enters a plugin's module nor a method called on a
plugin's instance is the package's own bug and stays a traceback. So is ``sys.exit``: a
plugin that calls it while the model runs is one line and exit 2, not a run that ends with
its code (0 would read as a finished run).
"""

from __future__ import annotations

import os
import traceback
from types import FrameType, TracebackType
from typing import Any

from roformer_lit.errors import PluginBuildFailed, one_line
from roformer_lit.registry import loaded_plugins

#: Set to anything but ``""``/``"0"`` to have the CLI print a plugin's full traceback
#: before its one line (for the plugin's author).
SHOW_TRACEBACK = "ROFORMER_LIT_TRACEBACK"


def show_traceback() -> bool:
    """True when :data:`SHOW_TRACEBACK` asks for a plugin's full traceback."""
    return os.environ.get(SHOW_TRACEBACK, "") not in ("", "0")


def built_failure(exc: BaseException) -> BaseException | None:
    """The plugin's own exception behind a one-line refusal of a plugin that failed to
    build (:attr:`~roformer_lit.errors.PluginBuildFailed.raised`), found on ``exc``'s
    chain of causes and contexts (a caller may have re-worded the line); None if none."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, PluginBuildFailed) and current.raised is not None:
            return current.raised
        current = current.__cause__ or current.__context__
    return None


def plugin_fault(exc: BaseException) -> str | None:
    """The one line for ``exc`` raised inside a plugin: ``position 'pkg.mod:Class' raised
    while the model ran: ValueError: <message> (at pkg/mod.py, line 42, in prepare)``; None
    where no frame of its traceback (nor of the exceptions it was raised from) is in a
    plugin's module. The frame named is the innermost one in a plugin's module."""
    plugins = loaded_plugins()
    if not plugins:
        return None
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        found = _innermost_plugin_frame(current.__traceback__, plugins)
        if found is None:
            found = _innermost_inherited_frame(current.__traceback__, plugins)
        if found is not None:
            frame, lineno, label = found
            code = frame.f_code
            where = f"in {code.co_name}"
            if frame.f_globals.get("__name__") not in plugins:  # a method it inherits
                owner = type(frame.f_locals["self"]).__name__
                where += f", which {owner} inherits from {frame.f_globals.get('__name__')}"
            return (
                f"{label} raised while the model ran: {type(current).__name__}: "
                f"{one_line(current)} (at {code.co_filename}, line {lineno}, {where}); "
                f"{SHOW_TRACEBACK}=1 shows its traceback"
            )
        current = current.__cause__
    return None


def _innermost_plugin_frame(
    tb: TracebackType | None, plugins: dict[str, list[tuple[str, Any]]]
) -> tuple[FrameType, int, str] | None:
    """The innermost frame of ``tb`` whose module is a plugin's, with its line and the
    plugin's label."""
    found = None
    for frame, lineno in traceback.walk_tb(tb):
        module = frame.f_globals.get("__name__")
        if module in plugins:
            found = (frame, lineno, _label(frame, plugins[module]))
    return found


def _innermost_inherited_frame(
    tb: TracebackType | None, plugins: dict[str, list[tuple[str, Any]]]
) -> tuple[FrameType, int, str] | None:
    """The innermost frame of ``tb`` that runs a method on an instance of a plugin class
    (``self`` in its locals) outside the plugin's module: a method the class inherits.
    Frames of torch's own modules (``Module.__call__``) are passed over."""
    classes = [
        (label, component)
        for candidates in plugins.values()
        for label, component in candidates
        if isinstance(component, type)
    ]
    found = None
    for frame, lineno in traceback.walk_tb(tb):
        if str(frame.f_globals.get("__name__", "")).startswith("torch."):
            continue
        owner = type(frame.f_locals.get("self"))
        for label, component in classes:
            if issubclass(owner, component):
                found = (frame, lineno, label)
                break
    return found


def _label(frame: FrameType, candidates: list[tuple[str, Any]]) -> str:
    """Which of a module's plugins raised: the one whose instance is the frame's ``self``
    (a method of the scheme or kernel), else the first loaded from that module."""
    owner = type(frame.f_locals.get("self"))
    exact = [label for label, component in candidates if component is owner]
    within = [
        label
        for label, component in candidates
        if isinstance(component, type) and issubclass(owner, component)
    ]
    return [*exact, *within, candidates[0][0]][0]
