"""The benchmark commands run and print their tables (timings are never asserted)."""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch
from model_factory import VALID_PAIRS, random_ids, small_model
from torch.utils.flop_counter import FlopCounterMode

from roformer_lit.attention import ATTENTION_KERNELS, softmax
from roformer_lit.benchmarks.models import valid_pairs
from roformer_lit.benchmarks.runners import Runner, inference_flops
from roformer_lit.commands import main
from roformer_lit.encoder_config import EncoderConfig
from roformer_lit.errors import ConfigError
from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.testing.models import compatible_kernels
from roformer_lit.training.flops import attention_flops, gemm_shapes, training_step_flops

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


LOCAL = {"local": {"window": 4}}
#: Blocks and layer plans whose FLOPs the formula must read off the built model.
FLOP_MODELS = {
    "bert post-norm": {},
    "bert pre-norm": {"pre_norm": True},
    "geglu": {"block": {"mlp": "geglu"}},
    "swiglu, no linear bias": {"block": {"mlp": "swiglu", "linear_bias": False}},
    "all windowed": {"layer_plan": {"pattern": ["local"], "types": LOCAL}},
    "2:1 windowed, geglu": {
        "layer_plan": {"layers": ["local", "local", "global"], "types": LOCAL},
        "block": {"mlp": "geglu"},
    },
}


@pytest.mark.parametrize("name", list(FLOP_MODELS))
def test_flop_formula_counts_what_torchs_flop_counter_counts(name):
    """``gemm_shapes`` and ``attention_flops`` against torch's own FLOP counter on a real
    forward + backward: every linear layer at the rows it runs (the last layer's output
    projection and FFN at the labelled rows only), a GLU's doubled input projection, and
    windowed layers at the keys their blocks read (blocks of 4 queries, window 4: a
    formula that counted them at full length would disagree)."""
    model = small_model(
        "nope", "softmax", num_layers=3, attention_kwargs={"window_block": 4}, **FLOP_MODELS[name]
    ).train()
    batch, length = 3, 20
    ids = random_ids(batch, length)
    labels = torch.where(torch.arange(length) % 4 == 1, ids, -100)
    masked = int((labels != -100).sum())
    with FlopCounterMode(display=False) as counter:
        model.mlm_loss(ids, labels).backward()
    counted = {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}
    weight_products = counted.get("aten.mm", 0) + counted.get("aten.addmm", 0)
    formula = 3 * sum(2 * m * k * n for m, k, n in gemm_shapes(model, batch, length, masked))
    assert weight_products == formula
    attention = 3 * attention_flops(model, batch, length)
    assert counted.get("aten.bmm", 0) == attention  # nope: attention is every bmm
    assert training_step_flops(model, batch, length, masked) == formula + attention


def packed_rows(sizes: list[list[int]]) -> torch.Tensor:
    """Segment ids of rows packed with documents of ``sizes`` (ids 0, 1, .. per row)."""
    return torch.tensor([sum(([d] * n for d, n in enumerate(row)), []) for row in sizes])


@pytest.mark.parametrize(
    ("sizes", "split"),
    [
        ([[5, 12, 7], [24]], True),  # every document one run: one call per document
        ([[5, 12, 7], [3, 3, 18]], True),
        ([[5, 12, 7], [24]], False),  # below the fused CPU path's length: masked rows
    ],
)
def test_flop_count_reads_the_score_entries_the_documents_path_computed(sizes, split, monkeypatch):
    """With packed documents attended one at a time, a step computes ``sum_d n_d^2`` score
    entries per head, not ``L^2`` per row: the count read after the step equals torch's FLOP
    counter's (SDPA on its math form) and the pairs of the documents' sizes; on the masked
    path (rows below the fused path's length) both are ``L^2`` per row."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from roformer_lit.attention import documents

    monkeypatch.setattr(documents, "MIN_MEAN_DOCUMENT", 1)
    monkeypatch.setattr(softmax, "FUSED_FROM_LENGTH", 2 if split else 1024)
    model = small_model("nope", "softmax", num_layers=2, dropout=0.0).train()
    segment_ids = packed_rows(sizes)
    batch, length = segment_ids.shape
    ids = random_ids(batch, length)
    labels = torch.where(torch.arange(length) % 3 == 1, ids, -100)
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        model.mlm_loss(ids, labels, segment_ids=segment_ids).backward()
    counted = {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}
    attention = attention_flops(model, batch, length)
    assert counted.get("aten.bmm", 0) == 3 * attention
    pairs = sum(n * n for row in sizes for n in row) if split else batch * length * length
    width = (
        model.encoder.layers[0].attention.num_heads * model.encoder.layers[0].attention.head_size
    )
    assert attention == len(model.encoder.layers) * 2 * 2 * pairs * width


def test_flop_count_after_a_step_without_documents_is_the_full_rows(monkeypatch):
    """A plain step after a packed one counts every row at ``L^2`` again (the record of the
    documents belongs to the forward that made it)."""
    from roformer_lit.attention import documents

    monkeypatch.setattr(documents, "MIN_MEAN_DOCUMENT", 1)
    monkeypatch.setattr(softmax, "FUSED_FROM_LENGTH", 2)
    model = small_model("nope", "softmax", num_layers=1, dropout=0.0).train()
    segment_ids = packed_rows([[6, 6], [4, 8]])
    ids = random_ids(2, 12)
    model(ids, segment_ids=segment_ids)
    packed = attention_flops(model, 2, 12)
    model(ids)
    assert attention_flops(model, 2, 12) == packed * 2 * 144 // (36 + 36 + 16 + 64)


def _offset_attention_on_sdpa_math(q, k, v, per_offset, scale, tied_from=None):
    """What ``offset_bias_attention`` computes, as SDPA's math form over the keys it is given
    (which torch's FLOP counter counts; the fused CPU kernel reports none); ``tied_from``
    changes only how its table's gradient is summed, not the attention."""
    length, keys = q.shape[-2], k.shape[-2]
    index = torch.arange(length)[:, None] - torch.arange(keys)[None, :] + length - 1
    return torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=per_offset[:, index].to(q.dtype), scale=scale
    )


@pytest.mark.parametrize("real_keys", [[24, 9], [5, 17]])
@pytest.mark.parametrize("position", ["alibi", "nope"])
def test_flop_count_reads_the_keys_padded_rows_attend(position, real_keys, monkeypatch):
    """Rows padded at their end, on the fused CPU path of a bias of ``(h, i - j)`` or of no
    bias, attend their real keys only: a step computes ``L n_b`` score entries per row and
    head, and the count read after the step equals torch's FLOP counter's over the keys the
    kernel was given (SDPA's math form in place of the fused kernel)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from roformer_lit.attention import padded_rows

    monkeypatch.setattr(softmax, "FUSED_FROM_LENGTH", 2)
    monkeypatch.setattr(padded_rows, "offset_bias_attention", _offset_attention_on_sdpa_math)
    model = small_model(position, "softmax", num_layers=2, dropout=0.0).train()
    batch, length = len(real_keys), 24
    ids = random_ids(batch, length)
    mask = torch.arange(length)[None, :] < torch.tensor(real_keys)[:, None]
    labels = torch.where(mask & (torch.arange(length) % 3 == 1), ids, -100)
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        model.mlm_loss(ids, labels, attention_mask=mask.long()).backward()
    counted = {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}
    attention = attention_flops(model, batch, length)
    assert counted.get("aten.bmm", 0) == 3 * attention
    width = (
        model.encoder.layers[0].attention.num_heads * model.encoder.layers[0].attention.head_size
    )
    assert attention == len(model.encoder.layers) * 2 * 2 * length * sum(real_keys) * width


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


def test_bias_block_from_reaches_the_kernels_that_take_it(capsys):
    """``--bias-block-from N`` sets the softmax kernel's threshold (the blocked bias path
    from N tokens on, the dense one above the longest length) and leaves kernels without
    the option alone."""
    from roformer_lit.benchmarks.models import kernel_options, parse_args
    from roformer_lit.benchmarks.runners import Shape, ours

    ns = parse_args(["--lengths", "16", "--bias-block-from", "8"])
    assert kernel_options(ns, "linear") is None
    shape = Shape(2, 16, 32, 1, 2, 32, 128)
    runner = ours(
        "alibi",
        "softmax",
        shape,
        torch.device("cpu"),
        False,
        False,
        attention_kwargs=kernel_options(ns, "softmax"),
    )
    assert runner.model.encoder.layers[0].attention.kernel.bias_block_from == 8
    argv = ["bench", "--lengths", "16", "--schemes", "alibi", "--kernels", "softmax", "linear"]
    assert main([*argv, "--bias-block-from", "8", "--no-mfu", "--no-backends", *TINY_BENCH]) == 0
    assert "| alibi | softmax | 16 |" in capsys.readouterr().out


def test_vs_hf_times_the_modernbert_recipe_against_its_hf_model_with_the_same_weights(capsys):
    """``--vs-hf`` builds the ModernBERT recipe at bench's shape and its
    ``ModernBertForMaskedLM`` twin (their logits agree: same weights, same function), then
    prints training-step and inference ratios per length."""
    pytest.importorskip("transformers")
    from roformer_lit.benchmarks.runners import Shape, hf_reference, make_batch, recipe

    shape = Shape(2, 24, 32, 3, 2, 48, 128)
    ours_runner = recipe("modernbert", shape, torch.device("cpu"), False)
    config = ours_runner.model.config
    assert config.pre_norm and config.block["mlp"] == "geglu" and config.layer_plan
    theirs = hf_reference(ours_runner.model, shape, torch.device("cpu"), False)
    ids, _ = make_batch(shape, torch.device("cpu"))
    with torch.no_grad():
        want = theirs.model.eval()(input_ids=ids).logits
        got = ours_runner.model.eval()(ids)
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)

    argv = ["bench", "--lengths", "16", "--schemes", "nope", "--kernels", "softmax", "--vs-hf"]
    assert main([*argv, "--no-mfu", "--no-backends", *TINY_BENCH]) == 0
    out = capsys.readouterr().out
    rows = re.findall(
        r"^\| modernbert \| ModernBertForMaskedLM \((\w+)\) \| 16 \|.* ([\d.]+)x \| ([\d.]+)x "
        r"\| ([\d.]+)x \|$",
        out,
        re.M,
    )
    assert len(rows) == 1 and all(float(r) > 0 for r in rows[0][1:]), out
    # nope has no HF reference model: a line says so, not a table of headers alone
    assert "| scheme | HF reference |" not in out
    assert "(no scheme of --schemes nope on softmax has an HF reference model: rope" in out


def test_a_matmul_ceiling_without_nope_is_a_line_not_an_empty_table(capsys):
    """The ceiling is measured on ``nope``/softmax's shapes; without that pair bench printed
    the ceiling table's headers alone."""
    argv = ["bench", "--lengths", "16", "--schemes", "alibi", "--no-backends", *TINY_BENCH]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "| L | matmul GFLOP/s" not in out
    assert "(no matmul ceiling: it is measured on the shapes of nope with softmax" in out


def test_inference_flops_count_ours_at_each_window_and_hf_at_full_rows():
    """``inference_flops`` (torch's counter, SDPA on its math form) against the formula
    read off our built model: every linear layer and the head at every token, the windowed
    layers' attention at the keys their blocks read (300 tokens, window 128). The HF twin
    runs the same products with every layer's attention over the full row (and its rotary
    tables' small products, hence the tolerance), so its count is larger."""
    pytest.importorskip("transformers")
    from roformer_lit.benchmarks.runners import Shape, hf_reference, inference_flops, recipe

    batch, length, hidden, layers = 2, 300, 32, 3
    shape = Shape(batch, length, hidden, layers, 2, 48, 128)
    ours_runner = recipe("modernbert", shape, torch.device("cpu"), False)
    model = ours_runner.model
    products = 2 * sum(m * k * n for m, k, n in gemm_shapes(model, batch, length, batch * length))
    assert inference_flops(ours_runner) == products + attention_flops(model, batch, length)
    assert attention_flops(model, batch, length) < 4 * batch * length**2 * hidden * layers
    theirs = inference_flops(hf_reference(model, shape, torch.device("cpu"), False))
    full_rows = products + 4 * batch * length**2 * hidden * layers
    assert theirs == pytest.approx(full_rows, rel=1e-3)


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--plans", "8", "--kernels", "linear"], ["--plans 8", "windowed", "--kernels softmax"]),
        (["--document-mask", "2", "--kernels", "linear"], ["--document-mask 2", "documents"]),
    ],
    ids=["plans", "document-mask"],
)
def test_an_option_whose_table_no_pair_can_fill_is_one_line(flags, words, capsys):
    """Each option of PAIR_TABLES: exit 0 with an empty table was the bug."""
    from roformer_lit.benchmarks.models import PAIR_TABLES

    assert len(PAIR_TABLES) == 2  # a new option of that kind gets a case here (--vs-hf
    # always fills its recipe table, so it is not one)
    assert main(["bench", "--lengths", "16", *flags, *TINY_BENCH]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: bench: "), err
    assert all(word in err[0] for word in words), err[0]


@pytest.mark.parametrize("backend", ["flex", "auto"])
def test_inference_flops_count_the_sdpa_form_whatever_the_backend(backend, monkeypatch):
    """FlexAttention's compiled kernel cannot run under torch's FLOP counter (an H200,
    2026-11-27: ``no implementation found for 'torch.ops.higher_order.flex_attention'``),
    simulated here by a FlexAttention that raises: the count runs every softmax layer on
    SDPA and gives each layer back its own backend."""
    ids = random_ids(2, 16)
    counts = {}
    for name in ("sdpa", backend):
        torch.manual_seed(0)
        model = small_model("t5", "softmax", attention_kwargs={"backend": name}).eval()
        runner = Runner(
            model, lambda: None, torch.device("cpu"), False, logits=lambda m=model: m(ids)
        )
        if name != "sdpa":

            def refuse(*args, **kwargs):
                raise TypeError("no implementation found for flex_attention")

            monkeypatch.setattr(softmax, "flex_softmax", refuse)
        counts[name] = inference_flops(runner)
        assert {layer.attention.kernel.backend for layer in model.encoder.layers} == {name}
    assert counts[backend] == counts["sdpa"] > 0


BIAS_PLUGIN = """
from roformer_lit.positions.alibi import AlibiPosition
from roformer_lit.attention.softmax import SoftmaxAttention

class MyAlibi(AlibiPosition):
    pass

class MyKernel(SoftmaxAttention):
    pass
"""


def test_bench_times_a_plugin_named_by_its_import_path(tmp_path, monkeypatch, capsys):
    """``--schemes`` and ``--kernels`` take what every other command takes: an import path
    (a fixed list of choices refused it), and a built-in's import path is the built-in."""
    (tmp_path / "bench_plugin.py").write_text(BIAS_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    schemes = ["bench_plugin:MyAlibi", "roformer_lit.positions.nope:NoPosition"]
    argv = ["bench", "--lengths", "16", "--schemes", *schemes, "--kernels", "bench_plugin:MyKernel"]
    assert main([*argv, "--no-mfu", "--no-backends", *TINY_BENCH]) == 0
    out = capsys.readouterr().out
    assert "| bench_plugin:MyAlibi | bench_plugin:MyKernel | 16 |" in out
    assert "| nope | bench_plugin:MyKernel | 16 |" in out


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (
            ["--schemes", "bench_plugin:MyAlibii"],
            "no attribute 'MyAlibii'; candidates there: AlibiPosition, MyAlibi",
        ),
        (["--kernels", "sofmax"], "unknown attention 'sofmax'; valid choices: linear, softmax"),
    ],
)
def test_bench_refuses_a_name_that_resolves_to_nothing_in_one_line(
    flags, words, tmp_path, monkeypatch, capsys
):
    (tmp_path / "bench_plugin.py").write_text(BIAS_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["bench", "--lengths", "16", *flags, *TINY_BENCH]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: bench: argument "), err
    assert words in err[0], err[0]


#: One case per row of IGNORED: (words beside ``bench --lengths 8``, what the line names).
IGNORED_CASES = {
    **{
        f"--bert-base --{key}": (["--bert-base", f"--{key}", "64"], [f"--{key} 64", "--bert-base"])
        for key in ("hidden", "layers", "heads", "intermediate", "vocab")
    },
    "--compile --compile-speedup": (
        ["--compile", "--compile-speedup"],
        ["--compile cannot", "--compile-speedup"],
    ),
    "--bf16 on cpu": (["--bf16", "--device", "cpu"], ["--bf16", "--device cpu"]),
    "--bf16 on the default cpu": (["--bf16"], ["--bf16", "--device cpu (the default)"]),
    "--bias-block-from without a bias": (
        ["--bias-block-from", "8", "--schemes", "rope", "nope", "--kernels", "softmax"],
        ["--bias-block-from 8", "--schemes rope nope", "--kernels softmax", "valid: --kernels"],
    ),
    "--bias-block-from on a kernel without it": (
        ["--bias-block-from", "8", "--schemes", "nope", "--kernels", "linear"],
        ["--bias-block-from 8", "--kernels linear", "valid: --kernels softmax"],
    ),
}


@pytest.mark.parametrize(("flags", "words"), IGNORED_CASES.values(), ids=IGNORED_CASES)
def test_a_typed_option_bench_would_ignore_is_refused_naming_both(
    flags, words, capsys, monkeypatch
):
    """Each row of IGNORED (every shape flag each preset sets, and the options that only
    apply with another): ``--bert-base --hidden 32`` timed BERT-base at hidden 768, exit 0."""
    from roformer_lit.benchmarks.models import IGNORED, PRESETS

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # --device's default: cpu
    preset_rows = sum(len(settings) for settings in PRESETS.values())
    assert len(IGNORED) == preset_rows + 3  # a new row of IGNORED gets a case here
    assert {f"--{key}" for s in PRESETS.values() for key in s} <= {
        f for f, _ in IGNORED_CASES.values() for f in f
    }
    assert main(["bench", "--lengths", "8", "--rounds", "1", *flags]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: bench: "), err
    assert all(word in err[0] for word in words), err[0]


@pytest.mark.parametrize(
    "flags",
    [["--bert-base", "--batch", "2"], ["--no-bf16"], ["--compile"], ["--compile-speedup"]],
    ids=lambda flags: " ".join(flags),
)
def test_options_that_apply_together_are_taken(flags):
    """The refusals above refuse only what would be ignored: --batch beside the preset, an
    option alone."""
    from roformer_lit.benchmarks.models import parse_args

    ns = parse_args(["--lengths", "8", "--device", "cpu", *flags])
    assert ns.hidden == (768 if "--bert-base" in flags else 256)


class _Built(Exception):
    """Raised by the first timed step: every runner of the length is built by then."""


def test_every_twin_of_a_pair_takes_its_kernel_options(monkeypatch):
    """``--bias-block-from`` reached the plain runner alone: the compiled, document-masked
    and layer-plan twins it is timed against ran the kernel's default, so each ratio
    compared two settings, exit 0."""
    from roformer_lit.benchmarks import models

    built: list[dict] = []

    class Stub:
        def step(self, record: bool = True) -> None:
            if record:  # the first timed step (compiling and warming up record nothing)
                raise _Built

    def fake_ours(*args, **kwargs):
        built.append(kwargs)
        return Stub()

    monkeypatch.setattr(models, "ours", fake_ours)
    argv = ["--lengths", "16", "--schemes", "alibi", "--kernels", "softmax", "--device", "cpu"]
    ns = models.parse_args(
        [*argv, "--bias-block-from", "8", "--compile-speedup", "--document-mask", "2"]
        + ["--plans", "4", "--warmup", "1"]
    )
    with pytest.raises(_Built):
        models.bench_length(ns, 16, torch.device("cpu"))
    assert len(built) == 5  # plain, compiled, masked, two plans
    assert all(kw.get("attention_kwargs") == {"bias_block_from": 8} for kw in built), built


class _DeclaresABias(softmax.SoftmaxAttention):
    """Its class says no score bias; what it declares (``capabilities``, the hook a
    kernel whose support depends on an option overrides) says it takes one."""

    supports_score_bias = False

    @classmethod
    def capabilities(cls, options=None):
        return dataclasses.replace(super().capabilities(options), score_bias=True)


class _DeclaresNoBias(softmax.SoftmaxAttention):
    """The other way round: the class says a score bias, its declaration says none."""

    supports_score_bias = True

    @classmethod
    def capabilities(cls, options=None):
        return dataclasses.replace(super().capabilities(options), score_bias=False)


@pytest.fixture
def declaring_kernels():
    kernels = {"declares_a_bias": _DeclaresABias, "declares_no_bias": _DeclaresNoBias}
    for name, kernel in kernels.items():
        ATTENTION_KERNELS.register(name, kernel)
    yield list(kernels)
    for name in kernels:
        ATTENTION_KERNELS.unregister(name)


def test_bench_pairs_a_scheme_and_kernel_exactly_when_the_rule_table_does(declaring_kernels):
    """bench chose its pairs from the classes' attributes (``needs_score_bias``,
    ``supports_score_bias``) while the rule table reads what each declares
    (``capabilities``): a kernel whose declaration differs from its class attribute was
    paired where every other command refuses it, and left out where they accept it. Every
    registered scheme against every kernel: bench's pair iff an ``EncoderConfig`` of it is
    accepted."""
    schemes = list(POSITION_SCHEMES.loadable().components)
    kernels = [*ATTENTION_KERNELS.loadable().components]
    paired = set(valid_pairs(schemes, kernels))
    for position in schemes:
        for attention in kernels:
            try:
                EncoderConfig(position=position, attention=attention)
                accepted = True
            except ConfigError:
                accepted = False
            assert ((position, attention) in paired) == accepted, (position, attention)
            scheme = POSITION_SCHEMES[position]  # the scheme kit's kernels, the same rule
            assert (attention in compatible_kernels(scheme)) == accepted, (position, attention)
    assert {k for _, k in paired} >= set(declaring_kernels)  # both reached the comparison


@pytest.mark.parametrize(
    ("flags", "settings"),
    [
        (
            ["--hidden", "100", "--heads", "3"],
            dict(position="nope", attention="softmax", hidden_size=100, num_heads=3),
        ),
        (  # a scheme's own check (rope rotates pairs of dimensions): a head size of 15
            ["--schemes", "rope", "--hidden", "30", "--heads", "2"],
            dict(position="rope", attention="softmax", hidden_size=30, num_heads=2),
        ),
    ],
    ids=["heads_do_not_divide_hidden", "rope_odd_head_size"],
)
def test_a_shape_the_rule_table_refuses_is_its_one_line(flags, settings, capsys):
    """bench checked ``--hidden`` against ``--heads`` in words of its own (a rule the table
    already has) and none of the rest: a model the table refuses (rope with an odd head
    size) was found only when its pair was timed, after the tables' head was printed. Every
    pair's model at bench's shape is now an EncoderConfig, refused in the table's line."""
    with pytest.raises(ConfigError) as table:
        EncoderConfig(**settings)
    tiny = list(TINY_BENCH)
    for flag, value in zip(
        flags[::2], flags[1::2], strict=True
    ):  # each flag once: ours over TINY_BENCH's
        if flag in tiny:
            tiny[tiny.index(flag) + 1] = value
        else:
            tiny += [flag, value]
    argv = ["bench", "--lengths", "16", *tiny]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines() == [f"error: bench: {table.value}"]
    assert captured.out == ""
