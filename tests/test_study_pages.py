"""The study pages equal what their raw outputs give (``scripts/study_pages.py --check``)."""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from roformer_lit.results.study import cpu_speed
from roformer_lit.results.study.pages import main as study_main
from roformer_lit.results.study.regions import render

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "study_pages.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )


def test_the_study_pages_are_generated_from_their_data() -> None:
    proc = _run("--check")
    assert proc.returncode == 0, proc.stderr


def test_check_fails_on_a_page_edited_by_hand() -> None:
    """A changed number inside a generated region is caught (the check can fail)."""
    page = ROOT / "docs" / "studies" / "position-tasks.md"
    text = page.read_text(encoding="utf-8")
    assert render(text, str(page)) == text
    edited = text.replace("| nope | 0.189 |", "| nope | 0.200 |", 1)
    assert edited != text and render(edited, str(page)) == text
    outside = text.replace("## recall", "## recall (edited)", 1)
    assert render(outside, str(page)) == outside  # hand-written text is left alone


# -- damaged raw outputs and pages: one error line, exit 2, no page written ---------------

PLANS_CSV = "cpu-study-plans-copy.csv"
BUDGET_CSV = "cpu-2026-11-26-study-budget-copy-long.csv"
SELECTION_CSV = "cpu-2026-11-25-study-schemes-runs.csv"
PROBES_TXT = "cpu-2026-11-24-probes-recall-extrapolate.txt"
MLM_TXT = "cpu-2026-11-23-extrapolation-every-scheme.txt"
POSITION_LR_TXT = "cpu-2026-11-23-position-lr.txt"
SPEED_TXT = cpu_speed.FUSED
MLM_CSV = "cpu-study-plans-mlm.csv"
RETRAIN_CSV = "cpu-2026-11-25-study-schemes-retrain.csv"


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def cut_mid_row(data: bytes) -> bytes:
    """The file cut inside its tenth line, after the row's second field."""
    lines = _lines(data.decode())
    row = lines[9]
    return "".join(lines[:9]).encode() + row[: row.index(",", row.index(",") + 1)].encode()


def value_not_a_number(data: bytes) -> bytes:
    lines = _lines(data.decode())
    lines[5] = lines[5].rsplit(",", 1)[0] + ",0.4x2\n"
    return "".join(lines).encode()


def one_field_too_many(data: bytes) -> bytes:
    lines = _lines(data.decode())
    lines[5] = lines[5].rstrip("\n") + ",extra\n"
    return "".join(lines).encode()


def value_column_renamed(data: bytes) -> bytes:
    lines = _lines(data.decode())
    lines[0] = lines[0].replace("value", "amount")
    return "".join(lines).encode()


def with_split(split: str):
    """The file with ``extrapolate --csv``'s ``split`` column, every row ``split``."""

    def damage(data: bytes) -> bytes:
        lines = [line.rstrip("\n") for line in _lines(data.decode())]
        return "".join(
            f"{line},{'split' if i == 0 else split}\n" for i, line in enumerate(lines)
        ).encode()

    damage.__name__ = f"split_{split}"
    return damage


def row_again(value: str | None):
    """The file with its first run row given again at its end (with ``value`` in place of
    its own, or as it is)."""

    def damage(data: bytes) -> bytes:
        lines = _lines(data.decode())
        first = next(line for line in lines if line.startswith("runs/"))
        again = first if value is None else first.rsplit(",", 1)[0] + f",{value}\n"
        return "".join([*lines, again]).encode()

    damage.__name__ = f"row_again_{value}"
    return damage


def binary(data: bytes) -> bytes:
    return b"\x1f\x8b\x08\x00" + bytes(range(256)) * 4


def nul_byte(data: bytes) -> bytes:
    return data[:200] + b"\0" + data[200:]


def selection_not_a_number(data: bytes) -> bytes:
    lines = _lines(data.decode())
    fields = lines[3].split(",")
    fields[5] = "high"  # val_acc
    lines[3] = ",".join(fields)
    return "".join(lines).encode()


def _selection_rows(data: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(data.decode(), newline="")))


def _selection_file(rows: list[dict[str, str]]) -> bytes:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue().encode()


def selection_unfinished(data: bytes) -> bytes:
    """The fourth run as compare tables a run that stopped at step 250: its val_acc is of
    another length (compare --select makes it no candidate)."""
    rows = _selection_rows(data)
    rows[3].update(
        val_acc="0.99", steps="250", note="unfinished: last validated at step 250 of 1500"
    )
    return _selection_file(rows)


def selection_seed_twice(data: bytes) -> bytes:
    """The first run again from another logdir, with another val_acc."""
    rows = _selection_rows(data)
    again = {**rows[0], "path": "elsewhere/" + rows[0]["path"], "val_acc": "0.99"}
    return _selection_file([*rows, again])


def table_cell_not_a_number(data: bytes) -> bytes:
    """The first run row of an extrapolate table with its first accuracy replaced."""
    lines = _lines(data.decode())
    at = next(i for i, line in enumerate(lines) if line.startswith("| ") and "runs/" in line)
    lines[at] = lines[at].replace(" / ", "x / ", 1)
    return "".join(lines).encode()


def table_row_cut(data: bytes) -> bytes:
    lines = _lines(data.decode())
    at = next(i for i, line in enumerate(lines) if line.startswith("| ") and "runs/" in line)
    return "".join(lines[:at]).encode() + lines[at][: len(lines[at]) // 2 + 40].encode()


def mlm_loss_cell(data: bytes) -> bytes:
    lines = _lines(data.decode())
    at = next(i for i, line in enumerate(lines) if "runs/positions/" in line and "| " in line)
    cells = lines[at].split("|")
    cells[4] = " 2.31e "  # L=128
    lines[at] = "|".join(cells)
    return "".join(lines).encode()


def mlm_row_twice(data: bytes) -> bytes:
    """xl's seed-0 row given twice: one run counted as a fourth seed."""
    lines = _lines(data.decode())
    at = next(i for i, line in enumerate(lines) if line.startswith("| runs/positions/xl-"))
    return "".join([*lines[: at + 1], lines[at], *lines[at + 1 :]]).encode()


def mlm_row_missing(data: bytes) -> bytes:
    """nope's seed-1 row gone: a mean over two seeds under a heading of three."""
    lines = _lines(data.decode())
    gone = "| runs/positions/nope-softmax-seed1/"
    return "".join(line for line in lines if not line.startswith(gone)).encode()


def position_lr_line_twice(data: bytes) -> bytes:
    lines = _lines(data.decode())
    at = next(i for i, line in enumerate(lines) if line.startswith("fire-softmax position_lr"))
    return "".join([*lines[: at + 1], lines[at], *lines[at + 1 :]]).encode()


def emptied(data: bytes) -> bytes:
    return b""


def speed_row_cut(data: bytes) -> bytes:
    """The first row of the bench table loses its last cell."""
    lines = _lines(data.decode())
    at = next(i for i, line in enumerate(lines) if line.startswith("| nope |"))
    lines[at] = lines[at].rsplit("|", 2)[0] + "|\n"
    return "".join(lines).encode()


def speed_table_renamed(data: bytes) -> bytes:
    return data.replace(b"| scheme | kernel |", b"| position | kernel |")


#: (case, damaged raw output, damage, region read, what the error line says)
DAMAGED_FILES = [
    ("csv-cut-mid-row", PLANS_CSV, cut_mid_row, "plans-table", "line 10: 2 of 4 fields"),
    ("csv-binary", PLANS_CSV, binary, "plans-table", "line 1: not UTF-8 text"),
    ("csv-nul-byte", PLANS_CSV, nul_byte, "plans-table", "a NUL byte"),
    ("csv-not-a-number", PLANS_CSV, value_not_a_number, "plans-table", "line 6: column value"),
    ("csv-extra-field", PLANS_CSV, one_field_too_many, "plans-table", "line 6: more fields"),
    ("csv-seed-twice", PLANS_CSV, row_again("0.01"), "plans-table", "seed 0 on copy at 16 (acc)"),
    ("csv-no-column", PLANS_CSV, value_column_renamed, "plans-table", "line 1: no column value"),
    ("budget-csv-cut", BUDGET_CSV, cut_mid_row, "budget", "line 10: 2 of 5 fields"),
    # a file that says it holds another split than the study reports
    ("csv-split-val", PLANS_CSV, with_split("val"), "plans-table", "line 2: split 'val', the"),
    ("budget-split-val", BUDGET_CSV, with_split("val"), "budget", "split 'val', the study"),
    ("retrain-split-val", RETRAIN_CSV, with_split("val"), "schemes-retrain", "split 'val'"),
    ("mlm-split-test", MLM_CSV, with_split("test"), "plans-mlm-table", "reads split 'val'"),
    ("selection-csv", SELECTION_CSV, selection_not_a_number, "schemes-selected", "val_acc"),
    (
        "selection-unfinished",
        SELECTION_CSV,
        selection_unfinished,
        "schemes-selected",
        "is unfinished: last",
    ),
    ("selection-twice", SELECTION_CSV, selection_seed_twice, "schemes-selected", "two values"),
    ("table-cell", PROBES_TXT, table_cell_not_a_number, "recall", "not a row of an extrapolate"),
    ("table-row-cut", PROBES_TXT, table_row_cut, "recall", "not a row of an extrapolate"),
    ("table-binary", PROBES_TXT, binary, "recall", "not UTF-8 text"),
    ("mlm-loss-cell", MLM_TXT, mlm_loss_cell, "mlm-sweep", "no loss at L=128"),
    ("mlm-missing", MLM_TXT, None, "mlm-sweep", "cannot be read"),
    ("mlm-seed-twice", MLM_TXT, mlm_row_twice, "mlm-sweep", "xl seed 0 a second time"),
    ("mlm-seed-gone", MLM_TXT, mlm_row_missing, "mlm-sweep", "nope has seeds 0, 2, not 0, 1, 2"),
    ("lr-seed-twice", POSITION_LR_TXT, position_lr_line_twice, "position-lr", "fire seed 0 a"),
    ("position-lr-empty", POSITION_LR_TXT, emptied, "position-lr", "cannot be written"),
    ("speed-row-cut", SPEED_TXT, speed_row_cut, "cpu-bias-table", "cells for"),
    ("speed-no-table", SPEED_TXT, speed_table_renamed, "cpu-bias-findings", "no per-scheme table"),
    ("speed-missing", SPEED_TXT, None, "readme-cpu-bias", "cannot be read"),
]

REGION_PAGE = "# A page\n\n<!-- generated: {region} -->\nstale\n<!-- end generated -->\n"


def _study_dirs(tmp_path: Path, page: str) -> tuple[Path, Path]:
    """A copy of docs/bench and a pages folder holding ``page`` alone."""
    bench, pages = tmp_path / "bench", tmp_path / "pages"
    shutil.copytree(ROOT / "docs" / "bench", bench)
    pages.mkdir()
    (pages / "page.md").write_text(page, encoding="utf-8")
    return bench, pages


def _error_line(capsys, argv: list[str]) -> str:
    code = study_main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (code, out, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


@pytest.mark.parametrize("region", sorted({case[3] for case in DAMAGED_FILES}))
def test_the_regions_of_the_damage_cases_are_written_from_intact_files(tmp_path, region) -> None:
    """The control: each page of the table below is rewritten from the intact copy, so its
    error comes from the damage alone."""
    bench, pages = _study_dirs(tmp_path, REGION_PAGE.format(region=region))
    assert study_main(["--bench", str(bench), "--pages", str(pages)]) == 0
    assert "stale" not in (pages / "page.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("name", "damage", "region", "says"),
    [case[1:] for case in DAMAGED_FILES],
    ids=[case[0] for case in DAMAGED_FILES],
)
def test_a_damaged_raw_output_is_one_error_line_naming_it(
    tmp_path, capsys, name, damage, region, says
) -> None:
    page = REGION_PAGE.format(region=region)
    bench, pages = _study_dirs(tmp_path, page)
    if damage is None:
        (bench / name).unlink()
    else:
        (bench / name).write_bytes(damage((bench / name).read_bytes()))
    line = _error_line(capsys, ["--bench", str(bench), "--pages", str(pages)])
    assert says in line, line
    named = str(bench / name) if "cannot be written" not in says else str(pages / "page.md")
    assert named in line, line
    assert (pages / "page.md").read_text(encoding="utf-8") == page  # nothing written


@pytest.mark.parametrize(
    ("name", "split", "region"),
    [
        (PLANS_CSV, "test", "plans-table"),
        (BUDGET_CSV, "test", "budget"),
        (RETRAIN_CSV, "test", "schemes-retrain"),
        (MLM_CSV, "val", "plans-mlm-table"),
    ],
)
def test_a_file_naming_the_split_its_study_reads_gives_the_same_page(
    tmp_path, name, split, region
) -> None:
    """The split column of a newer ``extrapolate --csv`` file changes nothing where it says
    the split the study reports (the committed files, from before the column, name none)."""
    bench, pages = _study_dirs(tmp_path, REGION_PAGE.format(region=region))
    assert study_main(["--bench", str(bench), "--pages", str(pages)]) == 0
    page = (pages / "page.md").read_text(encoding="utf-8")
    (bench / name).write_bytes(with_split(split)((bench / name).read_bytes()))
    (pages / "page.md").write_text(REGION_PAGE.format(region=region), encoding="utf-8")
    assert study_main(["--bench", str(bench), "--pages", str(pages)]) == 0
    assert (pages / "page.md").read_text(encoding="utf-8") == page


def test_on_every_seed_is_said_only_where_every_seed_agrees(tmp_path) -> None:
    """``position-lr``: ×10 below ×1 "on every seed" is stated only when it is; a seed on
    the other side makes the sentence give the count and each seed's difference."""
    bench, pages = _study_dirs(tmp_path, REGION_PAGE.format(region="position-lr"))
    raw = bench / POSITION_LR_TXT
    lines = raw.read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("fire-softmax position_lr"))
    lines[at + 1] = lines[at + 1].rsplit(",", 1)[0] + ",6.2\n"  # seed 1, above ×1's 6.037
    raw.write_text("".join(lines), encoding="utf-8")
    assert study_main(["--bench", str(bench), "--pages", str(pages)]) == 0
    text = (pages / "page.md").read_text(encoding="utf-8")
    fire = text[text.index("`fire` ×10") : text.index("`t5` ×10")]
    assert "on every seed by" not in fire.split(";")[0], fire
    assert "lower than ×1 on 2 of 3 seeds only" in fire and "-0.16" in fire, fire
    assert "`t5` ×10 is lower than ×1 on every seed by 0.73–0.76 nats" in text


def test_a_row_given_twice_with_its_own_value_changes_nothing(tmp_path) -> None:
    """The control of ``csv-seed-twice``: the same run's row twice with one value is one
    seed, as it was."""
    bench, pages = _study_dirs(tmp_path, REGION_PAGE.format(region="plans-table"))
    assert study_main(["--bench", str(bench), "--pages", str(pages)]) == 0
    page = (pages / "page.md").read_text(encoding="utf-8")
    (bench / PLANS_CSV).write_bytes(row_again(None)((bench / PLANS_CSV).read_bytes()))
    (pages / "page.md").write_text(REGION_PAGE.format(region="plans-table"), encoding="utf-8")
    assert study_main(["--bench", str(bench), "--pages", str(pages)]) == 0
    assert (pages / "page.md").read_text(encoding="utf-8") == page


QUICK_TXT = "cpu-2026-11-24-probes-quick-extrapolate.txt"
ROPE_COPY = "| runs/probes_quick/rope-copy-random_positions=none-seed"


def _probe_rows(lines: list[str], again: bool) -> list[str]:
    """rope × copy's seed-1 row gone, or (``again``) given again with another accuracy."""
    at = next(i for i, line in enumerate(lines) if line.startswith(ROPE_COPY + "1/"))
    if not again:
        return lines[:at] + lines[at + 1 :]
    other = lines[at].replace("| 1.000 / 1.000 |", "| 0.500 / 0.000 |", 1)
    assert other != lines[at]
    return [*lines[: at + 1], other, *lines[at + 1 :]]


@pytest.mark.parametrize(
    ("again", "says"),
    [
        (False, "rope × copy (ordinary positions) has seeds 0, 2, not 0, 1, 2"),
        (True, "line 54: rope × copy seed 1 at n=16 is 0.5 / 0.0 here and 1.0 / 1.0"),
    ],
    ids=["seed-gone", "seed-twice"],
)
def test_a_position_task_table_with_a_seed_gone_or_twice_is_one_error_line(
    tmp_path, capsys, again, says
) -> None:
    """ "Solved on every seed of three" is written only from three seeds: a row missing
    (two seeds under that sentence) or a run given two values is refused."""
    page = REGION_PAGE.format(region="training-length")
    bench, pages = _study_dirs(tmp_path, page)
    raw = bench / QUICK_TXT
    raw.write_text("".join(_probe_rows(_lines(raw.read_text()), again)), encoding="utf-8")
    line = _error_line(capsys, ["--bench", str(bench), "--pages", str(pages)])
    assert says in line and str(bench) in line, line
    assert (pages / "page.md").read_text(encoding="utf-8") == page


#: (case, page text, what the error line says)
DAMAGED_PAGES = [
    (
        "unknown-region",
        "# A page\n\n<!-- generated: no-such-region -->\nx\n<!-- end generated -->\n",
        "line 3: unknown generated region 'no-such-region'; known: budget,",
    ),
    (
        "unclosed-region",
        "# A page\n\ntext\n<!-- generated: position-lr -->\nx\n",
        "line 4: region 'position-lr' has no '<!-- end generated -->'",
    ),
    (
        "unclosed-before-the-next",
        "<!-- generated: position-lr -->\nx\n<!-- generated: mlm-sweep -->\n"
        "y\n<!-- end generated -->\n",
        "line 1: region 'position-lr' has no '<!-- end generated -->' before the next region",
    ),
    ("binary-page", b"# A page\n\xff\xfe\x00\x01", "line 2: not UTF-8 text"),
]


@pytest.mark.parametrize(
    ("page", "says"), [c[1:] for c in DAMAGED_PAGES], ids=[c[0] for c in DAMAGED_PAGES]
)
@pytest.mark.parametrize("check", [False, True], ids=["rewrite", "check"])
def test_a_damaged_page_is_one_error_line_naming_it(tmp_path, capsys, page, says, check) -> None:
    pages = tmp_path / "pages"
    pages.mkdir()
    data = page if isinstance(page, bytes) else page.encode()
    (pages / "page.md").write_bytes(data)
    argv = ["--pages", str(pages), *(["--check"] if check else [])]
    line = _error_line(capsys, argv)
    assert f"error: study_pages.py: {pages / 'page.md'}: {says}" in line
    assert (pages / "page.md").read_bytes() == data


def test_the_command_prints_no_traceback_on_a_damaged_file(tmp_path) -> None:
    """End to end, as a user runs it: one line on stderr, exit 2."""
    bench, pages = _study_dirs(tmp_path, REGION_PAGE.format(region="plans-table"))
    (bench / PLANS_CSV).write_bytes(binary(b""))
    proc = _run("--check", "--bench", str(bench), "--pages", str(pages))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(
        f"error: study_pages.py: {bench / PLANS_CSV}: line 1: not UTF-8 text"
    )


def test_a_rerun_plan_sweep_is_read_in_todays_run_name_spelling():
    """Run names spell 160000.0 as 160000 since the labels became injective: the study
    reads a rerun's runs as the same plans as the raw outputs' older names, and nothing
    else as a plan."""
    from roformer_lit.plan_labels import plan_label
    from roformer_lit.results.study.plans import MLM_PLANS, PLANS, RECALL_SHORT_PLANS, plan_called

    modern = {
        "pattern": ["global", "local", "local"],
        "types": {"global": {"position_kwargs": {"base": 160000.0}}, "local": {"window": 8}},
    }
    last = {
        "pattern": ["local", "local", "global"],
        "types": {"global": {"position_kwargs": {"base": 160000.0}}, "local": {"window": 8}},
    }
    assert plan_called(PLANS, plan_label(modern)) == PLANS["global.base160000.0-local8x2"]
    assert (
        plan_called(RECALL_SHORT_PLANS, plan_label(last))
        == RECALL_SHORT_PLANS["local8x2-global.base160000.0"]
    )
    assert plan_called(MLM_PLANS, "global.base160000-local32x2-global.base160000") is not None
    assert plan_called(PLANS, "global.base1600-local8x2") is None


SEEDS_CSV = "cpu-study-schemes-reverse-seeds.csv"


@pytest.mark.parametrize(
    ("region", "says"),
    [
        (
            "schemes-seeds-table",
            "line 3 region 'schemes-seeds-table' (row 'reverse | `alibi`', column 'n=16 (1×)': "
            "page '0.932 [0.920, 0.943] ▲ · 0/10 solved', "
            "data '0.922 [0.897, 0.947] ▲ · 0/10 solved')",
        ),
        (
            "schemes-seeds-pairs",
            "line 3 region 'schemes-seeds-pairs' (row 'reverse | `alibi`', column 'n=16 (1×)': "
            "page '**-0.068 [-0.080, -0.049] 0↑10↓ p=0.023**', "
            "data '**-0.078 [-0.102, -0.049] 0↑10↓ p=0.023**')",
        ),
    ],
)
def test_check_names_the_stale_region_row_and_cell_in_one_line(
    tmp_path, capsys, region, says
) -> None:
    """One number changed in a raw output: ``--check`` fails in one line naming the page,
    the region's line, the row and column of the first stale cell and both texts (it named
    the page alone)."""
    bench, pages = _study_dirs(tmp_path, REGION_PAGE.format(region=region))
    argv = ["--bench", str(bench), "--pages", str(pages)]
    assert study_main(argv) == 0 and study_main([*argv, "--check"]) == 0
    capsys.readouterr()
    rows = (bench / SEEDS_CSV).read_text(encoding="utf-8").splitlines(keepends=True)
    assert rows[1].endswith(",16,acc,0.935302734375\n") and "alibi" in rows[1]
    rows[1] = rows[1].replace("0.935302734375", "0.835302734375")
    (bench / SEEDS_CSV).write_text("".join(rows), encoding="utf-8")
    assert study_main([*argv, "--check"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"stale: {pages / 'page.md'} "), err
    assert says in err, err
