"""Lightning's ``Seed set to N`` line, said once the run's classes are built.

LightningCLI seeds before it builds the model and the data, and logs ``Seed set to N`` as
it seeds; a configuration the classes then refuse would print that line before its
``error:`` line. The CLI seeds with the line held back (:func:`seed_line_held`) and says it
when everything is built (:func:`say_seed`), in Lightning's own words and logger.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from lightning.fabric.utilities.rank_zero import rank_prefixed_message

from roformer_lit.training.lightning_compat import launch_rank

#: the logger ``lightning.fabric.utilities.seed.seed_everything`` writes its line to
SEED_LOGGER = logging.getLogger("lightning.fabric.utilities.seed")


@contextmanager
def seed_line_held() -> Iterator[None]:
    """Seeding inside this block logs no ``Seed set to N`` line (warnings still show)."""
    old = SEED_LOGGER.level
    SEED_LOGGER.setLevel(logging.WARNING)
    try:
        yield
    finally:
        SEED_LOGGER.setLevel(old)


def say_seed(seed: Any) -> None:
    """The line Lightning would have logged for the seed the run took (none when seeding
    was off: ``seed_everything: false``)."""
    if seed is None or isinstance(seed, bool):
        return
    SEED_LOGGER.info(rank_prefixed_message(f"Seed set to {seed}", launch_rank()))
