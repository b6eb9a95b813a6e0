"""Reading what users hand us without hanging or exploding: regular files only, bounded YAML.

* :func:`check_readable_file`: a path must name a *regular* file we can read. A FIFO, a
  device or a directory would block (or fail obscurely) when opened; they are refused
  with one line before anything opens them (:func:`check_checkpoint_file` names the
  checkpoints inside a directory given for one). :func:`read_text_file` also requires UTF-8
  text (a binary or Latin-1 file is one line, not a ``UnicodeDecodeError``).
* :func:`safe_yaml_load`: YAML through ``yaml.SafeLoader``, refusing documents whose
  aliases expand to more than :data:`MAX_YAML_NODES` nodes (a "billion laughs" alias bomb
  is a few hundred bytes that expand exponentially) and recursive aliases. Installed as
  jsonargparse's ``yaml`` loader (:func:`install_yaml_guard`), so every config file and
  every command-line value the CLI parses goes through it.
* :func:`check_unique_keys`: a mapping that gives one key twice (``position: rope`` and,
  lines later, ``position: alibi``) is refused, naming the key and its line: YAML loaders
  keep the last value without a word, as argparse did with an option given twice. Part of
  :func:`safe_yaml_load` and of the installed loader, so config files, sweep files and
  inline values are all checked.
* :class:`PlainNumbersLoader` and :func:`read_numbers_plainly`: numbers as YAML 1.2 reads
  them. YAML 1.1, which PyYAML follows, reads ``1:00:00:00`` as the base-60 integer 216000
  and ``010`` as the octal 8, so a duration ``--trainer.val_check_interval 1:00:00:00``
  became a count of 216,000 batches and ``--seed_everything 010`` the seed 8, each without
  a word. Every YAML this package reads (config files, command-line values, sweep files,
  run records) reads them as the text they are; the option's type then reads the text
  (Lightning parses the duration, ``int`` reads ``010`` as 10).
"""

from __future__ import annotations

import difflib
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

from roformer_lit.errors import ConfigError

#: Most nodes a YAML document may expand to (shipped configs have a few hundred).
MAX_YAML_NODES = 100_000


def missing_path_hint(path: str | os.PathLike[str]) -> str:
    """What to say of a path that does not exist: ``; did you mean configs/rope.yaml?``
    (the closest name in its directory), or, for a relative path whose directory is not
    there, the directory it was looked for from (a command run from another directory)."""
    p = Path(path).expanduser()
    parent = p.parent
    if parent.is_dir():
        try:
            names = [c.name for c in parent.iterdir()]
        except OSError:
            return ""
        close = difflib.get_close_matches(p.name, names, n=1, cutoff=0.7)
        return (
            f"; did you mean {parent / close[0] if str(parent) != '.' else close[0]}?"
            if close
            else ""
        )
    missing = next((a for a in reversed(p.parents) if not a.is_dir()), parent)
    if not p.is_absolute():
        return f" (there is no {missing}/ in {Path.cwd()}, the directory it is read from)"
    return f" (there is no directory {missing})"


def check_readable_file(path: str | os.PathLike[str], what: str) -> Path:
    """``path`` if it is a regular, readable file; else a ConfigError naming it (a missing
    one with :func:`missing_path_hint`). The path is checked as given: an empty one is not
    the working directory, and one ending in ``/`` names a directory (``last.ckpt/`` is
    refused as the system refuses it, where :class:`~pathlib.Path` would drop the ``/`` and
    one reader open the file, another not)."""
    if not str(path).strip():
        raise ConfigError(f"{what} path is empty; give a file")
    p = Path(path).expanduser()
    try:
        mode = os.stat(os.path.expanduser(os.fspath(path))).st_mode
    except FileNotFoundError:
        raise ConfigError(f"{what} not found: {path}{missing_path_hint(path)}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror}") from None
    if stat.S_ISDIR(mode):
        raise ConfigError(f"{what} {path} is a directory, expected a file")
    if not stat.S_ISREG(mode):
        raise ConfigError(f"{what} {path} is not a regular file (a pipe or device); give a file")
    if not os.access(p, os.R_OK):
        raise ConfigError(f"cannot read {what} {path}: permission denied")
    return p


#: Where a checkpoint lies below a directory given in its place: the directory itself, a
#: run (``<run>/checkpoints/last.ckpt``) or a folder of runs (``runs/mlm``).
CHECKPOINT_PATTERNS = ("*.ckpt", "checkpoints/*.ckpt", "*/checkpoints/*.ckpt")


def check_checkpoint_file(path: str | os.PathLike[str], what: str = "checkpoint") -> Path:
    """``path`` if it is a readable checkpoint file (:func:`check_readable_file`); a
    directory given in its place (a run, a folder of runs) is one ConfigError line naming
    the checkpoints found in it (:data:`CHECKPOINT_PATTERNS`), or saying there are none."""
    p = Path(path).expanduser()
    if str(path).strip() and os.path.isdir(os.path.expanduser(os.fspath(path))):  # as typed
        found = sorted({str(c) for pattern in CHECKPOINT_PATTERNS for c in p.glob(pattern)})
        shown = ", ".join(found[:4]) + (f" and {len(found) - 4} more" if len(found) > 4 else "")
        hint = f"give one of its checkpoints: {shown}" if found else "it holds no .ckpt file"
        raise ConfigError(f"{what} {path} is a directory, not a checkpoint file; {hint}")
    return check_readable_file(path, what)


def read_text_file(path: str | os.PathLike[str], what: str) -> str:
    """The text of the regular file ``path`` (:func:`check_readable_file`), which must be
    UTF-8 without NUL bytes: a binary file, or text in another encoding, is one ConfigError
    line naming the file and the first offending byte (never a ``UnicodeDecodeError``)."""
    p = check_readable_file(path, what)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    bad = data.find(b"\0")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = exc.start if bad < 0 else min(bad, exc.start)
    if bad >= 0:
        raise ConfigError(
            f"{what} {path} is not UTF-8 text (byte 0x{data[bad]:02x} at offset {bad}): a "
            "binary file, or text in another encoding; give a UTF-8 YAML file"
        )
    return text


class YAMLBombError(Exception):
    """A YAML document that expands beyond :data:`MAX_YAML_NODES` nodes or refers to itself."""


def _expanded_size(root: Any) -> int:
    """Number of nodes ``root`` expands to, aliases counted at every use (iterative DFS)."""
    import yaml

    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            total = 1
            for child in _children(node, yaml):
                total += sizes[id(child)]
                if total > MAX_YAML_NODES:
                    raise YAMLBombError(
                        f"YAML aliases expand to more than {MAX_YAML_NODES:,} values"
                    )
            sizes[key] = total
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise YAMLBombError("a YAML alias refers to itself (recursive structure)")
        on_path.add(key)
        stack.append((node, True))
        for child in _children(node, yaml):
            if id(child) in on_path:
                raise YAMLBombError("a YAML alias refers to itself (recursive structure)")
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes[id(root)]


def _children(node: Any, yaml: Any) -> list[Any]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def check_yaml_size(text: str) -> None:
    """Raise :class:`YAMLBombError` if ``text``'s aliases expand beyond the limit."""
    if "*" not in text:  # no alias, nothing can expand
        return
    import yaml

    for document in yaml.compose_all(text, Loader=yaml.SafeLoader):
        if document is not None:
            _expanded_size(document)


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A YAML mapping gives one key twice (:func:`check_unique_keys`)."""

    def __init__(self, key: str, first_line: int, mapping: Any, mark: Any) -> None:
        super().__init__(
            "while reading a mapping",
            mapping,
            f"found the key {key!r} twice (first on line {first_line}): YAML would keep the "
            "last value without a word; give it once",
            mark,
        )
        self.key, self.first_line, self.line = key, first_line, mark.line + 1


def check_unique_keys(text: str) -> None:
    """Raise :class:`DuplicateKeyError` (a ``yaml.YAMLError`` marking the line) if a mapping
    of ``text`` gives one key twice. Keys are compared as YAML resolves them (``1`` and
    ``"1"`` differ); merge keys (``<<``) may repeat, as YAML allows."""
    if ":" not in text and "{" not in text:  # no mapping can be in it
        return
    for document in yaml.compose_all(text, Loader=yaml.SafeLoader):
        stack = [document] if document is not None else []
        seen_nodes: set[int] = set()
        while stack:
            node = stack.pop()
            if id(node) in seen_nodes:  # an alias: checked where it was defined
                continue
            seen_nodes.add(id(node))
            if isinstance(node, yaml.MappingNode):
                keys: dict[tuple[str, str], Any] = {}
                for key, value in node.value:
                    if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                        first = keys.setdefault((key.tag, key.value), key)
                        if first is not key:
                            raise DuplicateKeyError(
                                key.value,
                                first.start_mark.line + 1,
                                node.start_mark,
                                key.start_mark,
                            )
                    stack.extend((key, value))
            elif isinstance(node, yaml.SequenceNode):
                stack.extend(node.value)


#: What an integer or a float may not look like under :func:`read_numbers_plainly`: base 60
#: (a colon anywhere) for both, an octal's leading zero (``010``, not ``0``, ``0x1f``) for
#: integers.
_NOT_PLAIN = {
    "tag:yaml.org,2002:int": r"(?!.*:)(?![-+]?0[0-9_]+$)",
    "tag:yaml.org,2002:float": r"(?!.*:)",
}


def read_numbers_plainly(loader: type[yaml.SafeLoader]) -> None:
    """Make ``loader`` (a SafeLoader class, changed in place) resolve no base-60 number and
    no leading-zero octal: such a scalar is read as a string (module docstring). Every other
    implicit type, and every other number, resolves as before."""
    resolvers = {}
    for first, mappings in loader.yaml_implicit_resolvers.items():
        resolvers[first] = [
            (tag, re.compile(_NOT_PLAIN[tag] + rx.pattern, rx.flags) if tag in _NOT_PLAIN else rx)
            for tag, rx in mappings
        ]
    loader.yaml_implicit_resolvers = resolvers


class PlainNumbersLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` reading numbers as YAML 1.2 does (:func:`read_numbers_plainly`)."""


read_numbers_plainly(PlainNumbersLoader)


def safe_yaml_load(text: str) -> Any:
    """YAML through :class:`PlainNumbersLoader` after :func:`check_yaml_size` and
    :func:`check_unique_keys`."""
    check_yaml_size(text)
    check_unique_keys(text)
    return yaml.load(text, Loader=PlainNumbersLoader)


def yaml_value(text: str) -> Any:
    """A command-line value as the CLI reads it (:func:`safe_yaml_load`), or ``text``
    itself where it is no YAML the loader accepts."""
    try:
        return safe_yaml_load(text)
    except (yaml.YAMLError, YAMLBombError):
        return text


def install_yaml_guard() -> None:
    """Make jsonargparse's ``yaml`` mode check alias expansion and repeated keys before
    loading, and read numbers as :func:`read_numbers_plainly` does."""
    from jsonargparse import set_loader
    from jsonargparse._loaders_dumpers import get_yaml_default_loader, yaml_load

    read_numbers_plainly(get_yaml_default_loader())

    def guarded(stream: str) -> Any:
        try:
            check_yaml_size(stream)
        except YAMLBombError as exc:
            raise yaml.YAMLError(str(exc)) from None
        check_unique_keys(stream)
        return yaml_load(stream)

    set_loader("yaml", guarded, exceptions=(yaml.YAMLError,))
