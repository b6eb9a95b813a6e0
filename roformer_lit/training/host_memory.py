"""Keep freed host memory in the process instead of handing it back to the kernel.

glibc's ``malloc`` serves every block above its mmap threshold (at most 32 MiB) with a
fresh ``mmap`` and returns it with ``munmap`` when it is freed. A CPU training step frees
and re-allocates the same large activations every step (the MLM head's ``[N, V]``
logits, the FFN's ``[B*L, 4H]`` activations at long lengths), so each step page-faults
all of that memory in again: at L = 4096 that made a step of the linear kernel take
10× the time of one at L = 512 for 8× the tokens, and 7.8× without it.

:func:`keep_freed_memory` sets ``M_MMAP_MAX = 0`` (large blocks come from the heap too)
and a high ``M_TRIM_THRESHOLD`` (the heap is not shrunk after each step), through
``mallopt``. The process's peak memory is unchanged; memory freed below that peak is kept
for reuse. Other C libraries (macOS, musl) are left alone, as is a process started with
``ROFORMER_LIT_SYSTEM_MALLOC=1``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4
#: Trim the heap only when this much free memory sits at its top (mallopt's int maximum).
TRIM_THRESHOLD_BYTES = 2**31 - 1
OPT_OUT = "ROFORMER_LIT_SYSTEM_MALLOC"


def keep_freed_memory() -> bool:
    """Apply the settings above; True if they were applied (glibc, not opted out)."""
    if os.environ.get(OPT_OUT, "") not in ("", "0"):
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
        libc.gnu_get_libc_version  # noqa: B018 - present in glibc only
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
