"""A resumed run is checked against the checkpoint it continues, under the run's lock.

``fit --ckpt_path <run>/checkpoints/last.ckpt`` reads the checkpoint (its settings, its
step: :mod:`roformer_lit.commands.checkpoint_settings`) before it takes the run's lock
(:func:`roformer_lit.training.run_dir.lock`), and Lightning reads the file again when it
starts training. Two processes given one run (two SLURM array tasks, a job started twice)
are kept apart by the lock: the second is refused while the first writes. But the first
can end between the second's reading and its locking, leaving a ``last.ckpt`` the second
never checked (a finished run, which it would continue and write into). So the identity of
the file as read (:func:`file_identity`) is compared again once the lock is held
(:func:`check_unchanged`): a checkpoint another process replaced meanwhile is one
``error:`` line, before anything is written.
"""

from __future__ import annotations

import os
from typing import Any

from roformer_lit.errors import ConfigError

#: What says a file is the one read: a checkpoint is saved by an atomic rename (a new inode)
#: and its size and modification time change with any rewrite in place.
Identity = tuple[int, int, int, int]


def file_identity(path: Any) -> Identity | None:
    """The identity of the file at ``path`` now (device, inode, size, modification time in
    ns), or None where it cannot be read (the read that follows reports it)."""
    try:
        stat = os.stat(path)
    except (OSError, TypeError, ValueError):
        return None
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


def check_unchanged(path: Any, read: Identity | None) -> None:
    """Refuse, in one ConfigError line, to resume from ``path`` when it is no longer the file
    this command read (``read``: its :func:`file_identity` then); nothing to check where
    the command read none."""
    if read is None or file_identity(path) == read:
        return
    raise ConfigError(
        f"checkpoint {path} was replaced after this command read it: another process "
        "wrote its run meanwhile; nothing was written: run the command again to resume "
        "from the run's new state"
    )


__all__ = ["Identity", "check_unchanged", "file_identity"]
