"""The one place that names, creates and guards run directories ``<root>/<experiment>/<version>/``.

* **Names** (experiment and version) are single path components: no ``/``, no ``..``, no
  NUL, not empty, at most 255 bytes -- so a run can never land outside its runs root.
* **Creation is atomic**: a new run claims its directory with ``os.mkdir`` (which fails if
  it exists), trying ``stem``, ``stem-2``, ``stem-3``, ...; two runs started at the same
  instant with the same name therefore get two directories, never one shared one.
* **One writer per run**: the writing process holds an exclusive ``flock`` on
  ``<experiment>/.<version>.lock``, beside the run so the run itself is never touched, for
  its lifetime (released by the kernel when it exits, even on SIGKILL),
  so a second ``fit`` on the same run (a resumed run started twice, a sweep run twice) is
  refused with one line instead of interleaving two writers.
* **Writable before anything is written**: the lock is taken only on a directory this
  process can write (and, for a run, its ``checkpoints/``), so a resumed run whose
  directory is read-only is refused in one line before it trains, instead of training,
  logging steps past its checkpoint, and failing at its first save.
* **One sweep per directory**: a ``sweep`` process holds the same lock on its
  ``<root>/<name>`` (:func:`claim_sweep`) from before it reads its runs' state until it
  exits, so a second sweep on that directory -- started at the same instant or later -- is
  refused in one line naming the directory and the first one's pid, before it plans,
  prepares or launches anything.
* **Nothing half-made is left behind**: a run directory created by this process and still
  holding no checkpoint is removed when the process fails before training produced one
  (:func:`discard_if_unused`), as is a sweep directory it created that is still empty, with
  its lock file.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from pathlib import Path

from roformer_lit.errors import ConfigError

#: ``<version>.failed-<k>``: a run a sweep moved aside after it failed before its first
#: checkpoint (kept for its logs; never a run that `compare` tables or a sweep resumes).
_MOVED_ASIDE = re.compile(r"\.failed-\d+$")


def is_moved_aside(name: str) -> bool:
    """Whether a directory name is a failed attempt moved aside (``<version>.failed-<k>``)."""
    return _MOVED_ASIDE.search(name) is not None


def moved_aside_note(name: str) -> str | None:
    """What a run directory named ``<version>.failed-<k>`` is, for a reader who opened it
    (``compare`` given it by path): a failed attempt at ``<version>`` a sweep moved aside;
    None for any other name."""
    match = _MOVED_ASIDE.search(name)
    if match is None:
        return None
    version = name[: match.start()]
    return (
        f"a failed attempt at run {version} that a sweep moved aside (it stopped before "
        f"its first checkpoint; the sweep started {version} afresh): kept for its logs"
    )


def move_aside(run: Path) -> Path | None:
    """``<version>`` -> ``<version>.failed-<k>`` (first free k); an empty directory is removed."""
    if not any(run.iterdir()):
        run.rmdir()
        return None
    k = 1
    while (target := run.with_name(f"{run.name}.failed-{k}")).exists():
        k += 1
    run.rename(target)
    return target


def lock_path(run: str | Path) -> Path:
    """The lock file of ``run``: a hidden file beside it, ``.<version>.lock``."""
    run = Path(run)
    return run.parent / f".{run.name}.lock"


_MAX_COMPONENT_BYTES = 255

#: Open lock files of this process (kept open: closing one releases its lock).
_held_locks: dict[Path, int] = {}
#: Run directories this process created (candidates for :func:`discard_if_unused`).
_created: set[Path] = set()
#: Runs-root and experiment directories this process created (removed again if left empty).
_created_parents: set[Path] = set()


def check_name(value: object, what: str, kind: str = "run") -> str:
    """``value`` as one name (a run's directory, ``kind="run"``, or a file's,
    ``kind="file"``) that stays inside its parent, or a ConfigError saying which."""
    name = str(value)
    bad = (
        not name
        or name in (".", "..")
        or "/" in name
        or "\\" in name
        or "\x00" in name
        or len(name.encode("utf-8", "surrogateescape")) > _MAX_COMPONENT_BYTES
        or name != name.strip()
    )
    if bad:
        raise ConfigError(
            f"{what}={value!r} is not a valid {kind} name: it must be one "
            f"{'directory' if kind == 'run' else kind} name (no '/', "
            f"'..', leading or trailing spaces; at most {_MAX_COMPONENT_BYTES} bytes)"
        )
    return name


def _make_parent(directory: Path) -> None:
    """``mkdir -p directory``, remembering which levels this process created."""
    missing = [d for d in (directory, *directory.parents) if not d.exists()]
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ConfigError(
            f"cannot create runs directory {directory}: a file is in the way"
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot create runs directory {directory}: {exc.strerror}") from None
    if not directory.is_dir():
        raise ConfigError(f"cannot create runs directory {directory}: a file is in the way")
    _created_parents.update(d.resolve() for d in missing)


def claim_new(root: str | Path, experiment: str, stem: str) -> str:
    """Create and lock a fresh run directory ``root/experiment/<stem>[-k]``; its version."""
    parent = Path(root) / check_name(experiment, "trainer.logger.init_args.name")
    check_name(stem, "trainer.logger.init_args.version")
    _make_parent(parent)
    version, n = stem, 1
    while True:
        try:
            os.mkdir(parent / version)
        except FileExistsError:
            n += 1
            version = f"{stem}-{n}"
            continue
        except OSError as exc:
            raise ConfigError(
                f"cannot create run directory {parent / version}: {exc.strerror}"
            ) from None
        run = parent / version
        _created.add(run.resolve())
        lock(run)
        return version


def claim_named(root: str | Path, experiment: str, version: str, resuming: bool) -> None:
    """Claim the run directory the user named: create it (refusing one that already holds a
    run, unless ``resuming`` it) and lock it."""
    parent = Path(root) / check_name(experiment, "trainer.logger.init_args.name")
    run = parent / check_name(version, "trainer.logger.init_args.version")
    _make_parent(parent)
    try:
        os.mkdir(run)
        _created.add(run.resolve())
    except FileExistsError:
        if not run.is_dir():
            raise ConfigError(f"cannot use run directory {run}: a file is in the way") from None
        if not resuming and any(run.iterdir()):
            raise ConfigError(
                f"run directory {run} already exists; resume it with --ckpt_path "
                f"{run / 'checkpoints' / 'last.ckpt'} or choose another "
                "--trainer.logger.init_args.version"
            ) from None
    except OSError as exc:
        raise ConfigError(f"cannot create run directory {run}: {exc.strerror}") from None
    lock(run)


def claim_sweep(sweep_dir: str | Path) -> None:
    """Create ``sweep_dir`` (``<root>/<name>``; the levels this process creates are removed
    again, with the lock file, if it fails before anything is written there:
    :func:`discard_if_unused`) and take the sweep's lock on it: a ConfigError line naming the
    directory and the other process if another sweep holds it."""
    sweep_dir = Path(sweep_dir)
    _make_parent(sweep_dir)
    lock(sweep_dir, "sweep")


def lock(run: str | Path, what: str = "run") -> None:
    """Take this process's exclusive lock on ``run`` (a ConfigError if another holds it);
    ``what`` names the thing in that message (a run, a sweep)."""
    import fcntl

    run = Path(run).resolve()
    if run in _held_locks:
        return
    check_writable(run, what)
    try:
        fd = os.open(lock_path(run), os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise ConfigError(f"cannot lock run directory {run}: {exc.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        pid = _holder_pid(fd)
        os.close(fd)
        raise ConfigError(
            f"{what} {run} is being written by another process "
            f"(pid {pid if pid is not None else 'not yet written'}); wait for it "
            "to finish or stop it first"
        ) from None
    # one write of a fixed width: never an empty file, nor a part of the pid, to a reader
    os.pwrite(fd, f"{os.getpid():<{PID_WIDTH - 1}}\n".encode(), 0)
    os.ftruncate(fd, PID_WIDTH)
    _held_locks[run] = fd


#: Bytes of the pid record in a lock file (the pid left-aligned, spaces, a newline).
PID_WIDTH = 24
#: How long a process refused a lock waits for its holder to write its pid: the holder
#: writes it right after taking the lock, so only a race of the two sees it missing.
PID_WAIT_SECONDS = 2.0


def _holder_pid(fd: int) -> int | None:
    """The pid the lock's holder wrote in the open lock file ``fd``, waiting up to
    :data:`PID_WAIT_SECONDS` while the file is empty or names a process that is gone (a
    holder between taking the lock and writing its pid; the last holder's pid is in the
    file until then); None if none comes."""
    deadline = time.monotonic() + PID_WAIT_SECONDS
    while True:
        text = os.pread(fd, PID_WIDTH, 0).decode("ascii", "replace").strip()
        if text.isdigit() and _alive(int(text)):
            return int(text)
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.01)


def _alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (``kill(pid, 0)``)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by another user
        return True
    return True


def writable(directory: Path) -> bool:
    """Whether this process may create and replace files in ``directory`` (``access(2)``:
    a read-only mount counts as not writable)."""
    return os.access(directory, os.W_OK | os.X_OK)


def check_writable(run: Path, what: str = "run") -> None:
    """A ConfigError naming the first directory of ``run`` (itself, then a run's
    ``checkpoints/``) that exists and cannot be written."""
    directories = (run, run / "checkpoints") if what == "run" else (run,)
    for directory in directories:
        if directory.is_dir() and not writable(directory):
            hint = (
                "; make it writable, or continue the checkpoint in a new run with "
                "--trainer.logger.init_args.version <new name>"
                if what == "run"
                else "; make it writable"
            )
            raise ConfigError(
                f"cannot write {what} directory {directory}: it is not writable (permissions "
                f"or a read-only disk), and nothing was written{hint}"
            )


def holder(run: str | Path) -> int | None:
    """The pid holding ``run``'s lock, or None if nobody writes it now."""
    import fcntl

    try:
        fd = os.open(lock_path(run), os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        pid = _holder_pid(fd)
        return -1 if pid is None else pid
    finally:
        os.close(fd)
    return None


def release(run: str | Path) -> None:
    """Release this process's lock on ``run`` (the lock file stays; it holds no data)."""
    fd = _held_locks.pop(Path(run).resolve(), None)
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


def has_checkpoint(run: Path) -> bool:
    return any(run.glob("checkpoints/*.ckpt")) or any(run.glob("*.ckpt"))


def discard_if_unused() -> list[Path]:
    """Remove the run directories this process created that hold no checkpoint (a run that
    failed before it trained anything); returns what was removed."""
    removed = []
    for run in sorted(_created):
        release(run)
        if run.is_dir() and not has_checkpoint(run):
            shutil.rmtree(run, ignore_errors=True)
            with contextlib.suppress(OSError):
                lock_path(run).unlink()
            removed.append(run)
    for parent in sorted(_created_parents, key=lambda d: len(d.parts), reverse=True):
        locked = parent in _held_locks  # a sweep directory (claim_sweep)
        release(parent)
        with contextlib.suppress(OSError):
            parent.rmdir()  # only if empty
            if locked:
                lock_path(parent).unlink()
    _created.clear()
    _created_parents.clear()
    return removed


def release_all() -> None:
    """Release every lock this process holds and forget the directories it created (the CLI
    calls this when a command ends, so one process can run several commands)."""
    for run in list(_held_locks):
        release(run)
    _created.clear()
    _created_parents.clear()
