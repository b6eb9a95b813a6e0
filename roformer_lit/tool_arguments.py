"""Command-line parsing for the tools beside ``fit`` (``bench``, ``bench-data``, ``bench-flex``,
``extrapolate``, ``sweep``): every numeric argument declares its valid range where it is
declared, and every parse error is one line.

* :class:`ToolParser` -- an ``argparse`` parser whose every error (unknown flag, missing
  argument, a value out of its range, an option given twice: argparse would keep the last
  value silently, an abbreviated option: argparse would take ``--dry`` for ``--dry-run``,
  :func:`abbreviation_refusal`) raises :class:`~roformer_lit.errors.ConfigError`
  ``"<tool>: <message>"``, which ``python -m roformer_lit`` prints as one ``error:`` line and
  exit code 2 (never a usage dump, never ``SystemExit`` out of ``cli.main``).
* :func:`integer` and :func:`real` -- ``type=`` callables declaring an argument's range,
  e.g. ``add_argument("--batch", type=integer(1, 4096))``. Each parses one command-line word
  and refuses anything else in words naming the range: a word that is not a number (``1.5``
  for an integer, ``x``), NaN and infinities, and values outside ``[low, high]`` -- both
  ends are always bounded, so an absurd value (``10**30`` steps) is refused at once, not
  after allocating or looping for hours. argparse prefixes the argument's name:
  ``bench: argument --batch: must be an integer in [1, 4096], got '0'``.
* :data:`OUTPUT_FILE` and :data:`OUTPUT_DIRECTORY` -- ``type=`` callables declaring an
  argument a path the tool writes (``extrapolate --csv FILE``, ``compare --out DIR``), checked
  while the arguments are parsed, before anything is read, evaluated or written: a file must
  not be a directory, a directory not a file, and the nearest directory that exists on the
  way must be a writable directory (missing directories are created when the output is
  written, as every tool does). A path no write could reach is one line naming it, never an
  ``OSError`` after minutes of evaluation.
* :data:`INPUT_FILE` and :data:`INPUT_DIRECTORY` -- ``type=`` callables declaring an
  argument a path the tool reads: it must exist, be a regular readable file (a directory:
  a readable directory), checked while the arguments are parsed, before any work.
* :func:`script_parser` and :func:`run_script` -- the same for the developer scripts
  (``python scripts/<name>.py``): a :class:`ToolParser` named after the script, and its
  ``main`` run so that a :class:`ConfigError` (every parse error, and the script's own
  refusals) or an ``OSError`` (a file missing, unreadable, a directory where a file
  belongs) is one ``error: <script>: ...`` line and exit 2, as ``python -m roformer_lit``
  prints them: never a usage dump or a traceback.
* :func:`unbounded_numeric_arguments`, :func:`bounded_arguments` and
  :func:`output_arguments` -- the flags of a parser that take numbers without a declared
  range (the tests require there are none), those with one, and those it writes to.
"""

from __future__ import annotations

import argparse
import difflib
import math
import os
import sys
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roformer_lit.errors import EXIT_USER_ERROR, ConfigError, describe_os_error, one_line

PROG = "python -m roformer_lit"


class ToolParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` for ``python -m roformer_lit <tool>``: errors are one
    :class:`ConfigError` line prefixed with the tool's name."""

    def __init__(self, tool: str, **kwargs: Any) -> None:
        kwargs.setdefault("prog", f"{PROG} {tool}")
        kwargs["allow_abbrev"] = False  # an abbreviation is refused (_parse_optional)
        super().__init__(**kwargs)
        self.tool = tool
        #: dest -> the option as the last parse typed it, with its values (``--hidden 32``):
        #: what a tool checks to refuse a typed option it would ignore (a default is not typed).
        self.typed: dict[str, str] = {}

    def _parse_optional(self, arg_string: str) -> Any:
        """argparse's reading of one command-line word, which with ``allow_abbrev=False``
        leaves an abbreviation unknown (later: ``unrecognized arguments``); here it is
        refused at once, naming the option(s) it abbreviates."""
        found = super()._parse_optional(arg_string)
        if names_no_option(found):
            full = options_abbreviated(arg_string, self._option_string_actions)
            if full:
                self.error(abbreviation_refusal(arg_string, full))
        return found

    def option_names(self) -> set[str]:
        """Every option string this parser takes (``--lengths``, ``-h``, ...)."""
        return set(self._option_string_actions)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        """As argparse's, with every long option accepted in either spelling: ``--dry_run``
        for ``--dry-run`` and ``--ckpt-path`` for ``--ckpt_path`` (``fit`` takes
        LightningCLI's underscores, so a user's hands type both)."""
        if args is not None:
            args = [known_spelling(word, self._option_string_actions) for word in args]
            self._refuse_repeated_options(args)
        self.typed = self._typed_options(sys.argv[1:] if args is None else list(args))
        ns, extra = super().parse_known_args(args, namespace)
        self._refuse_repeats(ns)
        return ns, extra

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        """As argparse's, with a word it does not know (``--lenght 5``) refused in a line
        that also names the valid options (and the closest one): argparse named only the
        word."""
        ns, extra = self.parse_known_args(args, namespace)
        if extra:
            self.error(f"unrecognized arguments: {' '.join(extra)}; {self.valid_options(extra)}")
        return ns

    def valid_options(self, words: list[str]) -> str:
        """``did you mean --x? valid options: --a, --b, ...`` for the unknown ``words``."""
        options = sorted(
            {
                next((o for o in a.option_strings if o.startswith("--")), a.option_strings[0])
                for a in self._actions
                if a.option_strings and a.dest != "help"
            }
        )
        flags = [w.partition("=")[0][2:] for w in words if w.startswith("--")]
        names = [o[2:] for o in options]  # compared without the '--' every option shares
        close = difflib.get_close_matches(flags[0], names, n=1) if flags else []
        if not options:  # positional arguments alone (a script's ``RUN_A RUN_B``)
            return f"{self.format_usage().strip()} (no options)"
        return (f"did you mean --{close[0]}? " if close else "") + (
            f"valid options: {', '.join(options)}"
        )

    def options_help(self, heading: str) -> str:
        """This parser's options (``-h`` left out) as ``--help`` lists them, under
        ``heading``: for another tool's help to show the options it hands on to this one."""
        formatter = self._get_formatter()
        formatter.start_section(heading)
        formatter.add_arguments(a for a in self._actions if a.option_strings and a.dest != "help")
        formatter.end_section()
        return formatter.format_help()

    #: Actions an option may be given several times for (each adds to a list, or counts).
    REPEATABLE = (argparse._AppendAction, argparse._AppendConstAction, argparse._CountAction)

    def _action_of(self, word: str) -> argparse.Action | None:
        """The action a command-line word names (the option, or its ``--option=value``
        form); None for anything else (an abbreviation is refused when parsed)."""
        if not word.startswith("-") or word == "-":
            return None
        return self._option_string_actions.get(word.partition("=")[0])

    def _refuse_repeated_options(self, args: list[str]) -> None:
        """An option given twice (``--lengths 16 --lengths 32``) would take the last value
        without a word: one line naming it, for every option but those that collect or
        count (``--only``, ``--slurm.setup``). Words after ``--`` are values."""
        seen: dict[int, tuple[str, list[str]]] = {}
        for index, word in enumerate(args):
            if word == "--":
                return
            action = self._action_of(word)
            if action is None or isinstance(action, self.REPEATABLE) or not action.option_strings:
                continue
            values = self._values_after(args, index, action)
            given = " ".join([word, *values])
            if id(action) in seen:
                name = action.option_strings[0]
                first, earlier = seen[id(action)]
                together = " ".join([name, *earlier, *values])
                several = action.nargs in ("+", "*")
                self.error(
                    f"argument {name}: given twice ({first}, then {given}): argparse would "
                    "keep the last silently; give it once"
                    + (f", with every value after it: {together}" if several else "")
                )
            seen[id(action)] = (given, values)

    def as_given(self, ns: argparse.Namespace, dest: str) -> str:
        """The option of ``dest`` as typed (:attr:`typed`), or its flag and parsed value
        with ``(the default)``: ``--device cpu (the default)``."""
        if dest in self.typed:
            return self.typed[dest]
        action = next(a for a in self._actions if a.dest == dest)
        value = getattr(ns, dest)
        words = " ".join(map(str, value)) if isinstance(value, list) else str(value)
        flag = action.option_strings[0]
        return (flag if isinstance(value, bool) else f"{flag} {words}") + " (the default)"

    def _typed_options(self, args: list[str]) -> dict[str, str]:
        """dest -> the option as typed with its values, for every option in ``args`` (words
        after ``--`` are values)."""
        typed: dict[str, str] = {}
        for index, word in enumerate(args):
            if word == "--":
                break
            action = self._action_of(known_spelling(word, self._option_string_actions))
            if action is not None and action.option_strings:
                typed[action.dest] = " ".join([word, *self._values_after(args, index, action)])
        return typed

    def _values_after(self, args: list[str], index: int, action: argparse.Action) -> list[str]:
        """The words after ``args[index]`` that are its option's values (up to the next
        option), for the message."""
        if "=" in args[index] or action.nargs == 0:
            return []
        values = []
        for word in args[index + 1 :]:
            if word.startswith("--") or self._action_of(word) is not None:
                break
            values.append(word)
            if action.nargs in (None, "?"):
                break
        return values

    def _refuse_repeats(self, ns: argparse.Namespace) -> None:
        """An option taking several values (``--lengths 16 32``) lists each once: a repeat
        would be a second identical column or a second run of the same thing."""
        for action in self._actions:
            values = getattr(ns, action.dest, None)
            if not action.option_strings or not isinstance(values, list):
                continue
            seen: set = set()
            for value in values:
                if value in seen:
                    self.error(f"argument {action.option_strings[0]}: lists {value} twice")
                seen.add(value)

    def error(self, message: str) -> Any:  # one line, exit 2 through the CLI
        raise ConfigError(f"{self.tool}: {' '.join(message.split())}")


#: How many of the options a word begins :func:`abbreviation_refusal` names before counting
#: the rest.
NAMED_OPTIONS = 6


def names_no_option(found: Any) -> bool:
    """Whether argparse's ``_parse_optional`` found an option-like word that names no option
    (with ``allow_abbrev=False``, an abbreviation too): its ``(None, word, ...)`` tuple, or
    the one-tuple list Python 3.12.7 and later return."""
    first = found[0] if isinstance(found, list) and len(found) == 1 else found
    return isinstance(first, tuple) and bool(first) and first[0] is None


def options_abbreviated(word: str, options: Collection[str]) -> list[str]:
    """The long options of ``options`` that ``word`` (``--opt`` or ``--opt=value``) only
    begins, sorted; empty for an option given in full, a short option or a value."""
    option = word.partition("=")[0]
    if not option.startswith("--") or option == "--" or option in options:
        return []
    return sorted(name for name in options if name.startswith(option))


def abbreviation_refusal(word: str, full: Sequence[str]) -> str:
    """The line refusing ``word``, which only begins the options ``full``: argparse would
    take an unambiguous prefix for the option, so a typo (``--trainer.max_step``) would
    silently set another setting (``--trainer.max_steps``)."""
    option = word.partition("=")[0]
    named = " or ".join(full[:NAMED_OPTIONS])
    more = f" (and {len(full) - NAMED_OPTIONS} more)" if len(full) > NAMED_OPTIONS else ""
    return f"{option} is not an option; it abbreviates {named}{more}: write the option in full"


def known_spelling(word: str, options: Collection[str]) -> str:
    """``word`` with its long option respelled as one of ``options`` where only ``-`` and
    ``_`` differ (``--dry_run`` -> ``--dry-run``); any other word unchanged."""
    if not word.startswith("--"):
        return word
    option, sep, value = word.partition("=")
    if option in options:
        return word
    for old, new in (("_", "-"), ("-", "_")):
        other = "--" + option[2:].replace(old, new)
        if other in options:
            return other + sep + value
    return word


@dataclass(frozen=True)
class Bounded:
    """A number in ``[low, high]`` (``low`` excluded when ``low_open``), parsed from one
    command-line word; an argparse ``type``."""

    kind: type  # int or float
    low: float
    high: float
    low_open: bool = False

    @property
    def expected(self) -> str:
        """The valid values in words, e.g. ``an integer in [1, 4096]``."""
        what = "an integer" if self.kind is int else "a number"
        left = "(" if self.low_open else "["
        low, high = (int(x) if self.kind is int else f"{x:g}" for x in (self.low, self.high))
        return f"{what} in {left}{low}, {high}]"

    def accepts(self, value: float) -> bool:
        above = value > self.low if self.low_open else value >= self.low
        return math.isfinite(value) and above and value <= self.high

    def __call__(self, word: str) -> int | float:
        try:
            value = self.kind(word.strip())
        except (TypeError, ValueError):
            value = None
        if value is None or not self.accepts(value):
            raise argparse.ArgumentTypeError(f"must be {self.expected}, got {word!r}")
        return value


def integer(low: int, high: int) -> Bounded:
    """An integer in ``[low, high]`` (``1.5``, ``1e3`` and ``x`` are refused)."""
    return Bounded(int, low, high)


def real(low: float, high: float, low_open: bool = False) -> Bounded:
    """A finite number in ``[low, high]``, or ``(low, high]`` with ``low_open``."""
    return Bounded(float, low, high, low_open)


@dataclass(frozen=True, eq=False)  # hashed by identity (argparse looks a type up)
class Registered:
    """A name a registry resolves, checked when the command line is parsed: a built-in, an
    installed entry point's name or an import path ``package.module:Class``, as everywhere
    else (a fixed ``choices`` list would refuse the user's own import path). An argparse
    ``type`` that returns the name a built-in is known by (its short name for its import
    path) and the name unchanged otherwise; a name that does not resolve is the
    registry's one line (what is wrong, and the valid names)."""

    registry: Any  # a roformer_lit.registry.Registry

    def __call__(self, word: str) -> str:
        try:
            self.registry[word]
        except KeyError:
            raise argparse.ArgumentTypeError(str(self.registry.unknown(word))) from None
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return self.registry.canonical(word)


def every_loadable(ns: argparse.Namespace, command: str, **registries: Any) -> None:
    """Each argument of ``ns`` named in ``registries`` (``schemes=POSITION_SCHEMES``) that
    was not typed (None, its default) becomes every registered name that loads
    (:meth:`~roformer_lit.registry.Registry.loadable`), and each name that does not is one
    ``note:`` line on stderr naming it and why: someone else's broken plugin is skipped,
    never the end of ``command``. A typed name was checked when parsed (:class:`Registered`:
    one that does not load is refused)."""
    for dest, registry in registries.items():
        if getattr(ns, dest) is None:
            loaded = registry.loadable()
            for note in loaded.notes(command):
                print(note, file=sys.stderr, flush=True)
            setattr(ns, dest, loaded.names)


@dataclass(frozen=True)
class OutputPath:
    """A path a tool writes: a file, or a directory (``directory``), checked when the
    command line is parsed (see the module); an argparse ``type`` that returns the word
    unchanged."""

    directory: bool

    @property
    def expected(self) -> str:
        """The valid values in words."""
        what = "a directory (existing or new)" if self.directory else "a file (existing or new)"
        return f"{what} under a writable directory; missing directories are created"

    def __call__(self, word: str) -> str:
        problem = output_path_problem(word, self.directory)
        if problem is not None:
            raise argparse.ArgumentTypeError(f"{problem}; valid: {self.expected}")
        return word


def output_path_problem(word: str, directory: bool) -> str | None:
    """Why no write could create ``word`` (a file, or a ``directory``), in words naming the
    path at fault; None when nothing on disk is in the way. Nothing is created here."""
    if not word.strip():
        return f"{word!r} is an empty path"
    if word == "-":  # the shell's word for standard output, which no tool writes its files to
        return (
            "'-' would be a file named '-', not standard output, which this tool does not write to"
        )
    path = Path(word)
    if os.path.islink(path) and not os.path.exists(path):  # a write would land elsewhere
        return f"{word} is a link to {os.readlink(path)}, which does not exist"
    if os.path.isdir(path) and not directory:
        return f"{word} is a directory, not a file"
    if os.path.lexists(path) and not os.path.isdir(path) and directory:
        return f"{word} is an existing file, not a directory"
    nearest = path if directory and os.path.isdir(path) else nearest_existing_parent(path)
    if not os.path.isdir(nearest):
        return f"{word} cannot be created: {nearest} is a file, not a directory"
    if not os.access(nearest, os.W_OK | os.X_OK):
        return f"{word} cannot be written: the directory {nearest} is not writable"
    return None


def nearest_existing_parent(path: Path) -> Path:
    """The first of ``path``'s parents that exists (``.`` or ``/`` at the latest): the
    directory a write creates the missing ones in, or the file in their way."""
    return next((p for p in path.parents if os.path.lexists(p)), Path(path.anchor or "."))


#: ``type=`` of an option naming a file the tool writes (``extrapolate --csv FILE``).
OUTPUT_FILE = OutputPath(directory=False)
#: ``type=`` of an option naming a directory the tool writes into (``compare --out DIR``).
OUTPUT_DIRECTORY = OutputPath(directory=True)


@dataclass(frozen=True)
class InputPath:
    """A path a tool reads: a file, or a directory (``directory``), that must exist and be
    readable when the command line is parsed; an argparse ``type`` that returns the word
    unchanged."""

    directory: bool

    def __call__(self, word: str) -> str:
        what = "directory" if self.directory else "file"
        path = Path(word).expanduser()
        if not word.strip():
            problem = f"{word!r} is an empty path"
        elif not os.path.exists(path):
            problem = f"{word} does not exist"
        elif self.directory != os.path.isdir(path):
            problem = f"{word} is {'not a directory' if self.directory else 'a directory'}"
        elif not self.directory and not os.path.isfile(path):
            problem = f"{word} is not a regular file (a pipe or device)"
        elif not os.access(path, os.R_OK | (os.X_OK if self.directory else 0)):
            problem = f"{word} cannot be read (permission denied)"
        else:
            return word
        raise argparse.ArgumentTypeError(f"{problem}; valid: an existing, readable {what}")


#: ``type=`` of an argument naming a file the tool reads (``probe_rp_table.py OFF.txt``).
INPUT_FILE = InputPath(directory=False)
#: ``type=`` of an argument naming a directory the tool reads (a run directory).
INPUT_DIRECTORY = InputPath(directory=True)


def script_parser(script: str, **kwargs: Any) -> ToolParser:
    """The :class:`ToolParser` of the developer script ``script`` (its path or file name,
    ``__file__``): its errors are ``<name>.py: ...``."""
    name = Path(script).name
    kwargs.setdefault("prog", f"python scripts/{name}")
    return ToolParser(name, **kwargs)


def run_script(
    main: Callable[[list[str]], int | None], script: str, argv: Sequence[str] | None = None
) -> int:
    """``main(argv)`` of the developer script ``script`` (its path or file name; ``argv``:
    the command line's by default), its exit code (None: 0). A :class:`ConfigError` or an
    ``OSError`` it raises is one ``error: <name>.py: ...`` line on stderr and
    :data:`EXIT_USER_ERROR`, as ``python -m roformer_lit`` reports them."""
    name = Path(script).name
    try:
        code = main(list(sys.argv[1:] if argv is None else argv))
    except ConfigError as exc:
        line = one_line(exc)
    except OSError as exc:  # a file missing or unreadable, a directory where a file belongs
        line = describe_os_error(exc)
    else:
        return 0 if code is None else code
    named = line.startswith((f"{name}: ", f"{name} "))  # a ToolParser's (or a subcommand's)
    print(f"error: {line if named else f'{name}: {line}'}", file=sys.stderr)
    return EXIT_USER_ERROR


def output_arguments(parser: argparse.ArgumentParser) -> dict[str, OutputPath]:
    """Flag -> what it writes, for every argument of ``parser`` declared an output path."""
    return {
        (action.option_strings or [action.dest])[0]: action.type
        for action in parser._actions
        if isinstance(action.type, OutputPath)
    }


def unbounded_numeric_arguments(parser: argparse.ArgumentParser) -> list[str]:
    """The flags (or positional names) of ``parser`` whose ``type`` is a bare ``int`` or
    ``float``: numeric arguments without a declared range."""
    return [
        (action.option_strings or [action.dest])[0]
        for action in parser._actions
        if action.type in (int, float)
    ]


def bounded_arguments(parser: argparse.ArgumentParser) -> dict[str, Bounded]:
    """Flag -> declared range, for every argument of ``parser`` that declares one."""
    return {
        (action.option_strings or [action.dest])[0]: action.type
        for action in parser._actions
        if isinstance(action.type, Bounded)
    }


#: The longest sequence any tool takes (``--lengths``, ``--max-length``): far past what a
#: machine evaluates today, short enough that a typo is refused before anything is built.
MAX_LENGTH = 2**17
#: A sequence length: at least 8 tokens (a block with something to mask), at most MAX_LENGTH.
LENGTH = integer(8, MAX_LENGTH)
