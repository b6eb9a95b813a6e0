"""One module per HF architecture: our architecture's layout in one ``*ForMaskedLM``
class and what is particular to it, as the hooks of :class:`~.base.HFArchitecture`.

Post-norm (BERT's block, :mod:`.bert_layout`): ``rope`` -> ``RoFormerForMaskedLM``
(:mod:`.rope`), ``deberta`` -> ``DebertaV2ForMaskedLM`` (:mod:`.deberta`), ``learned`` ->
``BertForMaskedLM`` (:mod:`.learned`). Pre-norm: ``rope`` -> ``ModernBertForMaskedLM``
(:mod:`.modernbert`). Export and import (``roformer_lit.interop.export`` / ``.load``) call
only the hooks, so adding an architecture is one module here plus one line in
``roformer_lit.interop.mapping``.
"""
