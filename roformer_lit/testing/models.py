"""Small models around one scheme or kernel class, for the checks of :mod:`roformer_lit.testing`.

A class is built into a :class:`~roformer_lit.module.MaskedLM` under its registered name, or,
for a class no registry holds (the author's own, possibly defined inside a test), under a
name it is given for the duration of :func:`registered` only (a position scheme in
``POSITION_SCHEMES``, an attention kernel in ``ATTENTION_KERNELS``). The model is small,
randomly initialised and then perturbed (non-trivial biases and norms), in eval mode.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import torch

from roformer_lit.architecture_rules import takes_score_bias
from roformer_lit.attention import ATTENTION_KERNELS
from roformer_lit.attention.base import AttentionKernel
from roformer_lit.encoder_config import EncoderConfig
from roformer_lit.module import MaskedLM
from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.positions.base import PositionScheme
from roformer_lit.registry import Registry

#: A class the kits check: a position scheme or an attention kernel.
Component = type[PositionScheme] | type[AttentionKernel]

VOCAB = 97
PAD = 0

#: (hidden_size, num_heads): odd head counts, head sizes 16, 8 and 6.
SHAPES = [(48, 3), (40, 5), (36, 6)]


def registry_of(cls: Component) -> Registry:
    """The registry a class belongs in: ``ATTENTION_KERNELS`` for a kernel, else
    ``POSITION_SCHEMES``."""
    if isinstance(cls, type) and issubclass(cls, AttentionKernel):
        return ATTENTION_KERNELS
    return POSITION_SCHEMES


def registered_name(cls: Component) -> str | None:
    """The name ``cls`` is registered under (built-in or entry point), or None."""
    loaded = registry_of(cls).loadable().components  # a broken plugin is not the kit's
    return next((name for name, component in loaded.items() if component is cls), None)


def component_label(cls: Component) -> str:
    """The registered name of ``cls``, else ``module:Class`` (how messages name it)."""
    return registered_name(cls) or f"{cls.__module__}:{cls.__qualname__}"


#: How the scheme kit's messages name a scheme (:func:`component_label`).
scheme_label = component_label


@contextmanager
def registered(cls: Component) -> Iterator[str]:
    """The name ``cls`` is built under: its registered name, or one it is registered under
    for this block only (the registry is left as it was found)."""
    known = registered_name(cls)
    if known is not None:
        yield known
        return
    registry = registry_of(cls)
    name = f"kit-check-{cls.__qualname__}"
    registry.register(name, cls)
    try:
        yield name
    finally:
        registry.unregister(name)


def checked_options(cls: Component, options: Mapping[str, Any]) -> None:
    """Refuse ``options`` of ``cls`` as a run would: an :class:`EncoderConfig` with the class
    as the model's scheme (over ``softmax``) or kernel (under ``nope``) runs the
    architecture's checks (each option's type from its annotation, then the class built
    once on the ``meta`` device, its own range checks). A refusal is that one
    :class:`~roformer_lit.errors.ConfigError` line, before any check runs."""
    kernel = registry_of(cls) is ATTENTION_KERNELS
    with registered(cls) as name:
        EncoderConfig(
            position="nope" if kernel else name,
            attention=name if kernel else "softmax",
            vocab_size=VOCAB,
            hidden_size=48,
            num_layers=1,
            num_heads=3,
            intermediate_size=96,
            max_positions=64,
            position_kwargs=None if kernel else dict(options),
            attention_kwargs=dict(options) if kernel else None,
        )


def compatible_kernels(cls: type[PositionScheme]) -> list[str]:
    """The registered attention kernels that can run ``cls`` (an installed kernel plugin
    that fails to load is the registry's to report, not a failure of ``cls``): what each
    declares, read by the rule table's own rule."""
    loaded = ATTENTION_KERNELS.loadable().components
    return [
        name
        for name, kernel in loaded.items()
        if takes_score_bias(cls.capabilities(), kernel.capabilities())
    ]


def small_model(
    position: str | type[PositionScheme],
    attention: str | type[AttentionKernel] = "softmax",
    hidden_size: int = 48,
    num_heads: int = 3,
    num_layers: int = 2,
    seed: int = 0,
    **kwargs: Any,
) -> MaskedLM:
    """A randomly initialised small model in eval mode, with non-trivial biases and norms.

    ``position`` is a registered name or a scheme class, ``attention`` a registered name or
    a kernel class (a class is built under :func:`registered`)."""
    if not isinstance(attention, str):
        with registered(attention) as name:
            return small_model(position, name, hidden_size, num_heads, num_layers, seed, **kwargs)
    if not isinstance(position, str):
        with registered(position) as name:
            return small_model(name, attention, hidden_size, num_heads, num_layers, seed, **kwargs)
    torch.manual_seed(seed)
    model = MaskedLM(
        position=position,
        attention=attention,
        vocab_size=VOCAB,
        hidden_size=hidden_size,
        num_layers=num_layers,
        num_heads=num_heads,
        intermediate_size=2 * hidden_size,
        max_positions=kwargs.pop("max_positions", 64),
        **kwargs,
    )
    with torch.no_grad():
        for param in model.parameters():
            param.add_(0.05 * torch.randn_like(param))
    return model.eval()


#: True inside :func:`at_defaults`: the kit builds a scheme with the options it was given
#: alone, not over its ``test_kwargs``.
_AT_DEFAULTS: ContextVar[bool] = ContextVar("kit_at_defaults", default=False)


@contextmanager
def at_defaults() -> Iterator[None]:
    """Inside the block, :func:`kit_options` leaves a scheme's ``test_kwargs`` out: the
    checks build it at its default options (those it is given aside), which a run gets."""
    token = _AT_DEFAULTS.set(True)
    try:
        yield
    finally:
        _AT_DEFAULTS.reset(token)


def building_at_defaults() -> bool:
    """Whether the checks now build schemes at their defaults (inside :func:`at_defaults`),
    where a check leaves out what only ``test_kwargs`` make visible on short rows."""
    return _AT_DEFAULTS.get()


def kit_options(cls: type[PositionScheme], options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The options the kit builds ``cls`` with: its ``test_kwargs`` updated by ``options``,
    or ``options`` alone inside :func:`at_defaults`."""
    given = dict(options or {})
    return given if building_at_defaults() else {**cls.test_kwargs, **given}


def differs_at_defaults(cls: type[PositionScheme], options: Mapping[str, Any]) -> bool:
    """Whether ``cls`` built at ``options`` alone is another scheme than over its
    ``test_kwargs`` (a test_kwarg the options leave unset), so the kit checks both."""
    return any(name not in options for name in cls.test_kwargs)


def visible_model(
    position: str | type[PositionScheme],
    attention: str = "softmax",
    *args: Any,
    options: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> MaskedLM:
    """:func:`small_model` with the scheme's ``test_kwargs`` (options under which its
    position dependence shows on short rows) updated by ``options`` (:func:`kit_options`:
    ``options`` alone inside :func:`at_defaults`), its parameters amplified where their
    effect would be too small to see (``amplify_for_tests``)."""
    cls = POSITION_SCHEMES[position] if isinstance(position, str) else position
    merged = kit_options(cls, {**(kwargs.pop("position_kwargs", None) or {}), **(options or {})})
    if merged:
        kwargs["position_kwargs"] = merged
    model = small_model(position, attention, *args, **kwargs)
    for scheme in model.encoder.position_schemes():
        scheme.amplify_for_tests()
    return model


def random_ids(batch: int, length: int, seed: int = 1) -> torch.Tensor:
    """Token ids that are never the pad id."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(1, VOCAB, (batch, length), generator=generator)


def random_positions(batch: int, length: int, span: int, seed: int = 5) -> torch.Tensor:
    """``[batch, length]`` sorted distinct positions drawn from ``[0, span)``, one draw a row."""
    generator = torch.Generator().manual_seed(seed)
    rows = [torch.randperm(span, generator=generator)[:length].sort().values for _ in range(batch)]
    return torch.stack(rows)
