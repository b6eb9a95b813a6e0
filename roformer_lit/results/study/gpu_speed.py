"""The bias schemes' training step against ``nope`` on a GPU, from ``bench``'s raw outputs
of ``scripts/gpu_check.sh`` (step 4; region ``gpu-bias-table`` of the performance page).

One raw output per length and mode (eager, ``--compile``), each the whole of what
``python -m roformer_lit bench`` printed after a first line ``# <time> <command>``. A
raw output that holds no table (a run cut at its time cap) is shown as not run.
"""

from __future__ import annotations

from roformer_lit.errors import ConfigError
from roformer_lit.results.study.cpu_speed import (
    BIAS_SCHEMES,
    TARGET,
    bench_table,
    command,
    round_range,
    within,
)
from roformer_lit.results.study.places import bench_file
from roformer_lit.results.study.reading import read_text

#: The folder of the run, its machine line, and the raw outputs by (L, mode).
RUN = "h200-2026-11-27"
FILES = {
    (512, "eager"): f"{RUN}/4-bias-512.txt",
    (512, "compiled"): f"{RUN}/4-bias-512-compiled.txt",
    (2048, "eager"): f"{RUN}/4-bias-2048.txt",
    (2048, "compiled"): f"{RUN}/4-bias-2048-compiled.txt",
}
BACKEND_TABLE = "| scheme | kernel | L | SDPA backend"


def _has_table(name: str) -> bool:
    return any(
        line.startswith("| scheme | kernel |") for line in read_text(bench_file(name)).splitlines()
    )


def _machine(name: str) -> str:
    """The machine line bench prints (``## roformer-lit bench on GPU: ...``)."""
    for line in read_text(bench_file(name)).splitlines():
        if line.startswith("## roformer-lit bench on "):
            return line.removeprefix("## roformer-lit bench on ")
    raise ConfigError(f"{bench_file(name)}: no '## roformer-lit bench on' line")


def _driver() -> str:
    """The driver version ``nvidia-smi`` reported (``<name>, <driver>, <memory>``) in the
    run's ``machine.txt``."""
    for line in read_text(bench_file(f"{RUN}/machine.txt")).splitlines():
        fields = [field.strip() for field in line.split(",")]
        if len(fields) == 3 and fields[0].startswith("NVIDIA"):
            return fields[1]
    raise ConfigError(f"{bench_file(RUN + '/machine.txt')}: no nvidia-smi line")


def _cell(length: int, mode: str, scheme: str) -> str:
    """``step / nope (rounds' range)`` and the attention kernel taken, or "not run"."""
    name = FILES[(length, mode)]
    if not _has_table(name):
        return "not run (cut at its time cap)"
    row = bench_table(name)[(scheme, length)]
    spread = row["step / nope, rounds' range"]
    kernel = bench_table(name, BACKEND_TABLE)[(scheme, length)]["SDPA backend, forward"]
    kernel = "FlexAttention" if kernel.startswith("none") else kernel
    ratio = row["step / nope"] if spread == "–" else f"{row['step / nope']} ({spread})"
    return f"{ratio}, {kernel}"


def _compiled_apart() -> str:
    """The schemes whose compiled rounds all lie above (or all below) their eager rounds, per
    length where both ran."""
    found = []
    for length in sorted({length for length, _ in FILES}):
        eager, compiled = FILES[(length, "eager")], FILES[(length, "compiled")]
        if not (_has_table(eager) and _has_table(compiled)):
            continue
        for scheme in BIAS_SCHEMES:
            e_low, e_high = round_range(bench_table(eager)[(scheme, length)])
            c_low, c_high = round_range(bench_table(compiled)[(scheme, length)])
            if c_low > e_high:
                found.append(f"`{scheme}` higher at {length:,}")
            elif c_high < e_low:
                found.append(f"`{scheme}` lower at {length:,}")
    return ", ".join(found) or "none"


def table() -> str:
    """Scheme x (L, mode): step / nope with the per-round range and the kernel taken; the
    count within ``TARGET``; the machine and the commands."""
    modes = list(FILES)
    head = "| scheme | " + " | ".join(f"L = {length:,}, {mode}" for length, mode in modes)
    lines = [head + " |", "|---|" + "---|" * len(modes)]
    for scheme in ("nope", *BIAS_SCHEMES):
        lines.append(f"| {scheme} | " + " | ".join(_cell(*key, scheme) for key in modes) + " |")
    counts, crossing = [], []
    for length, mode in modes:
        name = FILES[(length, mode)]
        if _has_table(name):
            meets, _ = within(length, name)
            counts.append(f"{len(meets)} of {len(BIAS_SCHEMES)} at {length:,} {mode}")
            for scheme in BIAS_SCHEMES:
                low, high = round_range(bench_table(name)[(scheme, length)])
                if low <= TARGET < high:
                    crossing.append(f"`{scheme}` at {length:,} {mode}")
    ran = [name for name in FILES.values() if _has_table(name)]
    apart = _compiled_apart()
    sources = "; ".join(f"[`{name}`](bench/{name}): `{command(name)}`" for name in ran)
    return (
        "\n".join(lines)
        + f"\n\nWithin {TARGET}× of `nope` (median of rounds): {', '.join(counts)}. Rounds on "
        + f"both sides of {TARGET}× (not separated from the target): "
        + f"{', '.join(crossing) or 'none'}. Compiled against eager, rounds apart (every "
        + f"compiled round above every eager round, or below): {apart}. "
        + f"{_machine(ran[0])}, driver {_driver()}. "
        + f"Raw outputs: {sources}.\n"
    )


def readme() -> str:
    """One sentence for the README: per length and mode that ran, the schemes within the
    target, with the GPU, driver and torch version."""
    parts = []
    for (length, mode), name in FILES.items():
        if _has_table(name):
            meets, _ = within(length, name)
            listed = ", ".join(f"`{s}`" for s in meets) or "none"
            parts.append(f"{len(meets)} at {length:,} tokens {mode} ({listed})")
    return (
        f"On a GPU ({_machine(FILES[(512, 'eager')]).removeprefix('GPU: ')}, driver "
        f"{_driver()}; BERT-base width, 4 layers, `bash scripts/gpu_check.sh`), of "
        f"{len(BIAS_SCHEMES)} bias schemes within {TARGET}× of `nope`'s step (median of "
        f"alternating rounds; where rounds fall on both sides, the page says): "
        f"{'; '.join(parts)}: [performance](docs/performance.md"
        "#one-prepared-run-on-an-h200-2026-11-27-scriptsgpu_checksh).\n"
    )
