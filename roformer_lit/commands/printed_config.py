"""``--print_config`` prints only a configuration the command would build.

jsonargparse prints the configuration while it parses, before any class is built: a model
section the build refuses (``--model.position alibi --model.attention linear``) was
printed and the command exited 0. :class:`CheckedPrintParser`, the class of every parser
the CLI builds, runs its command's check (:attr:`CheckedPrintParser.check_printed`, set by
``RoformerCLI.init_parser``: the rules the model's build runs, on its settings alone) on
the configuration it is about to print. An impossible one is the build's one ``error:``
line, exit 2, and nothing on stdout; a possible one prints exactly as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from roformer_lit.commands.whole_options import WholeOptionParser


def printing_config(parser: Any) -> bool:
    """Whether ``--print_config`` was given to ``parser``'s command line: jsonargparse
    marks the main parser (a subcommand's parser reaches it as ``parent_parser``) with
    ``print_config`` when it reads the option, and removes the mark once it has printed."""
    while parser is not None:
        if hasattr(parser, "print_config"):
            return True
        parser = getattr(parser, "parent_parser", None)
    return False


class CheckedPrintParser(WholeOptionParser):
    """The CLI's parser (options written in full: :class:`WholeOptionParser`) whose
    ``--print_config`` refuses a configuration the command would refuse (see the module).

    ``check_printed(config)``: the check, on the section printed (a subcommand's: its
    ``model``, ``data``, ``trainer``), raising one ConfigError line; None: none."""

    check_printed: Callable[[Any], None] | None = None

    def dump(self, cfg: Any, *args: Any, **kwargs: Any) -> str:
        """jsonargparse's ``dump``, after :attr:`check_printed` where the dump is the one
        ``--print_config`` prints (a run's ``config.yaml`` is written after the build's own
        checks)."""
        if self.check_printed is not None and printing_config(self):
            self.check_printed(cfg)
        return super().dump(cfg, *args, **kwargs)
