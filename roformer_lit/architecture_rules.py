"""The architecture's rules, in one table: every check of an encoder's settings.

An :class:`~roformer_lit.encoder_config.EncoderConfig` runs :func:`check_architecture`
when it is made, so the Python API (``EncoderConfig(...)``, ``MaskedLM(...)``), the
pre-launch check of ``fit`` and ``sweep --dry-run`` (:mod:`roformer_lit.commands.prelaunch`)
and a checkpoint's settings all run the same list, in this order:

1. :data:`FIELD_RULES`: each field's type and range (``model.num_heads must be a positive
   integer``);
2. :data:`FIELD_CROSS_RULES`: rules over several fields (heads divide the hidden size);
3. the block's options (:meth:`~roformer_lit.blocks.BlockOptions.from_config`) and the
   layer plan's form (:func:`~roformer_lit.layer_plan.resolve_plan`);
4. each layer's scheme and kernel resolved by name (built-in, entry point or import path:
   :class:`~roformer_lit.registry.Registry`) with typed options;
5. :data:`LAYER_RULES`: the combinations, read from what each scheme and kernel
   *declares* (:mod:`roformer_lit.capabilities`), never from a name: a score bias on a
   kernel that cannot take one, a window on a kernel without windows, a scheme that adds
   to the embeddings varied per layer, attention dropout on a kernel without it, the
   model's scheme used by no layer or training nothing;
6. every scheme and kernel constructed once on PyTorch's ``meta`` device (no memory, no
   random numbers drawn), which runs their own range checks (``rope base must be > 1``).

Each failure is one :class:`~roformer_lit.errors.ConfigError` line naming the setting, the
value and the valid ones. Nothing here depends on the machine: the weights' bytes against
this machine's memory are the pre-launch check's (a checkpoint's config is read anywhere).
The network's ``forward`` raises nothing for a setting, except a kernel that cannot train
on the device it is trained on (:func:`kernels_train_on`: the device is known only then).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

import torch

from roformer_lit.attention import ATTENTION_KERNELS, AttentionKernel
from roformer_lit.capabilities import KernelCapabilities, SchemeCapabilities
from roformer_lit.errors import ConfigError, PluginBuildFailed
from roformer_lit.layer_plan import LayerSpec
from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.positions.base import EncoderShape, PositionScheme
from roformer_lit.registry import Registry, check_options, construct, lookup, with_defaults
from roformer_lit.validation import (
    PREFIX,
    Rule,
    boolean,
    check_arguments,
    divisors,
    float32_positive,
    mapping,
    optional,
    size,
    text,
    unit_interval_open_right,
)

if TYPE_CHECKING:
    from roformer_lit.encoder_config import EncoderConfig

#: Every field of the architecture and what it accepts.
FIELD_RULES: dict[str, Rule] = {
    "position": text,
    "attention": text,
    "vocab_size": size(2),  # one token: no prediction to make (and no metric)
    "hidden_size": size(),
    "num_layers": size(),
    "num_heads": size(),
    "intermediate_size": size(),
    "max_positions": size(),
    "dropout": unit_interval_open_right,
    "attention_dropout": optional(unit_interval_open_right),
    "layer_norm_eps": float32_positive,
    "pre_norm": boolean,
    "position_kwargs": optional(mapping),
    "attention_kwargs": optional(mapping),
    "block": optional(mapping),  # its keys: roformer_lit.blocks.BLOCK_RULES
    "layer_plan": optional(mapping),  # its keys: roformer_lit.layer_plan
}


def _heads_divide_hidden(fields: Mapping[str, Any]) -> None:
    hidden, heads = fields["hidden_size"], fields["num_heads"]
    if hidden % heads:
        raise ConfigError(
            f"{PREFIX}hidden_size {hidden} is not divisible by num_heads {heads}; "
            f"valid {PREFIX}num_heads for it: {divisors(hidden)}"
        )


#: (fields needed, check): rules over several fields, run when all are given and valid.
FIELD_CROSS_RULES: list[tuple[tuple[str, ...], Callable[[Mapping[str, Any]], None]]] = [
    (("hidden_size", "num_heads"), _heads_divide_hidden),
]


def check_fields(fields: Mapping[str, Any]) -> None:
    """:data:`FIELD_RULES` for the fields among ``fields``, then each rule of
    :data:`FIELD_CROSS_RULES` whose fields are all given."""
    given = {name: value for name, value in fields.items() if name in FIELD_RULES}
    check_arguments(given, FIELD_RULES, PREFIX)
    for needed, cross_check in FIELD_CROSS_RULES:
        if all(name in given for name in needed):
            cross_check(given)


@dataclass(frozen=True)
class ResolvedLayer:
    """One layer's spec with its scheme and kernel classes and checked options."""

    index: int
    spec: LayerSpec
    scheme: type[PositionScheme]
    scheme_options: dict[str, Any]
    kernel: type[AttentionKernel]
    kernel_options: dict[str, Any]

    @cached_property
    def scheme_key(self) -> tuple[str, str]:
        """Layers with equal keys share one scheme instance (:func:`scheme_key`)."""
        return scheme_key(self.spec.position, self.scheme, self.scheme_options)

    @property
    def scheme_capabilities(self) -> SchemeCapabilities:
        return self.scheme.capabilities(self.scheme_options)

    @property
    def kernel_capabilities(self) -> KernelCapabilities:
        return self.kernel.capabilities(self.kernel_options)

    def build_kernel(self) -> AttentionKernel:
        """The layer's kernel, built with its checked options (:func:`construct`)."""
        return construct(self.kernel, "attention", self.spec.attention, **self.kernel_options)

    def where(self, model: LayerSpec) -> str:
        """`` (layer type 'local')`` where the layer's scheme or kernel is not the model's."""
        same = (self.spec.position, self.spec.attention) == (model.position, model.attention)
        return "" if same else f" (layer type {self.spec.type!r})"


def scheme_key(
    name: str, scheme: type[PositionScheme], options: Mapping[str, Any]
) -> tuple[str, str]:
    """What a scheme instance is: its name and every option's value, the checked
    ``options`` over the defaults of its signature. Layers with equal keys share one
    instance, so an option written at its default (``num_buckets: 32`` in a layer type of a
    T5 model) or in another spelling (``base: 10000`` for ``10000.0``) is the instance
    without it, not a second one with parameters of its own. The options are read by
    :func:`~roformer_lit.registry.with_defaults`, as plan identity reads them."""
    return name, repr(sorted(with_defaults(scheme, options).items()))


def model_scheme_key(config: EncoderConfig) -> tuple[str, str]:
    """:func:`scheme_key` of the model's own scheme and options."""
    model = config.model_layer
    scheme = lookup(POSITION_SCHEMES, model.position, "position")
    options = check_options(scheme, model.position_kwargs, "position", model.position)
    return scheme_key(model.position, scheme, options)


def resolve_layers(specs: Sequence[LayerSpec]) -> list[ResolvedLayer]:
    """Each spec's scheme and kernel looked up (one line for an unknown name, an import
    path that imports nothing or a component of the wrong kind) with typed options."""
    layers = []
    for index, spec in enumerate(specs):
        with written_at(spec.written_path("position")):
            scheme = lookup(POSITION_SCHEMES, spec.position, "position")
        with written_at(spec.written_path("attention")):
            kernel = lookup(ATTENTION_KERNELS, spec.attention, "attention")
        layers.append(
            ResolvedLayer(
                index,
                spec,
                scheme,
                check_options(
                    scheme,
                    spec.position_kwargs,
                    "position",
                    spec.position,
                    lambda key, spec=spec: spec.path("position_kwargs", key),
                ),
                kernel,
                check_options(
                    kernel,
                    spec.attention_kwargs,
                    "attention",
                    spec.attention,
                    lambda key, spec=spec: spec.path("attention_kwargs", key),
                ),
            )
        )
    return layers


@contextmanager
def written_at(path: str | None, option_at: Callable[[str], str] | None = None) -> Iterator[None]:
    """A ConfigError raised inside, led by where the user wrote what failed, so a scheme's
    or kernel's own words (``rope base must be > 1``) name the setting the user typed:
    ``option_at(error.option)`` where the error names the option it refused and
    ``option_at`` is given (``model.layer_plan.types.local.position_kwargs.base: ...``),
    else ``path`` (:meth:`~roformer_lit.layer_plan.LayerSpec.written_path`; None: the
    error as raised). A message that already begins with that path is left as it is, and
    so is a plugin's failure to build (:class:`~roformer_lit.errors.PluginBuildFailed`: it
    names the plugin and its options, and no option is known to be at fault)."""
    try:
        yield
    except PluginBuildFailed:
        raise
    except ConfigError as exc:
        option = exc.option
        lead = option_at(option) if option is not None and option_at is not None else path
        if lead is None or str(exc).startswith(lead):
            raise
        raise ConfigError(f"{lead}: {exc}", option=option) from None


def _registered_that(registry: Registry, predicate: Callable[[Any], bool]) -> str:
    # the names that load: a broken plugin is reported where it is used, not here
    loaded = registry.loadable().components
    names = [name for name, cls in loaded.items() if predicate(cls.capabilities())]
    return ", ".join(sorted(names)) or "none"


def kernels_that(predicate: Callable[[KernelCapabilities], bool]) -> str:
    """The registered kernels whose default capabilities satisfy ``predicate``, in words:
    the valid choices a refusal names."""
    return _registered_that(ATTENTION_KERNELS, predicate)


def schemes_that(predicate: Callable[[SchemeCapabilities], bool]) -> str:
    """The registered schemes whose default claims satisfy ``predicate``, in words."""
    return _registered_that(POSITION_SCHEMES, predicate)


def kernels_train_on(config: EncoderConfig, device: str, here: str) -> None:
    """Every layer's kernel that declares the devices it trains on
    (:attr:`~roformer_lit.capabilities.KernelCapabilities.training_devices`: softmax's
    ``backend: flex`` has no backward on the CPU) must train on ``device`` (a device type:
    ``cpu``, ``cuda``, ``mps``); ``here`` says why the model trains there (the trainer's
    accelerator, the module's device). One ConfigError line naming the kernel, the device
    and the kernels that train there: the pre-launch check's rule and the model's, which
    learns its device only when it trains (:meth:`~roformer_lit.model.Encoder.forward`)."""
    for layer in config.layers:
        devices = layer.kernel_capabilities.training_devices
        if devices is None or device in devices:
            continue
        options = "".join(f", {k}={v!r}" for k, v in layer.kernel_options.items())
        valid = kernels_that(lambda c: c.training_devices is None or device in c.training_devices)
        raise ConfigError(
            f"attention {layer.spec.attention!r}{options}{layer.where(config.model_layer)} "
            f"trains on {'/'.join(devices)} only; {here}; valid attention kernels on {device} "
            f"(with their default options): {valid}"
        )


def takes_score_bias(scheme: SchemeCapabilities, kernel: KernelCapabilities) -> bool:
    """Whether a kernel of ``kernel``'s declared capabilities can run a layer of a scheme of
    ``scheme``'s: a scheme that adds a score bias needs a kernel that takes one. The rule
    of :func:`bias_needs_a_kernel_that_takes_it`, and what ``bench`` pairs by."""
    return not scheme.needs_score_bias or kernel.score_bias


def bias_needs_a_kernel_that_takes_it(config: EncoderConfig, layers: list[ResolvedLayer]) -> None:
    """A scheme that adds a score bias needs a kernel that materialises scores."""
    for layer in layers:
        if not takes_score_bias(layer.scheme_capabilities, layer.kernel_capabilities):
            where = layer.where(config.model_layer)
            raise ConfigError(
                f"position {layer.spec.position!r}{where} adds a score bias, which attention "
                f"{layer.spec.attention!r} cannot take; valid attention kernels for "
                f"{layer.spec.position!r}: {kernels_that(lambda c: c.score_bias)}"
            )


def window_needs_a_kernel_with_windows(config: EncoderConfig, layers: list[ResolvedLayer]) -> None:
    """A windowed layer needs a kernel that restricts attention to a band."""
    for layer in layers:
        if layer.spec.window is not None and not layer.kernel_capabilities.window:
            raise ConfigError(
                f"model.layer_plan type {layer.spec.type!r} has window {layer.spec.window}, "
                f"which attention {layer.spec.attention!r} cannot restrict to; valid attention "
                f"kernels with windows: {kernels_that(lambda c: c.window)}"
            )


#: The kernel options that act only in some layers: (the options a kernel declares, whether
#: a layer is one they act in, what such a layer is, in words).
CONDITIONAL_OPTIONS: tuple[
    tuple[Callable[[KernelCapabilities], tuple[str, ...]], Callable[[ResolvedLayer], bool], str],
    ...,
] = (
    (lambda kernel: kernel.window_options, lambda layer: layer.spec.window is not None, "window"),
    (
        lambda kernel: kernel.bias_options,
        lambda layer: layer.scheme_capabilities.needs_score_bias,
        "scheme that adds a score bias",
    ),
)


def kernel_options_take_effect(config: EncoderConfig) -> None:
    """A kernel option that acts only in some layers (:data:`CONDITIONAL_OPTIONS`:
    softmax's ``window_block`` in windowed ones, ``bias_block`` and ``bias_block_from``
    where the scheme adds a score bias), written (in ``model.attention_kwargs`` or a layer
    type's) where no layer it reaches is one: one line naming it, its value and the layers.
    It would change nothing but the run's name (``rope-softmax-seed0-window_block64``, the
    same experiment as ``rope-softmax-seed0``), as ``data.random_positions`` with no
    scheme that reads positions would. A rule of a new run
    (:func:`~roformer_lit.commands.prelaunch.check_fit_config`), not of the architecture:
    a checkpoint written with it still loads."""
    for declared, acts_in, kind in CONDITIONAL_OPTIONS:
        reached: dict[tuple[str, Any], bool] = {}
        for layer in config.layers:
            for option in declared(layer.kernel_capabilities):
                if option in layer.spec.attention_kwargs:
                    value = layer.spec.attention_kwargs[option]
                    key = (layer.spec.path("attention_kwargs", option), value)
                    reached[key] = reached.get(key, False) or acts_in(layer)
        for (path, value), acts in reached.items():
            if acts:
                continue
            layers = {
                layer.spec.type: (
                    f"{layer.spec.position}, "
                    + ("global" if layer.spec.window is None else f"window {layer.spec.window}")
                )
                for layer in config.layers
            }
            where = (
                "the model has no model.layer_plan; every layer: " + next(iter(layers.values()))
                if config.layer_plan is None
                else "the layers' types: "
                + ", ".join(f"{name} ({what})" for name, what in layers.items())
            )
            raise ConfigError(
                f"{path}={value!r} acts only in a layer with a {kind}, and no layer it reaches "
                f"has one ({where}); drop it"
            )


def embedding_schemes_do_not_vary(config: EncoderConfig, layers: list[ResolvedLayer]) -> None:
    """A scheme that adds positions to the embeddings acts once, before every layer: it
    cannot be one layer's scheme while other layers differ from the model's."""
    model, model_key = config.model_layer, model_scheme_key(config)
    varied = [layer for layer in layers if layer.scheme_key != model_key]
    if not varied:
        return
    model_scheme = lookup(POSITION_SCHEMES, model.position, "position")
    model_options = check_options(model_scheme, model.position_kwargs, "position", model.position)
    candidates = [(model.position, model_scheme.capabilities(model_options))]
    candidates += [(v.spec.position, v.scheme_capabilities) for v in varied]
    embedding = [name for name, capabilities in candidates if capabilities.embeds]
    if embedding:
        valid = schemes_that(lambda c: not c.embeds)
        raise ConfigError(
            f"position {embedding[0]!r} adds positions to the embeddings once, so it cannot "
            f"vary per layer in model.layer_plan; valid per-layer schemes: {valid}"
        )


def model_position_is_used(config: EncoderConfig, layers: list[ResolvedLayer]) -> None:
    """``model.position`` must be the scheme of at least one layer."""
    used = list(dict.fromkeys(layer.spec.position for layer in layers))
    if config.position not in used:
        raise ConfigError(
            f"no layer of model.layer_plan uses model.position {config.position!r}; set "
            f"model.position to a scheme a layer uses: {', '.join(used)}"
        )


def dropout_needs_a_kernel_with_dropout(config: EncoderConfig, layers: list[ResolvedLayer]) -> None:
    """An explicit ``model.attention_dropout > 0`` needs kernels that apply it (null means
    ``model.dropout`` where a layer's kernel has attention dropout, none where it has not)."""
    if not config.attention_dropout:
        return
    for layer in layers:
        if not layer.kernel_capabilities.dropout:
            options = "".join(f", {k}={v!r}" for k, v in layer.kernel_options.items())
            raise ConfigError(
                f"model.attention_dropout={config.attention_dropout!r} needs a kernel with "
                f"attention dropout; attention {layer.spec.attention!r}{options}"
                f"{layer.where(config.model_layer)} has none; set model.attention_dropout 0 "
                f"(or null), or use one of: {kernels_that(lambda c: c.dropout)}"
            )


#: The rules over the resolved layers, in order; each ``rule(config, layers)`` raises one
#: ConfigError line. A new combination rule is one function here and one entry.
LAYER_RULES: tuple[Callable[[EncoderConfig, list[ResolvedLayer]], None], ...] = (
    model_position_is_used,
    bias_needs_a_kernel_that_takes_it,
    window_needs_a_kernel_with_windows,
    embedding_schemes_do_not_vary,
    dropout_needs_a_kernel_with_dropout,
)


def encoder_shape(config: EncoderConfig) -> EncoderShape:
    """The dimensions a scheme is built over."""
    return EncoderShape(
        config.hidden_size,
        config.num_heads,
        config.num_layers,
        config.max_positions,
        config.layer_norm_eps,
    )


def scheme_groups(config: EncoderConfig, layers: list[ResolvedLayer]) -> list[SchemeGroup]:
    """The scheme instances an encoder builds: layers with equal scheme and options share
    one. The model's group comes first (with the layers' options where every layer resolves
    alike); it is also the embedding's scheme. Layers are numbered within their group."""
    model, model_key = config.model_layer, model_scheme_key(config)
    keys = list(dict.fromkeys(layer.scheme_key for layer in layers))
    if len(keys) == 1:  # one scheme everywhere: the model's, with the layers' options
        model, model_key = layers[0].spec, keys[0]
    shape = encoder_shape(config)
    groups = [
        SchemeGroup(
            None,
            model,
            replace(shape, num_layers=_count(layers, model_key, config.num_layers)),
            model_key,
        )
    ]
    seen = {model_key}
    for layer in layers:
        if layer.scheme_key not in seen:
            seen.add(layer.scheme_key)
            shape_here = replace(shape, num_layers=_count(layers, layer.scheme_key, 0))
            groups.append(SchemeGroup(layer.spec.type, layer.spec, shape_here, layer.scheme_key))
    return groups


@dataclass(frozen=True)
class SchemeGroup:
    """One scheme instance of an encoder: ``name`` None for the model's scheme (else the
    first layer type that uses it), its spec, the shape it is built over and its
    :func:`scheme_key` (the layers of equal key use it)."""

    name: str | None
    spec: LayerSpec
    shape: EncoderShape
    key: tuple[str, str] = ("", "")

    def build(self) -> PositionScheme:
        """The scheme, with its checked options."""
        scheme = lookup(POSITION_SCHEMES, self.spec.position, "position")
        options = check_options(scheme, self.spec.position_kwargs, "position", self.spec.position)
        return construct(scheme, "position", self.spec.position, self.shape, **options)


def _count(layers: list[ResolvedLayer], key: tuple[str, str], empty: int) -> int:
    """How many layers use scheme ``key`` (``empty`` if none: a scheme that only embeds)."""
    return sum(1 for layer in layers if layer.scheme_key == key) or max(empty, 1)


def _model_path(model: LayerSpec, key: str) -> str | None:
    """Where the user wrote the model's own options of ``key`` (``position``,
    ``attention``): ``model.position_kwargs.base`` for one option, ``model.position_kwargs``
    for several, None for none (the defaults)."""
    options = list(getattr(model, f"{key}_kwargs"))
    if not options:
        return None
    return f"model.{key}_kwargs" + (f".{options[0]}" if len(options) == 1 else "")


def _built(
    spec: LayerSpec,
    build: Callable[[], Any],
    model: LayerSpec,
    build_model: Callable[[], Any],
    key: str,
) -> Any:
    """``build()``, a layer's scheme or kernel (``key``: ``position``, ``attention``). A
    ConfigError it raises is led by where the user wrote the setting that failed
    (:func:`written_at`): the option it names (``ConfigError.option``) where the layer
    type or the model wrote it; else the layer type's path where the type wrote the
    setting, else the model's options (:func:`_model_path`). Where the error names no
    option and the type laid its options over the model's (same scheme or kernel) and
    ``build_model()``, the same built from the model's own options, fails as well, the
    model's options are at fault, and that error is led by theirs. A plugin that fails to
    build (:class:`~roformer_lit.errors.PluginBuildFailed`) is led by where it was chosen:
    ``model.position``, or the layer type's ``...types.local.position``; or, where the
    scheme or kernel built it from one of its options (the error's ``option``: ssmax's
    ``inner``), where the user wrote that option (``model.position_kwargs.inner``)."""
    path = spec.written_path(key, f"{key}_kwargs")

    def option_at(option: str) -> str:
        return spec.path(f"{key}_kwargs", option)

    try:
        return build()
    except PluginBuildFailed as exc:  # led by where the plugin was chosen, not its options
        chosen = spec.written_path(key) or f"model.{key}"
        if exc.option is not None:  # chosen by an option of the scheme or kernel built
            chosen = option_at(exc.option)
        raise PluginBuildFailed(f"{chosen}: {exc}", raised=exc.raised) from None
    except ConfigError as exc:
        if exc.option is None and path is not None and getattr(spec, key) == getattr(model, key):
            with written_at(_model_path(model, key)):
                build_model()  # its own error, if the model's options alone fail
        with written_at(path if path is not None else _model_path(model, key), option_at):
            raise


def _model_kernel(model: LayerSpec) -> Callable[[], Any]:
    def build() -> Any:
        kernel = lookup(ATTENTION_KERNELS, model.attention, "attention")
        options = check_options(kernel, model.attention_kwargs, "attention", model.attention)
        return construct(kernel, "attention", model.attention, **options)

    return build


def construct_on_meta(config: EncoderConfig, layers: list[ResolvedLayer]) -> None:
    """Build every scheme and kernel once on the ``meta`` device: their constructors'
    own range checks run, no memory is taken and no random number is drawn. A scheme whose
    parameters no layer would train (every layer overrides the model's) is refused."""
    with torch.random.fork_rng(devices=[]), torch.device("meta"):
        groups = scheme_groups(config, layers)
        model = config.model_layer
        own = SchemeGroup(None, model, encoder_shape(config)).build
        built = [_built(group.spec, group.build, model, own, "position") for group in groups]
        for layer in layers:
            _built(layer.spec, layer.build_kernel, model, _model_kernel(model), "attention")
    keys = {layer.scheme_key for layer in layers}
    if len(groups) > 1 and groups[0].key not in keys:
        if any(True for _ in built[0].parameters()):
            raise ConfigError(
                f"every layer of model.layer_plan overrides model.position {config.position!r}, "
                f"whose parameters would then train nothing; give one layer type the model's "
                f"position_kwargs, or set model.position to another scheme a layer uses"
            )


def check_architecture(config: EncoderConfig) -> list[ResolvedLayer]:
    """Every rule of the module, in order; the resolved layers."""
    check_fields(config.as_dict())
    _ = config.block_options  # the block's options and the layer plan's form
    layers = resolve_layers(config.layer_specs)
    for rule in LAYER_RULES:
        rule(config, layers)
    construct_on_meta(config, layers)
    return layers
