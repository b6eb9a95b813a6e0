"""The data path at scale: ``bench-data`` on corpora of 25, 100 and 400 MB (region
``corpus-data-scale`` of ``docs/guide/corpus.md``).

Raw output: :data:`RAW`, the table ``python -m roformer_lit bench-data`` printed, under a
header naming the command, the code revision and the machine. The guide typed this table
and the ratios read off it by hand; here every cell is the raw output's, and the ratios
(peak RSS of the largest corpus against the smallest, the range of preparation against the
raw tokenizer, the token files' size) are computed from it. A row cut short, a cell that is
not the number it must be, or a missing header line is refused in one line naming the file
and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from roformer_lit.errors import ConfigError
from roformer_lit.results.study.places import bench_file
from roformer_lit.results.study.reading import read_text

RAW = "cpu-2026-11-23-data-scale.txt"
#: Bytes per token in a prepared corpus's token files (``uint16`` ids).
TOKEN_BYTES = 2
_HEAD = "| corpus | tokens |"
_COLUMNS = 8
_SECONDS = re.compile(r"^([0-9.]+) s$")
_WALL_RSS = re.compile(r"^([0-9.]+) s / ([0-9,]+) MB$")
_TOKENIZING = re.compile(r"^([0-9.]+) s / ([0-9,]+) \((\d+)\)$")
_PAIR = re.compile(r"^([0-9,]+) / ([0-9,]+)$")
_PERCENTS = re.compile(r"^(\d+) % / (\d+) %$")
_TOKENS = re.compile(r"^([0-9.]+) M$")


@dataclass(frozen=True)
class Row:
    """One corpus size: every cell of its row, as numbers where the guide computes."""

    corpus: str
    tokens: tuple[str, float]
    fit: tuple[str, float]
    tokenizing: tuple[str, str, int]
    raw: tuple[str, str]
    share: tuple[int, int]
    prepared: tuple[str, float]
    cached: str


def _match(pattern: re.Pattern[str], cell: str, at: str) -> re.Match[str]:
    found = pattern.match(cell)
    if found is None:
        raise ConfigError(f"{at}: cell {cell!r} is not of the form {pattern.pattern}")
    return found


def _row(cells: list[str], at: str) -> Row:
    if len(cells) != _COLUMNS:
        raise ConfigError(f"{at}: a row of {len(cells)} cells, not {_COLUMNS}")
    fit = _match(_WALL_RSS, cells[2], at)
    tokenizing = _match(_TOKENIZING, cells[3], at)
    raw = _match(_PAIR, cells[4], at)
    share = _match(_PERCENTS, cells[5], at)
    prepared = _match(_WALL_RSS, cells[6], at)
    return Row(
        corpus=cells[0],
        tokens=(cells[1], float(_match(_TOKENS, cells[1], at)[1])),
        fit=(fit[1], float(fit[2].replace(",", ""))),
        tokenizing=(tokenizing[1], tokenizing[2], int(tokenizing[3])),
        raw=(raw[1], raw[2]),
        share=(int(share[1]), int(share[2])),
        prepared=(prepared[1], float(prepared[2].replace(",", ""))),
        cached=_match(_SECONDS, cells[7], at)[1],
    )


def read() -> tuple[list[str], list[Row]]:
    """The raw output's ``#`` header lines and machine line, and its rows."""
    path = bench_file(RAW)
    header: list[str] = []
    rows: list[Row] = []
    table = False
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        at = f"{path}: line {number}"
        if line.startswith(_HEAD):
            table = True
        elif table and line.startswith("| ") and not line.startswith("|---"):
            if not line.rstrip().endswith("|"):
                raise ConfigError(f"{at}: the row is cut short")
            rows.append(_row([c.strip() for c in line.strip().strip("|").split("|")], at))
        elif not table and line.strip():
            header.append(line.lstrip("# ").strip())
    if len(header) < 3 or not rows:
        raise ConfigError(
            f"{path}: needs a command line, a revision line, a machine line and a table "
            f"starting {_HEAD!r}"
        )
    return header, rows


def table() -> str:
    """The table with its provenance, and the ratios the guide reads off it."""
    header, rows = read()
    command, revision, machine = header[:3]
    processes = {row.tokenizing[2] for row in rows}
    if len(processes) != 1:
        raise ValueError(f"tokenizing processes differ between rows: {sorted(processes)}")
    lines = [
        f"Raw output `docs/bench/{RAW}` (`{command}`; {revision}; {machine.split(': ', 1)[-1]}):",
        "",
        "| corpus | tokens | `fit` with preparation: wall / peak RSS | tokenizing "
        f"({processes.pop()} processes) | raw `encode_batch` / `encode_batch_fast`, same text "
        "and cores | preparation / raw | `fit` on the prepared corpus: to first step / peak "
        "RSS | `prepare`, cached |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row.corpus} | {row.tokens[0]} | {row.fit[0]} s / {row.fit[1]:,.0f} MB | "
            f"{row.tokenizing[0]} s, {row.tokenizing[1]} tokens/s | {row.raw[0]} / "
            f"{row.raw[1]} tokens/s | {row.share[0]} % / {row.share[1]} % | "
            f"{row.prepared[0]} s / {row.prepared[1]:,.0f} MB | {row.cached} s |"
        )
    small, large = rows[0], rows[-1]
    shares = [share for row in rows for share in row.share]
    lines += [
        "",
        f"Against the targets: peak RSS at {large.corpus} is "
        f"{large.fit[1] / small.fit[1]:.2f}× that at {small.corpus} with preparation and "
        f"{large.prepared[1] / small.prepared[1]:.2f}× on the prepared corpus; preparation "
        f"tokenizes at {min(shares)}–{max(shares)} % of the raw tokenizer on the same cores; "
        f"a prepared {large.corpus} corpus reaches its first training step in "
        f"{large.prepared[0]} s; its token files hold {TOKEN_BYTES} bytes a token "
        f"(`uint16`), {large.tokens[1] * TOKEN_BYTES:.0f} MB. Each wall-clock cell is one run "
        "on a shared machine.",
    ]
    return "\n".join(lines)
