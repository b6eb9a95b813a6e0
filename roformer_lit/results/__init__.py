"""Reading results: TensorBoard events, run summaries and comparisons (:mod:`.compare`),
length extrapolation (:mod:`.extrapolate`, :mod:`.extrapolate_seeds`) and what a position
bias alone attends to (:mod:`.locality`). Checkpoints are loaded through
:meth:`roformer_lit.module.MaskedLM.from_checkpoint`; runs are read as files, without
importing the training stack."""
