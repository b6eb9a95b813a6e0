"""The generated regions of the study pages: which function writes each, and rewriting a page.

A region is the text between ``<!-- generated: NAME -->`` and ``<!-- end generated -->``;
:data:`REGIONS` maps each name to the function that writes it. :func:`render` refuses an
unknown name, a region never closed (no end marker before the next region starts or the
page ends), and a region whose data cannot give it, each in one line naming the page, the
line of the region's marker and the region.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable

from roformer_lit.errors import ConfigError, one_line
from roformer_lit.results.study import (
    budget,
    cpu_padded_rows,
    cpu_profiles,
    cpu_speed,
    data_scale,
    extrapolation,
    figures,
    finetune,
    finetune_claims,
    gpu_speed,
    hybrid,
    locality,
    mlm,
    numerics,
    plan_speed,
    plans,
    probe_commands,
    probes,
    quickstart,
    readme,
    recipe_profile,
    recipe_speed,
    scheme_seeds,
    selected,
    vs_nope,
)
from roformer_lit.results.study.bridge import bridge
from roformer_lit.results.study.streams import data_seed

START = re.compile(r"<!-- generated: (?P<name>[a-z0-9_-]+) -->\n")
END = "<!-- end generated -->"

REGIONS: dict[str, Callable[[], str]] = {
    "budget": budget.budget,
    "budget-pairs": budget.budget_pairs,
    "budget-findings": budget.budget_findings,
    "budget-reruns": budget.budget_reruns,
    "schemes-selected": selected.table,
    "schemes-pairs": selected.pairs_table,
    "schemes-findings": selected.findings,
    "schemes-prope": selected.prope,
    "schemes-seeds-why": scheme_seeds.rerun_variants,
    "schemes-seeds-table": lambda: scheme_seeds.seeds_study().table(),
    "schemes-seeds-pairs": lambda: scheme_seeds.seeds_study().pairs_table(),
    "schemes-seeds-findings": lambda: scheme_seeds.seeds_study().findings(),
    "schemes-data-table": lambda: scheme_seeds.data_seeds_study().table(),
    "schemes-data-pairs": lambda: scheme_seeds.data_seeds_study().pairs_table(),
    "schemes-data-findings": lambda: scheme_seeds.data_seeds_study().findings(),
    "bridge": bridge,
    "schemes-retrain": selected.retrain,
    "plans-table": lambda: plans.study().table(),
    "plans-pairs": lambda: plans.study().pairs_table(),
    "plans-findings": lambda: plans.study().findings(),
    "plans-recall-table": lambda: plans.recall_study().table(),
    "plans-recall-pairs": lambda: plans.recall_study().pairs_table(),
    "plans-recall-findings": lambda: plans.recall_study().findings(),
    "plans-recall-short-table": lambda: plans.recall_short_study().table(),
    "plans-recall-short-pairs": lambda: plans.recall_short_study().pairs_table(),
    "plans-recall-short-findings": lambda: plans.recall_short_study().findings(),
    "plans-recall-order": plans.recall_order,
    "hybrid-placement-table": lambda: hybrid.placement_study().table(),
    "hybrid-placement-pairs": lambda: hybrid.placement_study().pairs_table(),
    "hybrid-placement-findings": lambda: hybrid.placement_study().findings(),
    "hybrid-seeds-table": lambda: hybrid.seeds_study().table(),
    "hybrid-seeds-pairs": lambda: hybrid.seeds_study().pairs_table(),
    "hybrid-seeds-findings": lambda: hybrid.seeds_study().findings(),
    "hybrid-data-table": lambda: hybrid.data_seeds_study().table(),
    "hybrid-data-pairs": lambda: hybrid.data_seeds_study().pairs_table(),
    "hybrid-data-findings": lambda: hybrid.data_seeds_study().findings(),
    "hybrid-interleave8-table": lambda: hybrid.interleave8_study().table(),
    "hybrid-interleave8-pairs": lambda: hybrid.interleave8_study().pairs_table(),
    "hybrid-interleave8-findings": lambda: hybrid.interleave8_study().findings(),
    "hybrid-long": hybrid.long_table,
    "hybrid-long-findings": hybrid.long_findings,
    "plans-mlm-table": lambda: plans.mlm_study().table(),
    "plans-mlm-pairs": lambda: plans.mlm_study().pairs_table(),
    "plans-mlm-findings": lambda: plans.mlm_study().findings(),
    "plans-mlm-seeds-table": lambda: plans.mlm_seeds_study().table(),
    "plans-mlm-seeds-pairs": lambda: plans.mlm_seeds_study().pairs_table(),
    "plans-mlm-seeds-findings": lambda: plans.mlm_seeds_study().findings(),
    "plans-mlm-data-table": lambda: plans.mlm_data_seeds_study().table(),
    "plans-mlm-data-pairs": lambda: plans.mlm_data_seeds_study().pairs_table(),
    "plans-mlm-data-findings": lambda: plans.mlm_data_seeds_study().findings(),
    "mlm-sweep": mlm.mlm_sweep,
    "position-lr": mlm.position_lr,
    "locality": locality.locality,
    "position-lr-table": locality.position_lr_table,
    "training-length": probes.training_length,
    "beyond-2x": probes.beyond,
    "rp-pairs": probes.rp_pairs,
    "rp-sort": probes.rp_sort,
    "rp-counts": probes.rp_counts,
    "recall": probes.recall,
    "prope": probes.prope,
    "data-seed": data_seed,
    "prope-turns": selected.prope_turns,
    "figure-schemes": lambda: figures.embed("schemes", "test accuracy against length per scheme"),
    "figure-budget": lambda: figures.embed("budget", "accuracy at 1x against training step"),
    "figure-plans": lambda: figures.embed("plans", "accuracy against length per layer plan"),
    "readme-findings": readme.findings,
    "readme-quickstart": quickstart.sentence,
    "readme-probe-commands": probe_commands.sentence,
    "guide-probe-sweeps": probe_commands.guide_sweeps,
    "corpus-data-scale": data_scale.table,
    "sweeps-threads": numerics.threads,
    "readme-plan-speed": plan_speed.readme,
    "plans-speed-cpu": plan_speed.cpu,
    "plans-speed-h100": plan_speed.h100,
    "finetune-movie-polarity": finetune.table,
    "finetune-spreads": finetune.spreads,
    "finetune-findings": finetune_claims.findings,
    "extrapolation-vs-nope": vs_nope.table,
    "extrapolation-table": extrapolation.table,
    "extrapolation-nope": extrapolation.nope,
    "extrapolation-findings": extrapolation.findings,
    "extrapolation-at-1x": extrapolation.at_training_length,
    "cpu-bias-table": cpu_speed.table,
    "cpu-bias-findings": cpu_speed.findings,
    "readme-cpu-bias": cpu_speed.readme,
    "cpu-every-scheme": cpu_speed.every_scheme,
    "cpu-bias-memory": cpu_speed.memory,
    "cpu-bias-documents": cpu_speed.documents,
    "cpu-bias-documents-rows": cpu_speed.document_rows,
    "cpu-bias-documents-split": cpu_speed.document_split,
    "cpu-bias-padded-rows": cpu_padded_rows.table,
    "cpu-bias-documents-squares": cpu_speed.document_squares,
    "cpu-bias-documents-squares-guard": cpu_speed.squares_guard,
    "cpu-bias-profiles": cpu_profiles.profiles,
    "cpu-bias-row-pieces": cpu_speed.row_pieces,
    "cpu-bias-tied-tails": cpu_speed.tied_tails,
    "readme-cpu-documents": cpu_speed.readme_documents,
    "modernbert-vs-hf": recipe_speed.table,
    "modernbert-vs-hf-profile": recipe_profile.table,
    "gpu-bias-table": gpu_speed.table,
    "readme-gpu-bias": gpu_speed.readme,
}

#: What a region's function raises when the raw outputs lack what it states (a file cut
#: short at a row, a length or seed missing): refused in one line naming the region.
MISSING_DATA = (
    KeyError,
    IndexError,
    ValueError,
    TypeError,
    ZeroDivisionError,
    statistics.StatisticsError,
)


def render(text: str, where: str) -> str:
    """``text`` with every generated region rewritten; ConfigError naming ``where``, the line
    and the region for an unknown or unclosed region, or one its data cannot write."""
    out, position = [], 0
    for match in START.finditer(text):
        if match.start() < position:
            continue
        name = match["name"]
        at = f"{where}: line {text.count(chr(10), 0, match.start()) + 1}"
        if name not in REGIONS:
            raise ConfigError(
                f"{at}: unknown generated region {name!r}; known: {', '.join(REGIONS)}"
            )
        end = text.find(END, match.end())
        following = START.search(text, match.end())
        if end < 0 or (following is not None and following.start() < end):
            raise ConfigError(f"{at}: region {name!r} has no {END!r} before the next region")
        out += [text[position : match.end()], write(name, at).rstrip("\n") + "\n"]
        position = end
    out.append(text[position:])
    return "".join(out)


def write(name: str, at: str) -> str:
    """Region ``name``'s text; ConfigError if the raw outputs cannot give it."""
    try:
        return REGIONS[name]()
    except ConfigError:
        raise
    except MISSING_DATA as exc:
        raise ConfigError(
            f"{at}: region {name!r} cannot be written from the raw outputs "
            f"({type(exc).__name__}: {one_line(exc)})"
        ) from None
