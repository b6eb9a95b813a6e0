"""The schemes page's "which composes with which" table says what the rules decide: every
built-in scheme is in one row, and each cell's yes/no is whether ``EncoderConfig`` accepts
that scheme with that kernel (the declarations of :mod:`roformer_lit.capabilities`)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from roformer_lit.attention import ATTENTION_KERNELS
from roformer_lit.encoder_config import EncoderConfig
from roformer_lit.errors import ConfigError
from roformer_lit.positions import POSITION_SCHEMES

PAGE = Path(__file__).resolve().parents[1] / "docs" / "guide" / "schemes.md"


def composition_table() -> tuple[list[str], list[tuple[list[str], list[str]]]]:
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| scheme \\ kernel |"))
    kernels = [cell.strip() for cell in lines[start].strip("|").split("|")[1:]]
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        first, *cells = (cell.strip() for cell in line.strip("|").split("|"))
        names = [
            w
            for w in re.findall(r"[a-z0-9_]+", first.split("(")[0])
            if w in POSITION_SCHEMES.builtin_names()
        ]
        rows.append((names, [cell.split()[0].strip(",") for cell in cells]))
    return kernels, rows


def accepts(position: str, attention: str) -> bool:
    try:
        EncoderConfig(
            position=position,
            attention=attention,
            hidden_size=16,
            num_heads=2,
            num_layers=1,
            intermediate_size=16,
            vocab_size=32,
        )
    except ConfigError:
        return False
    return True


def test_every_builtin_scheme_and_kernel_is_in_the_table_once():
    kernels, rows = composition_table()
    assert sorted(kernels) == sorted(ATTENTION_KERNELS.builtin_names())
    listed = [name for names, _ in rows for name in names]
    assert sorted(listed) == sorted(POSITION_SCHEMES.builtin_names())


@pytest.mark.parametrize("position", POSITION_SCHEMES.builtin_names())
def test_each_cell_is_what_the_rules_decide(position):
    kernels, rows = composition_table()
    (answers,) = [answers for names, answers in rows if position in names]
    for kernel, answer in zip(kernels, answers, strict=True):
        assert answer in ("yes", "no"), answer
        assert (answer == "yes") == accepts(position, kernel), (position, kernel, answer)


def _component_rows() -> dict[str, str]:
    """The schemes and kernels tables' rows, by the name in their first cell."""
    rows: dict[str, str] = {}
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        found = re.match(r"\| `(\w+)` \|", line)
        if found:
            rows.setdefault(found.group(1), line)
    return rows


@pytest.mark.parametrize(
    "registry, name",
    [(POSITION_SCHEMES, n) for n in POSITION_SCHEMES.builtin_names()]
    + [(ATTENTION_KERNELS, n) for n in ATTENTION_KERNELS.builtin_names()],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_every_option_of_a_builtin_is_in_its_row(registry, name):
    """Each keyword a built-in scheme or kernel takes (its ``position_kwargs`` or
    ``attention_kwargs``) is named in its row of the page: softmax's ``bias_block`` and
    ``bias_block_from`` were missing from it, so a reader met them only in an error line."""
    row = _component_rows().get(name)
    assert row is not None, f"no row for {name}"
    taken = [
        option
        for option, parameter in inspect.signature(registry[name].__init__).parameters.items()
        if parameter.kind is parameter.KEYWORD_ONLY
    ]
    missing = [option for option in taken if f"`{option}`" not in row and f"{option}:" not in row]
    assert not missing, f"{name}'s row does not name {missing}"
