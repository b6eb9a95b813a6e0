"""What a windowed layer saves per training step: ``bench --plans`` on a CPU and an H100
(regions ``readme-plan-speed`` of the README and ``plans-speed-cpu`` and
``plans-speed-h100`` of ``docs/guide/layer-plans.md``).

Raw outputs: :data:`CPU_RAW`, :data:`H100_RAW` and :data:`H100_BEFORE` (the same command
before the block mask was cached), each the tables ``bench`` printed: a settings line, and
a plan table with each length's all-global, all-local and 2:1 step times and the two ratios.
The README and the guide typed these ratios and step times by hand; here every one is read
from the plan tables, and what the text says of them (where both plans are faster, how the
step grows with length) is computed from them. A plan table that is missing, cut short or
not numbers is refused in one line naming the file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from roformer_lit.errors import ConfigError
from roformer_lit.results.study.places import bench_file, cached
from roformer_lit.results.study.reading import read_text
from roformer_lit.results.study.words import names

CPU_RAW = "cpu-2026-11-25-plans.txt"
H100_DIR = "h100-2026-11-26"
H100_RAW = f"{H100_DIR}/plans.txt"
H100_BEFORE = f"{H100_DIR}/plans-before-mask-cache.txt"
_HEAD = re.compile(
    r"^\| scheme \| kernel \| L \| all-global step ms \| all-local step ms \| 2:1 step ms \| "
    r"all-local / all-global \(window (?P<window>\d+)\) \| 2:1 / all-global \|$"
)
_ROW = re.compile(
    r"^\| (?P<scheme>[a-z0-9_]+) \| [a-z0-9_]+ \| (?P<length>\d+) \| (?P<glob>[0-9.]+) \| "
    r"(?P<local>[0-9.]+) \| (?P<mixed>[0-9.]+) \| (?P<local_ratio>[0-9.]+)x \| "
    r"(?P<mixed_ratio>[0-9.]+)x \|$"
)
_SETTINGS = re.compile(r"^hidden (?P<hidden>\d+), (?P<layers>\d+) layers, .*?batch (?P<batch>\d+);")
_ROUNDS = re.compile(r"(\d+) alternating rounds")


@dataclass(frozen=True)
class Step:
    """One length of a plan table: step ms of each plan, and the ratios as printed."""

    glob: float
    local: float
    mixed: float
    local_ratio: str
    mixed_ratio: str


@dataclass(frozen=True)
class Plans:
    """A ``bench --plans`` output: its settings and ``(scheme, length) -> Step``."""

    settings: str
    layers: int
    hidden: int
    batch: int
    rounds: int
    window: int
    steps: dict[tuple[str, int], Step]

    def lengths(self, scheme: str) -> list[int]:
        return sorted(n for s, n in self.steps if s == scheme)


@cached
def read(name: str) -> Plans:
    """The plan table of raw output ``name``; ConfigError naming the file and line when it
    is missing, cut short or holds a row that is not numbers."""
    path = bench_file(name)
    settings: re.Match[str] | None = None
    line_of_settings = ""
    window: int | None = None
    steps: dict[tuple[str, int], Step] = {}
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        found = _SETTINGS.match(line)
        if found and settings is None:
            settings, line_of_settings = found, line
            continue
        head = _HEAD.match(line)
        if head:
            window = int(head["window"])
            continue
        if window is None or not line.startswith("| ") or line.startswith("| scheme"):
            if window is not None and steps and not line.startswith("|"):
                break
            continue
        row = _ROW.match(line)
        if row is None:
            raise ConfigError(f"{path}: line {number}: not a row of a plan table: {line!r}")
        steps[(row["scheme"], int(row["length"]))] = Step(
            float(row["glob"]),
            float(row["local"]),
            float(row["mixed"]),
            row["local_ratio"],
            row["mixed_ratio"],
        )
    rounds = _ROUNDS.search(line_of_settings)
    if settings is None or rounds is None or window is None or not steps:
        raise ConfigError(
            f"{path}: needs a settings line ('hidden …, … layers, … batch …; N alternating "
            "rounds') and a plan table with at least one row"
        )
    return Plans(
        line_of_settings,
        int(settings["layers"]),
        int(settings["hidden"]),
        int(settings["batch"]),
        int(rounds[1]),
        window,
        steps,
    )


def _tokens(n: int) -> str:
    return f"{n:,}"


def _ratios(plans: Plans, scheme: str, which: str) -> str:
    return names([f"{getattr(plans.steps[(scheme, n)], which)}×" for n in plans.lengths(scheme)])


def _faster(plans: Plans, scheme: str) -> list[int]:
    """The lengths at which both windowed plans' ratios (paired within each round, as
    ``bench`` printed them; not the ratio of the step columns) are below 1."""
    return [
        n
        for n in plans.lengths(scheme)
        if float(plans.steps[(scheme, n)].local_ratio) < 1
        and float(plans.steps[(scheme, n)].mixed_ratio) < 1
    ]


def _machine(name: str) -> str:
    """The device line ``bench`` printed, after ``on``."""
    for line in read_text(bench_file(name)).splitlines():
        if line.startswith("## roformer-lit bench on "):
            return line.removeprefix("## roformer-lit bench on ").split(": ", 1)[-1]
    raise ConfigError(f"{bench_file(name)}: no '## roformer-lit bench on …' line")


def readme() -> str:
    """The README's paragraph on windowed layers' step times."""
    cpu, gpu = read(CPU_RAW), read(H100_RAW)
    last, mid, first = max(cpu.lengths("rope")), 2048, min(gpu.lengths("rope"))
    big, small = cpu.steps[("rope", last)], cpu.steps[("rope", mid)]
    g_last, g_first = gpu.steps[("rope", last)], gpu.steps[("rope", first)]
    faster = _faster(gpu, "rope")
    command = read_text(bench_file(CPU_RAW)).splitlines()[0].lstrip("# ").strip()
    return (
        "`configs/recipes/modernbert.yaml` is ModernBERT's architecture at laptop size; a "
        "model built from it exports as, and equals, transformers' `ModernBertForMaskedLM`. "
        "A windowed layer computes only its band (blocked SDPA on a CPU, a FlexAttention "
        f"block mask on a GPU): one training step of a {cpu.layers}-layer RoPE encoder at "
        f"{_tokens(last)} tokens costs {big.local_ratio}× the all-global step with every layer "
        f"a {cpu.window}-token window, and {big.mixed_ratio}× with ModernBERT's two local "
        f"layers to one global ({small.local_ratio}× and {small.mixed_ratio}× at "
        f"{_tokens(mid)}; {_machine(CPU_RAW)}, one run of {cpu.rounds} alternating rounds, "
        f"[`docs/bench/{CPU_RAW}`](docs/bench/{CPU_RAW}): `{command}`). On an H100 (hidden "
        f"{gpu.hidden}, {gpu.layers} layers, batch {gpu.batch}, bf16, one run of {gpu.rounds} "
        f"rounds) both windowed plans take less than the all-global step only at "
        f"{names([_tokens(n) for n in faster]) if faster else 'no length'} tokens with RoPE "
        f"({g_last.local_ratio}× all-local and {g_last.mixed_ratio}× 2:1 at {_tokens(last)}; "
        f"{g_first.local_ratio}× and {g_first.mixed_ratio}× at {_tokens(first)}, where a "
        f"global layer is flash attention) ([`docs/bench/{H100_DIR}/`](docs/bench/{H100_DIR}/"
        "README.md): `bash scripts/gpu_plans.sh`). The formulas — and where public code "
        "disagrees with the papers — are in [the schemes page](docs/guide/schemes.md) and "
        "each scheme's docstring."
    )


def cpu() -> str:
    """The layer-plans guide's CPU paragraph."""
    plans = read(CPU_RAW)
    lengths = plans.lengths("rope")
    first, last = lengths[0], lengths[-1]
    low, high = plans.steps[("rope", first)], plans.steps[("rope", last)]
    before = lengths[-2]
    return (
        f"On the CPU of `docs/bench/{CPU_RAW}` ({_machine(CPU_RAW)}; one training step of "
        f"hidden {plans.hidden}, {plans.layers} layers, batch {plans.batch}, window "
        f"{plans.window}; one run of {plans.rounds} alternating rounds, the ratios paired within "
        "it):\n\n"
        f"all-local costs {_ratios(plans, 'rope', 'local_ratio')} the all-global step at "
        f"{names([_tokens(n) for n in lengths])} tokens, the 2:1 plan "
        f"{_ratios(plans, 'rope', 'mixed_ratio')}. For {last // first}× the tokens "
        f"({_tokens(first)} → {_tokens(last)}) the all-local step takes "
        f"{high.local / low.local:.1f}× the time ({low.local:,.1f} ms → {high.local:,.1f} ms); "
        f"for the {last // before}× from {_tokens(before)} to {_tokens(last)}, the all-global "
        f"step takes {high.glob / plans.steps[('rope', before)].glob:.1f}× "
        f"({plans.steps[('rope', before)].glob:,.1f} ms → {high.glob:,.1f} ms; "
        f"{(last // before) ** 2}× would be quadratic). A single run on a shared machine: read "
        "the ratios, not the milliseconds."
    )


def h100() -> str:
    """The layer-plans guide's H100 paragraph."""
    plans, old = read(H100_RAW), read(H100_BEFORE)
    lengths = plans.lengths("rope")
    last, first = lengths[-1], lengths[0]
    rope, alibi = plans.steps[("rope", last)], plans.steps[("alibi", last)]
    more = float(alibi.local_ratio) < float(rope.local_ratio) and float(alibi.mixed_ratio) < float(
        rope.mixed_ratio
    )
    faster = _faster(plans, "rope")
    return (
        f"On one {_machine(H100_RAW)} (`docs/bench/{H100_RAW}`; hidden {plans.hidden}, "
        f"{plans.layers} layers, batch {plans.batch}, bf16, window {plans.window}, "
        f"{plans.rounds} alternating rounds, one run): with RoPE, all-local costs "
        f"{_ratios(plans, 'rope', 'local_ratio')} the all-global step at "
        f"{names([_tokens(n) for n in lengths])} tokens, the 2:1 plan "
        f"{_ratios(plans, 'rope', 'mixed_ratio')}; both take less than the all-global step "
        f"only at {names([_tokens(n) for n in faster]) if faster else 'no length'}. With "
        "ALiBi, whose global layers add a dense `[h, L, L]` bias, the band saves "
        + ("more" if more else "not more on both plans")
        + f" at {_tokens(last)}: {alibi.local_ratio}× all-local, {alibi.mixed_ratio}× 2:1. "
        f"Before the block mask was cached, all-local cost "
        f"{old.steps[('rope', first)].local_ratio}× at {_tokens(first)} tokens with RoPE "
        f"(`docs/bench/{H100_BEFORE}`)."
    )
