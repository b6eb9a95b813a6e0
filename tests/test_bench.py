"""The benchmark commands run and print their tables (timings are never asserted)."""

from __future__ import annotations

import pytest
from model_factory import VALID_PAIRS

from roformer_lit.cli import main

TINY_BENCH = [
    "--hidden",
    "32",
    "--layers",
    "1",
    "--heads",
    "2",
    "--intermediate",
    "32",
    "--vocab",
    "128",
    "--batch",
    "2",
    "--rounds",
    "1",
    "--warmup",
    "0",
    "--no-memory",
]


def test_bench_prints_every_registered_pair_and_the_hf_references(capsys):
    pytest.importorskip("transformers")
    assert main(["bench", "--lengths", "16", "32", "--vs-hf", *TINY_BENCH]) == 0
    out = capsys.readouterr().out
    assert "on CPU:" in out or "on GPU:" in out
    for position, attention in VALID_PAIRS:
        assert f"| {position} | {attention} | 16 |" in out
        assert f"| {position} | {attention} | 32 |" in out
    for reference in ("RoFormerForMaskedLM", "DebertaV2ForMaskedLM", "BertForMaskedLM"):
        assert reference in out
    assert "matmul GFLOP/s" in out and "step time L=32 / L=16" in out
