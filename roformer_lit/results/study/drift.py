"""Where a page differs from what its data give: the region, its line and the first cell.

``scripts/study_pages.py --check`` prints one line; :func:`where` gives the part of it for
one page, e.g. ``docs/studies/position-tasks.md line 512 region 'schemes-seeds-table'
(row 'reverse | `alibi`', column 'n=16 (1×)': page '0.835 …', data '0.935 …')``, so a reader sees which number is
stale without diffing the page by hand.
"""

from __future__ import annotations

from roformer_lit.results.study.regions import END, START

#: How many characters of a differing text a line shows each side.
SHOWN = 60


def regions(text: str) -> list[tuple[str, int, str]]:
    """``(name, line of its marker, body)`` of each generated region of ``text``."""
    out, position = [], 0
    for match in START.finditer(text):
        if match.start() < position:
            continue
        end = text.find(END, match.end())
        if end < 0:
            break
        line = text.count("\n", 0, match.start()) + 1
        out.append((match["name"], line, text[match.end() : end]))
        position = end
    return out


def _clip(text: str) -> str:
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def _span(old: str, new: str) -> tuple[str, str]:
    """The differing middles of ``old`` and ``new``, widened to whole words."""
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    end = 0
    while end < min(len(old), len(new)) - start and old[-1 - end] == new[-1 - end]:
        end += 1
    while start > 0 and not old[start - 1].isspace() and old[start - 1] not in "|;,(":
        start -= 1
    while end > 0 and not old[-end].isspace() and old[-end] not in "|;,)":
        end -= 1
    return old[start : len(old) - end].strip(), new[start : len(new) - end].strip()


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def first_difference(old: str, new: str) -> str:
    """The first line where region bodies ``old`` and ``new`` differ; in a table, its row
    (the cells before the first differing one) and column: ``row 'reverse | alibi', column
    'n=16 (1×)': page '0.835 …', data '0.935 …'``."""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    header: list[str] = []
    for index in range(max(len(old_lines), len(new_lines))):
        a = old_lines[index] if index < len(old_lines) else ""
        b = new_lines[index] if index < len(new_lines) else ""
        following = old_lines[index + 1] if index + 1 < len(old_lines) else ""
        if a.startswith("|") and following.replace(" ", "").startswith("|--"):
            header = _cells(a)
        if a == b:
            continue
        if a.startswith("|") and b.startswith("|"):
            cells_a, cells_b = _cells(a), _cells(b)
            for k in range(max(len(cells_a), len(cells_b))):
                x = cells_a[k] if k < len(cells_a) else ""
                y = cells_b[k] if k < len(cells_b) else ""
                if x != y:
                    if max(len(x), len(y)) > SHOWN:
                        x, y = _span(x, y)
                    row = _clip(" | ".join(cells_a[: max(k, 1)]))
                    column = header[k] if k < len(header) else str(k + 1)
                    return f"row {row!r}, column {column!r}: page {_clip(x)!r}, data {_clip(y)!r}"
        page, data = _span(a, b)
        return f"its line {index + 1}: page {_clip(page)!r}, data {_clip(data)!r}"
    return "whitespace"


def where(old: str, new: str, page: str) -> str:
    """Each region of page ``page`` whose text ``old`` differs from ``new``, with its line and
    first differing cell; the page alone when the regions cannot be paired."""
    before, after = regions(old), regions(new)
    if [name for name, _, _ in before] != [name for name, _, _ in after]:
        return page
    stale = [
        f"line {line} region {name!r} ({first_difference(body, fresh)})"
        for (name, line, body), (_, _, fresh) in zip(before, after, strict=True)
        if body != fresh
    ]
    return f"{page} " + "; ".join(stale) if stale else page
