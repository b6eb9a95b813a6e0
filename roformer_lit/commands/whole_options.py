"""Every option of ``fit``/``validate``/``test``/``predict``/``finetune`` written in full.

argparse takes an unambiguous prefix of an option for the option: ``fit --trainer.max_step
2`` ran with ``trainer.max_steps=2``, so a typo silently set another setting (and an option
added later turns an accepted abbreviation into an ambiguous one). :class:`WholeOptionParser`
is the class of every parser the CLI builds (the main one and each subcommand's:
``RoformerCLI.init_parser``); it is made with ``allow_abbrev=False``, and a word that only
begins an option is refused in one line naming the word and the option(s) it begins, as the
other tools' :class:`~roformer_lit.tool_arguments.ToolParser` refuses one::

    fit: --trainer.max_step is not an option; it abbreviates --trainer.max_steps: write
    the option in full

An option no parser takes (``--model.postion``) is answered with the closest option and the
options of its group (:func:`unknown_option_hint`), not jsonargparse's bare
``unrecognized arguments``. ``--opt=value`` is checked as ``--opt``. Keys inside an option (``--model.position_kwargs.base``)
and a data module's settings (``--data.max_length``) are jsonargparse's to resolve, which
takes no prefix of them either.
"""

from __future__ import annotations

import difflib
from typing import Any

from lightning.pytorch.cli import LightningArgumentParser, LightningCLI

from roformer_lit.errors import AbbreviatedOption
from roformer_lit.tool_arguments import abbreviation_refusal, names_no_option, options_abbreviated

#: LightningCLI's subcommands, one of which the main parser's command line names.
SUBCOMMANDS = tuple(LightningCLI.subcommands())


class WholeOptionParser(LightningArgumentParser):
    """LightningCLI's parser with abbreviations refused (see the module).

    ``command``: the command the user typed, as the message names it (``prepare``,
    ``finetune``); None: the subcommand this parser reads (jsonargparse names it in
    ``subcommand``), else the one the main parser's command line names, else ``fit``."""

    def __init__(self, *args: Any, command: str | None = None, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)
        self.command = command

    @property
    def command_name(self) -> str:
        """The command this parser's messages name (see the class)."""
        if self.command or getattr(self, "subcommand", None):
            return self.command or self.subcommand
        named = [word for word in getattr(self, "args", None) or [] if word in SUBCOMMANDS]
        return named[0] if named else "fit"

    def _parse_optional(self, arg_string: str) -> Any:
        """argparse's reading of one command-line word, which with ``allow_abbrev=False``
        leaves an abbreviation unknown (later: ``unrecognized arguments``); here it is
        refused at once, naming what it abbreviates. A word this parser does not know may
        be a subcommand's option (the main parser reads the subcommand's words too): only
        a prefix of one of this parser's own options is refused."""
        found = super()._parse_optional(arg_string)
        if names_no_option(found):
            full = options_abbreviated(arg_string, self._option_string_actions)
            if full:
                line = f"{self.command_name}: {abbreviation_refusal(arg_string, full)}"
                raise AbbreviatedOption(line, written=arg_string.partition("=")[0], full=full)
        return found

    def error(self, message: str, ex: Exception | None = None) -> Any:
        """jsonargparse's error, with an unknown option (``--model.postion rope``) answered
        by the closest option and the valid ones (:func:`unknown_option_hint`): before,
        ``unrecognized arguments: --model.postion rope`` and nothing to correct it with."""
        if message.startswith(UNRECOGNIZED) and "; " not in message:  # not yet answered
            words = message[len(UNRECOGNIZED) :].split()
            hint = unknown_option_hint(words, self._every_option())
            message = f"{message}; {hint}" if hint else message
        return super().error(message, ex)

    def _every_option(self) -> set[str]:
        """This parser's options and, for the main parser, its subcommands' options."""
        options = set(self._option_string_actions)
        for action in self._actions:
            for parser in (getattr(action, "choices", None) or {}).values():
                if isinstance(parser, WholeOptionParser):
                    options |= parser._every_option()
        return options


#: How jsonargparse (and argparse) begins the message of a word no option takes.
UNRECOGNIZED = "unrecognized arguments: "


def unknown_option_hint(words: list[str], options: set[str]) -> str:
    """``did you mean --model.position? valid --model. options: --model.attention, ...``
    for the first unknown option in ``words``: the closest of ``options``, and the options
    of its group (the words before its last dot); '' when no word is an option."""
    flags = [w.partition("=")[0] for w in words if w.startswith("--")]
    if not flags:
        return ""
    flag = flags[0]
    longs = sorted(o for o in options if o.startswith("--") and o != "--help")
    close = difflib.get_close_matches(flag, longs, n=1, cutoff=0.6)
    group = flag.rpartition(".")[0] + "." if "." in flag else ""
    valid = [o for o in longs if group and o.startswith(group) and "." not in o[len(group) :]]
    said = f"did you mean {close[0]}? " if close else ""
    if valid:
        return f"{said}valid {group[2:-1]} options: {', '.join(valid)}"
    return f"{said}see --help for the valid options"
