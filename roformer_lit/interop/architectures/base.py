"""``HFArchitecture``: how one of our position schemes is laid out in one HF class, and the
hooks through which export and import handle what is particular to it.

Every hook has a no-op default, so an architecture overrides only what differs from BERT's
plain post-LN encoder. Export calls ``check_export`` then ``config_kwargs``; import calls
``check_import_config``, ``import_position_kwargs``, ``check_import_weights`` and
``fold_import_weights``, in that order. Refusals are one-line ConfigErrors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from roformer_lit.errors import ConfigError

if TYPE_CHECKING:
    from torch import Tensor

    from roformer_lit.module import MaskedLM

TOKEN_TYPES = "embeddings.token_type_embeddings.weight"  # under the model prefix


@dataclass(frozen=True)
class HFArchitecture:
    """How one of our position schemes is laid out in one HF ``*ForMaskedLM`` class."""

    position: str  # our scheme name
    model_type: str  # HF ``config.model_type``
    model_class: str  # HF ``*ForMaskedLM`` class name
    config_class: str
    prefix: str  # base-model attribute: roformer / deberta / bert
    qkv: tuple[str, str, str]  # names of the q/k/v Linears under ``attention.self``
    #: our scheme's own tensors (ours, theirs without the prefix)
    position_links: tuple[tuple[str, str], ...]
    #: HF tensors that are not ours but derived on export / checked on import
    derived: tuple[str, ...]

    # -- export -------------------------------------------------------------------------
    def check_export(self, model: MaskedLM) -> None:
        """Raise a ConfigError if ``model``'s scheme options have no HF equivalent."""

    def config_kwargs(self, model: MaskedLM) -> dict[str, Any]:
        """HF config arguments of the scheme, added to the common ones on export."""
        return {}

    # -- import -------------------------------------------------------------------------
    def refuse(self, setting: str) -> NoReturn:
        """The one-line ConfigError of an import that cannot be represented exactly."""
        raise ConfigError(f"cannot import this {self.model_class}: {setting}")

    def check_import_config(self, config: Any) -> None:
        """Refuse (:meth:`refuse`) an HF config whose scheme settings we cannot compute;
        called after the checks common to every architecture."""

    def import_position_kwargs(self, config: Any) -> dict[str, Any]:
        """``MaskedLM(position_kwargs=...)`` equal to the HF config's scheme settings."""
        return {}

    def check_import_weights(self, state: Mapping[str, Tensor]) -> None:
        """Refuse (:meth:`refuse`) HF weights (a float32 CPU state dict) we cannot hold."""

    def fold_import_weights(self, values: dict[str, Tensor], state: Mapping[str, Tensor]) -> None:
        """Fold HF tensors without a counterpart of their own into ``values`` (our
        parameter name -> tensor, as mapped from ``state``), in place."""

    # -- shared by the architectures ----------------------------------------------------
    def refuse_token_types(self, state: Mapping[str, Tensor]) -> None:
        """Refuse a non-zero token-type row 0: HF adds it to every token, and without an
        absolute position table there is nothing to fold it into."""
        token_types = state.get(f"{self.prefix}.{TOKEN_TYPES}")
        if token_types is not None and token_types[0].any():
            self.refuse(
                "token_type_embeddings row 0 is non-zero and there is no absolute position "
                "table to fold it into"
            )
