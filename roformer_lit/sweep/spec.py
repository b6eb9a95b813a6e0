"""Sweep files: loading, validation, grid expansion, run (version) names and fit commands."""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import shlex
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from roformer_lit.encoder_config import compared_model
from roformer_lit.errors import AbbreviatedOption, ConfigError
from roformer_lit.plan_identity import built_layers
from roformer_lit.plan_labels import plan_label
from roformer_lit.safe_input import YAMLBombError, safe_yaml_load, yaml_value
from roformer_lit.sweep.bad_values import grid_problems
from roformer_lit.sweep.finetune import (
    PRETRAINED_KEY,
    check_pretrained,
    expand_pretrained,
    pretrained_labels,
)
from roformer_lit.sweep.written_keys import written_key_refusal
from roformer_lit.training.run_dir import is_moved_aside

#: Top-level keys of a sweep file (``name``, ``base``, ``grid`` are required).
VALID_KEYS = ("name", "base", "grid", "exclude", "overrides", "command", "slurm")
REQUIRED_KEYS = ("name", "base", "grid")
#: Keys the sweep sets itself: a grid or an override may not set them.
OWNED_KEYS = (
    "config",
    "ckpt_path",
    "print_config",
    "trainer.logger",
    "trainer.logger.class_path",
    "trainer.logger.init_args",
    "trainer.logger.init_args.save_dir",
    "trainer.logger.init_args.name",
    "trainer.logger.init_args.version",
)
#: Names inside ``<root>/<name>/`` that belong to the sweep, never to a run.
LOGS_DIR = "sweep_logs"
STATUS_FILE = "sweep_status.json"
#: Short labels of grid keys in run names (otherwise the key's last component).
#: Short names of keys whose last component would mislead: ``data.seed`` is the data's
#: seed, not the run's (``seed0-dataseed1``, not ``seed0-seed1``).
KEY_ALIASES = {"seed_everything": "seed", "data.seed": "dataseed"}
#: A grid key whose mapping values are named by :func:`roformer_lit.plan_labels.plan_label`.
PLAN_KEY = "model.layer_plan"
#: What a sweep may run: ``fit`` (pretraining, the default) or ``finetune``.
COMMANDS = ("fit", "finetune")
#: ``finetune`` sweeps: the fine-tuning seed in run names (the pretrained run's own name
#: usually ends in ``seed<N>`` already): ``movie_polarity-rope-softmax-seed0-ftseed1``.
FINETUNE_KEY_ALIASES = {"seed_everything": "ftseed", "data.seed": "dataseed"}
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+=,-]*")
DOTTED_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*")
MAX_VERSION_LENGTH = 120


@dataclass(frozen=True)
class Run:
    """One grid combination: its run (version) name and its ``key -> value`` settings."""

    version: str
    values: tuple[tuple[str, Any], ...]

    def describe(self) -> str:
        return ", ".join(f"{k}={_render(v)}" for k, v in self.values)


@dataclass
class Sweep:
    path: Path
    name: str
    base: str
    grid: dict[str, list[Any]]
    overrides: dict[str, Any]
    command: str = "fit"
    slurm: dict[str, Any] = field(default_factory=dict)
    runs: list[Run] = field(default_factory=list)
    #: version -> the parsed config of its command (:func:`validate_sweep` fills it).
    resolved: dict[str, Any] = field(default_factory=dict)

    def fit_args(self, run: Run, root: str) -> list[str]:
        """The arguments after ``python -m roformer_lit``: ``fit --config BASE --k v ...``."""
        args = [self.command, "--config", self.base]
        for key, value in [*self.overrides.items(), *run.values]:
            args += [f"--{key}", cli_value(value)]
        args += [
            "--trainer.logger.init_args.save_dir",
            root,
            "--trainer.logger.init_args.name",
            self.name,
            "--trainer.logger.init_args.version",
            run.version,
        ]
        return args

    def command_line(self, run: Run, root: str) -> list[str]:
        return [sys.executable, "-m", "roformer_lit", *self.fit_args(run, root)]


def cli_value(value: Any) -> str:
    """A grid/override value as one command-line argument (dicts and lists as JSON)."""
    if isinstance(value, str):
        return value
    return json.dumps(value)


def shell_line(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    prefix = [f"{k}={shlex.quote(v)}" for k, v in (env or {}).items()]
    return " ".join([*prefix, *(shlex.quote(a) for a in argv)])


def load_sweep(
    path: str | Path,
    root: str = "runs",
    validate: bool = True,
    only: Sequence[str] = (),
) -> Sweep:
    """Read and check a sweep file; every combination is parsed by ``validate_config``.

    ``only``: ``KEY=VALUE`` strings (``--only`` on the command line) that keep the
    combinations whose grid ``KEY`` is ``VALUE`` (read as YAML, matched by type and value
    like ``exclude``): one slice of the sweep, under the very run names the whole grid
    gives, so running the whole sweep later skips the slice's finished runs."""
    path = Path(path)
    where = str(path)
    if not path.is_file():
        raise ConfigError(f"sweep file not found: {path}")
    raw = _read_yaml(path)
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: a sweep file must be a mapping of {', '.join(VALID_KEYS)}")
    unknown = [str(k) for k in raw if k not in VALID_KEYS]
    if unknown:
        raise ConfigError(
            f"{where}: unknown key {unknown[0]!r}; valid keys: {', '.join(VALID_KEYS)}"
        )
    for key in REQUIRED_KEYS:
        if raw.get(key) is None:
            raise ConfigError(f"{where}: missing required key {key!r}")

    name = raw["name"]
    if not isinstance(name, str) or not SAFE_NAME.fullmatch(name) or name in (".", ".."):
        raise ConfigError(
            f"{where}: name {name!r} is not a safe directory name "
            "(letters, digits, '.', '_', '-'; no '/' or spaces)"
        )
    base = _resolve_base(raw["base"], path)
    grid = _check_grid(raw["grid"], where)
    overrides = raw.get("overrides") or {}
    if not isinstance(overrides, dict):
        raise ConfigError(f"{where}: overrides must map dotted config keys to values")
    for key in overrides:
        _check_key(key, "overrides", where)
    both = [k for k in grid if k in overrides]
    if both:
        raise ConfigError(f"{where}: key {both[0]!r} is in both grid and overrides; keep one")
    command = raw.get("command", "fit")
    if command not in COMMANDS:
        raise ConfigError(
            f"{where}: command {command!r} is not supported; valid: {', '.join(COMMANDS)}"
        )
    slurm = raw.get("slurm") or {}
    if not isinstance(slurm, dict):
        raise ConfigError(f"{where}: slurm must be a mapping of executor options")

    origins: dict[str, dict[Any, tuple[Any, ...]]] = {}
    if command == "finetune":
        if PRETRAINED_KEY in overrides:
            check_pretrained(
                overrides[PRETRAINED_KEY], f"{where}: overrides key {PRETRAINED_KEY!r}"
            )
        expanded, paths = expand_pretrained(grid, where)
        origins[PRETRAINED_KEY] = dict(paths)
        exclude = _check_exclude(raw.get("exclude"), grid, where, expanded)
        grid = expanded
        labels = {PRETRAINED_KEY: pretrained_labels(grid.get(PRETRAINED_KEY, []))}
        sweep = Sweep(path, name, base, grid, dict(overrides), command, dict(slurm))
        sweep.runs = expand(grid, labels, FINETUNE_KEY_ALIASES, exclude, origins)
    else:
        exclude = _check_exclude(raw.get("exclude"), grid, where)
        sweep = Sweep(path, name, base, grid, dict(overrides), command, dict(slurm))
        sweep.runs = expand(grid, exclude=exclude)
    if not sweep.runs:
        total = len(list(itertools.product(*grid.values())))
        raise ConfigError(
            f"{where}: exclude removes every one of the grid's {total} combinations: nothing "
            "would run; narrow or drop an exclude entry"
        )
    if only:
        sweep.runs = _only(sweep, only, where)
    if validate:
        validate_sweep(sweep, root)
    return sweep


def _only(sweep: Sweep, only: Sequence[str], where: str) -> list[Run]:
    """The runs matching every ``KEY=VALUE`` of ``only`` (see :func:`load_sweep`)."""
    wanted: dict[str, Any] = {}
    for item in only:
        key, sep, text = str(item).partition("=")
        if not sep or key not in sweep.grid:
            raise ConfigError(
                f"sweep: --only {item!r} must be KEY=VALUE with KEY a grid key of {where}; "
                f"grid keys: {', '.join(sweep.grid)}"
            )
        value = yaml_value(text)
        if not any(same_value(value, v) for v in sweep.grid[key]):
            raise ConfigError(
                f"sweep: --only {key}={text!r} is not one of its grid values {sweep.grid[key]!r} "
                "(compared by type and value: true is not 1, 1.0 is not 1)"
            )
        if key in wanted:
            raise ConfigError(f"sweep: --only names {key!r} twice; give each grid key once")
        wanted[key] = value
    runs = [
        r for r in sweep.runs if all(same_value(dict(r.values)[k], v) for k, v in wanted.items())
    ]
    if not runs:
        raise ConfigError(
            f"sweep: --only {' '.join(only)} keeps none of {where}'s runs (exclude removes them)"
        )
    return runs


def _read_yaml(path: Path) -> Any:
    try:
        return safe_yaml_load(path.read_text(encoding="utf-8"))
    except YAMLBombError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise ConfigError(f"{path}: not valid YAML: {problem}{at}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not a text file: {exc}") from exc


def _resolve_base(base: Any, sweep_path: Path) -> str:
    """Absolute paths as they are; relative ones against the current directory first (kept as
    written), then against the sweep file's directory and each folder above it (made
    absolute): a shipped sweep names its base from the repository root
    (``configs/probes/study.yaml``), and runs from any directory."""
    if not isinstance(base, str) or not base.strip():
        raise ConfigError(f"{sweep_path}: base must be the path of an experiment config")
    candidate = Path(base)
    if candidate.is_absolute():
        if candidate.is_file():
            return base
    elif candidate.is_file():
        return base
    else:
        folder = sweep_path.resolve().parent
        for above in (folder, *folder.parents):
            if (above / candidate).is_file():
                return str((above / candidate).resolve())
    raise ConfigError(
        f"{sweep_path}: base config not found: {base} (relative paths are tried from the "
        f"current directory, then from {sweep_path.parent} and each folder above it)"
    )


def _check_key(key: Any, section: str, where: str) -> None:
    if not isinstance(key, str) or not DOTTED_KEY.fullmatch(key):
        raise ConfigError(f"{where}: {section} key {key!r} is not a dotted config key")
    if key in OWNED_KEYS:
        raise ConfigError(
            f"{where}: {section} key {key!r} is set by the sweep itself "
            "(use the sweep's name and --root)"
        )


def _check_grid(grid: Any, where: str) -> dict[str, list[Any]]:
    if not isinstance(grid, dict) or not grid:
        raise ConfigError(f"{where}: grid must map dotted config keys to lists of values")
    for key, values in grid.items():
        _check_key(key, "grid", where)
        if not isinstance(values, list) or not values:
            raise ConfigError(
                f"{where}: grid key {key!r} must map to a non-empty list of values, got {values!r}"
            )
        seen = set()
        for value in values:
            canon = json.dumps(value, sort_keys=True, default=str)
            if canon in seen:
                raise ConfigError(f"{where}: grid key {key!r} lists {value!r} twice")
            seen.add(canon)
    return {k: list(v) for k, v in grid.items()}


def same_value(a: Any, b: Any) -> bool:
    """``a`` and ``b`` equal in type and value, all the way down (as YAML wrote them):
    ``true`` is not ``1``, ``1.0`` is not ``1``, ``"1"`` is not ``1``; mappings and lists
    item by item. Exclusions match grid values this way."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _check_exclude(
    exclude: Any,
    grid: Mapping[str, list[Any]],
    where: str,
    expanded: Mapping[str, list[Any]] | None = None,
) -> list[dict]:
    """``exclude``: a list of partial combinations (grid key -> value); a combination that
    matches every key of one of them is not run (``{model.position: nope,
    data.random_positions: 1024}``: a pair that has no meaning). Each key must be a grid key
    and each value one of its grid values as written, or (``expanded``: a fine-tuning
    sweep's checkpoint globs) one of the values they expand to; values are compared by
    type and value (:func:`same_value`); else one line."""
    if exclude is None:
        return []
    if not isinstance(exclude, list) or not all(isinstance(e, dict) and e for e in exclude):
        raise ConfigError(f"{where}: exclude must be a list of mappings of grid keys to values")
    for entry in exclude:
        for key, value in entry.items():
            if key not in grid:
                raise ConfigError(
                    f"{where}: exclude key {key!r} is not a grid key; grid keys: {', '.join(grid)}"
                )
            allowed = [*grid[key], *(expanded or {}).get(key, [])]
            if not any(same_value(value, v) for v in allowed):
                raise ConfigError(
                    f"{where}: exclude value {value!r} of {key!r} is not in its grid values "
                    f"{grid[key]!r} (compared by type and value: true is not 1, 1.0 is not 1)"
                )
    return [dict(e) for e in exclude]


def _excluded(
    combo: Mapping[str, Any],
    entry: Mapping[str, Any],
    origins: Mapping[str, Mapping[Any, tuple[Any, ...]]],
) -> bool:
    """Whether ``combo`` matches ``entry`` on every key: the same value (:func:`same_value`)
    or, for a key with ``origins``, a grid value (a glob) its value was expanded from."""
    for key, wanted in entry.items():
        value = combo[key]
        sources = origins.get(key, {}).get(value, ()) if isinstance(value, str) else ()
        if not same_value(value, wanted) and not any(same_value(s, wanted) for s in sources):
            return False
    return True


def expand(
    grid: Mapping[str, list[Any]],
    labels: Mapping[str, Mapping[str, str]] | None = None,
    aliases: Mapping[str, str] | None = None,
    exclude: Sequence[Mapping[str, Any]] = (),
    origins: Mapping[str, Mapping[Any, tuple[Any, ...]]] | None = None,
) -> list[Run]:
    """Every combination, in grid order (the last key varies fastest), with unique names
    (``labels`` and ``aliases``: see :func:`version_names`), less those matching an
    ``exclude`` entry on all its keys (:func:`_excluded`; ``origins``: key -> expanded
    value -> the grid values it came from)."""
    keys = list(grid)
    combos = [
        combo
        for combo in (
            tuple(zip(keys, values, strict=True)) for values in itertools.product(*grid.values())
        )
        if not any(_excluded(dict(combo), e, origins or {}) for e in exclude)
    ]
    names = version_names(combos, labels, aliases)
    return [Run(v, combo) for v, combo in zip(names, combos, strict=True)]


def version_names(
    combos: Sequence[tuple[tuple[str, Any], ...]],
    labels: Mapping[str, Mapping[str, str]] | None = None,
    aliases: Mapping[str, str] | None = None,
) -> list[str]:
    """Run names from grid values, joined with ``-``.

    Strings as themselves (``xl``), numbers after their key's short name (``seed1``,
    ``max_length256``), booleans/null as ``key=value``, dicts as their entries joined with
    ``+`` (``true`` -> ``k``, ``false`` -> ``no-k``, else ``k=v``; ``{}`` -> ``default``),
    lists as items joined with ``+``. If two combinations get the same name, every name
    becomes ``key=value`` pairs joined with ``,``; a name still not unique (or longer than
    120 characters) gets a short hash of its values.

    ``labels`` (``key -> value -> label``) names some string values otherwise (a fine-tuning
    sweep's checkpoints by their run); ``aliases`` replace :data:`KEY_ALIASES`.
    """
    value_labels = labels or {}
    aliases = KEY_ALIASES if aliases is None else aliases

    def label(key: str, value: Any) -> str:
        if isinstance(value, str) and value in value_labels.get(key, {}):
            return value_labels[key][value]
        return _label(key, value, aliases)

    def render(key: str, value: Any) -> str:
        if isinstance(value, str) and value in value_labels.get(key, {}):
            return value_labels[key][value]
        return _render(value)

    names = [_safe("-".join(label(k, v) for k, v in combo)) for combo in combos]
    if len(set(names)) < len(names):
        keys = [k for k, _ in combos[0]] if combos else []
        shorts = [_short(k, aliases) for k in keys]
        key_labels = shorts if len(set(shorts)) == len(shorts) else keys
        names = [
            _safe(
                ",".join(
                    f"{lab}={render(k, v)}" for lab, (k, v) in zip(key_labels, combo, strict=True)
                )
            )
            for combo in combos
        ]
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    out = []
    for name, combo in zip(names, combos, strict=True):
        reserved = name in (LOGS_DIR, STATUS_FILE) or is_moved_aside(name)
        if counts[name] > 1 or reserved or len(name) > MAX_VERSION_LENGTH:
            digest = hashlib.sha1(
                json.dumps(combo, sort_keys=True, default=str).encode()
            ).hexdigest()[:8]
            name = f"{name[: MAX_VERSION_LENGTH - 9]}-{digest}"
        out.append(name)
    return out


def _short(key: str, aliases: Mapping[str, str] = KEY_ALIASES) -> str:
    return aliases.get(key, key.rsplit(".", 1)[-1])


def _render(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        if not value:
            return "default"
        parts = []
        for k, v in value.items():
            if v is True:
                parts.append(str(k))
            elif v is False:
                parts.append(f"no-{k}")
            else:
                parts.append(f"{k}={_render(v)}")
        return "+".join(parts)
    if isinstance(value, (list, tuple)):
        return "+".join(_render(v) for v in value) or "empty"
    return str(value) if str(value) else "empty"


def _label(key: str, value: Any, aliases: Mapping[str, str] = KEY_ALIASES) -> str:
    if key == PLAN_KEY and isinstance(value, dict) and plan_label(value):
        return plan_label(value)  # as written (fit names it as built); same runs are refused
    if isinstance(value, (str, dict, list)):
        return _render(value)
    if isinstance(value, bool) or value is None:
        return f"{_short(key, aliases)}={_render(value)}"
    return f"{_short(key, aliases)}{_render(value)}"


def _safe(name: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._+=,-]+", "_", name).lstrip(".-_")
    return name or "run"


@contextmanager
def _quiet_seed() -> Iterator[None]:
    """``validate_config`` warns about ``args`` when run from the command line; keep that out
    of the sweep's output (its seeding says nothing: the CLI says the seed only once it has
    built the classes, ``commands.seed_line``)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="LightningCLI's args parameter")
        yield


def validate_sweep(sweep: Sweep, root: str) -> None:
    """Parse the base with the overrides alone (a partial config: the grid completes it),
    then put every combination through the pre-launch check the command runs before it
    starts (``fit``: :func:`roformer_lit.commands.prelaunch.check_fit_config`; ``finetune``:
    :func:`roformer_lit.finetune.prelaunch.check_finetune_config`), without building
    anything; bad combinations are one line naming every grid value no run could take, or
    the first bad run and the rule (:func:`_refuse_failed_runs`)."""
    if sweep.command == "finetune":  # deferred: both import Lightning
        from roformer_lit.finetune.parse import validate_finetune_config as validate_config
    else:
        from roformer_lit.commands.pretrain import validate_config

    where = str(sweep.path)
    with _quiet_seed():
        try:
            base_args = [sweep.command, "--config", sweep.base]
            for key, value in sweep.overrides.items():
                base_args += [f"--{key}", cli_value(value)]
            if sweep.command == "finetune" and PRETRAINED_KEY not in sweep.overrides:
                base_args += [f"--{PRETRAINED_KEY}", "CHECKPOINT"]  # set by each run
            validate_config(base_args[1:], prelaunch=False)
        except AbbreviatedOption as exc:  # a sweep key: the sweep's own words
            raise written_key_refusal(where, exc) from exc
        except ConfigError as exc:
            raise ConfigError(f"{where}: base {sweep.base} with the overrides: {exc}") from exc
        failures: dict[str, ConfigError] = {}
        for run in sweep.runs:
            try:
                sweep.resolved[run.version] = validate_config(sweep.fit_args(run, root)[1:])
            except AbbreviatedOption as exc:
                raise written_key_refusal(where, exc) from exc
            except ConfigError as exc:
                failures[run.version] = exc
        if failures:
            _refuse_failed_runs(sweep, root, failures, validate_config)
    _refuse_same_runs(sweep, where)


def _refuse_failed_runs(
    sweep: Sweep, root: str, failures: dict[str, ConfigError], validate_config: Any
) -> None:
    """One line naming every grid value no run could take
    (:func:`~roformer_lit.sweep.bad_values.grid_problems`, joined with ``; ``), else the
    first failed run and its rule (a combination no run may have, an override every run
    breaks)."""
    where = str(sweep.path)

    def check(run: Run, values: tuple[tuple[str, Any], ...]) -> ConfigError | None:
        try:
            validate_config(sweep.fit_args(Run(run.version, values), root)[1:])
        except ConfigError as exc:
            return exc
        return None

    kept = [PRETRAINED_KEY] if sweep.command == "finetune" else []
    problems = grid_problems(sweep.runs, failures, check, same_value, _render, kept)
    if len(problems) > 1:
        raise ConfigError(
            f"{where}: {len(problems)} grid values are not valid: " + "; ".join(problems)
        )
    if problems:
        raise ConfigError(f"{where}: {problems[0]}")
    run = next(r for r in sweep.runs if r.version in failures)
    raise ConfigError(f"{where}: run {run.version} ({run.describe()}): {failures[run.version]}")


def _settings_key(config: Any) -> str:
    """A parsed run config as canonical text, less the run's own name: two runs with the
    same key are the same experiment. The model section is the architecture's one
    spelling (:func:`~roformer_lit.encoder_config.compared_model`, as a resumed run and
    a sweep's finished run are compared): a scheme or kernel by its registry's name
    (``roformer_lit.positions.rope:RotaryPosition`` is ``rope``), its options less those
    at their class's default (rope's ``{base: 10000}`` is ``{}``), ``block`` less BERT's
    (``{mlp: swiglu, norm: layernorm}`` is ``{mlp: swiglu}``), float fields as floats,
    ``attention_dropout`` as the dropout it applies; and a layer plan as the layers it
    builds, layer by layer (:func:`~roformer_lit.plan_identity.built_layers`: ``layers:``
    for ``pattern:``, a pattern written twice over, types named otherwise, windows 65 and
    64 are one plan)."""
    settings = config.as_dict() if hasattr(config, "as_dict") else dict(config)
    model = settings.get("model")
    if isinstance(model, dict):
        canonical = compared_model(model)
        layers = built_layers(canonical)  # None: a plan not well formed, kept as written
        settings["model"] = {
            **canonical,
            "layer_plan": canonical.get("layer_plan") if layers is None else layers,
        }
    logger = (settings.get("trainer") or {}).get("logger")
    if isinstance(logger, dict) and isinstance(logger.get("init_args"), dict):
        logger["init_args"].pop("version", None)
    return json.dumps(settings, sort_keys=True, default=str)


def _refuse_same_runs(sweep: Sweep, where: str) -> None:
    """Refuse (one line) two runs whose parsed configs are the same but for their names:
    grid values written two ways that the command reads as one (``0.001`` and ``1e-3``,
    which YAML 1.1 reads as a string; ``1`` and ``"1"``) would run one experiment twice
    under two names, and ``compare`` would table it as two settings."""
    seen: dict[str, Run] = {}
    for run in sweep.runs:
        if run.version not in sweep.resolved:
            continue
        key = _settings_key(sweep.resolved[run.version])
        first = seen.setdefault(key, run)
        if first is not run:
            raise ConfigError(
                f"{where}: runs {first.version} ({first.describe()}) and {run.version} "
                f"({run.describe()}) are the same run: {sweep.command} reads "
                f"{_read_as(first, run, sweep.resolved[run.version])}; write each grid "
                "value once"
            )


def _read_as(first: Run, second: Run, config: Any) -> str:
    """How the command reads the grid values two same runs write differently: for one
    grid key parsed as a number (or boolean), ``seed_everything=true and seed_everything=0
    both as 0`` (``true`` takes ``PL_GLOBAL_SEED``, else 0), else ``their settings as the
    same values`` (a scheme by its import path is the one its registry names)."""
    differ = [
        (key, a, b)
        for (key, a), (_, b) in zip(first.values, second.values, strict=True)
        if not same_value(a, b)
    ]
    if len(differ) == 1 and hasattr(config, "get"):
        key, a, b = differ[0]
        value = config.get(key)
        if isinstance(value, (bool, int, float)):
            return f"{key}={_render(a)} and {key}={_render(b)} both as {_render(value)}"
    return "their settings as the same values"
