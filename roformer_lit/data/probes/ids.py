"""The token ids of the position probes: ``[PAD]`` 0, ``[MASK]`` 1, ``[SEP]`` 2, and symbol
``s`` at ``FIRST_SYMBOL + s``."""

from __future__ import annotations

PAD_ID, MASK_ID, SEP_ID = 0, 1, 2
#: Id of symbol 0; symbol ``s`` is ``FIRST_SYMBOL + s``.
FIRST_SYMBOL = 3
