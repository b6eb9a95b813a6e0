"""Which spelling of a mapping setting replaces and which merges, said where it matters.

A mapping setting (``model.block``, ``model.position_kwargs``, ``model.attention_kwargs``,
``model.layer_plan``) given whole -- ``--model.block '{mlp: gelu}'`` on the command line,
or ``block: {mlp: gelu}`` in a later ``--config`` file -- *replaces* the mapping the
earlier files gave; a dotted key -- ``--model.block.mlp gelu`` -- *changes that key* and
keeps the others. That is jsonargparse's rule for every mapping, the same on the command
line and in files, and the project keeps it (a whole mapping says the whole setting).

So ``--model.block '{mlp: gelu}'`` over ``configs/recipes/modernbert.yaml`` drops the
recipe's ``norm``, ``norm_bias``, ``linear_bias`` and ``first_norm``: where a mapping typed
whole on the command line drops keys the ``--config`` files set, :func:`replaced_notes`
gives one ``note:`` line naming them and the dotted spelling that keeps them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: The ``model`` settings whose values are mappings.
MAPPING_SETTINGS = ("block", "position_kwargs", "attention_kwargs", "layer_plan")


def _yaml(text: str) -> Any:
    from roformer_lit.safe_input import safe_yaml_load

    try:
        return safe_yaml_load(text)
    except Exception:  # the parser reports it
        return None


def _from_files(argv: Sequence[str]) -> dict[str, Mapping[str, Any]]:
    """Setting -> the mapping the last ``--config`` file that sets it gives."""
    from roformer_lit.safe_input import read_text_file

    found: dict[str, Mapping[str, Any]] = {}
    for index, word in enumerate(argv):
        option, equals, value = word.partition("=")
        if option not in ("--config", "-c"):
            continue
        if not equals:
            value = argv[index + 1] if index + 1 < len(argv) else ""
        try:
            document = _yaml(read_text_file(value, "config file"))
        except Exception:
            continue
        model = document.get("model") if isinstance(document, Mapping) else None
        if not isinstance(model, Mapping):
            continue
        for name in MAPPING_SETTINGS:
            if isinstance(model.get(name), Mapping):
                found[name] = model[name]
    return found


def _typed_whole(argv: Sequence[str]) -> dict[str, tuple[str, Mapping[str, Any]]]:
    """Setting -> (the text typed, the mapping) of each mapping typed whole."""
    typed: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for index, word in enumerate(argv):
        option, equals, value = word.partition("=")
        name = option.removeprefix("--model.")
        if name == option or name not in MAPPING_SETTINGS:
            continue
        if not equals:
            value = argv[index + 1] if index + 1 < len(argv) else ""
        parsed = _yaml(value)
        if isinstance(parsed, Mapping):
            typed[name] = (value, parsed)
    return typed


def replaced_notes(argv: Sequence[str]) -> list[str]:
    """One ``note:`` line per mapping setting typed whole that drops keys the ``--config``
    files set (see the module)."""
    files = _from_files(argv)
    notes = []
    for name, (text, mapping) in _typed_whole(argv).items():
        dropped = [str(k) for k in files.get(name, {}) if k not in mapping]
        if not dropped:
            continue
        key = next(iter(mapping), "KEY")
        notes.append(
            f"note: --model.{name} {text} replaces the whole {name} of the --config files: "
            f"{', '.join(dropped)} go back to their defaults; --model.{name}.{key} ... "
            "changes one key and keeps the others"
        )
    return notes


__all__ = ["MAPPING_SETTINGS", "replaced_notes"]
