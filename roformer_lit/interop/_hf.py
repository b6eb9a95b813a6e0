"""``transformers`` is an optional dependency: import it only when interop is used."""

from __future__ import annotations

from types import ModuleType

from roformer_lit.errors import ConfigError


def require_transformers() -> ModuleType:
    """The ``transformers`` module, or a ConfigError saying how to install it."""
    try:
        import transformers
    except ImportError as err:
        raise ConfigError(
            "Hugging Face interop needs the transformers package: pip install roformer-lit[hf]"
        ) from err
    return transformers
