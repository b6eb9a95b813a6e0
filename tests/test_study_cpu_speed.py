"""The CPU speed and memory regions of the performance page, read from synthetic raw outputs.

Oracles: the numbers written into the synthetic files (growth and the freed share computed
by hand), and refusals of a file without its table or without a scheme at both lengths.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from roformer_lit.errors import ConfigError
from roformer_lit.results.study import cpu_speed, recipe_speed


def _memory_file(rows: dict[str, tuple[str, str]], length: int) -> str:
    lines = [
        f"# 2026-11-27T00:00:00Z python scripts/peak_memory.py --length {length} --batch 1",
        "## CPU: test",
        "",
        "| scheme | L | batch | peak MB | peak MB, freed memory returned |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {s} | {length} | 1 | {a} | {b} |" for s, (a, b) in rows.items()]
    return "\n".join(lines) + "\n"


def test_memory_states_growth_and_the_freed_share(study_bench: Path):
    (study_bench / cpu_speed.MEMORY[2048]).write_text(
        _memory_file({"nope": ("200", "160"), "fire": ("500", "250")}, 2048)
    )
    (study_bench / cpu_speed.MEMORY[8192]).write_text(
        _memory_file({"nope": ("700", "640"), "fire": ("2,000", "1,000")}, 8192)
    )
    text = cpu_speed.memory()
    assert "| fire | 500 | 250 | 2,000 | 1,000 | 4.0× |" in text
    assert "`nope` 4.0×, `fire` 4.0×" in text
    # fire at 8,192: 1 - 1,000 / 2,000 of its peak was freed memory; nope's share is smaller
    assert "up to 50% of a peak as `bench` measures it (`fire`)" in text
    assert "python scripts/peak_memory.py --length 8192 --batch 1" in text


def test_memory_refuses_files_with_no_scheme_at_both_lengths(study_bench: Path):
    (study_bench / cpu_speed.MEMORY[2048]).write_text(_memory_file({"nope": ("1", "1")}, 2048))
    (study_bench / cpu_speed.MEMORY[8192]).write_text(_memory_file({"fire": ("1", "1")}, 8192))
    with pytest.raises(ConfigError, match="no scheme measured at both lengths"):
        cpu_speed.memory()


def test_a_ratio_is_listed_as_the_raw_output_prints_it(study_bench: Path):
    """1.495 is within a 1.5 target and 1.504 is not: both would print 1.50 at two digits."""
    header = "| scheme | kernel | L | step / nope | step / nope, rounds' range |"
    rows = [
        "| fire | softmax | 2048 | 1.495 | 1.38–1.67 |",
        "| xl | softmax | 2048 | 1.504 | 1.4–1.6 |",
    ]
    text = "\n".join(
        ["# 2026-11-27T00:00:00Z python -m roformer_lit bench", "", header, "|---|", *rows]
    )
    (study_bench / "run.txt").write_text(text + "\n")
    assert cpu_speed.within(2048, "run.txt") == (["fire"], ["xl"])
    assert cpu_speed._run("run.txt", 2048) == (
        "1 of 2 bias schemes within 1.5×: `fire` 1.495× (in every round for none; not in every "
        "round for `fire` (up to 1.67×)); not within it: `xl` 1.504×"
    )


def test_a_file_without_the_table_is_refused_naming_the_header(study_bench: Path):
    (study_bench / cpu_speed.MEMORY[2048]).write_text("# nothing here\n")
    (study_bench / cpu_speed.MEMORY[8192]).write_text("# nothing here\n")
    with pytest.raises(
        ConfigError, match=re.escape("no per-scheme table (a '| scheme | L | batch |'")
    ):
        cpu_speed.memory()


def _recipe_file(length_flag: str, batch: int, *rows: tuple[int, str, str, str]) -> str:
    """A raw output of ``bench --vs-hf``: its shape line and recipe table, one line per
    ``(L, training ratio, inference ratio, FLOP ratio)``."""
    lines = [
        f"# 2026-11-27T00:00:00Z python -m roformer_lit bench --lengths {length_flag} --vs-hf",
        "## roformer-lit bench on CPU: test",
        "",
        f"hidden 256, 4 layers, 4 heads, FFN 1024, vocab 8192, batch {batch}; 4 rounds",
        "",
        "| recipe | HF reference (attention) | L | ours tokens/s | HF tokens/s "
        "| training step speed-up (median paired) | inference speed-up (median paired) "
        "| inference FLOPs, HF / ours |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| modernbert | ModernBertForMaskedLM (sdpa) | {length} | 10 | 7 | {a} | {b} | {c} |"
        for length, a, b, c in rows
    ]
    return "\n".join(lines) + "\n"


def test_the_recipe_table_states_the_target_and_the_flop_bound(study_bench: Path):
    """Inference short of the target where the FLOP ratio is below it is said to be bound
    by it; one short where the FLOP ratio would allow it is not."""
    short, long = recipe_speed.FILES
    (study_bench / short).write_text(
        _recipe_file(
            "512 2048", 4, (512, "1.50x", "1.04x", "1.18x"), (2048, "1.60x", "1.20x", "1.45x")
        )
    )
    (study_bench / long).write_text(_recipe_file("8192", 1, (8192, "1.80x", "1.75x", "2.60x")))
    text = recipe_speed.table()
    assert "| 512 | 4 | sdpa | 1.50× | 1.04× | 1.18× |" in text
    assert "| 8,192 | 1 | sdpa | 1.80× | 1.75× | 2.60× |" in text
    assert "The training step meets the 1.3× target at every length." in text
    assert "Inference misses it at 512 and 2,048 tokens (1.04×, 1.20×)." in text
    assert "There the FLOP ratio is 1.18× at 512: at transformers' FLOP rate" in text
    assert "1.45× at" not in text  # 2,048 is short of the target but not bound by FLOPs
    assert "--lengths 8192 --vs-hf" in text


def test_a_training_step_short_of_the_target_is_said(study_bench: Path):
    short, long = recipe_speed.FILES
    (study_bench / short).write_text(_recipe_file("512", 4, (512, "1.20x", "1.40x", "1.50x")))
    (study_bench / long).write_text(_recipe_file("8192", 1, (8192, "1.80x", "1.75x", "2.60x")))
    text = recipe_speed.table()
    assert "The training step misses the 1.3× target at 512 tokens." in text
    assert "Inference meets it at every length too." in text


def _masked_file(
    ratios: dict[str, str], masked_ms: dict[str, str] | None = None, machine: str | None = None
) -> str:
    lines = [
        "# 2026-11-27T00:00:00Z python -m roformer_lit bench --document-mask 4",
        *([f"## roformer-lit bench on {machine}"] if machine else []),
        "| scheme | kernel | L | step ms | step ms, 4 documents masked | masked / plain (median paired) |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {s} | softmax | 8192 | 10.0 | {(masked_ms or {}).get(s, '20.0')} | {r} |"
        for s, r in ratios.items()
    ]
    return "\n".join(lines) + "\n"


def test_documents_says_where_rebuilt_blocks_are_below_in_every_process(study_bench: Path):
    files = cpu_speed.DOCUMENTS
    for name, t5, kerple in (
        (files["checkpointed"][0], "2.50x", "2.40x"),
        (files["checkpointed"][1], "2.40x", "2.20x"),
        (files["rebuilt"][0], "2.10x", "2.30x"),  # kerple: above one checkpointed process
        (files["rebuilt"][1], "2.20x", "2.10x"),
    ):
        (study_bench / name).write_text(_masked_file({"nope": "1.10x", "t5": t5, "kerple": kerple}))
    text = cpu_speed.documents()
    assert "| t5 | 2.50x / 2.40x | 2.10x / 2.20x | 20.0 / 20.0 | 20.0 / 20.0 |" in text
    assert "Rebuilt below checkpointed in every process: `t5`." in text
    assert "Raw outputs: [`cpu-2026-11-27-documents-8192-checkpointed-1.txt`]" in text


def test_document_split_states_each_scheme_over_nope_in_each_process(study_bench: Path):
    """The masked step over ``nope``'s, per process of the one-document-at-a-time code
    (computed by hand: 2,900 / 2,000 = 1.45, 3,300 / 2,000 = 1.65), against the target."""
    masked, split = cpu_speed.SPLIT.values()
    for name in masked:
        (study_bench / name).write_text(
            _masked_file({"nope": "1.10x", "t5": "2.10x", "kerple": "2.20x"})
        )
    for name, kerple_ms in zip(split, ("2,900.0", "3,300.0"), strict=True):
        (study_bench / name).write_text(
            _masked_file(
                {"nope": "0.40x", "t5": "0.39x", "kerple": "0.41x"},
                {"nope": "2,000.0", "t5": "2,800.0", "kerple": kerple_ms},
            )
        )
    text = cpu_speed.document_split()
    assert "One document at a time below masked rows in every process: `t5`, `kerple`." in text
    assert "`t5` 1.40× and 1.40×, `kerple` 1.45× and 1.65×" in text
    assert "within 1.5× in every process: `t5`." in text


def test_document_squares_and_the_readme_read_each_scheme_from_its_own_processes(
    study_bench: Path,
):
    """FIRE, XL and DeBERTa from ``SQUARES``' files, ``nope``, T5 and KERPLE from
    ``SPLIT``'s, each over the ``nope`` of its own process (by hand: 3,000 / 2,000 = 1.50,
    2,500 / 2,000 = 1.25, 4,400 / 2,200 = 2.00)."""
    masked, split = cpu_speed.SPLIT.values()
    for name in (*masked, *split):
        (study_bench / name).write_text(
            _masked_file(
                {"nope": "0.40x", "t5": "0.39x", "kerple": "0.41x"},
                {"nope": "1,000.0", "t5": "1,300.0", "kerple": "1,400.0"},
                machine="CPU: One (2 cores)",
            )
        )
    before, squares = cpu_speed.SQUARES.values()
    for name in before:
        (study_bench / name).write_text(
            _masked_file(
                {"nope": "0.40x", "fire": "2.00x", "xl": "1.20x", "deberta": "1.30x"},
                machine="CPU: Other (2 cores)",
            )
        )
    for name, nope_ms in zip(squares, ("2,000.0", "2,200.0"), strict=True):
        (study_bench / name).write_text(
            _masked_file(
                {"nope": "0.41x", "fire": "0.60x", "xl": "0.50x", "deberta": "0.45x"},
                {"nope": nope_ms, "fire": "3,000.0", "xl": "2,500.0", "deberta": "4,400.0"},
                machine="CPU: Other (2 cores)",
            )
        )
    text = cpu_speed.document_squares()
    assert "| fire | 2.00x / 2.00x | 0.60x / 0.60x | 20.0 / 20.0 | 3,000.0 / 3,000.0 |" in text
    assert "Document squares below masked rows in every process: `fire`, `xl`, `deberta`." in text
    assert "`fire` 1.50× and 1.36×, `xl` 1.25× and 1.14×, `deberta` 2.20× and 2.00×" in text
    assert "within 1.5× in every process: `fire`, `xl`." in text
    readme = cpu_speed.readme_documents()
    assert "0.40/0.40× (`nope`), 0.39/0.39× (`t5`), 0.41/0.41× (`kerple`)" in readme
    assert "0.60/0.60× (`fire`), 0.50/0.50× (`xl`), 0.45/0.45× (`deberta`)" in readme
    assert "1.30/1.30× (`t5`), 1.40/1.40× (`kerple`), 1.50/1.36× (`fire`)" in readme
    assert "1.25/1.14× (`xl`), 2.20/2.00× (`deberta`) `nope`'s" in readme
    assert "--document-mask 4`, on CPU: Other (2 cores))." in text
    assert "`kerple` on CPU: One (2 cores), `fire`, `xl` and `deberta` on CPU: Other" in readme


def test_findings_list_every_earlier_code_and_fire_before_and_after(study_bench: Path):
    """Each earlier code's ratios for the schemes its change touched, from its own files,
    and FIRE's alternating processes, as the raw outputs print them."""
    header = "| scheme | kernel | L | step / nope | step / nope, rounds' range |"

    def write(name: str, rows: dict[tuple[str, int], str], machine: str = "") -> None:
        body = [f"| {s} | softmax | {n} | {r} | {r}–{r} |" for (s, n), r in rows.items()]
        top = ["# 2026-11-28T00:00:00Z python -m roformer_lit bench", machine, header, "|---|"]
        (study_bench / name).write_text("\n".join([*top, *body]) + "\n")

    schemes = ("alibi", "t5", "kerple", "fire", "xl", "deberta")
    every = {(s, n): f"1.{i}00" for i, s in enumerate(schemes) for n in (512, 2048, 8192)}
    for name in (
        cpu_speed.FUSED,
        cpu_speed.SECOND,
        cpu_speed.KEPT,
        cpu_speed.LONG,
        cpu_speed.LONG_BEFORE,
    ):
        write(name, every)
    for number, earlier in enumerate(cpu_speed.BEFORE):
        for names in earlier.outputs.values():
            for name in names:
                write(
                    name,
                    {
                        (s, n): f"{number + 2}.{i}11"
                        for i, s in enumerate(schemes)
                        for n in (2048, 8192)
                    },
                )
    for label, value in (("before", "4.321"), ("after", "3.987")):
        for name in cpu_speed.FIRE_ALTERNATING[label]:
            write(name, {("fire", 8192): value})
    other = {
        (s, 2048): r
        for s, r in zip(
            schemes, ("1.010", "1.200", "1.210", "1.300", "1.490", "1.600"), strict=True
        )
    }
    write(cpu_speed.OTHER_MACHINE, other, "## roformer-lit bench on CPU: Other (2 cores)")
    third = {
        (s, 2048): r
        for s, r in zip(
            schemes, ("1.020", "1.210", "1.340", "1.370", "1.760", "2.180"), strict=True
        )
    }
    write(cpu_speed.THIRD_MACHINE, third, "## roformer-lit bench on CPU: Third (2 cores)")
    text = cpu_speed.findings()
    assert (
        "(CPU: Third (2 cores); raw output "
        f"[`docs/bench/{cpu_speed.THIRD_MACHINE}`](bench/{cpu_speed.THIRD_MACHINE})): 4 of 6 "
        "bias schemes within 1.5×: `alibi` 1.020×, `t5` 1.210×, `kerple` 1.340×, `fire` 1.370× "
        "(in every round for `alibi`, `t5`, `kerple`, `fire`); not within it: `xl` 1.760×, "
        "`deberta` 2.180×.\n"
    ) in text
    assert (
        "- The same command on another machine (CPU: Other (2 cores); raw output "
        f"[`docs/bench/{cpu_speed.OTHER_MACHINE}`](bench/{cpu_speed.OTHER_MACHINE})): 5 of 6 "
        "bias schemes within 1.5×: `alibi` 1.010×, `t5` 1.200×, `kerple` 1.210×, `fire` 1.300×, "
        "`xl` 1.490× (in every round for `alibi`, `t5`, `kerple`, `fire`, `xl`); not within it: "
        "`deberta` 1.600×.\n"
    ) in text
    readme = cpu_speed.readme()
    assert (
        "; on another 2-core CPU at 2,048 tokens 5 do (`alibi` 1.010×, `t5` 1.200×, `kerple` "
        "1.210×, `fire` 1.300×, `xl` 1.490×; `deberta` 1.600× do not): [performance]"
    ) in readme
    first, second = cpu_speed.BEFORE
    assert "8,192 tokens `fire` 2.311×, `xl` 2.411×, `deberta` 2.511×" in text
    assert "2,048 tokens `fire` 2.311× and 2.311×, `xl` 2.411× and 2.411×" in text
    assert "2,048 tokens `fire` 3.311× and 3.311×; 8,192 tokens `fire` 3.311×" in text
    assert first.lacking[1:] in text and second.lacking[1:] in text
    assert "`fire` 4.321× and 4.321× before, 3.987× and 3.987× after" in text


def test_squares_guard_lists_each_length_and_where_every_scheme_is_below(study_bench: Path):
    """XL above 1 at 16 tokens: every scheme below from 32 on; a length one file lacks is
    a dash."""
    ratios = {
        "fire": {8: "1.20", 16: "0.70", 32: "0.60"},
        "xl": {8: "1.70", 16: "1.03", 32: "0.90"},
        "deberta": {8: "1.40", 16: "0.90"},
    }
    for scheme, rows in ratios.items():
        lines = [
            f"# 2026-11-28T00:00:00Z python scripts/document_split_speed.py {scheme}",
            "# CPU: Test (2 cores)",
            "| scheme | L | batch | documents | tokens each | split ms | masked ms | split / masked |",
            "|---|---|---|---|---|---|---|---|",
            *(
                f"| {scheme} | 1024 | 4 | {1024 // n} | {n} | 1 | 1 | {r} |"
                for n, r in rows.items()
            ),
        ]
        (study_bench / cpu_speed.SQUARES_GUARD[scheme]).write_text("\n".join(lines) + "\n")
    text = cpu_speed.squares_guard()
    assert "| 16 | 0.70× | 1.03× | 0.90× |" in text
    assert "| 32 | 0.60× | 0.90× | – |" in text
    assert "at no length measured." in text  # deberta has no 32, fire and xl none below at 16
    assert "on CPU: Test (2 cores))." in text


def _step_file(rows: dict[str, tuple[str, str]]) -> str:
    """bench's per-scheme table at 8,192 tokens: ``scheme -> (step ms, step / nope)``."""
    lines = [
        "# 2026-11-28T00:00:00Z python -m roformer_lit bench --lengths 8192 --batch 1",
        "## roformer-lit bench on CPU: Test (2 cores)",
        "| scheme | kernel | L | tokens/s | step ms | fwd+bwd ms | step / nope |",
        "|---|---|---|---|---|---|---|",
        *(f"| {s} | softmax | 8192 | 1 | {ms} | {ms} | {r} |" for s, (ms, r) in rows.items()),
    ]
    return "\n".join(lines) + "\n"


def test_row_pieces_compare_each_schemes_step_over_nope_per_process(study_bench: Path):
    """XL below the whole slices in both processes; DeBERTa's second row-pieces process
    (3.30) above the first whole-slices one (3.20): not below in every process."""
    before, after = cpu_speed.ROW_PIECES.values()
    for name, xl, deberta in (
        (before[0], "3.400", "3.200"),
        (before[1], "3.500", "3.400"),
        (after[0], "3.100", "3.000"),
        (after[1], "3.200", "3.300"),
    ):
        rows = {
            "nope": ("11,000.0", "1.000"),
            "xl": ("37,000.0", xl),
            "deberta": ("34,000.0", deberta),
        }
        (study_bench / name).write_text(_step_file(rows))
    text = cpu_speed.row_pieces()
    assert "| scheme | step / nope, whole slices | step / nope, row pieces | step ms, whole" in text
    assert (
        "| xl | 3.400 / 3.500 | 3.100 / 3.200 | 37,000.0 / 37,000.0 | 37,000.0 / 37,000.0 |" in text
    )
    assert "Row pieces below whole slices in every process: `xl`." in text
    assert "on CPU: Test (2 cores))." in text


def _step_file_at(length: int, rows: dict[str, tuple[str, str]]) -> str:
    """:func:`_step_file` at ``length`` tokens."""
    return _step_file(rows).replace("8192", str(length))


def test_tied_tails_compare_both_codes_per_length_and_state_the_target(study_bench: Path):
    """T5 below the code before in every process at both lengths; KERPLE (the control) not;
    after, T5 within 1.5 at 2,048 only (1.52 in one process at 8,192) and KERPLE at 8,192
    only (1.51 in one process at 2,048)."""
    after_ratios = {
        2048: (("1.210", "1.480"), ("1.250", "1.510")),
        8192: (("1.300", "1.420"), ("1.520", "1.450")),
    }
    for length, sides in cpu_speed.TIED_TAILS.items():
        for n, name in enumerate(sides["before"]):
            rows = {
                "nope": ("1,000.0", "1.000"),
                "t5": ("1,400.0", f"{1.4 if length == 2048 else 1.6:.2f}{n}"),
                "kerple": ("1,400.0", "1.400"),
            }
            (study_bench / name).write_text(_step_file_at(length, rows))
        for name, (t5, kerple) in zip(sides["after"], after_ratios[length], strict=True):
            rows = {
                "nope": ("1,000.0", "1.000"),
                "t5": ("1,300.0", t5),
                "kerple": ("1,450.0", kerple),
            }
            (study_bench / name).write_text(_step_file_at(length, rows))
    text = cpu_speed.tied_tails()
    assert text.count("After below before in every process: `t5`.") == 2
    assert "| t5 | 1.400 / 1.401 | 1.210 / 1.250 | 1,400.0 / 1,400.0 | 1,300.0 / 1,300.0 |" in text
    assert "At 8,192 tokens:" in text and "At 2,048 tokens:" in text
    assert "`t5` at 2,048 tokens 1.21× and 1.25×" in text
    assert "`kerple` at 8,192 tokens 1.42× and 1.45×" in text
    assert "within 1.5× in every process: `t5` at 2,048, `kerple` at 8,192." in text
