"""Running sweep combinations: one ``fit`` subprocess per run, completion markers, resume,
per-run logs and records, the local scheduler and the summary table.

Files, all under ``<root>/<name>/``:

* ``<version>/sweep_done.json``: the completion marker, written only after the run's ``fit``
  process exited 0. A run is finished iff its marker exists, or its ``last.ckpt`` is at the
  run's end (:func:`~roformer_lit.training.checkpoint_io.at_its_end`: a ``fit`` killed after
  its last checkpoint, which a resume would refuse as having nothing left to train); a
  ``last.ckpt`` before the end is an interrupted run. A run is finished too where a finished
  run of the directory under another name ran with its settings (``RunTask.same_as``, a
  grid whose keys were reordered: :func:`~roformer_lit.sweep.finished.finished_as`).
* ``sweep_logs/<version>.out`` / ``.err``: the run's full stdout / stderr, every attempt
  appended after a ``=== attempt N ===`` line.
* ``sweep_logs/<version>.json``: the run's record (status, exit code, attempts, wall time,
  command, last stderr lines), rewritten by whoever runs it (this process or a SLURM task).
* ``sweep_status.json``: every run's record in one file, rewritten by the sweep command.

Before each attempt the run's directory decides how it starts: absent -> fresh; has
``checkpoints/last.ckpt`` -> resumed with ``--ckpt_path`` of it; otherwise (a run killed
before its first checkpoint) -> the directory is moved aside to ``<version>.failed-<k>``
and the run starts fresh.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roformer_lit.sweep.spec import LOGS_DIR, STATUS_FILE, shell_line
from roformer_lit.training.checkpoint_io import at_its_end
from roformer_lit.training.run_dir import holder as run_dir_lock_holder
from roformer_lit.training.run_dir import is_moved_aside, move_aside

MARKER = "sweep_done.json"
TAIL_LINES = 20


#: Intra-op CPU threads each sweep run gets unless ``--threads`` or ``OMP_NUM_THREADS`` says
#: otherwise (see :func:`run_threads_env`).
DEFAULT_THREADS = 1


def run_threads_env(
    threads: int | None, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment that fixes each CPU run's intra-op thread count.

    A run's numbers depend on how many threads its sums are split over (floating-point
    addition is not associative): the same seed of ``study_budget_copy.yaml`` reached 0.995
    accuracy at step 1,500 with one thread and 0.825 with two. So the count is a setting of
    the run, never a consequence of ``--jobs`` or of the machine's cores: each run gets
    ``OMP_NUM_THREADS = threads`` (``--threads``, default :data:`DEFAULT_THREADS`), and a
    sweep resumed with another ``--jobs``, or on a machine with more cores, gives the same
    numbers (another processor still rounds differently: checkpoints record it). A user's
    own ``OMP_NUM_THREADS`` wins when ``--threads`` is not given. Measured on the 2-core CPU:
    two runs of one thread each finish 1.26x sooner than the same two runs one after the other
    with two threads each, so ``--jobs`` = cores is the fast choice.
    """
    environ = os.environ if environ is None else environ
    if threads is None:
        if "OMP_NUM_THREADS" in environ:
            return {}
        threads = DEFAULT_THREADS
    return {"OMP_NUM_THREADS": str(threads)}


@dataclass
class RunTask:
    """Everything needed to run one combination, here or on a SLURM node (picklable)."""

    version: str
    argv: list[str]  # sys.executable -m roformer_lit fit ... (no --ckpt_path)
    run_dir: str  # absolute
    sweep_dir: str  # absolute: <root>/<name>
    cwd: str  # absolute: where the command runs (relative paths in argv)
    env: dict[str, str] = field(default_factory=dict)  # added to the inherited environment
    raise_on_failure: bool = False  # SLURM: a failed run fails its array task
    #: A finished run of the sweep's directory under another name that ran with this run's
    #: settings (absolute; :func:`~roformer_lit.sweep.finished.finished_as`): the run is
    #: finished there.
    same_as: str | None = None

    @property
    def marker(self) -> Path:
        return Path(self.run_dir) / MARKER

    @property
    def last_ckpt(self) -> Path:
        return Path(self.run_dir) / "checkpoints" / "last.ckpt"

    @property
    def logs(self) -> Path:
        return Path(self.sweep_dir) / LOGS_DIR

    def record_path(self) -> Path:
        return self.logs / f"{self.version}.json"

    @property
    def done_marker(self) -> Path:
        """The marker of the run that finished it: its own, else :attr:`same_as`'s."""
        if self.same_as is not None and not self.marker.is_file():
            return Path(self.same_as) / MARKER
        return self.marker

    def finished(self) -> bool:
        """It finished (:func:`run_finished`), or the run it is the same as did."""
        return run_finished(self.run_dir) or (
            self.same_as is not None and run_finished(self.same_as)
        )

    def action(self) -> str:
        """``skip`` (finished), ``resume`` (has last.ckpt), ``restart`` (partial directory
        without a checkpoint: moved aside) or ``fresh``."""
        if self.finished():
            return "skip"
        run_dir = Path(self.run_dir)
        if self.last_ckpt.is_file():
            return "resume"
        if run_dir.exists():
            return "restart"
        return "fresh"

    def command(self, action: str | None = None) -> list[str]:
        """The argv an attempt runs: resumes add ``--ckpt_path <run>/checkpoints/last.ckpt``."""
        action = action or self.action()
        if action == "resume":
            return [*self.argv, "--ckpt_path", _relative(self.last_ckpt, self.cwd)]
        return list(self.argv)

    def __call__(self) -> dict[str, Any]:
        """Run one attempt (SLURM array task entry point)."""
        result = execute(self)
        if self.raise_on_failure and result["status"] == "failed":
            raise RuntimeError(
                f"run {self.version} failed with exit code {result['exit_code']}; "
                f"see {self.logs / (self.version + '.err')}"
            )
        return result

    def checkpoint(self, *args: Any, **kwargs: Any) -> Any:
        """submitit: on timeout/preemption, requeue this task; the new attempt resumes from
        the run's ``last.ckpt``."""
        import submitit

        return submitit.helpers.DelayedSubmission(self, *args, **kwargs)


def run_finished(run_dir: str | Path) -> bool:
    """Its marker exists, or its ``last.ckpt`` is at the run's end (module docstring)."""
    run_dir = Path(run_dir)
    return (run_dir / MARKER).is_file() or at_its_end(run_dir / "checkpoints" / "last.ckpt")


def finished_elsewhere(sweep_dir: str | Path, names: Collection[str]) -> list[Path]:
    """The finished runs of ``sweep_dir`` under names not in ``names`` (the sweep's run
    names now), sorted: runs an earlier version of the sweep file named otherwise (its
    grid keys in another order). Not the sweep's logs, nor a partial run moved aside."""
    sweep_dir = Path(sweep_dir)
    if not sweep_dir.is_dir():
        return []
    return [
        child
        for child in sorted(sweep_dir.iterdir())
        if child.name not in names
        and child.name not in (LOGS_DIR, STATUS_FILE)
        and not is_moved_aside(child.name)
        and child.is_dir()
        and run_finished(child)
    ]


def _relative(path: Path, cwd: str) -> str:
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Atomically (write + rename), so a killed sweep never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _die_with_parent(parent: int) -> Callable[[], None] | None:
    """A ``preexec_fn`` asking the kernel to send the child SIGTERM when its parent dies
    (``prctl(PR_SET_PDEATHSIG)``), so a SIGKILLed sweep never leaves a ``fit`` running
    unsupervised: the fit saves ``last.ckpt`` and exits 75, and the next sweep resumes it.
    None where ``prctl`` does not exist (not Linux)."""
    if _LIBC is None:
        return None

    def preexec() -> None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


def _load_libc() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True)
    except OSError:  # pragma: no cover
        return None


_PR_SET_PDEATHSIG = 1
#: Loaded once in the parent: the child between fork and exec only calls into it.
_LIBC = _load_libc()


def launch(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    stdout: Any,
    stderr: Any,
    started: Callable[[subprocess.Popen], None] | None = None,
) -> int:
    """Start one ``fit`` process, wait for it, return its exit code (tests replace this).
    On Linux the child gets SIGTERM when this process dies (:func:`_die_with_parent`). The
    child runs in a session of its own: a Ctrl-C at the terminal reaches the sweep alone,
    which passes exactly one signal on (:meth:`LocalRunner.run`); two would stop a fit
    without its ``last.ckpt``."""
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdout=stdout,
        stderr=stderr,
        preexec_fn=_die_with_parent(os.getpid()),
        start_new_session=True,
    )
    if started is not None:
        started(proc)
    return proc.wait()


def execute(
    task: RunTask,
    extra_env: Mapping[str, str] | None = None,
    extra_args: Sequence[str] = (),
    started: Callable[[subprocess.Popen], None] | None = None,
    on_start: Callable[[RunTask, str, list[str]], None] | None = None,
) -> dict[str, Any]:
    """One attempt at one run: decide fresh/resume/restart, run ``fit``, write the marker on
    success and the run's record either way. Returns the record."""
    action = task.action()
    previous = read_json(task.record_path()) or {}
    attempts = int(previous.get("attempts", 0))
    if action == "skip":
        done = read_json(task.done_marker) or {}
        return {**previous, **done, "version": task.version, "status": "finished", "skipped": True}
    writer = run_dir_lock_holder(task.run_dir)
    if writer is not None:  # another fit writes this run now: leave it alone
        return {
            **previous,
            "version": task.version,
            "status": "failed",
            "exit_code": None,
            "note": f"run is being written by another process (pid {writer}); not started",
        }
    moved = None
    if action == "restart":
        moved = move_aside(Path(task.run_dir))
    argv = [*task.command(action), *extra_args]
    env = {**os.environ, **task.env, **(extra_env or {}), "PYTHONUNBUFFERED": "1"}
    attempts += 1
    record: dict[str, Any] = {
        "version": task.version,
        "status": "running",
        "action": action,
        "attempts": attempts,
        "exit_code": None,
        "wall_time_s": None,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "command": shell_line(argv, {**task.env, **(extra_env or {})}),
        "stdout": str(task.logs / f"{task.version}.out"),
        "stderr": str(task.logs / f"{task.version}.err"),
        "moved_aside": str(moved) if moved else None,
        "stderr_tail": [],
    }
    write_json(task.record_path(), record)
    if on_start is not None:
        on_start(task, action, argv)
    header = f"=== attempt {attempts} ({action}) {record['started']}: {record['command']}\n"
    t0 = time.monotonic()
    with (
        open(record["stdout"], "ab") as out,
        open(record["stderr"], "ab") as err,
    ):
        out.write(header.encode())
        err.write(header.encode())
        out.flush()
        err.flush()
        offset = err.tell()
        try:
            code = launch(argv, cwd=task.cwd, env=env, stdout=out, stderr=err, started=started)
        except OSError as exc:  # the interpreter itself could not start
            err.write(f"could not start: {exc}\n".encode())
            code = 127
    wall = time.monotonic() - t0
    record.update(
        exit_code=code,
        wall_time_s=round(wall, 2),
        ended=time.strftime("%Y-%m-%dT%H:%M:%S"),
        status="finished" if code == 0 else "failed",
    )
    if code == 0:
        if task.last_ckpt.is_file():
            write_json(task.marker, {k: record[k] for k in ("exit_code", "wall_time_s", "ended")})
        else:  # exited 0 without a checkpoint: nothing to skip or resume next time
            record["status"] = "failed"
            record["note"] = f"exit 0 but no {task.last_ckpt}"
    if record["status"] == "failed":
        record["stderr_tail"] = _tail(Path(record["stderr"]), offset)
    write_json(task.record_path(), record)
    return record


def _tail(path: Path, offset: int, lines: int = TAIL_LINES) -> list[str]:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if line.strip()][-lines:]


class LocalRunner:
    """Runs tasks as subprocesses of this process: ``slots`` is one entry per process allowed
    at once (a GPU id to put in ``CUDA_VISIBLE_DEVICES``, or None for the current device)."""

    def __init__(self, tasks: Sequence[RunTask], slots: Sequence[str | None], out: Any = None):
        self.tasks = list(tasks)
        self.slots: queue.Queue[str | None] = queue.Queue()
        for slot in slots:
            self.slots.put(slot)
        self.workers = max(len(slots), 1)
        self.out = out or sys.stdout
        self.lock = threading.Lock()
        self.procs: dict[str, subprocess.Popen] = {}
        self.stopping = threading.Event()
        #: The signal that stopped the sweep (SIGTERM or SIGINT), passed on to every run.
        self.stopped_by: int | None = None
        self.results: dict[str, dict[str, Any]] = {}

    def _print(self, line: str) -> None:
        with self.lock:
            print(line, file=self.out, flush=True)

    def _one(self, index: int, task: RunTask) -> dict[str, Any]:
        total = len(self.tasks)
        if self.stopping.is_set():
            return {"version": task.version, "status": "not started", "exit_code": None}
        slot = self.slots.get()
        try:
            if self.stopping.is_set():
                return {"version": task.version, "status": "not started", "exit_code": None}
            gpu = (
                {"env": {"CUDA_VISIBLE_DEVICES": slot}, "args": GPU_ARGS}
                if slot is not None
                else {"env": {}, "args": ()}
            )

            def on_start(t: RunTask, action: str, argv: list[str]) -> None:
                where = f" on GPU {slot}" if slot is not None else ""
                self._print(f"[{index}/{total}] start {t.version} ({action}){where}")

            record = execute(
                task,
                extra_env=gpu["env"],
                extra_args=gpu["args"],
                started=lambda p: self._started(task.version, p),
                on_start=on_start,
            )
        finally:
            self.procs.pop(task.version, None)
            self.slots.put(slot)
        if record["status"] == "finished":
            self._print(f"[{index}/{total}] finished {task.version} in {record['wall_time_s']}s")
        else:
            last = record.get("stderr_tail") or [record.get("note", "")]
            self._print(
                f"[{index}/{total}] FAILED {task.version} (exit {record['exit_code']}): "
                f"{last[-1] if last else ''}  [log: {record['stderr']}]"
            )
        return record

    def _started(self, version: str, proc: subprocess.Popen) -> None:
        """Register a run's process; one started while the sweep stops gets the signal too."""
        with self.lock:
            self.procs[version] = proc
            if self.stopped_by is not None and proc.poll() is None:
                proc.send_signal(self.stopped_by)

    def _stop(self, signum: int) -> None:
        """Start nothing new and pass ``signum`` on to every running fit, once: each saves
        its ``last.ckpt`` and exits (75 for SIGTERM, 130 for SIGINT), as a fit stopped by
        the signal does; the next sweep resumes them."""
        with self.lock:
            self.stopped_by = signum
            self.stopping.set()
            running = [p for p in self.procs.values() if p.poll() is None]
            for proc in running:
                proc.send_signal(signum)
        name = signal.Signals(signum).name
        self._print(
            f"{name}: stopping {len(running)} running fit(s), each saves last.ckpt; starting "
            "no other (run the same command again to continue)"
        )

    def run(self, on_result: Callable[[dict[str, Any]], None] | None = None) -> bool:
        """Run every task; returns False if stopped by a signal (:attr:`stopped_by`: Ctrl-C's
        SIGINT or SIGTERM). A signal starts nothing new, passes the signal on to the running
        fits (:meth:`_stop`) and waits only for them; a second Ctrl-C kills them."""
        from roformer_lit.training.startup_signals import Terminated

        pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="sweep")
        futures = [pool.submit(self._one, i + 1, t) for i, t in enumerate(self.tasks)]
        try:
            try:
                for task, future in zip(self.tasks, futures, strict=True):
                    while True:
                        try:
                            record = future.result(timeout=0.5)
                            break
                        except FutureTimeout:
                            continue
                    self.results[task.version] = record
                    if on_result is not None:
                        on_result(record)
            except (KeyboardInterrupt, Terminated) as exc:
                self._stop(signal.SIGINT if isinstance(exc, KeyboardInterrupt) else signal.SIGTERM)
            if self.stopped_by is not None:
                self._wait_for_the_stopped(futures)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return self.stopped_by is None

    def _wait_for_the_stopped(self, futures: Sequence[Any]) -> None:
        """Collect every task's record after a stop; a repeated SIGTERM changes nothing, a
        second Ctrl-C kills the fits at once."""
        from roformer_lit.training.startup_signals import Terminated

        for task, future in zip(self.tasks, futures, strict=True):
            while True:
                try:
                    self.results[task.version] = future.result()
                    break
                except Terminated:
                    continue
                except KeyboardInterrupt:
                    with self.lock:
                        for proc in list(self.procs.values()):
                            proc.kill()
                    raise


#: Appended to every command run with ``--devices``.
GPU_ARGS = ("--trainer.accelerator", "gpu", "--trainer.devices", "1")


def write_status(sweep_dir: Path, meta: Mapping[str, Any], tasks: Sequence[RunTask]) -> None:
    """``sweep_status.json``: every run's current record (marker-backed ``finished``)."""
    runs = {}
    for task in tasks:
        record = read_json(task.record_path()) or {"status": "pending", "attempts": 0}
        if task.finished():
            record["status"] = "finished"
        elif record.get("status") == "finished":  # marker gone: no longer counts as done
            record["status"] = "unfinished"
        runs[task.version] = record
    write_json(
        sweep_dir / STATUS_FILE,
        {**meta, "updated": time.strftime("%Y-%m-%dT%H:%M:%S"), "runs": runs},
    )


def summary_table(rows: Sequence[Mapping[str, Any]]) -> str:
    header = ("version", "status", "exit", "wall", "note")
    lines = [header]
    for r in rows:
        wall = r.get("wall_time_s")
        lines.append(
            (
                str(r.get("version")),
                str(r.get("status")),
                "-" if r.get("exit_code") is None else str(r.get("exit_code")),
                "-" if wall is None else _duration(float(wall)),
                str(r.get("note", "")),
            )
        )
    widths = [max(len(row[i]) for row in lines) for i in range(len(header))]
    out = []
    for n, row in enumerate(lines):
        out.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, s = divmod(int(round(seconds)), 60)
    hours, m = divmod(minutes, 60)
    return f"{hours}h{m:02d}m{s:02d}s" if hours else f"{m}m{s:02d}s"
