"""``--launcher slurm``: the sweep's runs as one SLURM job array through submitit.

Each array task is a pickled :class:`~roformer_lit.sweep.runner.RunTask`: it runs exactly the
command the local launcher would run (deciding fresh/resume/restart on the node, writing the
same marker, logs and record), so local and SLURM sweeps share ``<root>/<name>/`` and either
can pick up the other's unfinished runs. On timeout/preemption submitit calls the task's
``checkpoint`` and requeues it; the requeued task resumes from the run's ``last.ckpt``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from roformer_lit.errors import ConfigError

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
DEFAULTS: dict[str, Any] = {"gpus_per_node": 1, "time": "24:00:00"}
CLUSTERS = ("slurm", "local", "debug")


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


def make_executor(folder: str | Path, options: Mapping[str, Any], sweep_name: str) -> Any:
    try:
        import submitit
    except ImportError as exc:
        raise ConfigError(
            "--launcher slurm needs submitit: pip install submitit (or pip install -e '.[dev]')"
        ) from exc
    cluster = options.get("cluster")
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
