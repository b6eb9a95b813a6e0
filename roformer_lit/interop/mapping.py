"""The registry of the HF architectures (:data:`ARCHITECTURES`, one module each in
:mod:`roformer_lit.interop.architectures`) and how export and import pick one.

Export picks the architecture of the model's scheme and block layout (``position``,
``pre_norm``); import the one of the HF ``model_type``. Each architecture's name mapping
(:meth:`~.architectures.base.HFArchitecture.links`) is shared by both directions.
"""

from __future__ import annotations

from roformer_lit.errors import ConfigError
from roformer_lit.interop.architectures import deberta, learned, modernbert, rope
from roformer_lit.interop.architectures.base import HFArchitecture, Link

__all__ = ["ARCHITECTURES", "HFArchitecture", "Link", "architecture_for", "supported"]

#: HF ``model_type`` -> its architecture
ARCHITECTURES: dict[str, HFArchitecture] = {
    arch.model_type: arch
    for arch in (
        rope.ARCHITECTURE,
        deberta.ARCHITECTURE,
        learned.ARCHITECTURE,
        modernbert.ARCHITECTURE,
    )
}


def supported() -> str:
    """The importable classes, for messages: ``Class (model_type), ...``."""
    return ", ".join(f"{a.model_class} ({a.model_type})" for a in ARCHITECTURES.values())


def architecture_for(position: str, pre_norm: bool) -> HFArchitecture:
    """The HF architecture of scheme ``position`` in the ``pre_norm`` layout, or a
    ConfigError naming the exportable schemes (or the scheme's layouts)."""
    schemes = [a for a in ARCHITECTURES.values() if a.position == position]
    if not schemes:
        exportable = sorted({a.position for a in ARCHITECTURES.values()})
        raise ConfigError(
            f"position {position!r} has no Hugging Face counterpart; exportable schemes: "
            f"{', '.join(exportable)}"
        )
    for arch in schemes:
        if arch.pre_norm == pre_norm:
            return arch
    layouts = ", ".join(f"{a.model_class} (pre_norm {str(a.pre_norm).lower()})" for a in schemes)
    raise ConfigError(
        f"cannot export position {position!r} with pre_norm={str(pre_norm).lower()}: its "
        f"Hugging Face architectures are {layouts}"
    )
