"""Atomic checkpoint writes: a kill during a save never leaves a truncated checkpoint.

Lightning's ``TorchCheckpointIO`` writes through an fsspec transaction; on a local disk that
stages the bytes in the system temporary directory and then *moves* them, which is a plain
copy (truncated if killed) when that directory is on another filesystem, as it usually is on
clusters, and is never flushed to disk. :class:`AtomicCheckpointIO` instead writes

    <dir>/.<name>.tmp-<pid>  ->  flush + fsync  ->  os.replace(<dir>/<name>)  ->  fsync <dir>

so ``<name>`` is at every instant either the previous complete checkpoint or the new
complete one. A failed save removes its temporary file and leaves the previous checkpoint
in place; a process killed mid-write leaves only a hidden ``.tmp-<pid>`` file, removed by
the next save into that directory. Remote paths (``s3://`` ...) go to Lightning unchanged.
The CLI installs it for every run (``RoformerCLI.instantiate_trainer``).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import torch
from lightning.fabric.utilities.cloud_io import get_filesystem
from lightning.pytorch.plugins.io import TorchCheckpointIO
from typing_extensions import override

TMP_MARK = ".tmp-"


def _is_local(path: str | os.PathLike[str]) -> bool:
    from fsspec.implementations.local import LocalFileSystem

    return isinstance(get_filesystem(path), LocalFileSystem)


def _fsync_directory(directory: Path) -> None:
    with contextlib.suppress(OSError):  # not every platform / filesystem allows it
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def remove_stale_temporaries(directory: Path) -> None:
    """Delete ``.<name>.tmp-<pid>`` files left by killed saves (of processes now gone)."""
    for tmp in directory.glob(f".*{TMP_MARK}*"):
        pid = tmp.name.rsplit(TMP_MARK, 1)[-1]
        if pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid)):
            with contextlib.suppress(OSError):
                tmp.unlink()


def atomic_torch_save(obj: Any, path: str | os.PathLike[str]) -> None:
    """``torch.save(obj, path)`` through a temporary file in the same directory, fsynced,
    then renamed over ``path``; on any error the temporary file is removed and ``path`` is
    untouched."""
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(final.parent)
    tmp = final.with_name(f".{final.name}{TMP_MARK}{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_directory(final.parent)


class AtomicCheckpointIO(TorchCheckpointIO):
    """``TorchCheckpointIO`` whose local saves are atomic (see the module docstring)."""

    @override
    def save_checkpoint(
        self, checkpoint: dict[str, Any], path: Any, storage_options: Any | None = None
    ) -> None:
        if storage_options is not None or not _is_local(path):
            return super().save_checkpoint(checkpoint, path, storage_options)
        atomic_torch_save(checkpoint, path)
        return None
