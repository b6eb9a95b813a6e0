"""The study pages' generated regions, computed from the raw outputs in ``docs/bench/``.

A study page (``docs/studies/*.md``) states every table, count, ordering and "on every
seed" inside a region between ``<!-- generated: NAME -->`` and ``<!-- end generated -->``;
:mod:`.pages` (``python scripts/study_pages.py [--check]``) rewrites the regions, or checks
that the pages equal what the data give. One module a job:

- :mod:`.places`: where the raw outputs and the pages are, and the caches of what was read;
- :mod:`.reading`: reading a raw output, refusing a damaged one in one line;
- :mod:`.words`: how a page writes a list, a span, a length; the shared constants;
- :mod:`.exact`: the exact sign-flip test, distribution-free intervals of a paired effect,
  and the smallest detectable difference;
- :mod:`.paired`: paired tests by seed (exact sign-flip), Holm over a family, their marks
  and cells, and what a family could detect;
- :mod:`.streams`: what the seeds of the study sweeps vary (``data.seed``);
- :mod:`.present`: ``recall``'s "guess among the values present" baseline;
- :mod:`.seed_study`: :class:`~.seed_study.SeedStudy`, the table, pairs and findings of a
  study of variants against a reference over seeds;
- :mod:`.probes`: the first position-task sweep (2026-11-24: every scheme, randomized
  positions, recall, p-RoPE);
- :mod:`.selected`: the scheme study at selected learning rates (regions ``schemes-*``);
- :mod:`.plans`: the layer-plan study (regions ``plans-*``);
- :mod:`.mlm`: the MLM positions sweep and the position learning rate;
- :mod:`.bridge`: probe accuracy against MLM loss;
- :mod:`.vs_nope`: each scheme's change with length against ``nope``'s
  (``docs/guide/extrapolation.md``);
- :mod:`.finetune`: the sweep's checkpoints fine-tuned (``docs/guide/finetuning.md``);
- :mod:`.budget`: the training-budget study (regions ``budget*``);
- :mod:`.locality`: the bias-only attention shares and the position learning rate's table;
- :mod:`.figures`: the figures and their JSON sidecars (checked on ``--check``);
- :mod:`.stamp`: a figure's PNG stamped with the digests of its values and its bytes;
- :mod:`.readme`: the README's findings table (region ``readme-findings``);
- :mod:`.regions`: the table of regions and the rewriting of a page;
- :mod:`.drift`: where a stale page differs from its data (region, line, row, column);
- :mod:`.pages`: the command.
"""
