"""An installed distribution without installing anything: what ``pip install`` leaves on
``sys.path`` for entry points (a ``<name>-<version>.dist-info`` with ``METADATA`` and
``entry_points.txt``), written into a directory the test puts on the path."""

from __future__ import annotations

import textwrap
from pathlib import Path


def write_distribution(
    directory: Path, name: str, version: str, entry_points: str, top_level: str | None = None
) -> Path:
    """Write distribution ``name`` ``version`` into ``directory`` with ``entry_points`` (the
    text of ``entry_points.txt``, dedented); returns its ``.dist-info`` directory."""
    info = directory / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    if top_level is not None:
        (info / "top_level.txt").write_text(f"{top_level}\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    return info
