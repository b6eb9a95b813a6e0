"""Rewrite the generated regions of the study pages from the raw outputs in ``docs/bench/``.

    python scripts/study_pages.py           # rewrite every generated region
    python scripts/study_pages.py --check   # exit 0 only if the pages equal what the data give

A region is the text between ``<!-- generated: NAME -->`` and ``<!-- end generated -->`` on
a page of ``docs/studies/``, the README, ``docs/performance.md`` (its CPU speed tables) or
a page of ``docs/guide/`` (the fine-tuning result);
:data:`~.regions.REGIONS` maps each name to the function that
writes it. Every table, and every sentence that states a count, an ordering or "on every
seed", lives in such a region, so a page cannot drift from its data: the default test suite
runs ``--check``. A damaged raw output or page is one ``error:`` line naming the file (and
the line or region), exit 2; no page is written then. So is an ``extrapolate --csv`` file
whose ``split`` column names another split than its study reports (``test``; the MLM
study's corpus runs: ``val``); a file from before the column is read as that split.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from roformer_lit.errors import ConfigError, one_line
from roformer_lit.results.study import figures
from roformer_lit.results.study.drift import where
from roformer_lit.results.study.places import PLACES, REPOSITORY, read_from
from roformer_lit.results.study.reading import read_text
from roformer_lit.results.study.regions import MISSING_DATA, render
from roformer_lit.tool_arguments import (
    INPUT_DIRECTORY,
    INPUT_FILE,
    ToolParser,
    run_script,
    script_parser,
)

#: The command (``scripts/study_pages.py``), as its errors name it.
SCRIPT = "study_pages.py"

#: A figure a page embeds: ``figures/NAME.png``.
EMBEDDED = re.compile(r"figures/([a-z0-9_-]+)\.png")


def shown(path: Path) -> str:
    """``path`` relative to the checkout when inside it."""
    return str(path.relative_to(REPOSITORY)) if path.is_relative_to(REPOSITORY) else str(path)


def render_pages(
    bench: Path,
    pages: Path,
    readme: Path | None = None,
    performance: Path | None = None,
    guides: Path | None = None,
) -> tuple[dict[Path, str], dict[str, str]]:
    """Each page of ``pages`` (and ``readme`` and ``performance``, when given) whose regions differ from what
    ``bench``'s raw outputs give, with its new text, and each figure of ``pages/figures``
    whose plotted values differ, with its new JSON (the studies read from ``bench`` only
    during the call)."""
    before = (PLACES.bench, PLACES.pages)
    read_from(bench, pages)
    try:
        rewritten, embedded = {}, set()
        extra = [Path(p) for p in (readme, performance) if p is not None and Path(p).is_file()]
        extra += sorted(Path(guides).glob("*.md")) if guides is not None else []
        for page in [*sorted(Path(pages).glob("*.md")), *extra]:
            text = read_text(page)
            new = render(text, str(page))
            embedded |= set(EMBEDDED.findall(new))
            if new != text:
                rewritten[page] = new
        try:
            return rewritten, figures.stale(sorted(embedded & set(figures.FIGURES)))
        except MISSING_DATA as exc:
            raise ConfigError(
                f"{pages}: a figure cannot be drawn from the raw outputs "
                f"({type(exc).__name__}: {one_line(exc)})"
            ) from None
    finally:
        read_from(*before)


def stale_line(rewritten: dict[Path, str], drawn: dict[str, str], bench: Path, pages: Path) -> str:
    """What ``--check`` prints after ``stale:``: each stale region with its page, line and
    first differing cell (:func:`~.drift.where`), and each stale figure with why."""
    parts = [where(read_text(page), new, shown(page)) for page, new in rewritten.items()]
    before = (PLACES.bench, PLACES.pages)
    read_from(bench, pages)
    try:
        parts += [
            f"{shown(figures.figure_dir())}/{figures.why_stale(name, text)}"
            for name, text in drawn.items()
        ]
    finally:
        read_from(*before)
    return "; ".join(parts) + " (run python scripts/study_pages.py)"


def main(argv: list[str]) -> int:
    """The command; 0 when the pages are (now) current, 1 on ``--check`` with stale pages,
    2 with one ``error: study_pages.py: ...`` line for a wrong argument or a damaged raw
    output or page (:func:`~roformer_lit.tool_arguments.run_script`)."""
    return run_script(_main, SCRIPT, argv)


def build_parser() -> ToolParser:
    """The command's arguments."""
    parser = script_parser(SCRIPT, description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check; exit 1 on a difference")
    parser.add_argument(
        "--bench",
        type=INPUT_DIRECTORY,
        default=PLACES.bench,
        help="raw outputs (default: docs/bench)",
    )
    parser.add_argument(
        "--pages",
        type=INPUT_DIRECTORY,
        default=PLACES.pages,
        help="study pages (default: docs/studies)",
    )
    parser.add_argument(
        "--readme",
        type=INPUT_FILE,
        default=None,
        help="a README with generated regions (default: the checkout's, with the default "
        "--pages only)",
    )
    return parser


def _main(argv: list[str]) -> int:
    ns = build_parser().parse_args(argv)
    performance = guides = None
    if ns.readme is None and Path(ns.pages).resolve() == PLACES.pages.resolve():
        ns.readme = REPOSITORY / "README.md"
        performance = REPOSITORY / "docs" / "performance.md"
        guides = REPOSITORY / "docs" / "guide"
    ns.bench, ns.pages = Path(ns.bench), Path(ns.pages)
    rewritten, drawn = render_pages(ns.bench, ns.pages, ns.readme, performance, guides)
    stale = [*rewritten, *(Path(ns.pages) / "figures" / f"{name}.json" for name in drawn)]
    if ns.check and stale:
        print(f"stale: {stale_line(rewritten, drawn, ns.bench, ns.pages)}", file=sys.stderr)
        return 1
    if not ns.check:
        for page, new in rewritten.items():
            page.write_text(new, encoding="utf-8")
        before = (PLACES.bench, PLACES.pages)
        read_from(ns.bench, ns.pages)
        try:
            for name, text in drawn.items():
                figures.write(name, text)
        finally:
            read_from(*before)
    for page in stale:
        print(f"rewrote {shown(page)}")
    return 0
