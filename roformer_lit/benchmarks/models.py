"""``python -m roformer_lit bench``: training-step speed and memory per scheme x kernel.

For each sequence length, every registered (scheme, kernel) pair runs one training step
(``mlm_loss`` with 15 % of positions labelled, backward, AdamW) in turn, round after round,
in reversed order every other round (ABBA), so machine noise and position in the round hit
all of them alike; figures are medians over rounds, and ratios are
medians of per-round ratios. ``--vs-hf`` adds the Hugging Face reference models, built
with the same weights through ``roformer_lit.interop``, alternating step by step with ours.
The model-FLOPs rate is compared with what plain ``torch.matmul`` reaches on the same
matrix shapes in the same run (the practical GEMM ceiling of the machine).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import torch

from roformer_lit.architecture_rules import takes_score_bias
from roformer_lit.attention import ATTENTION_KERNELS
from roformer_lit.attention.softmax import BIAS_BLOCK_FROM
from roformer_lit.benchmarks.memory import peak_step_memory_mb
from roformer_lit.benchmarks.runners import (
    Runner,
    Shape,
    hf_reference,
    inference_flops,
    ours,
    recipe,
    sync_device,
)
from roformer_lit.benchmarks.sdpa_backends import backends_taken, describe
from roformer_lit.capabilities import KernelCapabilities, SchemeCapabilities
from roformer_lit.encoder_config import EncoderConfig
from roformer_lit.errors import ConfigError
from roformer_lit.machine import describe_machine
from roformer_lit.module import MaskedLM
from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.registry import option_names
from roformer_lit.tool_arguments import (
    LENGTH,
    MAX_LENGTH,
    Registered,
    ToolParser,
    every_loadable,
    integer,
    real,
)
from roformer_lit.training.flops import gemm_shapes, nominal_peak_flops, training_step_flops

#: Our scheme -> the HF model the README compares it with (all share our block layout).
HF_REFERENCES = {
    "rope": "RoFormerForMaskedLM",
    "deberta": "DebertaV2ForMaskedLM",
    "learned": "BertForMaskedLM",
}
#: Recipes (``configs/recipes/<name>.yaml``) ``--vs-hf`` times against the HF model they
#: export to, built at bench's shape with the same weights.
HF_RECIPES = {"modernbert": "ModernBertForMaskedLM"}


def matmul_ceiling(
    model: MaskedLM, shape: Shape, device: torch.device, dtype: torch.dtype, repeats: int = 3
) -> float:
    """FLOP/s of plain torch.matmul over the model's forward and backward GEMM shapes."""
    masked = int(0.15 * shape.batch * shape.length)
    problems = []
    for m, k, n in gemm_shapes(model, shape.batch, shape.length, masked):
        problems += [(m, k, n), (m, n, k), (k, m, n)]  # forward, grad input, grad weight
    tensors = [
        (
            torch.randn(m, k, device=device, dtype=dtype),
            torch.randn(k, n, device=device, dtype=dtype),
        )
        for m, k, n in problems
    ]
    flops = sum(2 * m * k * n for m, k, n in problems)
    rates = []
    for _ in range(repeats + 1):
        sync_device(device)
        start = time.perf_counter()
        for a, b in tensors:
            torch.matmul(a, b)
        sync_device(device)
        rates.append(flops / (time.perf_counter() - start))
    return statistics.median(rates[1:])


def kernel_options(ns: argparse.Namespace, attention: str) -> dict | None:
    """The kernel's options from ``--bias-block-from`` (for kernels that take it)."""
    if ns.bias_block_from is None:
        return None
    takes = "bias_block_from" in option_names(ATTENTION_KERNELS[attention])
    return {"bias_block_from": ns.bias_block_from} if takes else None


def valid_pairs(schemes: Sequence[str], kernels: Sequence[str]) -> list[tuple[str, str]]:
    """The pairs of ``schemes`` and ``kernels`` the architecture's rule allows: what each
    declares (:meth:`capabilities`, which a plugin may override), read as the rule table
    reads it (:func:`~roformer_lit.architecture_rules.takes_score_bias`)."""
    return [(p, k) for p in schemes for k in kernels if takes_score_bias(_scheme(p), _kernel(k))]


def _scheme(name: str) -> SchemeCapabilities:
    """What scheme ``name`` declares with its default options."""
    return POSITION_SCHEMES[name].capabilities()


def _kernel(name: str) -> KernelCapabilities:
    """What kernel ``name`` declares with its default options."""
    return ATTENTION_KERNELS[name].capabilities()


def _cell(value: float, spec: str) -> str:
    """``value`` formatted with ``spec``, or an en dash where it was not measured (NaN)."""
    return "\u2013" if math.isnan(value) else format(value, spec)


def median_ratio(numerators: list[float], denominators: list[float]) -> float:
    return statistics.median(a / b for a, b in zip(numerators, denominators, strict=True))


def ratio_range(numerators: list[float], denominators: list[float]) -> str:
    """The smallest and largest per-round ratio, ``"1.41-1.57"`` (the spread the median of
    the step / nope column hides); a dash for the baseline itself."""
    if numerators is denominators:
        return "–"
    ratios = [a / b for a, b in zip(numerators, denominators, strict=True)]
    return f"{min(ratios):.2f}–{max(ratios):.2f}"


@dataclass
class LengthResult:
    """The markdown rows one sequence length contributes to each of bench's tables."""

    rows: list[str]
    hf_rows: list[str]
    ceiling: str
    steps: dict[tuple[str, str], float]  # median step seconds per pair
    compile_rows: list[str]
    backend_rows: list[str]
    mask_rows: list[str]
    plan_rows: list[str]
    recipe_rows: list[str]


def _sides(twins: Sequence[dict], runners: dict, pair: tuple[str, str]) -> list[Runner]:
    """The runners timed back to back for one pair: ours, then its twins (HF, compiled,
    document-masked) where it has them."""
    return [runners[pair], *[side[pair] for side in twins if pair in side]]


def bench_length(ns: argparse.Namespace, length: int, device: torch.device) -> LengthResult:
    shape = Shape(ns.batch, length, ns.hidden, ns.layers, ns.heads, ns.intermediate, ns.vocab)
    autocast = device.type == "cuda" and ns.bf16
    pairs = valid_pairs(ns.schemes, ns.kernels)
    options = {pair: kernel_options(ns, pair[1]) for pair in pairs}
    runners = {
        pair: ours(*pair, shape, device, autocast, ns.compile, attention_kwargs=options[pair])
        for pair in pairs
    }
    hf = {}
    if ns.vs_hf:
        for (p, k), runner in runners.items():
            if p in HF_REFERENCES and k == "softmax":
                hf[(p, k)] = hf_reference(runner.model, shape, device, autocast)
    compiled = {}
    compile_seconds = {}
    if ns.compile_speedup:
        for pair in pairs:  # same seed, so the same initial weights as the eager model
            compiled[pair] = ours(
                *pair, shape, device, autocast, compile=True, attention_kwargs=options[pair]
            )
            start = time.perf_counter()
            compiled[pair].step(record=False)  # the first step compiles
            compile_seconds[pair] = time.perf_counter() - start
    document_masked = {}
    if ns.document_mask:
        for pair in pairs:
            if _kernel(pair[1]).segments:
                document_masked[pair] = ours(
                    *pair,
                    shape,
                    device,
                    autocast,
                    ns.compile,
                    documents=ns.document_mask,
                    attention_kwargs=options[pair],
                )
    planned: dict[str, dict[tuple[str, str], Runner]] = {}
    if ns.plans:
        for name, plan in window_plans(ns.plans, ns.layers).items():
            planned[name] = {
                pair: ours(
                    *pair,
                    shape,
                    device,
                    autocast,
                    ns.compile,
                    layer_plan=plan,
                    attention_kwargs=options[pair],
                )
                for pair in pairs
                if _kernel(pair[1]).window
            }
    twins = (hf, compiled, document_masked, *planned.values())
    for runner in [*runners.values(), *(r for side in twins for r in side.values())]:
        for _ in range(ns.warmup):
            runner.step(record=False)
    for round_index in range(ns.rounds):  # every runner once per round, order reversed
        order = list(pairs)  # every other round, so no one always goes first
        if round_index % 2:
            order.reverse()
        for pair in order:
            sides = _sides(twins, runners, pair)
            for side in sides if round_index % 2 == 0 else reversed(sides):
                side.step()
    tokens = shape.batch * shape.length
    masked = int(0.15 * tokens)
    baseline = runners.get(("nope", "softmax"))
    peak = nominal_peak_flops(device, ns.peak_tflops)
    rows, flop_rates, memory = [], {}, {}
    for (p, k), runner in runners.items():
        t = runner.timings
        step = statistics.median(t.step)
        vs_nope = median_ratio(t.step, baseline.timings.step) if baseline else float("nan")
        flops = training_step_flops(runner.model, shape.batch, length, masked)
        flop_rates[(p, k)] = flops / statistics.median(t.fwd_bwd)
        memory[(p, k)] = (
            peak_step_memory_mb(
                p, k, shape, device, autocast=autocast, attention_kwargs=options[(p, k)]
            )
            if ns.memory
            else float("nan")
        )
        mfu = f" {flops / step / peak:.1%} |" if peak else ""
        rows.append(
            f"| {p} | {k} | {length} | {tokens / step:,.0f} | {step * 1e3:.1f} "
            f"| {statistics.median(t.fwd_bwd) * 1e3:.1f} | {_cell(vs_nope, '.3f')} "
            f"| {ratio_range(t.step, baseline.timings.step) if baseline else '–'} "
            f"| {flop_rates[(p, k)] / 1e9:.1f} |{mfu} {_cell(memory[(p, k)], ',.0f')} |"
        )
    hf_rows = []
    for (p, k), runner in hf.items():
        ratio = median_ratio(runner.timings.step, runners[(p, k)].timings.step)
        ours_tps = tokens / statistics.median(runners[(p, k)].timings.step)
        hf_tps = tokens / statistics.median(runner.timings.step)
        hf_memory = (
            peak_step_memory_mb(p, k, shape, device, hf=True, autocast=autocast)
            if ns.memory
            else float("nan")
        )
        hf_rows.append(
            f"| {p} | {HF_REFERENCES[p]} | {length} | {ours_tps:,.0f} | {hf_tps:,.0f} "
            f"| {ratio:.2f}x | {_cell(memory[(p, k)], ',.0f')} | {_cell(hf_memory, ',.0f')} |"
        )
    compile_rows = [
        f"| {p} | {k} | {length} | {statistics.median(runners[(p, k)].timings.step) * 1e3:.1f} "
        f"| {statistics.median(runner.timings.step) * 1e3:.1f} "
        f"| {median_ratio(runners[(p, k)].timings.step, runner.timings.step):.2f}x "
        f"| {compile_seconds[(p, k)]:.0f} |"
        for (p, k), runner in compiled.items()
    ]
    ceiling = ""
    if ns.mfu and baseline is not None:
        dtype = torch.bfloat16 if autocast else torch.float32
        rate = matmul_ceiling(baseline.model, shape, device, dtype)
        ceiling = f"| {length} | {rate / 1e9:.1f} |" + "".join(
            f" {p}/{k}: {flop_rates[(p, k)] / rate:.0%} |"
            for p, k in pairs
            if k == "softmax" and p in ("nope", "rope")
        )
    mask_rows = [
        f"| {p} | {k} | {length} | {statistics.median(runners[(p, k)].timings.step) * 1e3:.1f} "
        f"| {statistics.median(runner.timings.step) * 1e3:.1f} "
        f"| {median_ratio(runner.timings.step, runners[(p, k)].timings.step):.2f}x |"
        for (p, k), runner in document_masked.items()
    ]
    backend_rows = []
    if ns.backends:
        for (p, k), runner in runners.items():
            forward, backward = backends_taken(runner.forward_loss)
            runner.optimizer.zero_grad(set_to_none=True)
            backend_rows.append(
                f"| {p} | {k} | {length} | {describe(forward)} | {describe(backward)} |"
            )
    plan_rows = []
    for pair in planned.get("all-local", {}):
        p, k = pair
        plain = runners[pair].timings.step
        cells = [f"{statistics.median(plain) * 1e3:.1f}"]
        cells += [
            f"{statistics.median(side[pair].timings.step) * 1e3:.1f}" for side in planned.values()
        ]
        cells += [
            f"{median_ratio(side[pair].timings.step, plain):.2f}x" for side in planned.values()
        ]
        plan_rows.append(f"| {p} | {k} | {length} | " + " | ".join(cells) + " |")
    steps = {pair: statistics.median(r.timings.step) for pair, r in runners.items()}
    recipe_rows = time_recipes(ns, shape, device, autocast) if ns.vs_hf else []
    return LengthResult(
        rows,
        hf_rows,
        ceiling,
        steps,
        compile_rows,
        backend_rows,
        mask_rows,
        plan_rows,
        recipe_rows,
    )


def time_recipes(
    ns: argparse.Namespace, shape: Shape, device: torch.device, autocast: bool
) -> list[str]:
    """Each recipe of :data:`HF_RECIPES` against its HF model (same weights): training
    steps and inference passes, ours and theirs back to back, order reversed every other
    round; the ratios are medians of per-round HF / ours times (above 1: ours faster)."""
    rows = []
    for name, reference in HF_RECIPES.items():
        pair = [recipe(name, shape, device, autocast)]
        pair.append(hf_reference(pair[0].model, shape, device, autocast))
        for runner in pair:
            for _ in range(ns.warmup):
                runner.step(record=False)
                runner.infer(record=False)
        for round_index in range(ns.rounds):
            for runner in pair if round_index % 2 == 0 else reversed(pair):
                runner.step()
                runner.infer()
        ours_t, hf_t = (runner.timings for runner in pair)
        ours_flops, hf_flops = (inference_flops(runner) for runner in pair)
        tokens = shape.batch * shape.length
        rows.append(
            f"| {name} | {reference} ({pair[1].model.config._attn_implementation}) "
            f"| {shape.length} | {tokens / statistics.median(ours_t.step):,.0f} "
            f"| {tokens / statistics.median(hf_t.step):,.0f} "
            f"| {median_ratio(hf_t.step, ours_t.step):.2f}x "
            f"| {median_ratio(hf_t.inference, ours_t.inference):.2f}x "
            f"| {hf_flops / ours_flops:.2f}x |"
        )
    return rows


def window_plans(window: int, layers: int) -> dict[str, dict]:
    """``--plans W``: every layer a window of ``W`` tokens, and two windowed layers to one
    global (ModernBERT's ratio; its pattern repeated, cut to ``layers`` as an explicit list)."""
    two_to_one = ["local" if index % 3 != 2 else "global" for index in range(layers)]
    local = {"local": {"window": window}}
    return {
        "all-local": {"pattern": ["local"], "types": local},
        "2:1": {"layers": two_to_one, "types": local if "local" in two_to_one else {}},
    }


#: ``--bert-base``: the shape of BERT-base (and of the issue's GPU MFU target).
BERT_BASE = dict(hidden=768, layers=12, heads=12, intermediate=3072, vocab=30522)


#: The declared ranges of bench's numeric arguments (shared with ``bench-flex``): wide enough
#: for any real measurement, narrow enough that a typo is refused before anything is built.
MAX_BATCH = 4096
MAX_ROUNDS = 100_000
ROUNDS = integer(1, MAX_ROUNDS)
WARMUP = integer(0, MAX_ROUNDS)


def build_parser() -> ToolParser:
    """``bench``'s parser: every numeric flag declares its range (one ``error:`` line)."""
    parser = ToolParser("bench", description=__doc__)
    for flag, registry, what in (
        ("--schemes", POSITION_SCHEMES, "scheme"),
        ("--kernels", ATTENTION_KERNELS, "kernel"),
    ):
        parser.add_argument(
            flag,
            nargs="+",
            type=Registered(registry),
            default=None,  # every registered name that loads: every_loadable
            metavar=what.upper(),
            help="registered names or import paths package.module:Class (default: every "
            f"registered {what} that loads: {', '.join(registry)}; one that does not is "
            "skipped with a note: line)",
        )
    parser.add_argument("--lengths", nargs="+", type=LENGTH, default=[128, 512, 2048])
    parser.add_argument("--batch", type=integer(1, MAX_BATCH), default=4)
    parser.add_argument("--hidden", type=integer(1, 65536), default=256)
    parser.add_argument("--layers", type=integer(1, 1024), default=4)
    parser.add_argument("--heads", type=integer(1, 1024), default=4)
    parser.add_argument("--intermediate", type=integer(1, 2**18), default=1024)
    parser.add_argument("--vocab", type=integer(8, 2**22), default=8192)
    parser.add_argument(
        "--bert-base",
        action="store_true",
        help="BERT-base shape (hidden 768, 12 layers, 12 heads, FFN 3072, vocab 30522); "
        "refused together with a shape flag above it sets (--batch is not one)",
    )
    parser.add_argument(
        "--rounds", type=ROUNDS, default=5, help="timed steps per model (alternating)"
    )
    parser.add_argument("--warmup", type=WARMUP, default=1)
    parser.add_argument("--vs-hf", action="store_true", help="also time the HF reference models")
    parser.add_argument(
        "--memory",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="measure peak memory (one subprocess per model on CPU)",
    )
    parser.add_argument("--mfu", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument(
        "--backends",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="report the SDPA backend each pair takes (read off torch.profiler)",
    )
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument(
        "--bf16", action=argparse.BooleanOptionalAction, default=True, help="bf16 autocast on GPU"
    )
    parser.add_argument(
        "--peak-tflops",
        type=real(0, 1e6, low_open=True),
        default=None,
        help="the device's peak TFLOP/s for the MFU column (default: the nominal dense bf16 "
        "peak of known GPUs; none on CPU)",
    )
    parser.add_argument("--compile", action="store_true", help="torch.compile our encoders")
    parser.add_argument(
        "--document-mask",
        type=integer(1, MAX_LENGTH),
        default=None,
        metavar="N",
        help="also time every pair whose kernel keeps documents apart with N documents per "
        "block and segment_ids (--data.document_mask), alternating with the plain step",
    )
    parser.add_argument(
        "--plans",
        type=integer(1, MAX_LENGTH),
        default=None,
        metavar="W",
        help="also time every pair whose kernel has windows with every layer a window of W "
        "tokens and with two windowed layers to one global, alternating with all-global",
    )
    parser.add_argument(
        "--bias-block-from",
        type=integer(1, MAX_LENGTH),
        default=None,
        metavar="N",
        help="softmax attention with a score bias attends in blocks of queries from N tokens "
        f"on (default: the kernel's, {BIAS_BLOCK_FROM}); above the longest --lengths: the "
        "dense [L, L] bias (a bias of (h, i - j) alone, ALiBi/T5/KERPLE, reads its table "
        "through a view on a CPU from 1,024 tokens instead, unless --document-mask is given)",
    )
    parser.add_argument(
        "--compile-speedup",
        action="store_true",
        help="also time a torch.compile'd twin of every pair, alternating with eager",
    )
    return parser


def _kernels_with(capability: str) -> list[str]:
    loaded = ATTENTION_KERNELS.loadable().components
    return [name for name, kernel in loaded.items() if getattr(kernel.capabilities(), capability)]


#: Options that add a table of the pairs able to fill it: (option's dest, flag, whether a
#: pair can, what the pairs need, the valid choices). An option no pair of --schemes and
#: --kernels can fill is refused: its table would be printed empty, exit 0.
PAIR_TABLES: tuple[
    tuple[str, str, Callable[[tuple[str, str]], bool], str, Callable[[], str]], ...
] = (
    (
        "plans",
        "--plans",
        lambda pair: _kernel(pair[1]).window,
        "a kernel with windowed attention",
        lambda: "--kernels " + " ".join(_kernels_with("window")),
    ),
    (
        "document_mask",
        "--document-mask",
        lambda pair: _kernel(pair[1]).segments,
        "a kernel that keeps documents apart",
        lambda: "--kernels " + " ".join(_kernels_with("segments")),
    ),
)


def refuse_empty_tables(parser: argparse.ArgumentParser, ns: argparse.Namespace) -> None:
    """One line for an option of :data:`PAIR_TABLES` that no pair of ``ns`` can fill."""
    pairs = valid_pairs(ns.schemes, ns.kernels)
    for dest, flag, fills, needs, valid in PAIR_TABLES:
        value = getattr(ns, dest)
        if value in (None, False) or any(fills(pair) for pair in pairs):
            continue
        given = flag if value is True else f"{flag} {value}"
        parser.error(
            f"{given}: no pair of --schemes {' '.join(ns.schemes)} and --kernels "
            f"{' '.join(ns.kernels)} can be timed for it (it needs {needs}), so its table "
            f"would be empty; valid: {valid()}"
        )


#: Preset flags (their dests) -> the settings each sets; a shape flag typed beside its
#: preset would be replaced without a word, so :data:`IGNORED` refuses the two together.
PRESETS: dict[str, dict[str, int]] = {"bert_base": BERT_BASE}


def _kernels_taking(option: str) -> list[str]:
    """The loadable kernels whose constructor takes ``option``."""
    loaded = ATTENTION_KERNELS.loadable().components
    return [name for name, kernel in loaded.items() if option in option_names(kernel)]


def _bias_block_applies(ns: argparse.Namespace) -> bool:
    """Whether a pair of ``ns`` reads ``--bias-block-from``: a scheme with a score bias on a
    kernel that takes the option."""
    return any(
        _scheme(p).needs_score_bias and kernel_options(ns, k) is not None
        for p, k in valid_pairs(ns.schemes, ns.kernels)
    )


@dataclass(frozen=True)
class Ignored:
    """A typed option (``option``, a dest) bench would not use while ``holds`` of the parsed
    arguments, because of ``others`` (dests), for the reason ``why``."""

    option: str
    others: tuple[str, ...]
    holds: Callable[[argparse.Namespace], bool]
    why: str | Callable[[], str]  # a callable: words that load the registries when refused


#: Every typed option bench would silently ignore or contradict, and what it is ignored
#: under: each is refused in one line naming it and the options that make it pointless
#: (exit 0 with tables measured at another setting than the one typed was the bug).
IGNORED: tuple[Ignored, ...] = (
    *(
        Ignored(key, (preset,), lambda ns, p=preset: getattr(ns, p), f"the preset sets it to {v}")
        for preset, settings in PRESETS.items()
        for key, v in settings.items()
    ),
    Ignored(
        "compile",
        ("compile_speedup",),
        lambda ns: ns.compile_speedup,
        "--compile-speedup times eager against compiled, and --compile would make its eager "
        "side compiled too",
    ),
    Ignored(
        "bf16",
        ("device",),
        lambda ns: ns.bf16 and torch.device(ns.device).type != "cuda",
        "bf16 autocast is used on a CUDA device only",
    ),
    Ignored(
        "bias_block_from",
        ("schemes", "kernels"),
        lambda ns: not _bias_block_applies(ns),
        lambda: (
            "it applies only to a scheme with a score bias on a kernel that takes the "
            f"option; valid: --kernels {' '.join(_kernels_taking('bias_block_from'))}"
        ),
    ),
)


def refuse_ignored(parser: ToolParser, ns: argparse.Namespace) -> None:
    """One line for the first typed option of :data:`IGNORED` that bench would not use."""
    for row in IGNORED:
        if row.option in parser.typed and row.holds(ns):
            others = " and ".join(parser.as_given(ns, dest) for dest in row.others)
            why = row.why if isinstance(row.why, str) else row.why()
            parser.error(
                f"{parser.typed[row.option]} cannot be used with {others}: {why}; drop one of them"
            )


def parse_args(args: Sequence[str] | None) -> argparse.Namespace:
    """The parsed arguments, or one ConfigError line naming the first wrong one (ranges,
    then what needs several arguments: documents per block, the device, a typed option bench
    would ignore (:data:`IGNORED`), each pair's model (:func:`refuse_unbuildable`))."""
    parser = build_parser()
    ns = parser.parse_args(args)
    every_loadable(ns, "bench", schemes=POSITION_SCHEMES, kernels=ATTENTION_KERNELS)
    if ns.document_mask is not None and ns.document_mask > min(ns.lengths):
        parser.error(
            f"--document-mask {ns.document_mask}: must be in [1, {min(ns.lengths)}] "
            "(at most one document per token of the shortest --lengths)"
        )
    if not valid_pairs(ns.schemes, ns.kernels):
        parser.error(
            f"no scheme of --schemes {' '.join(ns.schemes)} runs on a kernel of --kernels "
            f"{' '.join(ns.kernels)} (score-bias schemes need a kernel that supports them)"
        )
    refuse_empty_tables(parser, ns)
    try:
        device = torch.device(ns.device)
    except RuntimeError:
        parser.error(f"--device {ns.device!r} is not a device; valid: cpu, cuda, cuda:<index>")
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error(f"--device {ns.device}: no CUDA device is available; use --device cpu")
    refuse_ignored(parser, ns)
    for preset, settings in PRESETS.items():
        if getattr(ns, preset):
            for key, value in settings.items():
                setattr(ns, key, value)
    refuse_unbuildable(parser, ns)
    return ns


def refuse_unbuildable(parser: ToolParser, ns: argparse.Namespace) -> None:
    """Each pair's model at bench's shape (the longest of ``--lengths``) made as every
    command makes one, an :class:`~roformer_lit.encoder_config.EncoderConfig` (the rule
    table, :mod:`roformer_lit.architecture_rules`): its first refusal is bench's one line,
    in the table's words (``--hidden 100 --heads 3``: ``model.hidden_size 100 is not
    divisible by num_heads 3; valid model.num_heads for it: ...``), before anything runs."""
    shape = Shape(0, max(ns.lengths), ns.hidden, ns.layers, ns.heads, ns.intermediate, ns.vocab)
    for position, attention in valid_pairs(ns.schemes, ns.kernels):
        try:
            EncoderConfig(position=position, attention=attention, **shape.model_kwargs())
        except ConfigError as exc:
            parser.error(str(exc))


def _print_table(columns: Sequence[str], rows: Iterable[str], empty: str | None = None) -> None:
    """A markdown table after a blank line: header, separator, the given rows; where there
    are no rows and ``empty`` says why, that line instead of a table of headers alone."""
    rows = list(rows)
    if not rows and empty is not None:
        print(f"\n{empty}")
        return
    print("\n| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print(row)


def main(args: Sequence[str] | None = None) -> int:
    ns = parse_args(args)
    device = torch.device(ns.device)
    autocast = device.type == "cuda" and ns.bf16
    print(f"## roformer-lit bench on {describe_machine(device)}\n")
    print(
        f"hidden {ns.hidden}, {ns.layers} layers, {ns.heads} heads, FFN {ns.intermediate}, vocab {ns.vocab}, batch {ns.batch}; "
        f"{ns.rounds} alternating rounds after {ns.warmup} warm-up; attention dropout 0 on every side; "
        f"{'bf16 autocast' if autocast else 'float32'}{', torch.compile' if ns.compile else ''}"
    )
    if ns.compile or ns.compile_speedup:
        # Every pair compiles the same ``Encoder.forward`` with different guards; past
        # dynamo's recompile limit (8) later pairs would silently run eager.
        pairs = len(valid_pairs(ns.schemes, ns.kernels)) * len(ns.lengths)
        torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 2 * pairs)
    results = [bench_length(ns, length, device) for length in ns.lengths]
    peak = nominal_peak_flops(device, ns.peak_tflops)
    columns = ["scheme", "kernel", "L", "tokens/s", "step ms", "fwd+bwd ms", "step / nope"]
    columns += ["step / nope, rounds' range"]
    columns += ["model GFLOP/s", *([f"MFU (of {peak / 1e12:g} TFLOP/s)"] if peak else [])]
    _print_table([*columns, "peak MB"], (row for r in results for row in r.rows))
    if ns.vs_hf:
        _print_table(
            ["scheme", "HF reference", "L", "ours tokens/s", "HF tokens/s"]
            + ["speed-up (median paired)", "ours peak MB", "HF peak MB"],
            (row for r in results for row in r.hf_rows),
            empty=(
                f"(no scheme of --schemes {' '.join(ns.schemes)} on softmax has an HF "
                f"reference model: {', '.join(f'{p} ({m})' for p, m in HF_REFERENCES.items())})"
            ),
        )
        _print_table(
            ["recipe", "HF reference (attention)", "L", "ours tokens/s", "HF tokens/s"]
            + ["training step speed-up (median paired)", "inference speed-up (median paired)"]
            + ["inference FLOPs, HF / ours"],
            (row for r in results for row in r.recipe_rows),
        )
    if ns.mfu:
        _print_table(
            ["L", "matmul GFLOP/s (same shapes)", "model FLOP rate / matmul rate"],
            (r.ceiling for r in results if r.ceiling),
            empty=(
                "(no matmul ceiling: it is measured on the shapes of nope with softmax, which "
                "--schemes and --kernels leave out; add them, or pass --no-mfu)"
            ),
        )
    if ns.compile_speedup:
        _print_table(
            ["scheme", "kernel", "L", "eager step ms", "compiled step ms"]
            + ["speed-up (median paired)", "compile s"],
            (row for r in results for row in r.compile_rows),
        )
    if ns.document_mask:
        _print_table(
            ["scheme", "kernel", "L", "step ms", f"step ms, {ns.document_mask} documents masked"]
            + ["masked / plain (median paired)"],
            (row for r in results for row in r.mask_rows),
        )
    if ns.plans:
        _print_table(
            ["scheme", "kernel", "L", "all-global step ms", "all-local step ms", "2:1 step ms"]
            + [f"all-local / all-global (window {ns.plans})", "2:1 / all-global"],
            (row for r in results for row in r.plan_rows),
        )
    if ns.backends:
        _print_table(
            ["scheme", "kernel", "L", "SDPA backend, forward", "SDPA backend, backward"],
            (row for r in results for row in r.backend_rows),
        )
    if len(ns.lengths) > 1:
        short, long = min(ns.lengths), max(ns.lengths)
        first = results[ns.lengths.index(short)].steps
        last = results[ns.lengths.index(long)].steps
        _print_table(
            ["scheme", "kernel", f"step time L={long} / L={short} ({long // short}x the tokens)"],
            (f"| {p} | {k} | {last[(p, k)] / first[(p, k)]:.2f} |" for p, k in first),
        )
    print(
        "\npeak MB: memory above the model and batch during one forward+backward, measured in a fresh process (CPU: peak RSS) or with the CUDA allocator."
    )
    if peak:
        print(
            "MFU: model FLOPs of the whole training step (forward, backward, optimiser) per second, over the device's peak."
        )
    return 0
