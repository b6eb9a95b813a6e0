"""Every raw output of the layer-plan study is named on its page: the tasks' tables had a
fifth plan and the MLM table a fifth row (`study_plans_last.yaml`,
`study_plans_mlm_last.yaml`) whose sweep files and raw outputs the page never named, so a
reader could not tell where those rows came from. A name may be written with `<task>` or a
`{a,b}` list, as the page writes them."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "studies" / "layer-plans.md"


def _patterns(text: str) -> list[re.Pattern[str]]:
    found = []
    for name in re.findall(r"cpu-study-plans-[^`\s)]*\.csv", text):
        body = re.escape(name).replace(re.escape("<task>"), "[a-z_]+")

        def alternatives(match: re.Match[str]) -> str:
            return "(" + "|".join(match[1].replace("\\", "").split(",")) + ")"

        body = re.sub(r"\\\{([^}]*)\\\}", alternatives, body)
        found.append(re.compile(body + "$"))
    return found


def test_the_pattern_reads_the_pages_spellings() -> None:
    patterns = _patterns("`docs/bench/cpu-study-plans-{a,b-c}.csv` and cpu-study-plans-<task>.csv")
    assert any(p.match("cpu-study-plans-b-c.csv") for p in patterns)
    assert any(p.match("cpu-study-plans-copy.csv") for p in patterns)
    assert not any(p.match("cpu-study-plans-d.csv") for p in patterns[:1])


def test_every_raw_output_of_the_study_is_named_on_its_page() -> None:
    patterns = _patterns(PAGE.read_text(encoding="utf-8"))
    unnamed = [
        path.name
        for path in sorted((ROOT / "docs" / "bench").glob("cpu-study-plans-*.csv"))
        if not any(p.match(path.name) for p in patterns)
    ]
    assert not unnamed, unnamed
