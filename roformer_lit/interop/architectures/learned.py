"""``learned`` <-> ``BertForMaskedLM``.

Our learned absolute table is BERT's ``position_embeddings``. BERT also adds token-type
row 0 to every token: export writes it as zeros, import folds it into the table
(``P[i] + T[0]``, exact), so any BERT token-type row 0 is accepted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from roformer_lit.interop.architectures.bert_layout import (
    BERT_LAYOUT_FLOOR,
    TOKEN_TYPES,
    BertLayout,
)

if TYPE_CHECKING:
    from torch import Tensor

    from roformer_lit.module import MaskedLM

TABLE = "encoder.position.table.weight"  # our learned position table


class BertArchitecture(BertLayout):
    """A learned absolute table; token-type row 0 folded into it on import."""

    def config_kwargs(self, model: MaskedLM) -> dict[str, Any]:
        return {**super().config_kwargs(model), "type_vocab_size": 1}

    def fold_import_weights(self, values: dict[str, Tensor], state: Mapping[str, Tensor]) -> None:
        token_types = state.get(f"{self.prefix}.{TOKEN_TYPES}")
        if token_types is not None:
            values[TABLE] = values[TABLE] + token_types[0]


ARCHITECTURE = BertArchitecture(
    transformers_floor=BERT_LAYOUT_FLOOR,
    position="learned",
    model_type="bert",
    model_class="BertForMaskedLM",
    config_class="BertConfig",
    prefix="bert",
    qkv=("query", "key", "value"),
    position_links=((TABLE, "embeddings.position_embeddings.weight"),),
    derived=(TOKEN_TYPES,),
)
