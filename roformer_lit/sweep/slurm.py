"""``--launcher slurm``: the sweep's runs as one SLURM job array through submitit.

Each array task is a pickled :class:`~roformer_lit.sweep.runner.RunTask`: it runs exactly the
command the local launcher would run (deciding fresh/resume/restart on the node, writing the
same marker, logs and record), so local and SLURM sweeps share ``<root>/<name>/`` and either
can pick up the other's unfinished runs. On timeout/preemption submitit calls the task's
``checkpoint`` and requeues it; the requeued task resumes from the run's ``last.ckpt``.

The cluster is SLURM unless ``cluster`` names submitit's ``local`` or ``debug`` stand-in: it is
never auto-detected, so a machine without SLURM gets one ``error:`` line
(:func:`check_available`, before anything is created), never the array run locally.
``--dry-run`` prints the settings the array would be submitted with (:func:`describe`).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from roformer_lit.errors import ConfigError
from roformer_lit.tool_arguments import Bounded, integer, real

#: Executor options: sweep-file ``slurm:`` key / ``--slurm.<key>`` -> submitit parameter.
OPTIONS: dict[str, tuple[type, str]] = {
    "partition": (str, "slurm_partition"),
    "time": (str, "timeout_min"),
    "gpus_per_node": (int, "gpus_per_node"),
    "cpus_per_task": (int, "cpus_per_task"),
    "mem_gb": (float, "mem_gb"),
    "account": (str, "slurm_account"),
    "qos": (str, "slurm_qos"),
    "constraint": (str, "slurm_constraint"),
    "array_parallelism": (int, "slurm_array_parallelism"),
    "job_name": (str, "name"),
    "setup": (list, "slurm_setup"),
    "cluster": (str, ""),
}
#: The numeric options' valid ranges.
RANGES: dict[str, Bounded] = {
    "gpus_per_node": integer(0, 1024),
    "cpus_per_task": integer(1, 4096),
    "mem_gb": real(0, 1 << 20, low_open=True),
    "array_parallelism": integer(1, 1 << 20),
}
DEFAULTS: dict[str, Any] = {"gpus_per_node": 1, "time": "24:00:00"}
#: ``cluster``: ``slurm`` (the default: sbatch, never a silent local fallback); ``local`` and
#: ``debug`` are submitit's stand-ins on this machine, only when asked for by name.
CLUSTERS = ("slurm", "local", "debug")
DEFAULT_CLUSTER = "slurm"
#: What ``cluster: slurm`` needs on PATH: submitit submits with sbatch and runs with srun.
SLURM_COMMANDS = ("sbatch", "srun")
#: submitit's default ``slurm_array_parallelism``: array tasks running at once.
SUBMITIT_ARRAY_PARALLELISM = 256
#: How :func:`describe` shows a setting the sweep leaves to SLURM.
UNSET = "SLURM's default"


def check_options(options: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Known keys with values of the right type (strings from the command line converted)."""
    out: dict[str, Any] = {}
    for key, value in options.items():
        if key not in OPTIONS:
            raise ConfigError(f"{where}: unknown slurm option {key!r}; valid: {', '.join(OPTIONS)}")
        if value is None:
            continue
        kind = OPTIONS[key][0]
        try:
            if kind is list:
                value = [value] if isinstance(value, str) else list(value)
                value = [str(v) for v in value]
            elif kind is str:
                value = str(value)
            elif isinstance(value, bool):
                raise ValueError(value)
            else:
                value = kind(value)
        except (TypeError, ValueError) as exc:
            raise ConfigError(
                f"{where}: slurm option {key!r} must be {kind.__name__}, got {value!r}"
            ) from exc
        out[key] = value
    for key, bounds in RANGES.items():
        if key in out and not bounds.accepts(out[key]):
            raise ConfigError(
                f"{where}: slurm option {key!r} must be {bounds.expected}, got {out[key]!r}"
            )
    if "time" in out:
        minutes(out["time"])
    if out.get("cluster") not in (None, *CLUSTERS):
        raise ConfigError(
            f"{where}: slurm cluster {out['cluster']!r} is not one of {', '.join(CLUSTERS)}"
        )
    return out


def minutes(time: str) -> int:
    """A SLURM time limit (``90``, ``1:30:00``, ``2-00:00:00``, ``1-12``) in minutes."""
    text = str(time).strip()
    m = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", text)
    if not m:
        raise ConfigError(f"slurm time {time!r} is not minutes, H:MM:SS or D-HH:MM:SS")
    days, a, b, c = (int(x) if x is not None else None for x in m.groups())
    if days is None and b is None:  # "MM"
        total = a * 60
    elif days is None and c is None:  # "MM:SS"
        total = a * 60 + b
    elif days is None:  # "HH:MM:SS"
        total = a * 3600 + b * 60 + c
    else:  # "D-HH[:MM[:SS]]"
        total = days * 86400 + a * 3600 + (b or 0) * 60 + (c or 0)
    return max(1, -(-total // 60))


def executor_parameters(options: Mapping[str, Any], sweep_name: str) -> dict[str, Any]:
    """``AutoExecutor.update_parameters`` keywords for the options."""
    merged = {**DEFAULTS, **options}
    params: dict[str, Any] = {"name": f"sweep-{sweep_name}"}
    for key, value in merged.items():
        target = OPTIONS[key][1]
        if not target or value is None:
            continue
        params[target] = minutes(value) if key == "time" else value
    return params


def cluster_of(options: Mapping[str, Any]) -> str:
    """The submitit cluster the options ask for: :data:`DEFAULT_CLUSTER` unless named."""
    return options.get("cluster") or DEFAULT_CLUSTER


def check_available(options: Mapping[str, Any]) -> None:
    """Before anything is prepared, created or submitted: submitit must be installed, and
    ``cluster: slurm`` needs SLURM's commands on PATH; otherwise one ConfigError line
    (submitit's auto-detection would fall back to running the array as detached local
    processes)."""
    _submitit()  # what to install comes first
    if cluster_of(options) != "slurm":
        return
    missing = [command for command in SLURM_COMMANDS if shutil.which(command) is None]
    if missing:
        raise ConfigError(
            f"--launcher slurm needs SLURM's sbatch on PATH ({' and '.join(missing)} not found "
            "on this machine); use --launcher local to run the sweep here, or "
            "--slurm.cluster debug to try the job array in this process"
        )


def describe(options: Mapping[str, Any], sweep_name: str, tasks: int) -> list[str]:
    """The settings a job array of ``tasks`` runs would be submitted with, one ``key: value``
    per line (``SLURM's default`` where the sweep sets nothing), for ``--dry-run``."""
    merged = {**DEFAULTS, **options}
    params = executor_parameters(options, sweep_name)
    parallel = min(tasks, merged.get("array_parallelism") or SUBMITIT_ARRAY_PARALLELISM)
    array = f"{tasks} tasks, at most {parallel} at once"
    if tasks:
        array += f" (--array=0-{tasks - 1}%{parallel})"
    time = merged["time"]
    shown: dict[str, Any] = {
        "cluster": cluster_of(options),
        "partition": merged.get("partition"),
        "time": f"{time} ({minutes(time)} min)",
        "array": array,
        "gpus_per_node": merged.get("gpus_per_node"),
        "cpus_per_task": merged.get("cpus_per_task"),
        "mem_gb": merged.get("mem_gb"),
        "job_name": params["name"],
    }
    for key in ("account", "qos", "constraint", "setup"):  # shown only when set
        if merged.get(key):
            shown[key] = "; ".join(merged[key]) if key == "setup" else merged[key]
    return [f"{key}: {UNSET if value is None else value}" for key, value in shown.items()]


def _submitit() -> Any:
    """The submitit module (an optional dependency), or one ConfigError line saying how to
    install it."""
    try:
        import submitit
    except ImportError as exc:
        raise ConfigError(
            "--launcher slurm needs submitit: pip install submitit (or pip install -e '.[dev]')"
        ) from exc
    return submitit


def make_executor(folder: str | Path, options: Mapping[str, Any], sweep_name: str) -> Any:
    submitit = _submitit()
    cluster = cluster_of(options)  # never auto-detected: no silent local fallback
    try:
        executor = submitit.AutoExecutor(folder=str(folder), cluster=cluster)
        executor.update_parameters(**executor_parameters(options, sweep_name))
    except (ValueError, NameError, RuntimeError) as exc:
        raise ConfigError(f"slurm executor: {' '.join(str(exc).split())}") from exc
    return executor


def submit(executor: Any, tasks: Sequence[Any]) -> list[Any]:
    """All tasks as one job array (``executor.batch()``): array task i runs ``tasks[i]``."""
    with executor.batch():
        jobs = [executor.submit(task) for task in tasks]
    return jobs
