"""An option of ``fit``/``validate``/``test``/``predict`` (and ``finetune``) given twice.

jsonargparse keeps the last of ``--model.hidden_size 64 --model.hidden_size 128`` without a
word, as argparse does for the other commands' options (which
:class:`~roformer_lit.tool_arguments.ToolParser` refuses). :func:`refuse_repeated_options`
refuses it the same way, in one line naming the option and both values, before anything is
parsed. Three spellings repeat by design and stay allowed:

* the options that layer a config (:data:`CONFIG_OPTIONS`): ``--config a.yaml --config
  b.yaml`` reads both, the later overriding the earlier, and a section given whole
  (``--data a.yaml``, ``--trainer '{...}'``) is read into that section the same way;
* an append, ``--data.train_files+ more.txt`` (``--key+``), which adds to a list;
* a key inside an item added to a list (``--trainer.callbacks+ EarlyStopping
  --trainer.callbacks.monitor val/loss``): after each append, its keys are the new item's.

``--opt=value`` and ``--opt value`` are one option. An abbreviation (``--model.hidden_si``)
is no option: the parser refuses it as one
(:mod:`~roformer_lit.commands.whole_options`). Words after ``--`` are values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roformer_lit.errors import ConfigError
from roformer_lit.safe_input import yaml_value

#: Options whose value may be a YAML file the parser reads (``--config``, and LightningCLI's
#: sections: ``--data my_data.yaml`` reads a file as that section's config), each read in
#: turn when given several times: layered, never a repeat.
CONFIG_OPTIONS = (
    "--config",
    "-c",
    "--model",
    "--data",
    "--trainer",
    "--checkpoint",
    "--optimizer",
    "--lr_scheduler",
)


def option_name(word: str, options: Mapping[str, Any]) -> str | None:
    """The option a command-line word sets, spelled as the parser knows it: the option
    itself (``--key`` or ``--key=value``) or a key inside an option
    (``--model.position_kwargs.base``, as typed); None for a value, an append (``--key+``)
    or a word the parser will refuse itself (an abbreviation among them)."""
    if not word.startswith("--") or word == "--":
        return None
    name = word.partition("=")[0]
    if name.endswith("+"):
        return None
    if name in options:
        return name
    inside = name
    while "." in inside:
        inside = inside.rsplit(".", 1)[0]
        if inside in options:
            return name
    return None


def refuse_repeated_options(command: str, args: Sequence[str], options: Mapping[str, Any]) -> None:
    """One :class:`ConfigError` line for the first setting of ``args`` given twice (see the
    module): ``fit: --model.hidden_size given twice (--model.hidden_size 64, then
    --model.hidden_size 128): ...``. ``options``: the parser's option strings -> actions.

    A setting is given twice in any two spellings that set it: the option itself, a key
    inside a mapping typed whole (``--model.position_kwargs '{base: 10}'`` then
    ``--model.position_kwargs.base 100``) or a key of a section typed inline (``--model
    '{hidden_size: 64}'`` beside ``--model.hidden_size 128``). A key typed before the
    mapping that holds it is typed whole is dropped by it (``--model.block.mlp geglu``
    then ``--model.block '{norm: rmsnorm}'``): refused too, naming both."""
    seen: list[_Given] = []
    for index, word in enumerate(args):
        if word == "--":
            return
        if word.startswith("--") and word.partition("=")[0].endswith("+"):
            appended = word.partition("=")[0][:-1]
            seen = [g for g in seen if not g.path.startswith(f"{appended}.")]
            continue
        name = option_name(word, options)
        if name is None:
            continue
        given = _as_given(args, index)
        for new in _settings_given(name, _value_typed(args, index), given):
            for old in seen:
                _refuse_if_both(command, old, new)
            seen.append(new)


@dataclass(frozen=True)
class _Given:
    """One setting a command-line word gives: its dotted option path, the word as typed,
    its value (parsed YAML where it is a mapping) and whether it is a mapping given whole
    (which replaces every key of it given before)."""

    path: str
    typed: str
    value: Any
    whole: bool


def _value_typed(args: Sequence[str], index: int) -> str | None:
    """The text of the value of the option at ``args[index]`` (None: none follows)."""
    option, equals, value = args[index].partition("=")
    if equals:
        return value
    if index + 1 < len(args) and not args[index + 1].startswith("--"):
        return args[index + 1]
    return None


def _mapping(text: str | None) -> Mapping[str, Any] | None:
    """``text`` as a YAML mapping, or None (a file path, a scalar, not YAML: the parser's)."""
    if text is None or not text.lstrip().startswith("{"):
        return None
    parsed = yaml_value(text)
    return parsed if isinstance(parsed, Mapping) else None


def _leaves(path: str, value: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The dotted paths of the keys of a section's inline mapping, item by item."""
    found: list[tuple[str, Any]] = []
    for key, item in value.items():
        if isinstance(item, Mapping) and item:
            found += _leaves(f"{path}.{key}", item)
        else:
            found.append((f"{path}.{key}", item))
    return found


def _settings_given(name: str, text: str | None, typed: str) -> list[_Given]:
    """What one option gives: a section (:data:`CONFIG_OPTIONS`) typed inline, each of its
    keys (merged into the section); a section read from a file, nothing (files layer);
    another option, itself (whole where its value is a mapping)."""
    mapping = _mapping(text)
    if name in CONFIG_OPTIONS:
        if mapping is None or name in ("--config", "-c"):
            return []
        return [_Given(path, typed, value, False) for path, value in _leaves(name, mapping)]
    return [_Given(name, typed, text if mapping is None else mapping, mapping is not None)]


def _holds(value: Any, keys: Sequence[str]) -> bool:
    """Whether the mapping ``value`` holds the nested key path ``keys``."""
    for key in keys:
        if not isinstance(value, Mapping) or key not in value:
            return False
        value = value[key]
    return True


def _refuse_if_both(command: str, old: _Given, new: _Given) -> None:
    """One ConfigError line where ``old`` and ``new`` (typed later) give one setting."""
    inside_old = new.path.startswith(f"{old.path}.") and _holds(
        old.value, new.path[len(old.path) + 1 :].split(".")
    )
    if old.path == new.path or inside_old:
        raise ConfigError(
            f"{command}: {new.path} given twice ({old.typed}, then {new.typed}): jsonargparse "
            "would keep the last value without a word; give it once"
        )
    if new.whole and old.path.startswith(f"{new.path}."):
        raise ConfigError(
            f"{command}: {old.typed} is dropped by the later {new.typed}, which gives "
            f"{new.path} whole: give {new.path} once (whole, with that key in it), or whole "
            f"first and then {old.path}"
        )


def _as_given(args: Sequence[str], index: int) -> str:
    """The option at ``args[index]`` with its value, as typed (for the message)."""
    word = args[index]
    if "=" in word or index + 1 == len(args) or args[index + 1].startswith("--"):
        return word
    return f"{word} {args[index + 1]}"
