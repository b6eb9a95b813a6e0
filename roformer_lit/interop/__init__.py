"""Hugging Face interop: export a ``MaskedLM`` as an HF ``*ForMaskedLM``, import one back.

| our position | HF class                 | notes                                            |
|--------------|--------------------------|--------------------------------------------------|
| rope         | ``RoFormerForMaskedLM``  | base 10000 only; token-type row 0 zeroed         |
| deberta      | ``DebertaV2ForMaskedLM`` | v3 layout (shared keys, layer-normed rel table)  |
| learned      | ``BertForMaskedLM``      | token-type row 0 zeroed (folded into P on import) |

The name mapping lives in ``roformer_lit.interop.mapping`` (one table per architecture,
shared by both directions). The exported directory also holds the model's tokenizer
(``roformer_lit.interop.tokenizer``), so ``pipeline("fill-mask", model=dir)`` works.
``transformers`` is optional: ``pip install roformer-lit[hf]``.
"""

from roformer_lit.interop.export import export_hf, to_hf_model
from roformer_lit.interop.load import import_hf
from roformer_lit.interop.mapping import ARCHITECTURES
from roformer_lit.interop.tokenizer import hf_tokenizer_files

__all__ = [
    "ARCHITECTURES",
    "export_hf",
    "hf_tokenizer_files",
    "import_hf",
    "to_hf_model",
]
