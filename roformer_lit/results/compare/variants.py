"""Which runs are the same experiment: variants are formed from hyperparameters, never seeds.

A variant is ``position-attention`` plus every other hyperparameter whose value differs
between the runs being compared (nested dicts such as ``position_kwargs`` are compared key
by key), written ``name=value``. A layer plan is compared as what it builds
(:func:`roformer_lit.plan_identity.canonical_plan`: ``layers:`` and ``pattern:`` spellings
of one plan are one variant), setting by setting: its pattern (``pattern=...``), and each
type's scheme, options and window, named ``<type>.<setting>`` (``global.position=nope``,
``global.base=160000``, ``local.window=128``). Keys a run does not set are left out of its
label (they take the scheme's default), and so are the scheme's and kernel's options
written at their default (``position_kwargs: {base: 10000}`` is rope without it); a top-level key a run does not save (a run from
before the option existed) compares as the constructors' default (:func:`saved_defaults`).
A run whose hyperparameter files could not all be read (``RunSummary.problems``) is
*partial*: a key it lacks is unknown, not unset, and does not split it from the runs that
have it. Seeds (``seed_everything``, the data ``seed``) and bookkeeping keys
(:data:`IGNORED_KEYS`, top-level keys only) never split variants: runs differing only in
them are the seeds of one variant.

Runs that agree on every setting but trained on other data -- the same ``data.*`` paths
naming files whose content differed (:mod:`roformer_lit.training.data_identity`) -- are
never seeds of one variant: their recorded data identities differ in :data:`DATA_KEY`,
labelled with its first hex digits (``data=1a2b3c4d``). A run without a record (from
before it, a position task) has an unknown identity, which splits it from no run. So are
runs of one plugin name whose checkpoints record other code under it (another class, other
options over its defaults: :mod:`~roformer_lit.results.compare.components`), labelled
``plugins.<what>:<name>=<hex digits>`` (other classes) or ``plugin_options...`` (other
options); a run recording none splits from no run.

    rope-softmax
    deberta-softmax c2p=false
    deberta-softmax p2c=false
    rope-softmax max_length=512
"""

from __future__ import annotations

import ast
import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from roformer_lit.encoder_config import canonical_model, own_options
from roformer_lit.plan_identity import all_options, model_plan, number, plain
from roformer_lit.results.compare.runs import RunSummary
from roformer_lit.training.data_identity import short_identity

#: Hyperparameters that never tell variants apart (top-level keys only: a layer type's
#: ``position`` inside ``layer_plan`` is a setting like any other).
IGNORED_KEYS = frozenset(
    {"seed", "seed_everything", "cache_dir", "num_workers", "position", "attention"}
)
#: The key of a run's data identity among what tells runs apart (:func:`identity`); a run
#: without one does not split from the runs that have one (unknown, not unset).
DATA_KEY = "data"
#: The key, per plugin name (``plugins.position:logdist``), of the identity of the class
#: that name was: runs of one plugin name whose code differed are never seeds of one
#: variant; like :data:`DATA_KEY`, a run without one splits from no run.
PLUGINS_KEY = "plugins"
#: The key, per plugin name, of the identity of its options over their defaults (like
#: :data:`PLUGINS_KEY`; a run from before their record splits from no run).
PLUGIN_OPTIONS_KEY = "plugin_options"
#: Keys (and key prefixes, for a mapping) a run without them has unknown, not unset.
RECORDED_KEYS = frozenset({DATA_KEY, PLUGINS_KEY, PLUGIN_OPTIONS_KEY})


def _recorded(key: str) -> bool:
    """Whether flattened ``key`` is a recorded identity (:data:`RECORDED_KEYS`)."""
    return key.split(".", 1)[0] in RECORDED_KEYS


#: The prefix of a layer type's settings among the flattened keys.
PLAN_TYPES = "layer_plan.types."
_MISSING = object()


def flatten(hparams: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"position_kwargs": {"c2p": False}}`` -> ``{"position_kwargs.c2p": False}``."""
    flat: dict[str, Any] = {}
    for key, value in hparams.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, f"{name}."))
        elif not (isinstance(value, Mapping) and not value):  # {} adds nothing
            flat[name] = value
    return flat


#: The classes whose constructor arguments runs save as hyperparameters: (source file
#: relative to the package, class name). Read as source (:func:`saved_defaults`), so
#: reading runs never imports the training stack.
SAVED_CLASSES = (
    # MaskedLM saves the fields of its two configs, flat (module_arguments.FLAT_KEYS)
    ("encoder_config.py", "EncoderConfig"),
    ("training_config.py", "TrainingConfig"),
    ("data/datamodule.py", "PretrainDataModule"),
    ("data/corpus_module.py", "CorpusDataModule"),
    ("data/probe_module.py", "ProbeDataModule"),
    ("finetune/module.py", "SequenceClassifier"),
    ("finetune/datamodule.py", "TaskDataModule"),
)


def constructor_defaults(source: Path, class_name: str) -> dict[str, Any]:
    """The literal default values of ``class_name.__init__``'s arguments in ``source`` (of
    a dataclass: its fields' defaults), read with ``ast`` (a default that is not a literal
    is left out), each under the name the class saves it as (its literal ``SAVED_AS`` table:
    ``vocab_size`` is saved as ``requested_vocab_size`` by the corpus data module)."""
    tree = ast.parse(source.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            saved_as = _saved_as(node)
            if not any(
                isinstance(item, ast.FunctionDef) and item.name == "__init__" for item in node.body
            ):
                return _field_defaults(node)
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    args = item.args
                    positional = args.posonlyargs + args.args
                    pairs = list(
                        zip(
                            positional[len(positional) - len(args.defaults) :],
                            args.defaults,
                            strict=True,
                        )
                    )
                    pairs += [
                        (a, d)
                        for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
                        if d is not None
                    ]
                    out = {}
                    for arg, default in pairs:
                        try:
                            out[saved_as.get(arg.arg, arg.arg)] = ast.literal_eval(default)
                        except ValueError:
                            continue
                    return out
    raise LookupError(f"{class_name}.__init__ not found in {source}")


def _field_defaults(node: ast.ClassDef) -> dict[str, Any]:
    """A dataclass body's ``name: type = literal`` fields (a non-literal default left out)."""
    out = {}
    for item in node.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value:
            try:
                out[item.target.id] = ast.literal_eval(item.value)
            except ValueError:
                continue
    return out


def _saved_as(node: ast.ClassDef) -> dict[str, str]:
    """A class body's literal ``SAVED_AS = {argument: saved name}`` (annotated or not)."""
    for item in node.body:
        target = getattr(item, "target", None) or (getattr(item, "targets", None) or [None])[0]
        if isinstance(target, ast.Name) and target.id == "SAVED_AS" and item.value is not None:
            return dict(ast.literal_eval(item.value))
    return {}


@functools.cache
def saved_defaults() -> dict[str, Any]:
    """Constructor defaults of the classes whose arguments runs save as hyperparameters
    (:data:`SAVED_CLASSES`), for the names on which they all agree. A run made before a
    hyperparameter existed (``document_mask``, say) does not save it and had its default,
    so it is compared as having that value."""
    package = Path(__file__).resolve().parents[2]  # roformer_lit/
    seen: dict[str, set[str]] = {}
    values: dict[str, Any] = {}
    for source, class_name in SAVED_CLASSES:
        for name, default in constructor_defaults(package / source, class_name).items():
            seen.setdefault(name, set()).add(format_value(default))
            values[name] = default
    return {name: values[name] for name, formats in seen.items() if len(formats) == 1}


def differing_keys(
    hparams_list: Sequence[Mapping[str, Any]], partial: Sequence[bool] | None = None
) -> list[str]:
    """Flattened keys (seeds and :data:`IGNORED_KEYS` excluded) whose values differ. A key
    a run lacks counts as its default (:func:`saved_defaults`) where one is known. Where
    ``partial[i]`` is true, a key missing from ``hparams_list[i]`` is unknown and ignored."""
    flats = [flatten(comparable(h)) for h in hparams_list]
    partial = partial if partial is not None else [False] * len(flats)
    keys = sorted({k for f in flats for k in f})
    defaults = saved_defaults()
    out = []
    for key in keys:
        if key in IGNORED_KEYS:
            continue
        values = {
            format_value(f.get(key, defaults.get(key, _MISSING)))
            for f, unknown in zip(flats, partial, strict=True)
            if key in f or not (unknown or _recorded(key))
        }
        if len(values) > 1:
            out.append(key)
    return out


def variant_labels(
    hparams_list: Sequence[Mapping[str, Any]], partial: Sequence[bool] | None = None
) -> list[str]:
    """One label per hyperparameter set; equal labels mean the same variant (``partial``:
    see :func:`differing_keys`)."""
    settings = setting_labels(hparams_list, partial)
    return [
        " ".join(
            part for part in (f"{h.get('position', '?')}-{h.get('attention', '?')}", words) if part
        )
        for h, words in zip(hparams_list, settings, strict=True)
    ]


def setting_labels(
    hparams_list: Sequence[Mapping[str, Any]], partial: Sequence[bool] | None = None
) -> list[str]:
    """Per hyperparameter set, the ``name=value`` words of the keys that differ among the
    sets (:func:`differing_keys`: never a seed, a data identity by its first hex digits),
    ``""`` where none differ: :func:`variant_labels` without the ``position-attention``
    head, for sets that are not models (``extrapolate``'s baselines label the data they
    were scored on by it)."""
    keys = differing_keys(hparams_list, partial)
    names = _short_names(keys)
    labels = []
    for hparams in hparams_list:
        flat = flatten(comparable(hparams))
        labels.append(" ".join(f"{names[k]}={_label_value(k, flat[k])}" for k in keys if k in flat))
    return labels


def _label_value(key: str, value: Any) -> str:
    """A value as a label writes it: a data identity by its first hex digits."""
    return short_identity(str(value)) if _recorded(key) else format_value(value)


def assign_variants(runs: Sequence[RunSummary]) -> list[RunSummary]:
    """Copies of ``runs`` with ``variant`` set from what differs among all of them."""
    labels = variant_labels([identity(r) for r in runs], [bool(r.problems) for r in runs])
    return [replace(run, variant=label) for run, label in zip(runs, labels, strict=True)]


def comparable(hparams: Mapping[str, Any], every_option: bool = False) -> dict[str, Any]:
    """A run's hyperparameters with its layer plan in the one form of
    :func:`~roformer_lit.plan_identity.canonical_plan` (left out where it builds the
    model without a plan), and its scheme's and kernel's options without those written at
    their class's default (:func:`~roformer_lit.encoder_config.own_options`, numbers as
    :func:`~roformer_lit.plan_identity.number` writes them); with ``every_option``, every option, the
    defaults included (the value ``--select base`` reads: 10000 written or not). The other
    architecture fields are read as the config holds them
    (:func:`~roformer_lit.encoder_config.canonical_model`: a run's ``block`` recorded as
    written, ``{mlp: swiglu, norm: layernorm}``, is a new run's ``{mlp: swiglu}``)."""
    out = canonical_model(hparams)
    if "layer_plan" in out:
        plan = model_plan(out)  # read over the options as written: the plan's own reading
        if plan is None:
            out.pop("layer_plan")
        else:
            out["layer_plan"] = plan
    for what in OPTION_KEYS:
        options = out.get(f"{what}_kwargs")
        options = {} if options is None else options  # unsaved or null: none (defaults)
        if isinstance(options, Mapping) and what in out:
            out[f"{what}_kwargs"] = (
                all_options(what, out[what], options)
                if every_option
                else number(plain(own_options(what, out[what], options)))
            )
    return out


#: The registries whose options runs save as ``<name>_kwargs`` (scheme, kernel).
OPTION_KEYS = ("position", "attention")


def identity(run: RunSummary) -> dict[str, Any]:
    """What tells ``run`` apart: its hyperparameters, scheme and kernel, its data identity
    where it recorded one (:data:`DATA_KEY`), and its plugins' where its checkpoint
    records any (:data:`PLUGINS_KEY`)."""
    found = {**run.hparams, "position": run.position, "attention": run.attention}
    if run.data_identity is not None:
        found[DATA_KEY] = run.data_identity
    if run.plugin_identity:
        found[PLUGINS_KEY] = dict(run.plugin_identity)
    if run.plugin_options:
        found[PLUGIN_OPTIONS_KEY] = dict(run.plugin_options)
    return found


def data_note(runs: Sequence[RunSummary], what: str = "these runs") -> str | None:
    """The one ``note:`` line of a comparison whose runs recorded different data identities
    (they are tabled apart, :data:`DATA_KEY`), naming each with its number of runs; None
    where they recorded at most one. ``what``: the runs as the line names them."""
    counts: dict[str, int] = {}
    for run in runs:
        if run.data_identity is not None:
            counts[run.data_identity] = counts.get(run.data_identity, 0) + 1
    if len(counts) < 2:
        return None
    each = ", ".join(
        f"data={short_identity(found)} ({n} run{'s' * (n != 1)})"
        for found, n in sorted(counts.items())
    )
    why = " (runs of the same settings among them: their files' content differed)"
    return (
        f"note: {what} trained on {len(counts)} different data sets"
        f"{why if _same_settings_other_data(runs) else ''}, tabled apart: {each}"
    )


def _same_settings_other_data(runs: Sequence[RunSummary]) -> bool:
    """Whether two of ``runs`` recorded different data identities with the same settings
    (every hyperparameter but the seeds alike): the same paths named files whose content
    differed, which their settings cannot show."""
    seen: dict[str, set[str]] = {}
    for run in runs:
        if run.data_identity is None:
            continue
        settings = {k: v for k, v in run.hparams.items() if "seed" not in str(k)}
        key = repr(sorted(settings.items(), key=lambda item: str(item[0])))
        seen.setdefault(key, set()).add(run.data_identity)
    return any(len(identities) > 1 for identities in seen.values())


def short_name(key: str) -> str:
    """A flattened key as a label names it: a layer type's setting as ``<type>.<setting>``
    (``layer_plan.types.global.position_kwargs.base`` -> ``global.base``), any other key
    by its last dotted component."""
    if _recorded(key):  # plugins.position:logdist: the whole name says which plugin
        return key
    if key.startswith(PLAN_TYPES):
        parts = key[len(PLAN_TYPES) :].split(".")
        return f"{parts[0]}.{parts[-1]}"
    return key.rsplit(".", 1)[-1]


def _short_names(keys: list[str]) -> dict[str, str]:
    """:func:`short_name` of each key, or the whole key where that is ambiguous."""
    shorts = [short_name(k) for k in keys]
    return {k: s if shorts.count(s) == 1 else k for k, s in zip(keys, shorts, strict=True)}


def format_value(value: Any) -> str:
    """A hyperparameter's value as a label writes it: a string as itself, anything else as
    compact JSON."""
    if value is _MISSING:
        return "<unset>"
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    except TypeError:
        return repr(value)
