"""``transformers`` is an optional dependency: import it only when interop is used."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def quiet_transformers(transformers: ModuleType) -> Iterator[None]:
    """No progress bars, warnings or load reports from ``transformers`` inside: what
    export and import check, they say in their own one line."""
    logging = transformers.utils.logging
    verbosity, bars = logging.get_verbosity(), logging.is_progress_bar_enabled()
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        logging.set_verbosity(verbosity)
        if bars:
            logging.enable_progress_bar()
