"""``python -m roformer_lit sweep``: run an ablation grid, one ``fit`` process per combination.

Usage::

    python -m roformer_lit sweep --config configs/sweeps/positions.yaml [--dry-run]
        [--root runs] [--devices 0,1,2,3 | --jobs N] [--threads T]
        [--only KEY=VALUE ...] [--launcher local|slurm] [--slurm.partition P --slurm.time 24:00:00
         --slurm.gpus_per_node 1 ... --wait]

Sweep file (YAML; exactly these top-level keys)::

    name: positions              # experiment: runs go to <root>/<name>/<version>/
    base: configs/rope.yaml      # the config every run starts from (see below)
    grid:                        # dotted key -> list of values; every combination runs
      model.position: [nope, rope]
      seed_everything: [0, 1, 2]
    overrides:                   # optional: dotted key -> value, applied to every run
      trainer.max_steps: 600
    command: fit                 # optional: fit (default) or finetune (see below)
    slurm: {partition: gpu}      # optional: defaults for --slurm.* options

``base``: an absolute path, or a relative one tried first from the current directory (kept
as written, e.g. ``configs/rope.yaml`` from the repo root), then from the sweep file's own
directory. Values that are mappings or lists are passed to the CLI as JSON.

Each combination runs ``python -m roformer_lit fit --config BASE --<override> V ...
--<grid key> V ... --trainer.logger.init_args.save_dir ROOT --trainer.logger.init_args.name
NAME --trainer.logger.init_args.version VERSION``. Run names (versions) are made from the
grid values in grid order, joined with ``-``: strings as they are (``xl``), numbers after
their key (``seed1``, ``max_length256``), booleans as ``key=value``, mappings as their entries
joined with ``+`` (``{c2p: true, p2c: false}`` -> ``c2p+no-p2c``, ``{}`` -> ``default``);
e.g. ``xl-softmax-seed1``. If that is ambiguous, names become ``position=xl,seed=1``.

Every combination goes through the check the command runs before it starts
(:func:`roformer_lit.commands.prelaunch.check_fit_config`, or fine-tuning's) before anything
runs or is created, ``--dry-run`` or not; bad ones are one line naming every grid value no
run could take (:mod:`roformer_lit.sweep.bad_values`), else the first bad run and the rule.
``exclude:`` drops combinations (matched by type and value, see
:mod:`roformer_lit.sweep.spec`); excluding all of them is an error.
Finished runs (``<run>/sweep_done.json``, written only after ``fit`` exits 0, or a
``last.ckpt`` at the run's end: a fit killed after its last checkpoint) are skipped, and
interrupted runs resume from their ``last.ckpt``, once their ``config.yaml`` shows they ran
with the settings the sweep gives them now, and, where they recorded it, on data of the
content the sweep gives them now: every such run is checked before anything is
launched, else one line names the run and the setting (or the data), nothing run
(:mod:`roformer_lit.sweep.finished`); a partial run without a checkpoint is moved aside to
``<version>.failed-<k>``. A run that would start fresh, whose settings a finished run of
the directory under another name ran with (a sweep file whose grid keys were reordered
names every run anew), is skipped as finished there, its line naming that run
(:func:`~roformer_lit.sweep.finished.finished_as`); names themselves never change.

One sweep writes a directory at a time: before it reads its runs' state, a sweep (not a
``--dry-run``) takes the lock of ``<root>/<name>``
(:func:`~roformer_lit.training.run_dir.claim_sweep`), so a second one -- started at the
same instant or while the first runs -- is one line naming the directory and the first
one's pid, with nothing printed, prepared or launched.

A failed run does not stop the others; the sweep ends with a summary table and exit code
1 if any run failed. SIGTERM (exit 75) or Ctrl-C (130) is passed on once to the running
fits, which save ``last.ckpt`` and stop; nothing queued starts, and the same command
resumes them. See :mod:`roformer_lit.sweep.runner` for
the files under ``<root>/<name>/``.

``--launcher slurm`` submits one job array with sbatch (:mod:`roformer_lit.sweep.slurm`); on
a machine without SLURM's commands it is one ``error:`` line before anything is prepared
or created, never a local fallback. With ``--dry-run`` it first prints, as ``#`` lines, the
settings the array would be submitted with (cluster, partition, time, array size and
parallelism, GPUs, CPUs, memory, job name).

``command: finetune`` runs ``python -m roformer_lit finetune`` instead (base: a
``configs/finetune/*.yaml``); its ``model.pretrained`` grid values may be globs, expanded
when the sweep is loaded, and name their runs by the checkpoint's run directory, with the
fine-tuning seed as ``ftseed<N>`` (``movie_polarity-rope-softmax-seed0-ftseed1``); no data
is prepared beforehand (see :mod:`roformer_lit.sweep.finetune`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from roformer_lit.errors import ConfigError
from roformer_lit.tool_arguments import OUTPUT_DIRECTORY, ToolParser, integer, output_path_problem

__all__ = ["main"]


#: Most runs ``--jobs`` starts at once on one machine.
MAX_JOBS = 1024
#: Most CPU threads ``--threads`` gives one run.
MAX_THREADS = 1024


def _refuse_gpu_keys(path: Any, keys: Sequence[str], gpu_args: Sequence[str]) -> None:
    """``--devices`` appends ``gpu_args`` (:data:`~roformer_lit.sweep.runner.GPU_ARGS`) to
    every run, which ``fit`` would refuse as an option given twice where the sweep file sets
    one of them: one line before anything is prepared or launched."""
    gpu_keys = [word[2:] for word in gpu_args if word.startswith("--")]
    both = [key for key in keys if key in gpu_keys]
    if both:
        raise ConfigError(
            f"sweep: --devices sets {' and '.join(gpu_keys)} of every run, and {path} sets "
            f"{both[0]} too; drop it from the sweep file or run without --devices"
        )


def gpu_ids(word: str) -> list[str]:
    """``--devices``: distinct GPU ids separated by commas (``0,1,2``), each as
    ``CUDA_VISIBLE_DEVICES`` takes it (``01`` -> ``1``); an argparse ``type``. Every entry
    that is empty, not a non-negative integer or listed before is named in one line: a
    repeated id ran two runs at once on one GPU, exit 0."""
    entries = [entry.strip() for entry in word.split(",")]
    problems, ids = [], []
    for index, entry in enumerate(entries, 1):
        if not entry:
            problems.append(f"entry {index} is empty")
        elif not (entry.isascii() and entry.isdigit()):
            problems.append(f"{entry!r} is not a GPU id")
        elif str(int(entry)) in ids:
            problems.append(f"{entry!r} lists GPU {int(entry)} twice")
        else:
            ids.append(str(int(entry)))
    if problems:
        raise argparse.ArgumentTypeError(
            f"{word!r}: {'; '.join(problems)}; valid: distinct GPU ids (integers from 0) "
            "separated by commas, e.g. 0,1,2"
        )
    return ids


def _parser() -> argparse.ArgumentParser:
    from roformer_lit.sweep.slurm import OPTIONS

    p = ToolParser(
        "sweep", description="Run every combination of a sweep file's grid as its own fit process."
    )
    p.add_argument("--config", required=True, help="the sweep file (YAML)")
    p.add_argument(
        "--root",
        type=OUTPUT_DIRECTORY,
        default="runs",
        help="save_dir of every run (default: runs)",
    )
    p.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    p.add_argument(
        "--devices",
        type=gpu_ids,
        default=None,
        help="comma-separated GPU ids: one run per listed id at once, each with "
        "CUDA_VISIBLE_DEVICES=<id> and --trainer.accelerator gpu --trainer.devices 1",
    )
    p.add_argument(
        "--jobs",
        type=integer(1, MAX_JOBS),
        default=None,
        help="without --devices: runs at once on the current device (default 1)",
    )
    p.add_argument(
        "--threads",
        type=integer(1, MAX_THREADS),
        default=None,
        help="CPU threads of each run (OMP_NUM_THREADS; default: yours if set, else 1). A run's "
        "numbers depend on it, never on --jobs: use --jobs to fill the cores",
    )
    p.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="run one slice: the combinations whose grid KEY is VALUE (repeat for several "
        "keys); run names are the whole grid's, so the whole sweep later skips them",
    )
    p.add_argument("--launcher", choices=("local", "slurm"), default="local")
    p.add_argument(
        "--wait", action="store_true", help="slurm: wait for the array and print the summary"
    )
    for key, (kind, _) in OPTIONS.items():
        p.add_argument(
            f"--slurm.{key}",
            dest=f"slurm_{key}",
            action="append" if kind is list else "store",
            default=None,
            help=f"slurm executor option {key} (overrides the sweep file's slurm.{key})",
        )
    return p


def main(args: Sequence[str]) -> int:
    from roformer_lit.sweep import runner, slurm
    from roformer_lit.sweep.finetune import PRETRAINED_KEY
    from roformer_lit.sweep.finished import check_continued, check_continued_data
    from roformer_lit.sweep.spec import load_sweep, shell_line
    from roformer_lit.training import run_dir

    ns = _parser().parse_args(list(args))
    if ns.devices is not None and ns.launcher == "slurm":
        raise ConfigError("sweep: --devices is for the local launcher; SLURM assigns GPUs")
    if ns.devices is not None and ns.jobs is not None:
        raise ConfigError("sweep: use --devices or --jobs, not both")
    devices: list[str | None] = [None] * (ns.jobs or 1)
    if ns.devices is not None:
        devices = list(ns.devices)  # checked when parsed (gpu_ids)
    root = ns.root  # a path a directory can be made at (OUTPUT_DIRECTORY)
    sweep = load_sweep(ns.config, root, only=ns.only)
    if ns.devices is not None:
        _refuse_gpu_keys(sweep.path, [*sweep.overrides, *sweep.grid], runner.GPU_ARGS)
    slurm_options: dict[str, Any] = {}
    if ns.launcher == "slurm" or sweep.slurm:
        cli_slurm = {
            key: getattr(ns, f"slurm_{key}")
            for key in slurm.OPTIONS
            if getattr(ns, f"slurm_{key}") is not None
        }
        slurm_options = {
            **slurm.check_options(sweep.slurm, f"{sweep.path}: slurm"),
            **slurm.check_options(cli_slurm, "sweep: --slurm"),
        }

    if ns.launcher == "slurm" and not ns.dry_run:
        slurm.check_available(slurm_options)  # before anything is prepared or created

    cwd = os.getcwd()
    sweep_dir = (Path(cwd) / root / sweep.name).resolve()
    problem = output_path_problem(str(sweep_dir), directory=True)
    if problem is not None:  # before any corpus is prepared or run launched
        raise ConfigError(f"sweep: --root {root} with the sweep's name {sweep.name!r}: {problem}")
    if not ns.dry_run:  # one sweep per directory, taken before its runs' state is read
        run_dir.claim_sweep(sweep_dir)
    # on CPU every run gets the same thread count, whatever --jobs is (runner.run_threads_env)
    threads = (
        runner.run_threads_env(ns.threads) if ns.devices is None or ns.threads is not None else {}
    )
    tasks = [
        runner.RunTask(
            version=run.version,
            argv=sweep.command_line(run, root),
            run_dir=str(sweep_dir / run.version),
            sweep_dir=str(sweep_dir),
            cwd=cwd,
            env=dict(threads),
            raise_on_failure=ns.launcher == "slurm" and slurm_options.get("cluster") != "debug",
        )
        for run in sweep.runs
    ]
    actions = {t.version: t.action() for t in tasks}
    for task in tasks:  # skipped or resumed only as the run the sweep asks for: all, first
        if task.version in sweep.resolved:
            asked = sweep.resolved[task.version]
            check_continued(task.version, task.run_dir, asked, actions[task.version], sweep.command)
    _skip_finished_elsewhere(sweep, tasks, actions, sweep_dir)
    from roformer_lit.sweep.components_changed import check_components_unchanged

    check_components_unchanged(  # and with the plugins installed now
        [(_data_name(t), t.same_as or t.run_dir, actions[t.version]) for t in tasks]
    )
    if sweep.command == "finetune":  # and from the pretrained checkpoint there now
        from roformer_lit.sweep.pretrained_changed import check_pretrained_unchanged

        check_pretrained_unchanged(
            [
                (
                    _data_name(t),
                    t.same_as or t.run_dir,
                    actions[t.version],
                    sweep.resolved[t.version].get(PRETRAINED_KEY),
                )
                for t in tasks
                if t.version in sweep.resolved
            ]
        )
    todo = [t for t in tasks if actions[t.version] != "skip"]
    skipped = [t for t in tasks if actions[t.version] == "skip"]
    if not ns.dry_run:  # and on the data they ran on
        data_section = None  # fit's
        if sweep.command == "finetune":
            from roformer_lit.finetune.parse import data_section
        by_version = {t.version: t for t in tasks}
        continued = [r for r in sweep.runs if actions[r.version] in ("skip", "resume")]
        check_continued_data(
            [
                (
                    _data_name(by_version[r.version]),
                    by_version[r.version].same_as or sweep_dir / r.version,
                    actions[r.version],
                    sweep.fit_args(r, root),
                )
                for r in continued
            ],
            data_section,
        )

    if ns.dry_run:
        if ns.launcher == "slurm":
            print("# --launcher slurm: one job array with")
            for line in slurm.describe(slurm_options, sweep.name, len(todo)):
                print(f"#   {line}")
        for task in todo:  # as it runs: with its thread count (a run's numbers depend on it)
            extra = list(runner.GPU_ARGS) if ns.devices is not None else []
            print(shell_line([*task.command(actions[task.version]), *extra], task.env))
        note = f"{len(todo)} of {len(tasks)} runs to go, {len(skipped)} finished (skipped)"
        if ns.devices is not None:
            note += f"; each with CUDA_VISIBLE_DEVICES set to one of {','.join(devices)}"  # type: ignore[arg-type]
        print(f"# {sweep.name}: {note}", file=sys.stderr)
        for task in skipped:
            if task.same_as is not None:
                print(f"# skipped {_finished_name(task)}", file=sys.stderr)
        return 0

    meta = {"name": sweep.name, "base": sweep.base, "sweep_file": str(sweep.path), "root": root}
    print(
        f"sweep {sweep.name}: {len(tasks)} runs in {sweep_dir} "
        f"({len(skipped)} finished, {len(todo)} to run)",
        flush=True,
    )
    for task in skipped:
        print(f"skipped {_finished_name(task)}", flush=True)
    if todo and sweep.command == "fit":  # prepare the MLM data once, before any run starts
        from roformer_lit.commands.prepare import prepare_runs

        prepare_runs([sweep.fit_args(r, root) for r in sweep.runs if actions[r.version] != "skip"])

    if ns.launcher == "slurm":
        return _slurm(sweep, tasks, todo, skipped, slurm_options, sweep_dir, meta, ns.wait)

    rows: dict[str, dict[str, Any]] = {}
    for task in skipped:
        done = runner.read_json(task.done_marker) or {}
        rows[task.version] = {
            "version": task.version,
            "status": "skipped",
            "exit_code": done.get("exit_code", 0),
            "wall_time_s": done.get("wall_time_s"),
            "note": _skip_note(task),
        }
    runner.write_status(sweep_dir, meta, tasks)
    local = runner.LocalRunner(todo, devices)

    def on_result(record: dict[str, Any]) -> None:
        runner.write_status(sweep_dir, meta, tasks)

    local.run(on_result)
    runner.write_status(sweep_dir, meta, tasks)
    for task in todo:
        record = local.results.get(task.version, {"status": "not started"})
        rows[task.version] = {**record, "note": _note(record)}
    return _finish([rows[t.version] for t in tasks], sweep_dir, stopped_by=local.stopped_by)


def _skip_finished_elsewhere(
    sweep: Any, tasks: Sequence[Any], actions: dict[str, str], sweep_dir: Path
) -> None:
    """A run the sweep would train fresh that a finished run of its directory under
    another name ran with the same settings
    (:func:`~roformer_lit.sweep.finished.finished_as`: a sweep file whose grid keys were
    reordered names every run anew) is skipped as finished there: its task's ``same_as``
    names that run, its action becomes ``skip``. Run names themselves never change."""
    from roformer_lit.sweep import runner
    from roformer_lit.sweep.finished import finished_as

    fresh = [t for t in tasks if actions[t.version] == "fresh" and t.version in sweep.resolved]
    if not fresh:
        return
    others = runner.finished_elsewhere(sweep_dir, {t.version for t in tasks})
    for task in fresh:
        twin = finished_as(sweep.resolved[task.version], others, sweep.command)
        if twin is not None:
            task.same_as = str(twin)
            actions[task.version] = "skip"
            others.remove(twin)


def _finished_name(task: Any) -> str:
    """``VERSION (finished)``, or ``VERSION (finished as OTHER: ...)`` for a run finished
    under another name (:func:`_skip_finished_elsewhere`)."""
    if task.same_as is None:
        return f"{task.version} (finished)"
    return (
        f"{task.version} (finished as {Path(task.same_as).name}: the run of the same "
        "settings under the name an earlier sweep file gave it)"
    )


def _data_name(task: Any) -> str:
    """How a data refusal names a run: ``VERSION``, or ``VERSION (finished as OTHER)``."""
    if task.same_as is None:
        return str(task.version)
    return f"{task.version} (finished as {Path(task.same_as).name})"


def _skip_note(task: Any) -> str:
    """The summary table's note of a skipped run."""
    if task.same_as is None:
        return "finished earlier"
    return f"finished earlier as {Path(task.same_as).name}"


def _note(record: dict[str, Any]) -> str:
    action = record.get("action")
    note = {"resume": "resumed", "restart": "restarted (partial run moved aside)"}.get(
        action or "", ""
    )
    if record.get("status") == "failed":
        tail = record.get("stderr_tail") or [record.get("note", "")]
        note = "; ".join(x for x in (note, tail[-1] if tail else "") if x)
    return note[:120]


def _finish(rows: list[dict[str, Any]], sweep_dir: Path, stopped_by: int | None = None) -> int:
    """The summary table and the exit code: 0 all finished, 1 a run failed, and 75
    (SIGTERM) or 130 (Ctrl-C) when a signal stopped the sweep (its running fits saved
    their ``last.ckpt``; the same command continues)."""
    import signal

    from roformer_lit.sweep.runner import summary_table
    from roformer_lit.training.startup_signals import EXIT_INTERRUPTED, EXIT_PREEMPTED

    print()
    print(summary_table(rows))
    failed = [r for r in rows if r.get("status") not in ("finished", "skipped")]
    print()
    if stopped_by is not None:
        name = signal.Signals(stopped_by).name
        print(f"stopped by {name}; run the same command again to continue ({sweep_dir})")
        print(
            f"sweep stopped by {name}: the running fits saved last.ckpt and stopped, nothing "
            "else was started; run the same command again to continue",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED if stopped_by == signal.SIGINT else EXIT_PREEMPTED
    if failed:
        print(
            f"{len(failed)} of {len(rows)} runs failed: {', '.join(str(r['version']) for r in failed)}"
        )
        print(f"logs: {sweep_dir / 'sweep_logs'}; run the same command again to retry them")
        return 1
    print(f"all {len(rows)} runs finished; status: {sweep_dir / 'sweep_status.json'}")
    return 0


def _slurm(
    sweep: Any,
    tasks: list[Any],
    todo: list[Any],
    skipped: list[Any],
    options: dict[str, Any],
    sweep_dir: Path,
    meta: dict[str, Any],
    wait: bool,
) -> int:
    from roformer_lit.sweep import runner, slurm

    folder = sweep_dir / "sweep_logs" / "slurm" / "%j"
    executor = slurm.make_executor(folder, options, sweep.name)
    if not todo:
        return _finish(
            [{"version": t.version, "status": "skipped", "note": _skip_note(t)} for t in tasks],
            sweep_dir,
        )
    sweep_dir.mkdir(parents=True, exist_ok=True)
    jobs = slurm.submit(executor, todo)
    for task, job in zip(todo, jobs, strict=True):
        previous = runner.read_json(task.record_path()) or {}
        runner.write_json(
            task.record_path(),
            {**previous, "version": task.version, "status": "submitted", "job_id": job.job_id},
        )
    runner.write_status(sweep_dir, {**meta, "launcher": "slurm"}, tasks)
    print(f"submitted {len(jobs)} array tasks to {executor.cluster}:")
    for task, job in zip(todo, jobs, strict=True):
        print(f"  {job.job_id}  {task.version}")
    if not wait:
        print(
            f"logs: {sweep_dir / 'sweep_logs'}; when the array is done, run the same command "
            "again (without --wait: skips finished runs, resubmits the others)"
        )
        return 0
    rows = {t.version: {"version": t.version, "status": "skipped"} for t in skipped}
    for task, job in zip(todo, jobs, strict=True):
        try:
            record = job.result()
        except Exception:  # the task raised because its run failed: read its record
            record = runner.read_json(task.record_path()) or {"status": "failed"}
        rows[task.version] = {**record, "version": task.version, "note": _note(record)}
    runner.write_status(sweep_dir, {**meta, "launcher": "slurm"}, tasks)
    return _finish([rows[t.version] for t in tasks], sweep_dir)
