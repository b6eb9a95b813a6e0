"""A sweep key that only abbreviates a setting, refused in the sweep's words.

argparse takes an unambiguous prefix of an option for the option (``--seed_everythin 1``
would set ``seed_everything``). A sweep file is not typed at a prompt: its keys name its runs
(``seed_everythin1``) and are what a reader of the file trusts. ``fit``'s parsers refuse
every abbreviated option (:mod:`roformer_lit.commands.whole_options`, raising
:class:`~roformer_lit.errors.AbbreviatedOption`), and the sweep's keys are the only options
of its command lines it does not write in full itself, so the parser's refusal is always one
of the sweep file's keys: :func:`written_key_refusal` says so in the sweep file's terms
(dotted keys, not ``--`` options)."""

from __future__ import annotations

from roformer_lit.errors import AbbreviatedOption, ConfigError


def written_key_refusal(where: str, exc: AbbreviatedOption) -> ConfigError:
    """The one line refusing the sweep key ``exc`` found abbreviated:
    ``<sweep file>: key 'trainer.max_step' abbreviates trainer.max_steps: write the
    setting's name in full``."""
    key = exc.written.removeprefix("--")
    settings = " or ".join(name.removeprefix("--") for name in exc.full)
    return ConfigError(
        f"{where}: key {key!r} abbreviates {settings}: write the setting's name in full"
    )
