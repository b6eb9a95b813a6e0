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
from typing import Any

from roformer_lit.errors import ConfigError

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
    """One :class:`ConfigError` line for the first option of ``args`` given twice (see the
    module): ``fit: --model.hidden_size given twice (--model.hidden_size 64, then
    --model.hidden_size 128): ...``. ``options``: the parser's option strings -> actions."""
    seen: dict[str, str] = {}
    for index, word in enumerate(args):
        if word == "--":
            return
        if word.startswith("--") and word.partition("=")[0].endswith("+"):
            appended = word.partition("=")[0][:-1]
            seen = {k: v for k, v in seen.items() if not k.startswith(f"{appended}.")}
            continue
        name = option_name(word, options)
        if name is None or name in CONFIG_OPTIONS:
            continue
        given = _as_given(args, index)
        if name in seen:
            raise ConfigError(
                f"{command}: {name} given twice ({seen[name]}, then {given}): jsonargparse "
                "would keep the last value without a word; give it once"
            )
        seen[name] = given


def _as_given(args: Sequence[str], index: int) -> str:
    """The option at ``args[index]`` with its value, as typed (for the message)."""
    word = args[index]
    if "=" in word or index + 1 == len(args) or args[index + 1].startswith("--"):
        return word
    return f"{word} {args[index + 1]}"
