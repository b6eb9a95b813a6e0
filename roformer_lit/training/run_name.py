"""A new run's name: the scheme, the kernel, the seed, the corpus and every ablation switch.

``fit`` names a new run directory ``<position>-<attention>-seed<N>[-<corpus>][-<variant>...]``:

- ``<corpus>``: the training corpus when it is not the bundled one (:func:`corpus_label`);
- ``<variant>``: one part per setting that makes a variant of the same scheme, in the order
  of :data:`VARIANT_PARTS` (randomized positions ``rp1024``, validation positions
  ``valrandom``, a training hint ``hint0.5``, document masking ``docmask``), then every
  scheme and kernel option the run sets (``position_kwargs`` and ``attention_kwargs``, key by
  key: p-RoPE's ``unrotated_fraction0.25``, ``base500``), then the layer plan's label
  (``local128x2-global``, :func:`roformer_lit.plan_labels.plan_label`: the plan as it
  builds in this model, so plans that build one model have one label) and every block
  option the run sets (``mlpgeglu``).

A run of a **recipe** (a ``--config`` file in a directory named ``recipes``, such as
``configs/recipes/modernbert.yaml``) is named for the recipe and what differs from it:
``<recipe>-seed<N>[-<corpus>][-<variant>...]``, where the scheme and kernel show only
where they are not the recipe's, and the variant parts only the options, plan and block
settings whose values are not the recipe's (``modernbert-seed0``,
``modernbert-seed0-mlpswiglu``; ``modernbert-seed0-layer_plandefault`` without its plan); a later ``--config`` file's model settings count as
differences too.

Values are spelled one way everywhere in a name (:func:`roformer_lit.plan_labels.spelled`:
``160000.0`` and ``160000`` are ``160000``). So ``rope-softmax-seed0-copy-rp1024`` and
``rope-softmax-seed0-copy`` are told apart by name, as ``compare`` tells them apart by their
variant columns. Only letters, digits, ``.``, ``_`` and ``-`` appear; a name is cut to
:data:`MAX_STEM` characters (the run's ``config.yaml`` always holds the whole
configuration).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from roformer_lit.encoder_config import EncoderConfig, canonical_name, canonical_names
from roformer_lit.plan_identity import number, plain, same_plan
from roformer_lit.plan_labels import plan_label, spelled

#: Longest name stem (a run directory name stays well under the file system's 255 bytes,
#: leaving room for a ``-N`` counter).
MAX_STEM = 160

#: Data settings that make a variant: (key, how its value shows; ``None``: not shown).
VARIANT_PARTS: tuple[tuple[str, Callable[[Any], str | None]], ...] = (
    ("random_positions", lambda v: None if v is None else f"rp{v}"),
    ("validation_positions", lambda v: None if v in (None, "ordinary") else f"val{v}"),
    ("probe_hint", lambda v: f"hint{v:g}" if isinstance(v, int | float) and v else None),
    ("document_mask", lambda v: "docmask" if v is True else None),
)


def _get(section: Any, key: str) -> Any:
    if section is None:
        return None
    getter = getattr(section, "get", None)
    return getter(key) if getter is not None else getattr(section, key, None)


def _clean(text: str) -> str:
    """Letters, digits, ``.``, ``_`` and ``-`` only."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._-")


def component_label(name: Any) -> str:
    """A scheme's or kernel's name as a run name part: an import path's
    ``my_pkg.schemes:CoPE`` becomes ``my_pkg.schemes_CoPE`` (no colon in a directory name)."""
    return _clean(str(name))


def _compact(value: Any) -> str:
    try:
        return spelled(value)
    except TypeError:
        return str(value)


def corpus_label(data: Any) -> str | None:
    """A short name for a run's training corpus when it is not the bundled one (``None``
    then): the dataset's name, or the first training file's (or directory's) name without
    its extensions, or the probe task's (``data.probe``); at most 40 characters."""
    if data is None:
        return None
    source = _get(data, "dataset") or _get(data, "probe")
    if source is None:
        files = _get(data, "train_files")
        if files is None:
            return None
        first = files if isinstance(files, str) else next(iter(files), None)
        if first is None:
            return None
        name = Path(str(first).rstrip("/")).name
        source = name.split(".")[0] or name
    label = _clean(Path(str(source).rstrip("/")).name)
    return label[:40] or None


def _differing(options: Any, reference: Any) -> list[str]:
    """``<key><value>`` of each option whose value is not ``reference``'s, by key, and
    ``<key>default`` for one ``reference`` sets that ``options`` leaves to its default (a
    whole mapping given over a recipe's replaces it: ``--model.block '{mlp: gelu}'``)."""
    options = plain(options) or {}
    reference = plain(reference) or {}
    if not isinstance(options, Mapping):
        return [_compact(options)]
    reference = reference if isinstance(reference, Mapping) else {}
    parts = {
        key: f"{key}{_compact(options[key])}"
        for key in options
        if key not in reference or number(reference[key]) != number(options[key])
    }
    parts.update({key: f"{key}default" for key in reference if key not in options})
    return [parts[key] for key in sorted(parts)]


def variant_parts(model: Any, data: Any, recipe: Mapping[str, Any] | None = None) -> list[str]:
    """The name parts of the settings that make this run a variant (see the module doc);
    with a ``recipe``'s model section, only those whose values are not the recipe's."""
    reference = recipe or {}
    parts = []
    for key, show in VARIANT_PARTS:
        shown = show(_get(data, key)) if data is not None else None
        if shown:
            parts.append(shown)
    for section in ("position_kwargs", "attention_kwargs"):
        parts += _differing(_get(model, section), reference.get(section))
    plan_keys = ("position", "position_kwargs", "attention", "attention_kwargs", "layer_plan")
    theirs = {key: reference.get(key, ENCODER_DEFAULTS[key]) for key in plan_keys}
    if recipe is None or not same_plan(plain(model) or {}, theirs):
        settings = {key: plain(_get(model, key)) for key in plan_keys}
        settings.update(canonical_names(settings))  # the plan as it builds: "" without one
        label = plan_label(settings["layer_plan"], settings)
        # a recipe's plan dropped (null, or every layer plain) differs as block keys do
        parts.append(label or ("" if recipe is None else "layer_plandefault"))
    parts += _differing(_get(model, "block"), reference.get("block"))
    return [p for p in (_clean(part) for part in parts) if p]


#: An architecture setting's default (what a recipe that leaves it unset runs with).
ENCODER_DEFAULTS = {field.name: field.default for field in dataclasses.fields(EncoderConfig)}

#: The directory whose config files are recipes: runs named for them.
RECIPES_DIRECTORY = "recipes"


def recipe_of(config: Any) -> tuple[str, dict[str, Any]] | None:
    """(name, model section) of the last ``--config`` file of ``config`` that is a recipe
    (in a directory named :data:`RECIPES_DIRECTORY`), where it has an inline ``model``
    section; None otherwise. A later ``--config`` file's model settings differ from it."""
    from roformer_lit.safe_input import read_text_file, safe_yaml_load

    files = _get(config, "config") or []
    for index in range(len(files) - 1, -1, -1):
        path = Path(str(files[index]))
        if path.parent.name != RECIPES_DIRECTORY:
            continue
        try:
            document = safe_yaml_load(read_text_file(str(path), "config file"))
        except Exception:  # the parser read it already; unreadable now: no recipe name
            return None
        model = document.get("model") if isinstance(document, Mapping) else None
        if not isinstance(model, Mapping):
            return None
        reference = dict(plain(model))
        for later in files[index + 1 :]:  # later files' model settings are differences
            reference.update({k: _MOVED for k in _model_keys(later)})
        return _clean(path.stem), reference
    return None


_MOVED = object()  # a recipe setting a later --config file set again: shown if it differs


def _model_keys(file: Any) -> list[str]:
    from roformer_lit.safe_input import read_text_file, safe_yaml_load

    path = str(file)
    try:
        document = safe_yaml_load(read_text_file(path, "config file"))
    except Exception:
        return []
    model = document.get("model") if isinstance(document, Mapping) else None
    return [str(k) for k in model] if isinstance(model, Mapping) else []


def run_stem(config: Any) -> str:
    """The name stem of a new run of ``config`` (a ``fit`` configuration namespace)."""
    model, data = _get(config, "model"), _get(config, "data")
    if _get(data, "class_path") is not None:  # a data module named by its class
        data = _get(data, "init_args")
    seed = f"seed{_get(config, 'seed_everything')}"
    recipe = recipe_of(config)
    named = {key: canonical_name(key, _get(model, key)) for key in ("position", "attention")}
    if recipe is None:
        head = [component_label(named[key]) for key in ("position", "attention")] + [seed]
        reference = None
    else:
        name, reference = recipe
        head = [name]
        for key in ("position", "attention"):  # a recipe that leaves one unset: the default
            theirs = canonical_name(key, reference.get(key, ENCODER_DEFAULTS.get(key)))
            if theirs != named[key]:
                head.append(component_label(named[key]))
        head.append(seed)
    corpus = corpus_label(data)
    parts = [*head, *([corpus] if corpus else []), *variant_parts(model, data, reference)]
    return "-".join(parts)[:MAX_STEM].rstrip("._-")


def pretrained_label(run: Path | None, hyper_parameters: Mapping[str, Any]) -> str:
    """The pretrained model in a fine-tune's name, in the words its own run is named in:
    the pretrained run's directory name (``modernbert-seed0``, ``rope-softmax-seed0``) where
    the checkpoint is in one (``run``); otherwise its recorded architecture as a ``fit``
    run without a recipe names it (``<position>-<attention>[-<variant>...]``, the model
    parts of :func:`run_stem`). Two pretrained models of different names never share one."""
    if run is not None and _clean(run.name):
        return _clean(run.name)
    named = [
        component_label(canonical_name(key, hyper_parameters.get(key, ENCODER_DEFAULTS[key])))
        for key in ("position", "attention")
    ]
    return "-".join([*named, *variant_parts(hyper_parameters, None)])


def finetune_stem(
    task: str, run: Path | None, hyper_parameters: Mapping[str, Any], seed: Any
) -> str:
    """The name stem of a new fine-tune: ``<task>-<pretrained>-ftseed<N>``, as a
    ``command: finetune`` sweep names its runs (``<pretrained>``: :func:`pretrained_label`)."""
    label = pretrained_label(run, hyper_parameters)
    stem = f"{_clean(task)}-{label}-ftseed{seed}"
    return stem[:MAX_STEM].rstrip("._-")
