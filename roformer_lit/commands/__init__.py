"""The command line: ``python -m roformer_lit <command> ...``, and its exit codes.

``fit``/``validate``/``test``/``predict`` go through LightningCLI
(:mod:`roformer_lit.commands.pretrain`); the other commands are listed in
:data:`EXTRA_COMMANDS` (each imported only when called). Exit codes (each non-zero one
comes with one line on stderr, never a traceback):

* 0 -- done;
* 2 (``EXIT_USER_ERROR``) -- a user mistake: bad config or flag, unreadable corpus, a
  checkpoint that is missing, truncated, not a checkpoint, or from another model; a
  plugin scheme or kernel that raised, when built or while the model ran (its bug, named
  with where it raised: :mod:`roformer_lit.plugin_faults`);
* 3 (``EXIT_DIVERGED``) -- the training loss or a gradient became NaN/inf; the line names
  the step and the last good checkpoint (nothing newer was written);
* 75 (``EXIT_PREEMPTED``, ``EX_TEMPFAIL``) -- stopped by SIGTERM or SIGUSR1 (after saving
  ``last.ckpt`` when training ran); rerun with ``--ckpt_path`` that file to continue;
* 130 (``EXIT_INTERRUPTED``) -- stopped by Ctrl-C: a first Ctrl-C finishes the step and
  saves ``last.ckpt`` as a preemption does, a second one stops at once.

Unreadable input, a read-only or full disk and a file where a directory belongs are
reported as user mistakes (one line, exit 2). A run directory this process created is
removed again when the command fails before it wrote any checkpoint
(:mod:`roformer_lit.training.run_dir`).
"""

from __future__ import annotations

import difflib
import importlib
import os
import shlex
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from lightning.pytorch.utilities.exceptions import SIGTERMException

from roformer_lit.commands.argument_words import plain_argument_error
from roformer_lit.commands.pretrain import is_argument_error, lightning_main
from roformer_lit.commands.repeated_options import CONFIG_OPTIONS
from roformer_lit.commands.whole_options import SUBCOMMANDS
from roformer_lit.errors import (
    EXIT_USER_ERROR,
    ConfigError,
    TrainingDiverged,
    describe_os_error,
    one_line,
)
from roformer_lit.plugin_faults import built_failure, plugin_fault, show_traceback
from roformer_lit.safe_input import (
    DuplicateKeyError,
    YAMLBombError,
    install_yaml_guard,
    read_text_file,
    safe_yaml_load,
)
from roformer_lit.training import quiet, run_dir, startup_signals
from roformer_lit.training.lightning_compat import launch_rank

EXIT_DIVERGED = 3
EXIT_PREEMPTED = startup_signals.EXIT_PREEMPTED  # EX_TEMPFAIL: try again (with --ckpt_path)
EXIT_INTERRUPTED = startup_signals.EXIT_INTERRUPTED  # the shell's Ctrl-C; last.ckpt if trained


#: Extra subcommands beside LightningCLI's: name -> "module:function" taking the remaining
#: arguments and returning an exit code (or None for 0). Imported only when called.
EXTRA_COMMANDS: dict[str, str] = {
    "export": "roformer_lit.commands.export:export_main",
    "sweep": "roformer_lit.sweep:main",
    "compare": "roformer_lit.results.compare:main",
    "bench": "roformer_lit.benchmarks.models:main",
    "bench-data": "roformer_lit.benchmarks.data_pipeline:run",
    "bench-flex": "roformer_lit.benchmarks.flex_vs_sdpa:main",
    "extrapolate": "roformer_lit.results.extrapolate:main",
    "locality": "roformer_lit.results.locality:main",
    "prepare": "roformer_lit.commands.prepare:main",
    "finetune": "roformer_lit.finetune.cli:main",
    "schemes": "roformer_lit.commands.schemes:main",
}


def _extra_command(name: str) -> Callable[[Sequence[str]], Any]:
    module_name, function = EXTRA_COMMANDS[name].split(":")
    return getattr(importlib.import_module(module_name), function)


def check_command(argv: Sequence[str]) -> None:
    """A first word that names no command (``fitt``, ``bench-dta``) is one line naming
    the closest command and every one (before: LightningCLI's 'invalid choice', naming
    its four alone, or, for ``fitt --config x``, an error about ``x`` instead)."""
    if not argv or argv[0].startswith("-"):
        return  # options before the subcommand are LightningCLI's to read
    commands = [*SUBCOMMANDS, *EXTRA_COMMANDS]
    if argv[0] not in commands:
        close = difflib.get_close_matches(argv[0], commands, n=1)
        said = f"did you mean {close[0]}? " if close else ""
        raise ConfigError(
            f"unknown command {argv[0]!r}; {said}valid commands: {', '.join(commands)}"
        )


def main(args: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 2 user error, 3 diverged, 75 preempted,
    130 interrupted by Ctrl-C; see the module docstring)."""
    argv = list(sys.argv[1:] if args is None else args)
    if not argv or argv[0] in ("-h", "--help"):
        print(f"more commands: {', '.join(EXTRA_COMMANDS)} (each takes --help)\n")
    try:
        quiet.install()
        install_yaml_guard()
        check_command(argv)
        check_config_files(argv)
        if argv and argv[0] in EXTRA_COMMANDS:
            result = _extra_command(argv[0])(argv[1:])
            return result if isinstance(result, int) else 0
        lightning_main(argv if args is not None else None)
    except SIGTERMException as exc:
        info = getattr(exc, "preemption", None)
        if info is None:
            _run_report("stopped by a signal; no checkpoint was saved")
            return EXIT_PREEMPTED
        interrupted = info["signal"] == "SIGINT"
        _run_report(
            f"{'interrupted by Ctrl-C' if interrupted else 'preempted by ' + info['signal']} at "
            f"step {info['step']}: saved {info['checkpoint']}; continue with --ckpt_path "
            f"{shlex.quote(str(info['checkpoint']))}"  # pasted into a shell as it stands
        )
        return EXIT_INTERRUPTED if interrupted else EXIT_PREEMPTED
    except TrainingDiverged as exc:
        last = getattr(exc, "last_checkpoint", None)
        where = (
            f"; last checkpoint: {last[0]} (step {last[1]})"
            if last
            else "; no checkpoint was written before it"
        )
        _run_report(f"error: {exc}{where}")
        return EXIT_DIVERGED
    except (KeyboardInterrupt, startup_signals.Terminated) as exc:
        return _stopped_outside_training(exc)
    except SystemExit as exc:  # Lightning answers a KeyboardInterrupt with sys.exit(1)
        if isinstance(exc.__context__, KeyboardInterrupt):
            return _stopped_outside_training(exc.__context__)
        fault = plugin_fault(exc)  # a plugin that called sys.exit while the model ran
        if fault is not None:
            return _plugin_failed(exc, fault)
        raise
    except OSError as exc:  # unreadable input, read-only or full disk, a file in the way
        run_dir.discard_if_unused()
        print(f"error: {describe_os_error(exc)}", file=sys.stderr)
        return EXIT_USER_ERROR
    except Exception as exc:
        from lightning.fabric.utilities.exceptions import MisconfigurationException

        if (
            isinstance(exc, ConfigError)
            or is_argument_error(exc)
            or isinstance(exc, MisconfigurationException)
        ):
            run_dir.discard_if_unused()
            line = plain_argument_error(exc) if is_argument_error(exc) else one_line(exc)
            raised = built_failure(exc) if show_traceback() else None
            if raised is not None:  # a plugin's constructor raised: its author asked
                traceback.print_exception(raised, file=sys.stderr)
            print(f"error: {line}", file=sys.stderr)
            return EXIT_USER_ERROR
        stop = startup_signals.stopping_signal()
        if stop is not None:  # a signal surfaced as another error (an interrupted import)
            return _stopped_outside_training(stop)
        fault = plugin_fault(exc)
        if fault is None:  # raised by the package's own code: its bug, a traceback
            raise
        return _plugin_failed(exc, fault)
    finally:
        run_dir.release_all()
    failures = quiet.background_failures()
    if failures:  # a background thread died (TensorBoard's writer): the run did not finish well
        failure = failures[0]
        what = describe_os_error(failure) if isinstance(failure, OSError) else one_line(failure)
        print(f"error: a background writer failed: {what}", file=sys.stderr)
        return EXIT_USER_ERROR
    return 0


def _plugin_failed(exc: BaseException, line: str) -> int:
    """A plugin that raised while the model ran (:func:`~roformer_lit.plugin_faults.
    plugin_fault`): its bug, one line, exit 2, as when its constructor raises. A run
    directory that holds a checkpoint keeps it; one that holds none is removed. With
    ``ROFORMER_LIT_TRACEBACK=1`` the full traceback comes first, for the plugin's author."""
    run_dir.discard_if_unused()
    if show_traceback():
        traceback.print_exception(exc, file=sys.stderr)
    print(f"error: {line}", file=sys.stderr)
    return EXIT_USER_ERROR


def _run_report(line: str) -> None:
    """Print how a training run ended where every process of a multi-process run ends it
    alike (a preemption, which Lightning hands to every rank; a divergence, which the ranks
    agree on): once, from the leading process (rank 0, or the only one), not once per rank.
    Every rank still exits with the run's code."""
    if launch_rank() in (None, 0):
        print(line, file=sys.stderr)


def _stopped_outside_training(exc: BaseException) -> int:
    """Ctrl-C or SIGTERM that the training loop did not take over (start-up, corpus
    preparation, an evaluation, a second Ctrl-C): remove what this process created that
    holds no checkpoint, say so in one line, exit 130 (Ctrl-C) or 75 (SIGTERM)."""
    removed = run_dir.discard_if_unused()
    return startup_signals.report_stop(exc, str(removed[0]) if removed else None)


def check_config_files(argv: Sequence[str]) -> None:
    """Every config file an option names (:data:`CONFIG_OPTIONS`), for every command, before
    any parser reads it: a regular readable file (a FIFO would hang the parser, a directory
    confuse it) of UTF-8 text (a binary file is one line, not a ``UnicodeDecodeError``:
    :func:`~roformer_lit.safe_input.read_text_file`) naming no moved class path. A section's
    value that names no file (inline YAML, a class name) is the parser's."""
    for i, arg in enumerate(argv):
        option, _, value = arg.partition("=")
        if option not in CONFIG_OPTIONS:
            continue
        if not _:
            if i + 1 >= len(argv):
                continue
            value = argv[i + 1]
        if value.lstrip().startswith(("{", "[")):
            continue  # inline YAML or JSON
        if option in ("--config", "-c") or os.path.lexists(os.path.expanduser(value)):
            refuse_moved_class_paths(value, read_text_file(value, "config file"))


#: Class paths that configs saved by earlier versions name (a run's ``config.yaml``), and
#: where those classes live now.
MOVED_CLASS_PATHS = {
    "roformer_lit.run_logger.RunLogger": "roformer_lit.training.run_logger.RunLogger",
    "roformer_lit.callbacks.LastCheckpointAtEnd": (
        "roformer_lit.training.callbacks.LastCheckpointAtEnd"
    ),
    "roformer_lit.final_validation.ValidateAtEnd": (
        "roformer_lit.training.final_validation.ValidateAtEnd"
    ),
}


def class_paths(document: Any) -> list[str]:
    """Every string value of a ``class_path`` key anywhere in a parsed YAML document."""
    found: list[str] = []
    stack = [document]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            value = node.get("class_path")
            if isinstance(value, str):
                found.append(value)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def refuse_moved_class_paths(path: str, text: str) -> None:
    """A config saved by an earlier version names classes that have moved: one line naming
    the old class path and the new one (the file is not changed). Only ``class_path``
    values of the parsed YAML count: a comment or another value that mentions an old path
    is no reference to a class. A file that does not parse is left to the parser's error."""
    import yaml

    try:
        document = safe_yaml_load(text)
    except DuplicateKeyError as exc:
        raise ConfigError(
            f"config file {path} gives the key {exc.key!r} twice in one mapping (lines "
            f"{exc.first_line} and {exc.line}): YAML would keep the last value without a "
            "word; give it once"
        ) from None
    except (yaml.YAMLError, YAMLBombError):
        return  # the parser reports it
    for named in class_paths(document):
        new = MOVED_CLASS_PATHS.get(named.strip())
        if new is not None:
            raise ConfigError(
                f"config file {path} names {named.strip()}, which this version calls {new}; "
                "replace it in the file (a config saved by an earlier version of roformer-lit)"
            )
