"""Hugging Face interop: export a ``MaskedLM`` as an HF ``*ForMaskedLM``, import one back.

| our architecture                 | HF class                 | notes                                    |
|----------------------------------|--------------------------|------------------------------------------|
| rope, post-norm                  | ``RoFormerForMaskedLM``  | base 10000 only; token-type row 0 zeroed |
| deberta, post-norm               | ``DebertaV2ForMaskedLM`` | v3 layout (shared keys, normed rel table)|
| learned, post-norm               | ``BertForMaskedLM``      | token-type row 0 folded into P on import |
| rope, pre-norm (GLU, local/global)| ``ModernBertForMaskedLM``| ``configs/recipes/modernbert.yaml``      |

One registry (``roformer_lit.interop.mapping.ARCHITECTURES``, keyed by HF ``model_type``,
one module each in ``roformer_lit.interop.architectures``), one field table
(``roformer_lit.interop.config_keys``), one loader that verifies every tensor on import
(``roformer_lit.interop.weights``) and one check of every export's logits
(``roformer_lit.interop.verify``). The exported directory also holds the model's
tokenizer (``roformer_lit.interop.tokenizer``), so ``pipeline("fill-mask", model=dir)``
works. ``transformers`` is optional: ``pip install roformer-lit[hf]``.
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
