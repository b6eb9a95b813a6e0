"""The ``transformers`` version floor of an exported directory.

Export writes its architecture's floor (``HFArchitecture.transformers_floor``: the oldest
release that reads what export writes exactly, see docs/guide/interop.md) into
``config.json`` under :data:`FLOOR_KEY`. Export and import refuse to run under an older
``transformers`` than the architecture's floor, and import also under one older than the
floor a directory records.
"""

from __future__ import annotations

from typing import Any

from packaging.version import InvalidVersion, Version

from roformer_lit.errors import ConfigError

#: the ``config.json`` key export writes the floor under
FLOOR_KEY = "min_transformers_version"


def check_floor(floor: Any, transformers: Any, what: str) -> None:
    """Refuse (ConfigError) an installed ``transformers`` older than ``floor``; ``what``
    names what needs it."""
    try:
        needed = Version(str(floor))
    except InvalidVersion as err:
        raise ConfigError(
            f"{what} records {FLOOR_KEY}={floor!r}, not a version number (e.g. '5.0.0')"
        ) from err
    installed = Version(transformers.__version__)
    if installed < needed:
        raise ConfigError(
            f"{what} needs transformers>={needed}, installed: {installed}; "
            f"pip install 'transformers>={needed}'"
        )
