"""The benchmark commands run and print their tables (timings are never asserted)."""

from __future__ import annotations

import re

import pytest
import torch
from model_factory import VALID_PAIRS, random_ids, small_model
from torch.utils.flop_counter import FlopCounterMode

from roformer_lit.benchmarks.flops import gemm_shapes
from roformer_lit.commands import main

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
    "--device",  # the expected tables are the CPU's, also on a machine with a GPU
    "cpu",
]


@pytest.mark.slow  # ~25 s: every pair and three HF models; prints timings, guards no numerics
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


def test_bench_reports_mfu_sdpa_backends_and_compile_speedup(capsys):
    assert (
        main(
            [
                "bench",
                "--lengths",
                "16",
                "--schemes",
                "rope",
                "xl",
                "--kernels",
                "softmax",
                "--compile-speedup",
                "--peak-tflops",
                "0.5",
                *TINY_BENCH,
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "MFU (of 0.5 TFLOP/s)" in out
    assert "nan" not in out  # no nope baseline, no memory probe: cells say "not measured"
    assert "| rope | softmax | 16 | flash (CPU) | flash (CPU) |" in out
    assert "| xl | softmax | 16 |" in out and "compiled step ms" in out
    speedups = re.findall(
        r"^\| (\w+) \| softmax \| 16 \| [\d.]+ \| [\d.]+ \| ([\d.]+)x \|", out, re.M
    )
    assert [scheme for scheme, _ in speedups] == ["rope", "xl"], out
    assert all(float(ratio) > 0 for _, ratio in speedups)


def test_bench_bert_base_preset_sets_the_bert_base_shape(capsys):
    args = ["bench", "--bert-base", "--lengths", "8", "--schemes", "nope", "--kernels", "softmax"]
    assert (
        main([*args, "--batch", "1", "--rounds", "1", "--warmup", "0", "--no-memory", "--no-mfu"])
        == 0
    )
    out = capsys.readouterr().out
    assert "hidden 768, 12 layers, 12 heads, FFN 3072, vocab 30522" in out


@pytest.mark.parametrize("pre_norm", [False, True])
def test_flop_formula_counts_the_weight_products_an_mlm_step_runs(pre_norm):
    """``gemm_shapes`` against torch's own FLOP counter on a real forward + backward: the
    last layer's output projection and FFN run at the labelled rows only, so a formula
    that counted them at every token (or a model that ran them there) would disagree."""
    model = small_model("nope", "softmax", num_layers=3, pre_norm=pre_norm).train()
    batch, length = 3, 20
    ids = random_ids(batch, length)
    labels = torch.where(torch.arange(length) % 4 == 1, ids, -100)
    masked = int((labels != -100).sum())
    with FlopCounterMode(display=False) as counter:
        model.mlm_loss(ids, labels).backward()
    counted = counter.get_flop_counts()["Global"]
    weight_products = sum(n for op, n in counted.items() if str(op) in ("aten.mm", "aten.addmm"))
    formula = 3 * sum(2 * m * k * n for m, k, n in gemm_shapes(model, batch, length, masked))
    assert weight_products == formula


def test_bench_times_the_document_mask_for_kernels_that_keep_documents_apart(capsys):
    argv = ["bench", "--lengths", "16", "--schemes", "nope", "alibi", "--document-mask", "2"]
    assert main([*argv, "--no-mfu", "--no-backends", *TINY_BENCH]) == 0
    out = capsys.readouterr().out
    assert "2 documents masked" in out
    rows = re.findall(r"^\| (\w+) \| (\w+) \| 16 \| [\d.]+ \| [\d.]+ \| ([\d.]+)x \|$", out, re.M)
    assert {(p, k) for p, k, _ in rows} == {("nope", "softmax"), ("alibi", "softmax")}
    assert all(float(ratio) > 0 for *_, ratio in rows)


def test_bench_refuses_more_documents_than_tokens(capsys):
    assert main(["bench", "--lengths", "16", "--document-mask", "17", *TINY_BENCH]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: bench: --document-mask 17")


def test_bench_times_layer_plans_against_all_global_for_kernels_with_windows(capsys):
    """``--plans W``: all-local and 2:1 plans beside all-global, as ratios, in one run."""
    argv = ["bench", "--lengths", "16", "--schemes", "rope", "--kernels", "softmax", "linear"]
    assert main([*argv, "--plans", "4", "--no-mfu", "--no-backends", *TINY_BENCH]) == 0
    out = capsys.readouterr().out
    assert "all-local / all-global (window 4)" in out and "2:1 / all-global" in out
    rows = re.findall(
        r"^\| (\w+) \| (\w+) \| 16 \| [\d.]+ \| [\d.]+ \| [\d.]+ \| ([\d.]+)x \| ([\d.]+)x \|$",
        out,
        re.M,
    )
    assert {(p, k) for p, k, *_ in rows} == {("rope", "softmax")}  # linear has no windows
    assert all(float(r) > 0 for *_, a, b in rows for r in (a, b))


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--plans", "8", "--kernels", "linear"], ["--plans 8", "windowed", "--kernels softmax"]),
        (["--document-mask", "2", "--kernels", "linear"], ["--document-mask 2", "documents"]),
        (["--vs-hf", "--schemes", "alibi"], ["--vs-hf", "Hugging Face", "--schemes rope"]),
    ],
    ids=["plans", "document-mask", "vs-hf"],
)
def test_an_option_whose_table_no_pair_can_fill_is_one_line(flags, words, capsys):
    """Each option of PAIR_TABLES: exit 0 with an empty table was the bug."""
    from roformer_lit.benchmarks.models import PAIR_TABLES

    assert len(PAIR_TABLES) == 3  # a new option of that kind gets a case here
    assert main(["bench", "--lengths", "16", *flags, *TINY_BENCH]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: bench: "), err
    assert all(word in err[0] for word in words), err[0]
