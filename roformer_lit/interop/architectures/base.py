"""``HFArchitecture``: how one of our architectures is laid out in one HF ``*ForMaskedLM``
class, and the hooks through which export and import handle what is particular to it.

An architecture is a scheme in every layer (``position``) and a block layout
(``pre_norm``): the export of a model goes to the one architecture with its scheme and
layout, the import of an HF model to the one with its ``model_type``. Export calls
``check_export``, ``config_kwargs``, ``links`` (each our tensor -> one HF tensor, through
``to_hf``) and ``derive_export_weights``; import calls ``check_import_settings`` (the raw
``config.json``), ``check_import_config``, ``import_settings``, ``check_import_weights``,
``links`` (through ``to_ours``) and ``fold_import_weights``, in that order. Every hook has a
no-op default; refusals are one-line ConfigErrors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from roformer_lit.errors import ConfigError

if TYPE_CHECKING:
    from torch import Tensor

    from roformer_lit.module import MaskedLM


@dataclass(frozen=True)
class Link:
    """``ours`` (a ``MaskedLM`` parameter name) <-> ``theirs`` (an HF state-dict key)."""

    ours: str
    theirs: str
    slot: int | None = None  # 0/1/2: query/key/value rows of our fused qkv


@dataclass(frozen=True, kw_only=True)
class HFArchitecture:
    """How one of our architectures is laid out in one HF ``*ForMaskedLM`` class."""

    position: str  # our scheme, in every layer
    pre_norm: bool  # our block layout: False BERT's post-LN, True pre-LN
    model_type: str  # HF ``config.model_type``
    model_class: str  # HF ``*ForMaskedLM`` class name
    config_class: str
    #: the oldest transformers release that reads what export writes exactly (see
    #: docs/guide/interop.md); written into ``config.json`` and checked on both sides
    transformers_floor: str
    #: (field, HF key) where this class names a field of ``config_keys.CONFIG_KEYS`` otherwise
    renamed_keys: tuple[tuple[str, str], ...] = ()

    # -- export -------------------------------------------------------------------------
    def check_export(self, model: MaskedLM) -> None:
        """Raise a ConfigError if ``model``'s scheme options, plan or block have no HF
        equivalent (the fields and the kernel are checked before, for every class)."""

    def config_kwargs(self, model: MaskedLM) -> dict[str, Any]:
        """HF config arguments particular to this class, added to the mapped fields."""
        return {}

    def to_hf(self, link: Link, tensor: Tensor, num_heads: int) -> Tensor:
        """Our tensor (already sliced to ``link.slot``) as HF stores it."""
        return tensor

    def derive_export_weights(self, state: dict[str, Tensor]) -> None:
        """Set, in place, HF tensors that are not ours (an HF state dict whose linked
        tensors are ours); tied tensors (:meth:`tied`) are set after this."""

    # -- both ---------------------------------------------------------------------------
    def links(self, config: Any) -> list[Link]:
        """Every (ours, theirs) pair of the model of HF ``config``."""
        raise NotImplementedError

    def tied(self, config: Any) -> dict[str, str]:
        """HF tensors that equal another (theirs -> the one it equals): files may omit
        them, and import refuses one that is present and differs."""
        return {}

    def read_without_link(self, config: Any) -> set[str]:
        """HF parameters that import reads through no :class:`Link` of its own: tied
        copies (:meth:`tied`, compared with their twin) and tensors it checks or folds
        (:meth:`check_import_weights`, :meth:`fold_import_weights`). Every other parameter of
        the HF model must be some link's ``theirs``, or import is refused (a parameter a newer
        transformers added would otherwise be dropped without a word)."""
        return set(self.tied(config))

    def unused(self) -> tuple[str, ...]:
        """Name prefixes of tensors a file of this ``model_type`` may hold for heads the
        MLM model does not have (BERT's pooler and next-sentence head): not ours, not
        read, so not refused as unexpected."""
        return ()

    # -- import -------------------------------------------------------------------------
    def refuse(self, setting: str) -> NoReturn:
        """The one-line ConfigError of an import that cannot be represented exactly."""
        raise ConfigError(f"cannot import this {self.model_class}: {setting}")

    def check_import_settings(self, settings: Mapping[str, Any]) -> None:
        """Refuse (:meth:`refuse`) values of a ``config.json`` (plain data) that the HF
        config class would reject with an exception of its own."""

    def check_import_config(self, config: Any) -> None:
        """Refuse (:meth:`refuse`) an HF config we cannot compute exactly."""

    def import_settings(self, config: Any) -> dict[str, Any]:
        """The ``EncoderConfig`` fields of HF ``config`` beyond the mapped ones and
        ``position``/``pre_norm``/``attention`` (``position_kwargs``, ``block``, ...)."""
        return {}

    def import_sources(self) -> dict[str, str]:
        """Where :meth:`import_settings` reads each setting it gives: our setting's path
        under ``model.`` (``position_kwargs.base``) -> the HF config field it comes from
        (dotted into a mapping: ``rope_parameters.full_attention.rope_theta``), so a value
        our rules refuse is named as the user wrote it (:func:`~roformer_lit.interop.load.
        encoder_config`). The mapped fields' keys are added there."""
        return {}

    def check_import_weights(self, state: Mapping[str, Tensor]) -> None:
        """Refuse (:meth:`refuse`) HF weights (a CPU state dict) we cannot hold."""

    def to_ours(self, link: Link, tensor: Tensor, num_heads: int) -> Tensor:
        """An HF tensor as ours (before slots are concatenated): inverse of :meth:`to_hf`."""
        return tensor

    def fold_import_weights(self, values: dict[str, Tensor], state: Mapping[str, Tensor]) -> None:
        """Fold HF tensors without a counterpart of their own into ``values`` (our
        parameter name -> tensor, as mapped from ``state``), in place."""
