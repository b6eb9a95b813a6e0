"""Synthetic position probes (copy, reverse, sort, recall, odds_first) as masked-token
fill-in, served by :class:`~roformer_lit.data.probe_module.ProbeDataModule` (``data.probe``).

Public names::

    from roformer_lit.data.probes import PROBE_TASKS, ProbeTask, probe_task, generate, probe_rng
    from roformer_lit.data.probes import probe_tokenizer
    from roformer_lit.data.probes import ProbeTrainBatches, ProbeValidation
    from roformer_lit.data.probes import BaselineScore, baseline_scores
"""

from roformer_lit.data.probes.baselines import BaselineScore, baseline_scores
from roformer_lit.data.probes.dataset import ProbeTrainBatches, ProbeValidation
from roformer_lit.data.probes.tasks import PROBE_TASKS, ProbeTask, generate, probe_rng, probe_task
from roformer_lit.data.probes.tokenizer import probe_tokenizer

__all__ = [
    "BaselineScore",
    "PROBE_TASKS",
    "ProbeTask",
    "ProbeTrainBatches",
    "ProbeValidation",
    "baseline_scores",
    "generate",
    "probe_rng",
    "probe_task",
    "probe_tokenizer",
]
