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

``--opt=value`` is checked as ``--opt``. Keys inside an option (``--model.position_kwargs.base``)
and a data module's settings (``--data.max_length``) are jsonargparse's to resolve, which
takes no prefix of them either.
"""

from __future__ import annotations

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
