"""Where the studies' raw outputs and pages are, and the caches of what was read from them.

By default the checkout's ``docs/bench/`` (raw outputs) and ``docs/studies/`` (pages).
:func:`read_from` points the studies elsewhere (``scripts/study_pages.py --bench/--pages``,
the tests) and empties every cache registered with :func:`cached`, so nothing read from one
place is reused for another.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The checkout this package is in.
REPOSITORY = Path(__file__).resolve().parents[3]


@dataclass
class Places:
    """The directory of raw outputs and the directory of pages."""

    bench: Path
    pages: Path


PLACES = Places(REPOSITORY / "docs" / "bench", REPOSITORY / "docs" / "studies")
_CACHES: list[Any] = []


def cached(function: Callable[..., Any]) -> Any:
    """``functools.cache``, emptied by :func:`read_from`."""
    wrapped = functools.cache(function)
    _CACHES.append(wrapped)
    return wrapped


def read_from(bench: Path, pages: Path) -> None:
    """Read raw outputs from ``bench`` and pages from ``pages`` from now on."""
    PLACES.bench, PLACES.pages = Path(bench), Path(pages)
    for cache in _CACHES:
        cache.cache_clear()


def bench_file(name: str) -> Path:
    """A raw output's path."""
    return PLACES.bench / name
