"""The bias schemes' training-step time and memory on a CPU, from ``bench``'s raw outputs
(regions ``cpu-bias-table``, ``cpu-bias-findings`` and ``readme-cpu-bias``).

Each raw output is what ``python -m roformer_lit bench`` printed, its command on the
first line; the table rows are read back from its markdown table. The target compared
against is the performance goal: a bias scheme's step at most ``TARGET`` times the step of
``nope`` (no position information, fused attention) at 2,048 tokens and beyond.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from roformer_lit.errors import ConfigError
from roformer_lit.results.study.places import bench_file, cached
from roformer_lit.results.study.reading import read_text

#: The raw outputs: this code at 512 and 2,048 tokens (batch 4), a second run of the same at
#: 2,048 tokens, the same with subnormal floats kept (the opt-out), and at 8,192 tokens
#: (batch 1).
FUSED = "cpu-2026-11-28-bias-512-2048.txt"
SECOND = "cpu-2026-11-28-bias-2048-second.txt"
KEPT = "cpu-2026-11-28-bias-kept-subnormals-2048.txt"
LONG = "cpu-2026-11-28-bias-8192.txt"
#: ``SECOND``'s command on another machine, on a later code whose steps without documents
#: take the same paths (0a036ea).
OTHER_MACHINE = "cpu-2026-11-28-bias-2048-other-machine.txt"
#: ``SECOND``'s command on a third machine, a 2-core Intel Xeon with AVX-512 and AMX, on the
#: code of 2026-11-30 (4111585), whose T5 path has the tied tails (85e364d) the others lack.
THIRD_MACHINE = "cpu-2026-11-30-bias-2048-intel-avx512.txt"


class Earlier(NamedTuple):
    """The same commands run on an earlier code: what it lacked, its raw outputs per length
    and the schemes the change since touches at that length."""

    lacking: str
    outputs: dict[int, tuple[str, ...]]
    changed: dict[int, tuple[str, ...]]


#: Earlier codes, latest first.
BEFORE = (
    Earlier(
        "before FIRE's piecewise bias wrote each head's rows from its own tables and summed "
        "its intervals from chunk sums, and before the fused backward's dS went straight "
        "into the mask's gradient and its first chunk's products straight into dk and dv",
        {
            2048: (
                "cpu-2026-11-27-bias-rows-512-2048.txt",
                "cpu-2026-11-27-bias-rows-2048-second.txt",
            ),
            8192: ("cpu-2026-11-27-bias-rows-8192.txt",),
        },
        {2048: ("fire", "xl", "deberta"), 8192: ("fire", "xl", "deberta")},
    ),
    # at 2,048 tokens XL and DeBERTa take the dense path, which this change left alone
    Earlier(
        "before FIRE's rows were computed from the grid's shape and before FIRE's, XL's and "
        "DeBERTa's blocks rebuilt their bias in backward instead of being checkpointed",
        {
            2048: (
                "cpu-2026-11-27-bias-offset-512-2048.txt",
                "cpu-2026-11-27-bias-offset-2048-second.txt",
            ),
            8192: ("cpu-2026-11-27-bias-offset-8192.txt",),
        },
        {2048: ("fire",), 8192: ("fire", "xl", "deberta")},
    ),
)
#: FIRE against ``nope`` at 8,192 tokens (batch 1) on the code before the first of
#: ``BEFORE`` (16e5c61) and after it (09f7e9f), two processes each, alternating.
FIRE_ALTERNATING = {
    "before": ("cpu-2026-11-28-fire-8192-before-1.txt", "cpu-2026-11-28-fire-8192-before-2.txt"),
    "after": ("cpu-2026-11-28-fire-8192-after-1.txt", "cpu-2026-11-28-fire-8192-after-2.txt"),
}
#: The same at 8,192 tokens before a bias of ``(h, i - j)`` was read through a view of its
#: table (ALiBi, T5 and KERPLE then ran in blocks of queries, as the other bias schemes do).
LONG_BEFORE = "cpu-2026-11-27-bias-fused-8192.txt"
#: Every scheme and kernel at 128, 512 and 2,048 tokens with the HF references and the
#: matmul ceiling (``bench --vs-hf``), FLOPs counted from the built model.
EVERY = "cpu-2026-11-27-every-scheme.txt"
#: Peak memory per scheme at 2,048 and 8,192 tokens (batch 1), as ``bench`` measures it and
#: with freed memory returned to the OS (``scripts/peak_memory.py``).
MEMORY = {
    2048: "cpu-2026-11-28-peak-memory-2048.txt",
    8192: "cpu-2026-11-28-peak-memory-8192.txt",
}
#: The schemes that add a score bias, in the order the tables show them.
BIAS_SCHEMES = ("alibi", "t5", "kerple", "fire", "xl", "deberta")
TARGET = 1.5
PERFORMANCE_PAGE = "docs/performance.md"

Row = dict[str, str]


@cached
def table_rows(name: str, head: str) -> tuple[Row, ...]:
    """The rows of the first table of raw output ``name`` whose header starts with ``head``,
    each a mapping from column header to cell; ConfigError naming the file if it has none."""
    path = bench_file(name)
    lines = read_text(path).splitlines()
    header = next((i for i, line in enumerate(lines) if line.startswith(head)), None)
    if header is None:
        raise ConfigError(f"{path}: no per-scheme table (a {head.strip()!r} header)")
    columns = [c.strip() for c in lines[header].strip("|").split("|")]
    rows: list[Row] = []
    for number, line in enumerate(lines[header + 2 :], start=header + 3):
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) != len(columns):
            raise ConfigError(
                f"{path}: line {number}: {len(cells)} cells for {len(columns)} columns"
            )
        rows.append(dict(zip(columns, cells, strict=True)))
    return tuple(rows)


def bench_table(name: str, head: str = "| scheme | kernel |") -> dict[tuple[str, int], Row]:
    """The rows of the per-scheme table of raw output ``name`` (the first whose header starts
    with ``head``), by ``(first column, L)`` (the scheme, or the recipe), each a mapping
    from column header to cell; ConfigError naming the file if it has none."""
    rows: dict[tuple[str, int], Row] = {}
    for row in table_rows(name, head):
        first = next(iter(row.values()))
        try:
            rows[(first, int(row["L"]))] = row
        except ValueError:
            raise ConfigError(f"{bench_file(name)}: L is not an integer: {row['L']!r}") from None
    return rows


def command(name: str) -> str:
    """The command a raw output records on its first line (``# <time> <command>``)."""
    first = read_text(bench_file(name)).splitlines()[0]
    words = first.lstrip("# ").split(" ", 1)
    return words[1].replace(".venv/bin/python", "python") if len(words) > 1 else first


#: How ``bench`` and the scripts beside it (``document_split_speed.py``) name the machine on
#: a line after the command, before ``CPU: <model> (<cores>), torch <version>``.
MACHINE_LINES = ("## roformer-lit bench on ", "# ")


def machine(name: str) -> str | None:
    """The machine a raw output names (``CPU: <model> (<cores>), torch <version>``), or None
    where it names none."""
    for line in read_text(bench_file(name)).splitlines():
        for prefix in MACHINE_LINES:
            if line.startswith(prefix + "CPU: "):
                return line.removeprefix(prefix).strip()
    return None


def raw_outputs(names: Sequence[str], commands: str) -> str:
    """``Raw outputs: <links> (<commands>, on <machine>).``: the sentence under a region,
    with the machine the first of ``names`` ran on (left out where it names none)."""
    links = ", ".join(f"[`{name}`](bench/{name})" for name in names)
    on = machine(names[0])
    return f"Raw outputs: {links} ({commands}" + (f", on {on}" if on else "") + ").\n"


def ratio(name: str, scheme: str, length: int) -> float:
    """``step / nope`` of ``scheme`` at ``length`` in raw output ``name``."""
    row = bench_table(name).get((scheme, length))
    if row is None:
        raise ConfigError(f"{bench_file(name)}: no row for {scheme} at L = {length}")
    return float(row["step / nope"])


def _cell(name: str, scheme: str, length: int, column: str) -> str:
    row = bench_table(name).get((scheme, length))
    return "not run" if row is None else row[column]


def _with_range(name: str, scheme: str, length: int) -> str:
    """``step / nope (smallest-largest per-round ratio)``, or "not run"."""
    row = bench_table(name).get((scheme, length))
    if row is None:
        return "not run"
    spread = row["step / nope, rounds' range"]
    return row["step / nope"] if spread == "–" else f"{row['step / nope']} ({spread})"


def round_range(row: Row) -> tuple[float, float]:
    """The smallest and largest per-round ``step / nope`` of a table row (``a–b``)."""
    low, high = row["step / nope, rounds' range"].split("–")
    return float(low), float(high)


def largest_round(name: str, scheme: str, length: int) -> float:
    """The largest per-round ``step / nope`` of ``scheme`` at ``length``."""
    return round_range(bench_table(name)[(scheme, length)])[1]


def table() -> str:
    """Scheme x (L = 512, 2,048, 2,048 with subnormals kept, 8,192): step / nope with the
    per-round range, and peak memory."""
    head = (
        "| scheme | step / nope, L = 512 | step / nope, L = 2,048 (rounds' range) "
        "| peak MB, 2,048 | same, subnormals kept | step / nope, L = 8,192 (range) "
        "| peak MB, 8,192 |\n|---|---|---|---|---|---|---|\n"
    )
    lines = []
    for scheme in ("nope", "rope", *BIAS_SCHEMES):
        lines.append(
            f"| {scheme} | {_cell(FUSED, scheme, 512, 'step / nope')} "
            f"| {_with_range(FUSED, scheme, 2048)} "
            f"| {_cell(FUSED, scheme, 2048, 'peak MB')} "
            f"| {_cell(KEPT, scheme, 2048, 'step / nope')} "
            f"| {_with_range(LONG, scheme, 8192)} "
            f"| {_cell(LONG, scheme, 8192, 'peak MB')} |"
        )
    sources = (
        f"Raw outputs: [`docs/bench/{FUSED}`](bench/{FUSED}) (`{command(FUSED)}`), "
        f"[`docs/bench/{KEPT}`](bench/{KEPT}) (`{command(KEPT)}`) and "
        f"[`docs/bench/{LONG}`](bench/{LONG}) (`{command(LONG)}`)."
    )
    return head + "\n".join(lines) + "\n\n" + sources + "\n"


def within(length: int, name: str) -> tuple[list[str], list[str]]:
    """The bias schemes whose step / nope at ``length`` is within the target, and the rest."""
    present = [s for s in BIAS_SCHEMES if (s, length) in bench_table(name)]
    meets = [s for s in present if ratio(name, s, length) <= TARGET]
    return meets, [s for s in present if s not in meets]


def _listed(name: str, schemes: list[str], length: int) -> str:
    """``scheme ratio×`` for each of ``schemes``, the ratio as the raw output prints it
    (three decimals: 1.495 and 1.504 stay on their sides of a 1.5 target)."""
    return (
        ", ".join(f"`{s}` {bench_table(name)[(s, length)]['step / nope']}×" for s in schemes)
        or "none"
    )


def _rounds(name: str, schemes: list[str], length: int) -> str:
    """Which of ``schemes`` stayed within the target in every round of raw output ``name``,
    and the largest round of the others."""
    every = [s for s in schemes if largest_round(name, s, length) <= TARGET]
    some = [s for s in schemes if s not in every]
    return f"in every round for {', '.join(f'`{s}`' for s in every) or 'none'}" + (
        "; not in every round for "
        + ", ".join(f"`{s}` (up to {largest_round(name, s, length):.2f}×)" for s in some)
        if some
        else ""
    )


def _run(name: str, length: int) -> str:
    """Which bias schemes meet the target at ``length`` in raw output ``name``: the medians,
    and whether every round did."""
    meets, misses = within(length, name)
    return (
        f"{len(meets)} of {len(meets) + len(misses)} bias schemes within {TARGET}×: "
        f"{_listed(name, meets, length)} ({_rounds(name, meets, length)}); not within it: "
        f"{_listed(name, misses, length)}"
    )


def findings() -> str:
    """Which schemes meet the target at 2,048 (two runs) and 8,192 tokens (the median, and
    whether every round did), the 8,192-token ratios before the per-offset path, and what
    keeping subnormal floats costs, with the numbers."""
    kept = _listed(KEPT, [s for s in BIAS_SCHEMES if (s, 2048) in bench_table(KEPT)], 2048)
    before = [s for s in BIAS_SCHEMES if (s, 8192) in bench_table(LONG_BEFORE)]
    return (
        f"- At 2,048 tokens, as the median of one run's per-round ratios: {_run(FUSED, 2048)}.\n"
        f"- A second run at 2,048 tokens ([`docs/bench/{SECOND}`](bench/{SECOND}), "
        f"`{command(SECOND)}`): {_run(SECOND, 2048)}.\n"
        f"- The same command on another machine ({machine(OTHER_MACHINE)}; raw output "
        f"[`docs/bench/{OTHER_MACHINE}`](bench/{OTHER_MACHINE})): "
        f"{_run(OTHER_MACHINE, 2048)}.\n"
        f"- The same command on a third machine, with AVX-512 and AMX, on the code of 30 "
        f"November, whose `t5` has the tied tails below ({machine(THIRD_MACHINE)}; raw output "
        f"[`docs/bench/{THIRD_MACHINE}`](bench/{THIRD_MACHINE})): "
        f"{_run(THIRD_MACHINE, 2048)}.\n"
        f"- At 8,192 tokens (batch 1): {_run(LONG, 8192)}.\n"
        f"- The same at 8,192 tokens before ALiBi, T5 and KERPLE read their per-offset table "
        f"through a view (all six in blocks of queries; raw output "
        f"[`docs/bench/{LONG_BEFORE}`](bench/{LONG_BEFORE})): "
        f"{_listed(LONG_BEFORE, before, 8192)}.\n"
        f"- With subnormal floats kept (`ROFORMER_LIT_KEEP_SUBNORMALS=1`, same code) at 2,048 "
        f"tokens: {kept}.\n"
        + "".join(
            f"- {earlier.lacking[0].upper() + earlier.lacking[1:]} (raw outputs "
            f"{_sources(earlier)}): {_before(earlier)}.\n"
            for earlier in BEFORE
        )
        + f"- {_fire_alternating()}\n"
    )


def _before(earlier: Earlier) -> str:
    """The changed schemes' step / nope in the raw outputs of an earlier code, per length
    (one value per run)."""
    return "; ".join(
        f"{length:,} tokens "
        + ", ".join(
            f"`{scheme}` "
            + " and ".join(f"{bench_table(n)[(scheme, length)]['step / nope']}×" for n in names)
            for scheme in earlier.changed[length]
        )
        for length, names in earlier.outputs.items()
    )


def _sources(earlier: Earlier) -> str:
    names = [name for names in earlier.outputs.values() for name in names]
    return ", ".join(f"[`docs/bench/{name}`](bench/{name})" for name in names)


def _fire_alternating() -> str:
    """FIRE's step / nope at 8,192 tokens in each process of the codes before and after."""
    sides = {
        label: " and ".join(f"{bench_table(n)[('fire', 8192)]['step / nope']}×" for n in names)
        for label, names in FIRE_ALTERNATING.items()
    }
    sources = ", ".join(
        f"[`{name}`](bench/{name})" for names in FIRE_ALTERNATING.values() for name in names
    )
    first = FIRE_ALTERNATING["before"][0]
    return (
        f"The first of these changes alone at 8,192 tokens, two processes of each code run "
        f"alternately: `fire` {sides['before']} before, {sides['after']} after (raw outputs "
        f"{sources}, `{command(first)}`)."
    )


def readme() -> str:
    """One sentence for the README, the numbers from the same raw outputs."""
    meets, misses = within(2048, FUSED)
    second_misses = [
        s for s in meets if (s, 2048) in bench_table(SECOND) and ratio(SECOND, s, 2048) > TARGET
    ]
    caveat = (
        f" (in a second run {_listed(SECOND, second_misses, 2048)} did not)"
        if second_misses
        else " (and in a second run)"
    )
    long_meets, long_misses = within(8192, LONG)
    other_meets, other_misses = within(2048, OTHER_MACHINE)
    other = (
        f"; on another 2-core CPU at 2,048 tokens {len(other_meets)} do "
        f"({_listed(OTHER_MACHINE, other_meets, 2048)}; "
        f"{_listed(OTHER_MACHINE, other_misses, 2048)} do not)"
    )
    return (
        f"On a 2-core CPU at 2,048 tokens, {len(meets)} of {len(meets) + len(misses)} bias "
        f"schemes train within {TARGET}× of `nope`'s step ({_listed(FUSED, meets, 2048)}; "
        f"{_listed(FUSED, misses, 2048)} do not){caveat}; at 8,192 tokens "
        f"{len(long_meets)} do ({_listed(LONG, long_meets, 8192)}; "
        f"{_listed(LONG, long_misses, 8192)} do not){other}: [performance](docs/performance.md#bias-"
        f"schemes-on-a-cpu).\n"
    )


def every_scheme() -> str:
    """Every markdown table of raw output ``EVERY``, in its order, and its command."""
    lines = read_text(bench_file(EVERY)).splitlines()
    tables, current = [], []
    for line in lines:
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append("\n".join(current))
            current = []
    if current:
        tables.append("\n".join(current))
    if not tables:
        raise ConfigError(f"{bench_file(EVERY)}: no table")
    source = f"Raw output: [`docs/bench/{EVERY}`](bench/{EVERY}) (`{command(EVERY)}`)."
    return "\n\n".join(tables) + "\n\n" + source + "\n"


def _megabytes(row: Row, column: str) -> float:
    return float(row[column].replace(",", ""))


def memory() -> str:
    """Region ``cpu-bias-memory``: each scheme's peak memory at 2,048 and 8,192 tokens (batch
    1), as ``bench`` measures it and with freed memory returned, the growth from 2,048 to
    8,192 (4x the tokens: about 4x if memory is linear in length, 16x if quadratic), and
    the largest share of a peak that was memory already freed."""
    short, long = (bench_table(MEMORY[n], "| scheme | L | batch |") for n in (2048, 8192))
    kept, returned = "peak MB", "peak MB, freed memory returned"
    lines = [
        "| scheme | peak MB, 2,048 | freed returned, 2,048 | peak MB, 8,192 "
        "| freed returned, 8,192 | growth 2,048 → 8,192, freed returned |",
        "|---|---|---|---|---|---|",
    ]
    growth = {}
    for scheme in ("nope", *BIAS_SCHEMES):
        a, b = short.get((scheme, 2048)), long.get((scheme, 8192))
        if a is None or b is None:
            continue
        growth[scheme] = _megabytes(b, returned) / _megabytes(a, returned)
        lines.append(
            f"| {scheme} | {a[kept]} | {a[returned]} | {b[kept]} | {b[returned]} "
            f"| {growth[scheme]:.1f}× |"
        )
    if not growth:
        raise ConfigError(f"{bench_file(MEMORY[8192])}: no scheme measured at both lengths")
    share = {
        scheme: 1
        - _megabytes(long[(scheme, 8192)], returned) / _megabytes(long[(scheme, 8192)], kept)
        for scheme in growth
    }
    most = max(share, key=share.__getitem__)
    sources = " and ".join(
        f"[`docs/bench/{name}`](bench/{name}) (`{command(name)}`)" for name in MEMORY.values()
    )
    return (
        "\n".join(lines)
        + f"\n\nFrom 2,048 to 8,192 tokens (4× the tokens) the peak with freed memory returned "
        f"grows {min(growth.values()):.1f}–{max(growth.values()):.1f}× "
        f"({', '.join(f'`{s}` {g:.1f}×' for s, g in growth.items())}): linear in length "
        f"would be about 4×, quadratic 16×. At 8,192 tokens up to "
        f"{share[most]:.0%} of a peak as `bench` measures it (`{most}`) is memory glibc "
        f"kept after it was freed, not tensors alive at once. Raw outputs: {sources}.\n"
    )


#: T5 and KERPLE at 8,192 tokens with 4 documents per row (blocks of queries), masked step
#: against the plain one (``bench --document-mask``), two codes, two processes each,
#: alternating: each block checkpointed (code 7c919dd) against its mask rebuilt in backward
#: (8574591); then rows in two passes (8574591) against one (aed93e9).
DOCUMENTS = {
    "checkpointed": (
        "cpu-2026-11-27-documents-8192-checkpointed-1.txt",
        "cpu-2026-11-27-documents-8192-checkpointed-2.txt",
    ),
    "rebuilt": (
        "cpu-2026-11-27-documents-8192-rebuilt-1.txt",
        "cpu-2026-11-27-documents-8192-rebuilt-2.txt",
    ),
}
ROWS = {
    "two passes": (
        "cpu-2026-11-27-documents-8192-two-passes-1.txt",
        "cpu-2026-11-27-documents-8192-two-passes-2.txt",
    ),
    "one pass": (
        "cpu-2026-11-27-documents-8192-one-pass-1.txt",
        "cpu-2026-11-27-documents-8192-one-pass-2.txt",
    ),
}
MASKED = "| scheme | kernel | L | step ms | step ms,"
RATIO = "masked / plain (median paired)"


class Measure(NamedTuple):
    """Which of bench's tables two codes' processes are compared on: the header its table
    starts with, its ratio column, the column of the step compared (the first whose header
    ends with ``step``), and how each is labelled."""

    head: str
    ratio: str
    step: str
    ratio_label: str
    step_label: str


#: The masked step with packed documents against the plain step (``--document-mask``).
MASKED_STEP = Measure(MASKED, RATIO, "documents masked", "masked / plain", "masked step ms")
#: The step against ``nope``'s (bench's per-scheme table).
STEP = Measure("| scheme | kernel |", "step / nope", "step ms", "step / nope", "step ms")


def _measured_rows(
    names: tuple[str, ...], scheme: str, measure: Measure, length: int = 8192
) -> list[Row]:
    return [bench_table(name, measure.head)[(scheme, length)] for name in names]


def _masked_rows(names: tuple[str, ...], scheme: str) -> list[Row]:
    return _measured_rows(names, scheme, MASKED_STEP)


def compare_codes(
    sides: dict[str, tuple[str, ...]],
    schemes: tuple[str, ...] = ("nope", "t5", "kerple"),
    measure: Measure = MASKED_STEP,
    length: int = 8192,
) -> str:
    """Per scheme at ``length`` tokens, ``measure``'s ratio and step milliseconds in each
    process of two codes (``sides``: label -> raw outputs, before first), and which schemes
    the second code puts below the first in every process."""
    (before, old), (after, new) = sides.items()
    head = (
        f"| scheme | {measure.ratio_label}, {before} | {measure.ratio_label}, {after} "
        f"| {measure.step_label}, {before} | {measure.step_label}, {after} |\n"
        "|---|---|---|---|---|\n"
    )
    lines, apart = [], []
    for scheme in schemes:
        rows = {
            label: _measured_rows(names, scheme, measure, length) for label, names in sides.items()
        }
        step = next(c for c in rows[before][0] if c.endswith(measure.step))
        cells = [" / ".join(r[measure.ratio] for r in rows[label]) for label in sides]
        cells += [" / ".join(r[step] for r in rows[label]) for label in sides]
        lines.append(f"| {scheme} | " + " | ".join(cells) + " |")
        ratios = {
            label: [float(r[measure.ratio].rstrip("x")) for r in rows[label]] for label in sides
        }
        if scheme != "nope" and max(ratios[after]) < min(ratios[before]):
            apart.append(f"`{scheme}`")
    names = [name for side in sides.values() for name in side]
    return (
        head
        + "\n".join(lines)
        + f"\n\n{after[0].upper() + after[1:]} below {before} in every process: "
        + f"{', '.join(apart) or 'none'}.\n\n"
        + raw_outputs(names, f"`{command(old[0])}`")
    )


#: XL and DeBERTa against ``nope`` at 8,192 tokens (batch 1, the blocked path): each block
#: reading a slice of the whole per-row tensor (1060de8) against the pieces of it cut once
#: (``RowPieces``, d3d6c28), two processes each, alternating.
ROW_PIECES = {
    "whole slices": (
        "cpu-2026-11-28-row-pieces-8192-before-1.txt",
        "cpu-2026-11-28-row-pieces-8192-before-2.txt",
    ),
    "row pieces": (
        "cpu-2026-11-28-row-pieces-8192-after-1.txt",
        "cpu-2026-11-28-row-pieces-8192-after-2.txt",
    ),
}


def row_pieces() -> str:
    """Region ``cpu-bias-row-pieces``: XL and DeBERTa on the blocked path, each block's
    rows sliced from the whole against cut once into pieces."""
    return compare_codes(ROW_PIECES, ("nope", "xl", "deberta"), STEP)


#: T5 (tied tails) and KERPLE (none: the control) against ``nope`` on the per-offset path
#: with the table's gradient summed on every diagonal (e1d56df) and, for T5, from the band
#: and one causal call (85e364d): per length, two processes of each code, alternating.
TIED_TAILS = {
    length: {
        side: tuple(f"cpu-2026-11-29-tied-tails-{length}-{side}-{n}.txt" for n in (1, 2))
        for side in ("before", "after")
    }
    for length in (2048, 8192)
}


def _step_over_nope(scheme: str, names: tuple[str, ...], length: int) -> list[float]:
    return [float(r[STEP.ratio]) for r in _measured_rows(names, scheme, STEP, length)]


def tied_tails() -> str:
    """Region ``cpu-bias-tied-tails``: per length, ``nope``, ``t5`` and ``kerple`` on the
    code before T5's tied tails and after, and each one's step over ``nope``'s after,
    within the target in every process or not."""
    parts, listed, meets = [], [], []
    for length, sides in TIED_TAILS.items():
        table = compare_codes(sides, ("nope", "t5", "kerple"), STEP, length)
        parts.append(f"At {length:,} tokens:\n\n{table}")
        for scheme in ("t5", "kerple"):
            values = _step_over_nope(scheme, sides["after"], length)
            listed.append(
                f"`{scheme}` at {length:,} tokens "
                + " and ".join(f"{value:.2f}×" for value in values)
            )
            if max(values) <= TARGET:
                meets.append(f"`{scheme}` at {length:,}")
    return (
        "\n".join(parts)
        + f"\nAfter, each scheme's step over `nope`'s in the same process: {'; '.join(listed)}; "
        + f"within {TARGET}× in every process: {', '.join(meets) or 'none'}.\n"
    )


def documents() -> str:
    """Region ``cpu-bias-documents``: blocks checkpointed against rebuilt."""
    return compare_codes(DOCUMENTS)


def document_rows() -> str:
    """Region ``cpu-bias-documents-rows``: a block's rows in two passes against one."""
    return compare_codes(ROWS)


#: ``nope``, T5 and KERPLE at 8,192 tokens with 4 documents per row: the masked rows of
#: 16e5c61 (T5 and KERPLE in blocks of queries, ``nope`` on SDPA with the block-diagonal
#: mask) against one document at a time (09f7e9f), two processes each, alternating.
SPLIT = {
    "masked rows": (
        "cpu-2026-11-28-documents-8192-masked-1.txt",
        "cpu-2026-11-28-documents-8192-masked-2.txt",
    ),
    "one document at a time": (
        "cpu-2026-11-28-documents-8192-per-document-1.txt",
        "cpu-2026-11-28-documents-8192-per-document-2.txt",
    ),
}


#: ``nope``, FIRE, XL and DeBERTa at 8,192 tokens with 4 documents per row: the masked rows
#: of 012ba4c (FIRE, XL and DeBERTa in blocks of queries; ``nope`` already one document at a
#: time; two processes alternating with two of 0572931) against each document's own square
#: (0e8d9af, two processes run after them on the same machine).
SQUARES = {
    "masked rows": (
        "cpu-2026-11-28-documents-squares-8192-masked-1.txt",
        "cpu-2026-11-28-documents-squares-8192-masked-2.txt",
    ),
    "document squares": (
        "cpu-2026-11-28-documents-squares-8192-squares-1.txt",
        "cpu-2026-11-28-documents-squares-8192-squares-2.txt",
    ),
}
#: The schemes ``SQUARES`` is about (the others: ``SPLIT``).
SQUARE_SCHEMES = ("fire", "xl", "deberta")


def _masked_ms(row: Row) -> float:
    return float(next(v for c, v in row.items() if c.endswith("documents masked")).replace(",", ""))


def _over_nope(scheme: str, names: tuple[str, ...]) -> list[float]:
    """``scheme``'s masked step over ``nope``'s masked step in each process ``names`` (the
    ratio of the medians each process prints)."""
    return [
        _masked_ms(_masked_rows((name,), scheme)[0]) / _masked_ms(_masked_rows((name,), "nope")[0])
        for name in names
    ]


def _over_nope_sentence(label: str, names: tuple[str, ...], schemes: tuple[str, ...]) -> str:
    """Each scheme's masked step over ``nope``'s in each process, and which are within the
    target in every one."""
    over = {scheme: _over_nope(scheme, names) for scheme in schemes}
    listed = ", ".join(
        f"`{scheme}` " + " and ".join(f"{value:.2f}×" for value in values)
        for scheme, values in over.items()
    )
    meets = [f"`{s}`" for s, values in over.items() if max(values) <= TARGET]
    return (
        f"\n{label}, each scheme's masked step over `nope`'s masked step in the same process: "
        f"{listed}; within {TARGET}× in every process: {', '.join(meets) or 'none'}.\n"
    )


def document_split() -> str:
    """Region ``cpu-bias-documents-split``: masked rows against one document at a time, and,
    one document at a time, each bias scheme's masked step over ``nope``'s
    (:func:`_over_nope`)."""
    label = "one document at a time"
    return compare_codes(SPLIT) + _over_nope_sentence(
        "One document at a time", SPLIT[label], ("t5", "kerple")
    )


def document_squares() -> str:
    """Region ``cpu-bias-documents-squares``: FIRE, XL and DeBERTa in masked rows against
    each document's own square, and, with squares, each one's masked step over ``nope``'s."""
    return compare_codes(SQUARES, ("nope", *SQUARE_SCHEMES)) + _over_nope_sentence(
        "With squares", SQUARES["document squares"], SQUARE_SCHEMES
    )


#: Each document's square against the masked path at 1,024 tokens, batch 4, by mean
#: document length (``scripts/document_split_speed.py``, 0e8d9af): the ``MIN_MEAN_DOCUMENT``
#: guard measured for FIRE, XL and DeBERTa.
SQUARES_GUARD = {
    scheme: f"cpu-2026-11-28-document-split-squares-1024-{scheme}.txt" for scheme in SQUARE_SCHEMES
}
SPLIT_HEAD = "| scheme | L | batch | documents | tokens each |"


def squares_guard() -> str:
    """Region ``cpu-bias-documents-squares-guard``: per scheme and mean document length, the
    step one document's square at a time over the masked step, and the shortest length from
    which it is below 1 for every scheme."""
    lengths: list[int] = []
    cells: dict[str, dict[int, str]] = {}
    for scheme, name in SQUARES_GUARD.items():
        rows = {int(r["tokens each"]): r["split / masked"] for r in table_rows(name, SPLIT_HEAD)}
        cells[scheme] = rows
        lengths = sorted(set(lengths) | set(rows))
    head = "| tokens per document | " + " | ".join(f"`{s}`" for s in cells) + " |\n"
    head += "|---" * (len(cells) + 1) + "|\n"
    lines = [
        f"| {n} | " + " | ".join(f"{cells[s][n]}×" if n in cells[s] else "–" for s in cells) + " |"
        for n in lengths
    ]
    below = [n for n in lengths if all(float(cells[s].get(n, "inf")) < 1 for s in cells)]
    names = list(SQUARES_GUARD.values())
    where = f"from {min(below)} tokens per document on" if below else "at no length measured"
    return (
        head
        + "\n".join(lines)
        + f"\n\nBelow the masked step for every one of these schemes {where}.\n\n"
        + raw_outputs(names, f"`{command(names[0])}`, and the same for the others")
    )


def readme_documents() -> str:
    """Region ``readme-cpu-documents``: one sentence for the README from the
    one-document-at-a-time raw outputs (``SPLIT``'s for ``nope``, T5 and KERPLE, ``SQUARES``'
    for FIRE, XL and DeBERTa): each scheme's masked step over its plain step, and each bias
    scheme's masked step over ``nope``'s in the same process."""
    split, squares = SPLIT["one document at a time"], SQUARES["document squares"]
    sources = {"nope": split, "t5": split, "kerple": split}
    sources |= {scheme: squares for scheme in SQUARE_SCHEMES}

    def per_process(scheme: str) -> str:
        return "/".join(r[RATIO].rstrip("x") for r in _masked_rows(sources[scheme], scheme))

    plain = ", ".join(f"{per_process(s)}× (`{s}`)" for s in sources)
    over = ", ".join(
        "/".join(f"{value:.2f}" for value in _over_nope(s, names)) + f"× (`{s}`)"
        for s, names in sources.items()
        if s != "nope"
    )
    first, second = machine(split[0]), machine(squares[0])
    where = ""
    if first and second and first != second:
        where = f"; `nope`, `t5` and `kerple` on {first}, `fire`, `xl` and `deberta` on {second}"
    return (
        f"With packed documents (`data.document_mask`) a CPU attends each document on its own "
        f"from 1,024 tokens, for every built-in scheme (a bias of `i - j` alone reads its "
        f"table per document; FIRE, XL and DeBERTa build each document's own square): at "
        f"8,192 tokens with 4 documents per row a step takes {plain} of the same step "
        f"without documents, and the bias schemes' take {over} `nope`'s in the same process "
        f"(two processes each{where}): [performance](docs/performance.md#long-rows-the-bias-"
        f"per-block-of-queries).\n"
    )
