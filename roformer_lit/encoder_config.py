"""``EncoderConfig``: the encoder's architecture, in one typed, checked object, passed whole.

Every setting that defines the network -- its scheme and kernel, sizes, dropouts, norms,
block and layer plan -- is one field here, and everything that needs the architecture
reads it from an ``EncoderConfig``: the :class:`~roformer_lit.model.Encoder`, each
``EncoderLayer(config, layer)`` and ``SelfAttention(config, layer)``, the MLM head,
:class:`~roformer_lit.module.MaskedLM` (``model.config``), the pre-launch check, what
``--ckpt_path`` takes from a checkpoint, fine-tuning's encoder and Hugging Face export and
import. The fields are written once, here; their rules once, in
:mod:`roformer_lit.architecture_rules` (a test fails when a field has no rule).

The raw fields are data (what YAML, the command line and a checkpoint's flat
``hyper_parameters`` hold, so checkpoints of every version load unchanged); the typed
views are derived once: :attr:`EncoderConfig.block_options` (a
:class:`~roformer_lit.blocks.BlockOptions`), :attr:`EncoderConfig.layer_specs` (one
:class:`~roformer_lit.layer_plan.LayerSpec` per layer: scheme, options, window, kernel)
and :attr:`EncoderConfig.layers` (each spec with its scheme and kernel classes and checked
options). The optimiser and schedule are training settings, not architecture: they stay
``MaskedLM``'s own.

An ``EncoderConfig`` is checked once, when it is made, by
:func:`~roformer_lit.architecture_rules.check_architecture`: the one list of the
architecture's rules that the Python API, the pre-launch check and ``sweep --dry-run``
share. Each failure is one :class:`~roformer_lit.errors.ConfigError` line naming
``model.<field>``, the value and the valid ones. Nothing about this machine is checked
here, so a large checkpoint's config is read on a laptop.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from roformer_lit.architecture_rules import ResolvedLayer, check_architecture
from roformer_lit.attention import ATTENTION_KERNELS
from roformer_lit.blocks import BlockOptions
from roformer_lit.errors import ConfigError, refuse_unknown_fields
from roformer_lit.layer_plan import LayerSpec, resolve_plan
from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.registry import Registry, check_options, lookup, with_defaults
from roformer_lit.validation import TRAINING_RULES, as_data


@dataclass(frozen=True)
class EncoderConfig:
    """The encoder's architecture (see the module).

    Attributes:
        position: a position scheme: a name of ``POSITION_SCHEMES`` (``python -m
            roformer_lit schemes`` lists them), an installed plugin's, or an import path
            ``package.module:Class``; a built-in named otherwise is kept by its short name
            (:func:`canonical_names`).
        attention: an attention kernel, named the same ways (``ATTENTION_KERNELS``).
        vocab_size: the tokenizer's vocabulary (linked from the data module by the CLI).
        hidden_size: the width of the hidden states (a multiple of ``num_heads``).
        num_layers: the number of encoder layers.
        num_heads: attention heads per layer.
        intermediate_size: the feed-forward block's inner width.
        max_positions: size of position tables (a hard limit only for ``learned``).
        dropout: hidden dropout.
        attention_dropout: dropout of the attention probabilities; None: ``dropout``
            (:attr:`attention_dropout_value`).
        layer_norm_eps: the norms' epsilon everywhere.
        pre_norm: pre-LN blocks instead of BERT's post-LN.
        position_kwargs: the position scheme's options (``python -m roformer_lit schemes``
            lists each scheme's); one written in another type than the option's
            (``base: "100"``) is held as the value the scheme is built with
            (:func:`typed_options`), as the command line reads it.
        attention_kwargs: the attention kernel's options (held the same way).
        block: the block's options (:mod:`roformer_lit.blocks`); None: BERT's block. Held
            as the mapping of the options that differ from BERT's block (a
            :class:`~roformer_lit.blocks.BlockOptions`, :attr:`block_options` given back,
            too): ``{mlp: swiglu, norm: layernorm}`` is ``{mlp: swiglu}``
            (:func:`canonical_fields`, as the other fields written in another spelling of
            one model: two such configs are equal and have one checkpoint digest).
        layer_plan: each layer's scheme, kernel, their options and window
            (:mod:`roformer_lit.layer_plan`); None: every layer global with ``position``.
    """

    position: str = "rope"
    attention: str = "softmax"
    vocab_size: int = 8192
    hidden_size: int = 256
    num_layers: int = 4
    num_heads: int = 4
    intermediate_size: int = 1024
    max_positions: int = 512
    dropout: float = 0.1
    attention_dropout: float | None = None
    layer_norm_eps: float = 1e-12
    pre_norm: bool = False
    position_kwargs: dict[str, Any] | None = None
    attention_kwargs: dict[str, Any] | None = None
    block: dict[str, Any] | None = None
    layer_plan: dict[str, Any] | None = None

    def __new__(cls, *args: Any, **fields: Any) -> EncoderConfig:
        # a field the config has not (EncoderConfig(hidden=64), replace(hiden_size=64)) is
        # the user's mistake, one ConfigError line naming it and the fields, not a TypeError
        refuse_unknown_fields(cls, fields, [f.name for f in dataclasses.fields(cls)])
        return super().__new__(cls)

    def __post_init__(self) -> None:
        # the config holds its own plain copy (as_data): a caller's dict changed after the
        # check, or a NumPy number, never reaches the network or a checkpoint unchecked
        for field_name, value in from_typed_views(self.block, self.layer_plan).items():
            object.__setattr__(self, field_name, value)  # block=config.block_options
        for field in dataclasses.fields(self):
            object.__setattr__(self, field.name, as_data(getattr(self, field.name)))
        for field_name, value in canonical_names(self.as_dict()).items():
            object.__setattr__(self, field_name, value)  # a built-in by its short name
        for field_name, value in typed_options(self.as_dict()).items():
            object.__setattr__(self, field_name, value)  # base: "100" is rope's 100.0
        self.__dict__["layers"] = check_architecture(self)  # checked now, once
        # every field in the one spelling of what it builds (block: {norm: layernorm} is
        # no block, position_kwargs: {} is None): two configs of one model are equal, and
        # a checkpoint records one digest for both; the layers built are the same
        for field_name, value in canonical_fields(self.as_dict()).items():
            object.__setattr__(self, field_name, value)
            self.__dict__.pop("block_options", None)  # read again from what is held
        # what was checked: a mapping field edited in place later (config.block["mlp"] =
        # ...) is refused where it would matter (as_dict, the network), never half-used
        self.__dict__["_checked"] = copy.deepcopy(self.as_dict())

    def __hash__(self) -> int:
        # the mapping fields are dicts: hash what was checked, as equality compares it
        return hash(_hashable(self.__dict__["_checked"]))

    def check_unchanged(self) -> None:
        """Refuse a config whose mapping field (``block``, ``layer_plan``, an options dict)
        was edited in place after the rules accepted it: the network is built from what
        was checked, so a checkpoint storing the edit would load as another model. One
        ConfigError line naming the field, what was checked and what it now holds."""
        checked = self.__dict__.get("_checked")
        if checked is None:  # still being checked (__post_init__)
            return
        for name, was in checked.items():
            now = getattr(self, name)
            if now != was:
                raise ConfigError(
                    f"model.{name} was changed in place after the EncoderConfig was checked "
                    f"({was!r} -> {now!r}); an EncoderConfig is frozen: make a new one with "
                    f"config.replace({name}=...)"
                )

    @cached_property
    def block_options(self) -> BlockOptions:
        """``block``, checked (:meth:`BlockOptions.from_config`)."""
        return BlockOptions.from_config(self.block, self.pre_norm)

    @cached_property
    def layer_specs(self) -> list[LayerSpec]:
        """Each layer's scheme, options and window: ``layer_plan`` resolved
        (:func:`~roformer_lit.layer_plan.resolve_plan`; no plan: every layer the model's)."""
        return resolve_plan(
            self.layer_plan,
            self.num_layers,
            self.position,
            self.position_kwargs,
            self.attention,
            self.attention_kwargs,
        )

    @property
    def layers(self) -> list[ResolvedLayer]:
        """Each layer's spec with its scheme and kernel classes and checked options (set
        when the config is checked)."""
        return self.__dict__["layers"]

    @property
    def model_layer(self) -> LayerSpec:
        """The model's own scheme, kernel and options, as a layer without a window."""
        return LayerSpec(
            "",
            self.position,
            dict(self.position_kwargs or {}),
            None,
            self.attention,
            dict(self.attention_kwargs or {}),
        )

    @property
    def attention_dropout_value(self) -> float:
        """The attention probabilities' dropout: ``attention_dropout``, else ``dropout``."""
        return self.dropout if self.attention_dropout is None else self.attention_dropout

    def origins(self) -> dict[str, dict[str, str]]:
        """Where each scheme and kernel the layers use comes from, keyed ``position:<name>``
        and ``attention:<name>`` (:meth:`~roformer_lit.registry.Registry.origin`: built-in,
        an entry point's distribution and version, or an import path's module): what a
        checkpoint records, so a run is loaded with its own plugin or refused in one line."""
        found: dict[str, dict[str, str]] = {}
        for layer in self.layers:
            found.setdefault(
                f"position:{layer.spec.position}", POSITION_SCHEMES.origin(layer.spec.position)
            )
            found.setdefault(
                f"attention:{layer.spec.attention}", ATTENTION_KERNELS.origin(layer.spec.attention)
            )
        return found

    def as_dict(self) -> dict[str, Any]:
        """``{field: value}`` in field order (the values themselves, not copies); a mapping
        edited in place since the check is refused (:meth:`check_unchanged`)."""
        self.check_unchanged()
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], **overrides: Any) -> EncoderConfig:
        """The config of the fields among ``settings`` (a checkpoint's flat
        ``hyper_parameters``, a parsed ``model`` section, ``MaskedLM``'s arguments), then
        ``overrides``; the training settings (:data:`~roformer_lit.validation.
        TRAINING_RULES`) and Lightning's own records (``_instantiator``) are left out, a key
        that is neither is refused in one line (a typo such as ``hiden_size`` would
        otherwise build the default), and a field missing from both (a checkpoint older
        than the field) takes its default."""
        unknown = unknown_settings(settings)
        if unknown:
            raise ConfigError(
                f"unknown model setting(s) {', '.join(map(repr, unknown))}; valid: "
                f"{', '.join(model_settings())}"
            )
        values = {name: settings[name] for name in ENCODER_FIELDS if name in settings}
        return cls(**{**values, **overrides})

    def replace(self, **changes: Any) -> EncoderConfig:
        """A copy with ``changes`` (checked again)."""
        return dataclasses.replace(self, **changes)


#: The registry each name of an architecture resolves in: ``model.position`` and a layer
#: plan type's ``position``, ``model.attention`` and a type's ``attention``.
NAMED_COMPONENTS: dict[str, Registry[Any]] = {
    "position": POSITION_SCHEMES,
    "attention": ATTENTION_KERNELS,
}


def canonical_name(key: str, name: Any) -> Any:
    """``name`` of a ``position`` or ``attention`` (:data:`NAMED_COMPONENTS`) as its
    registry knows it (:meth:`~roformer_lit.registry.Registry.canonical`): a built-in
    named by its import path is its short name."""
    return NAMED_COMPONENTS[key].canonical(name)


def canonical_names(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a model section (``settings``: flat) that name a built-in in another
    spelling than its short name, each with every such name replaced: ``position``,
    ``attention`` and ``layer_plan`` (its types' ``position`` and ``attention``). Fields
    already spelled so, and a plan that is not well formed, are left out (its checks
    report it)."""
    changed = {
        key: canonical_name(key, settings[key])
        for key in NAMED_COMPONENTS
        if key in settings and canonical_name(key, settings[key]) != settings[key]
    }
    plan = settings.get("layer_plan")
    types = plan.get("types") if isinstance(plan, Mapping) else None
    if isinstance(types, Mapping):
        renamed = {name: _canonical_type(spec) for name, spec in types.items()}
        if renamed != dict(types):
            changed["layer_plan"] = {**plan, "types": renamed}
    return changed


#: The fields that hold a float: an integer written for one (``dropout: 0``) is that float.
FLOAT_FIELDS = ("dropout", "attention_dropout", "layer_norm_eps")


def canonical_fields(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a model section (``settings``: flat, names canonical and options
    typed: :func:`canonical_names`, :func:`typed_options`) written otherwise than the one
    spelling of what they build, each in that spelling, so that two spellings of one
    model are one config (equal, one hash, one checkpoint digest):

    - ``block``: the options that differ from BERT's block, ``norm_bias`` at the norm's own
      left out (:meth:`~roformer_lit.blocks.BlockOptions.as_setting`); None for BERT's;
    - ``position_kwargs``, ``attention_kwargs``: an option at its class's default left out
      (``base: 10000.0`` for rope: :func:`~roformer_lit.registry.with_defaults`, by which
      layers share a scheme and plans compare), no options (``{}``) None;
    - ``dropout``, ``attention_dropout``, ``layer_norm_eps``: an integer is its float;
    - ``attention_dropout`` equal to ``dropout``: None (``dropout``, which it is). A config
      made from another one with another ``dropout`` (``replace``, a resume typing
      ``--model.dropout``) then changes both, as for a config that never wrote it.

    ``layer_plan`` is held as written (its notes name its types and windows as written);
    plans are compared as they build by :func:`~roformer_lit.plan_identity.same_plan`.
    Fields not well formed (refused by the architecture's checks) are left out."""
    changed: dict[str, Any] = {}
    block = settings.get("block")
    if "block" in settings and (block is None or isinstance(block, Mapping)):
        try:
            options = BlockOptions.from_config(block, settings.get("pre_norm", False))
        except (ConfigError, TypeError):
            options = None
        if options is not None and options.as_setting() != block:
            changed["block"] = options.as_setting()
    defaults = encoder_defaults()
    for field, (key, _) in OPTION_FIELDS.items():
        options = settings.get(field)
        if isinstance(options, Mapping):
            own = own_options(key, settings.get(key, defaults[key]), options)
            if own != options or not own:
                changed[field] = own or None
    for field in FLOAT_FIELDS:
        value = settings.get(field)
        if isinstance(value, int) and not isinstance(value, bool):
            changed[field] = float(value)
    dropout = changed.get("dropout", settings.get("dropout", defaults["dropout"]))
    attention = changed.get("attention_dropout", settings.get("attention_dropout"))
    if attention is not None and attention == dropout:
        changed["attention_dropout"] = None
    return changed


def own_options(key: str, name: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` of the ``key`` (``position``, ``attention``: :data:`NAMED_COMPONENTS`)
    named ``name`` without those whose checked value equals the class's default, in any
    spelling the check reads as it (``"10000"``, ``10000`` and ``10000.0`` for rope's
    base; a default written ``0`` for a float option is ``0.0``), as the layer built from
    either is one (the reading by which plans compare,
    :func:`~roformer_lit.plan_identity.all_options`). The options kept are as written;
    all of them where ``name`` or the options are refused (reported by the checks). The
    one reading of an option at its default: :func:`canonical_fields` holds a config's
    options so, ``compare`` labels a run's (its numbers as it writes them)."""
    try:
        cls = lookup(NAMED_COMPONENTS[key], name, key)
        checked = check_options(cls, options, key, name)
    except ConfigError:
        return dict(options)
    defaults = with_defaults(cls, {})
    return {
        option: value
        for option, value in options.items()
        if option not in defaults or as_data(defaults[option]) != as_data(checked[option])
    }


def canonical_model(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The architecture fields of a model section (``settings``: flat; a checkpoint's
    ``hyper_parameters``, a run's ``config.yaml`` section, a fine-tune's record of its
    encoder), every field in the spelling the :class:`EncoderConfig` of those settings
    holds (:func:`canonical_names`, :func:`typed_options`, :func:`canonical_fields`),
    without building it: what every comparison of a recorded architecture with another
    compares, so a record written before a field was held so (a checkpoint's ``block`` as
    it was written) is the same architecture as a new run of the same settings. Fields
    ``settings`` leaves out stay out; other keys are kept as they are."""
    model = as_data(dict(settings))
    model.update(canonical_names(model))
    model.update(typed_options(model))
    model.update(canonical_fields(model))
    return model


def compared_model(settings: Mapping[str, Any]) -> dict[str, Any]:
    """A model section as two are compared field by field (a resumed run's typed settings,
    a sweep's finished run): :func:`canonical_model`, with ``attention_dropout`` as the
    dropout the attention applies (``dropout`` where null), so a run of ``dropout 0.1,
    attention_dropout 0.0`` and one of ``dropout 0.0`` differ in ``dropout`` alone."""
    model = canonical_model(settings)
    if "attention_dropout" in model and model["attention_dropout"] is None:
        model["attention_dropout"] = model.get("dropout", encoder_defaults()["dropout"])
    return model


def same_architecture_field(name: str, ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> bool:
    """Whether two model sections (flat: a command's, a run's record) hold field ``name``
    in spellings of one value (:func:`compared_model`: ``block: {mlp: swiglu, norm:
    layernorm}`` is ``{mlp: swiglu}``)."""
    return compared_model(ours).get(name) == compared_model(theirs).get(name)


def from_typed_views(block: Any, layer_plan: Any) -> dict[str, Any]:
    """The fields given as one of the config's typed views, each as its mapping:
    ``block`` a :class:`~roformer_lit.blocks.BlockOptions` (:attr:`EncoderConfig.
    block_options`) is the mapping of its options that differ from BERT's block, None for
    BERT's own (:meth:`~roformer_lit.blocks.BlockOptions.as_setting`), so the config equals
    the one given that mapping. ``layer_plan`` given as resolved layers
    (:attr:`EncoderConfig.layer_specs`: one spec per layer, each with the model's options
    merged in) has no one plan it came from: one ConfigError line naming the mapping to
    give instead."""
    changed: dict[str, Any] = {}
    if isinstance(block, BlockOptions):
        changed["block"] = block.as_setting()
    specs = [layer_plan] if isinstance(layer_plan, LayerSpec) else layer_plan
    if isinstance(specs, (list, tuple)) and specs and isinstance(specs[0], LayerSpec):
        raise ConfigError(
            "model.layer_plan takes the plan's mapping ({pattern: [...]} or {layers: [...]}, "
            "with types: {<type>: {window, position, position_kwargs, attention, "
            "attention_kwargs}}), not the resolved layers of config.layer_specs; pass "
            "config.layer_plan (None: every layer the model's)"
        )
    return changed


#: The option fields of a model section or a layer plan type: each with the setting that
#: names their scheme or kernel and the registry it resolves in.
OPTION_FIELDS: dict[str, tuple[str, Registry[Any]]] = {
    "position_kwargs": ("position", POSITION_SCHEMES),
    "attention_kwargs": ("attention", ATTENTION_KERNELS),
}


def typed_options(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a model section (``settings``: flat, names canonical) holding a scheme
    or kernel option written in another type than the option's (``base: "100"`` for
    rope's float base), each with every such option as the scheme or kernel is built with
    it: the value :func:`~roformer_lit.registry.check_options` converts it to, as the
    command line's parser reads ``{base: "100"}`` as ``100``. So two configs that build
    the same model are equal, and a checkpoint, ``compare`` and run names record the
    number. ``position_kwargs``, ``attention_kwargs`` and a layer plan type's own are
    read; an option of another type that is the same value (``100`` for ``100.0``) is
    held in the option's type too, so both spellings have one digest. Options the check refuses, and fields not well formed, are left out
    (the architecture's checks report them)."""
    changed = {
        field: typed
        for field, (key, registry) in OPTION_FIELDS.items()
        if field in settings
        and (typed := _typed(settings[field], registry, key, settings.get(key))) is not None
    }
    plan = settings.get("layer_plan")
    types = plan.get("types") if isinstance(plan, Mapping) else None
    if isinstance(types, Mapping):
        retyped = {name: _typed_type(spec, settings) for name, spec in types.items()}
        if any(retyped[name] is not spec for name, spec in types.items()):
            changed["layer_plan"] = {**plan, "types": retyped}
    return changed


def _typed_type(spec: Any, settings: Mapping[str, Any]) -> Any:
    """A layer plan type's settings with its own options typed (:func:`typed_options`);
    ``spec`` itself where none changes."""
    if not isinstance(spec, Mapping):
        return spec
    typed = {
        field: _typed(spec[field], registry, key, spec.get(key, settings.get(key)))
        for field, (key, registry) in OPTION_FIELDS.items()
        if field in spec
    }
    changed = {field: options for field, options in typed.items() if options is not None}
    return {**spec, **changed} if changed else spec


def _typed(options: Any, registry: Registry[Any], key: str, name: Any) -> dict[str, Any] | None:
    """``options`` of ``key`` ``name`` with each option whose checked value differs from
    the one written replaced by it; None where none differs, or where ``name`` or the
    options are refused (reported by the checks)."""
    if not isinstance(options, Mapping) or not options or not isinstance(name, str):
        return None
    try:
        checked = check_options(lookup(registry, name, key), options, key, name)
    except ConfigError:
        return None
    if all(_same(value, checked[option]) for option, value in options.items()):
        return None
    return {
        option: value if _same(value, checked[option]) else as_data(checked[option])
        for option, value in options.items()
    }


def _same(written: Any, checked: Any) -> bool:
    """Whether an option written as ``written`` is the value ``checked``, of its type:
    ``100`` is not ``100.0`` (one value, but a checkpoint's digest tells them apart)."""
    return type(written) is type(checked) and written == checked


def _canonical_type(spec: Any) -> Any:
    """A layer plan type's settings with its ``position``/``attention`` canonical."""
    if not isinstance(spec, Mapping):
        return spec
    return {k: canonical_name(k, v) if k in NAMED_COMPONENTS else v for k, v in spec.items()}


#: The fields of :class:`EncoderConfig`, in order: the ``model.*`` keys of the architecture.
ENCODER_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(EncoderConfig))


def model_settings() -> list[str]:
    """Every setting of :class:`~roformer_lit.module.MaskedLM`, in its flat spelling: the
    architecture's fields, then the training settings (the keys of their rule table,
    :data:`~roformer_lit.validation.TRAINING_RULES`)."""
    return [*ENCODER_FIELDS, *TRAINING_RULES]


def unknown_settings(settings: Mapping[str, Any]) -> list[str]:
    """The keys of ``settings`` (a flat model section, a checkpoint's ``hyper_parameters``)
    that are no setting (:func:`model_settings`); Lightning's own records (a leading
    underscore: ``_instantiator``, ``_class_path``) are not settings."""
    known = set(model_settings())
    return [str(key) for key in settings if key not in known and not str(key).startswith("_")]


def _hashable(value: Any) -> Any:
    """``value`` (plain data) as nested tuples, mappings order-free: equal data, equal hash."""
    if isinstance(value, Mapping):
        return frozenset((key, _hashable(item)) for key, item in value.items())
    if isinstance(value, list):
        return tuple(_hashable(item) for item in value)
    return value


def encoder_defaults(config_class: type[EncoderConfig] = EncoderConfig) -> dict[str, Any]:
    """``{field: default}`` of every field of ``config_class``."""
    return {f.name: f.default for f in dataclasses.fields(config_class)}
