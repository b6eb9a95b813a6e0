"""Signals from the first instant of a command, before the training loop takes them over.

Python's defaults would turn Ctrl-C during start-up (imports, corpus preparation, building
the model) into a ``KeyboardInterrupt`` traceback, and SIGTERM into death by signal (exit
143) that leaves a half-claimed run directory behind. :func:`install` (called first thing
by ``python -m roformer_lit``, importing nothing but the standard library) makes both an
exception the CLI catches: SIGINT raises ``KeyboardInterrupt`` as usual, SIGTERM raises
:class:`Terminated`. ``roformer_lit.commands.pretrain.main`` then removes what this process created,
prints one line and exits 130 (Ctrl-C) or 75 (SIGTERM; EX_TEMPFAIL: run it again).

While the command's modules are still being imported (torch, Lightning), a signal ends the
process at once (:func:`_exit_now`: the one line, then ``os._exit``): nothing has been
created yet, and an exception raised there can cross C++ code that cannot pass it on
(pybind11 inside ``import torch`` aborts with SIGABRT). :func:`imports_done` switches to
raising.

Once the training loop runs, :class:`roformer_lit.training.callbacks.Preemption` owns the signals
(finish the step, save ``last.ckpt``): it calls :func:`hand_over`, and this module's SIGTERM
handler, which Lightning keeps in its chain, does nothing until :func:`take_back`.

Worker processes forked from here (the tokenizing pool, DataLoader workers) start with
:func:`ignore_in_worker` (an ``os.register_at_fork`` hook): the parent decides what a
signal means and tears the pool down, and no worker prints a traceback.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType

#: Whether the training loop (``Preemption``) owns SIGTERM now.
_handed_over = False
#: The signal that stopped start-up, if one did (an interrupted import can surface as
#: another error, a RecursionError or an ImportError: :func:`stopping_signal` tells).
_received: int | None = None
#: Whether the command is still importing its modules (a signal exits at once).
_importing = False


class Terminated(BaseException):
    """SIGTERM arrived outside the training loop. A ``BaseException``, like
    ``KeyboardInterrupt``, so that no ``except Exception`` on the way swallows it."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signal_name = signal.Signals(signum).name


def _exit_now(signum: int) -> None:
    """The one line and the exit code for a signal during the imports, without unwinding."""
    interrupted = signum == signal.SIGINT
    os.write(
        2,
        f"error: {_what(interrupted)} outside the training loop: stopped without saving\n".encode(),
    )
    os._exit(EXIT_INTERRUPTED if interrupted else EXIT_PREEMPTED)


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    global _received
    if _importing:
        _exit_now(signum)
    if not _handed_over:
        _received = signum
        raise Terminated(signum)


def on_sigint(signum: int, frame: FrameType | None) -> None:
    """Python's Ctrl-C (``KeyboardInterrupt``), remembering that it came."""
    global _received
    if _importing:
        _exit_now(signum)
    _received = signum
    raise KeyboardInterrupt


def stopping_signal() -> BaseException | None:
    """The exception for the signal that stopped this process outside the training loop
    (``KeyboardInterrupt`` or :class:`Terminated`), or None if none did."""
    if _received is None:
        return None
    return KeyboardInterrupt() if _received == signal.SIGINT else Terminated(_received)


_fork_hook_registered = False


def install() -> None:
    """Until :func:`imports_done`, SIGTERM and SIGINT end the process at once with the one
    line; afterwards SIGTERM raises :class:`Terminated` and SIGINT ``KeyboardInterrupt``
    (main thread only). Every process forked from here starts with :func:`ignore_in_worker`."""
    global _handed_over, _fork_hook_registered, _importing
    _handed_over = False
    if threading.current_thread() is not threading.main_thread():
        return
    _importing = True
    signal.signal(signal.SIGTERM, _on_sigterm)
    signal.signal(signal.SIGINT, on_sigint)
    if not _fork_hook_registered:
        os.register_at_fork(after_in_child=ignore_in_worker)
        _fork_hook_registered = True


def imports_done() -> None:
    """The command's modules are loaded: a signal now raises, and the command cleans up."""
    global _importing
    _importing = False


def hand_over() -> None:
    """The training loop handles SIGTERM from now on (this module's handler stands aside)."""
    global _handed_over
    _handed_over = True


def take_back() -> None:
    """The training loop ended: SIGTERM raises :class:`Terminated` again."""
    global _handed_over
    _handed_over = False


def command_done(code: int) -> None:
    """The command has returned ``code``; only the interpreter's shutdown is left (atexit
    hooks, finalizers), where an exception raised by a signal is no one's to catch and
    Python prints it as a traceback. A signal from here on ends the process at once with
    the command's own code: its result is decided and written (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        return

    def _exit_with_code(signum: int, frame: FrameType | None) -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed or broken pipe: nothing left to say
                pass
        os._exit(code)

    signal.signal(signal.SIGTERM, _exit_with_code)
    signal.signal(signal.SIGINT, _exit_with_code)


#: Exit codes: Ctrl-C as the shell reports it; SIGTERM as EX_TEMPFAIL (run it again).
EXIT_INTERRUPTED = 130
EXIT_PREEMPTED = 75


def _what(interrupted: bool) -> str:
    return "interrupted (Ctrl-C)" if interrupted else "stopped by SIGTERM"


def report_stop(exc: BaseException, removed: str | None = None) -> int:
    """Print the one line for a Ctrl-C (``KeyboardInterrupt``) or SIGTERM (:class:`Terminated`)
    outside the training loop and return the exit code (130 or 75)."""
    interrupted = isinstance(exc, KeyboardInterrupt)
    left = f"; removed the new run directory {removed}" if removed else ""
    print(
        f"error: {_what(interrupted)} outside the training loop: stopped without saving{left}",
        file=sys.stderr,
    )
    return EXIT_INTERRUPTED if interrupted else EXIT_PREEMPTED


def ignore_in_worker() -> None:
    """In a forked worker (the tokenizing pool, DataLoader workers): ignore Ctrl-C (the
    terminal sends it to the whole process group; the parent decides) and die quietly on
    SIGTERM (how a pool is torn down), instead of printing a traceback each. A program that
    a child then executes gets the defaults back from ``install`` if it is ours."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
