"""The GPU bias region of the performance page, read from synthetic raw outputs.

Oracles: the ratios and ranges written into the synthetic files, and which of them fall on
both sides of the target or apart between eager and compiled (decided by hand below).
"""

from __future__ import annotations

from pathlib import Path

from roformer_lit.results.study import gpu_speed
from roformer_lit.results.study.cpu_speed import BIAS_SCHEMES

HEAD = "| scheme | kernel | L | tokens/s | step ms | fwd+bwd ms | step / nope | step / nope, rounds' range | model GFLOP/s |"


def _bench(length: int, ratios: dict[str, tuple[str, str]], compiled: bool) -> str:
    lines = [
        f"# 2026-11-27T00:00:00Z python3 -m roformer_lit bench --lengths {length}"
        + (" --compile" if compiled else ""),
        "## roformer-lit bench on GPU: Test GPU, CUDA 0.0, torch 0.0",
        "",
        HEAD,
        "|---|---|---|---|---|---|---|---|---|",
        f"| nope | softmax | {length} | 1 | 1 | 1 | 1.000 | – | 1 |",
    ]
    lines += [
        f"| {s} | softmax | {length} | 1 | 1 | 1 | {r} | {spread} | 1 |"
        for s, (r, spread) in ratios.items()
    ]
    lines += [
        "",
        "| scheme | kernel | L | SDPA backend, forward | SDPA backend, backward |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {s} | softmax | {length} | none (no SDPA) | none (no SDPA) |" for s in ("nope", *ratios)
    ]
    return "\n".join(lines) + "\n# exit 0 after 1 s (cap 9 s)\n"


def _write(folder: Path, name: str, text: str) -> None:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_table_marks_crossings_compiled_apart_and_a_cut_run(study_bench: Path):
    eager = dict.fromkeys(BIAS_SCHEMES, ("1.200", "1.10–1.30"))
    eager["xl"] = ("1.450", "1.40–1.60")  # rounds on both sides of 1.5
    compiled = dict.fromkeys(BIAS_SCHEMES, ("1.250", "1.20–1.30"))  # overlaps eager
    compiled["deberta"] = ("1.800", "1.70–1.90")  # every round above every eager round
    files = gpu_speed.FILES
    _write(study_bench, files[(512, "eager")], _bench(512, eager, compiled=False))
    _write(study_bench, files[(512, "compiled")], _bench(512, compiled, compiled=True))
    _write(study_bench, files[(2048, "eager")], _bench(2048, eager, compiled=False))
    _write(study_bench, files[(2048, "compiled")], "# 2026-11-27T00:00:00Z python3 -m cut\n")
    _write(study_bench, f"{gpu_speed.RUN}/machine.txt", "x\nNVIDIA Test GPU, 123.45, 1 MiB\n")
    text = gpu_speed.table()
    assert "| xl | 1.450 (1.40–1.60), FlexAttention | 1.250 (1.20–1.30), FlexAttention |" in text
    assert text.count("not run (cut at its time cap)") == 1 + len(BIAS_SCHEMES)
    assert "6 of 6 at 512 eager, 5 of 6 at 512 compiled, 6 of 6 at 2,048 eager" in text
    assert "(not separated from the target): `xl` at 512 eager, `xl` at 2,048 eager." in text
    assert "or below): `xl` lower at 512, `deberta` higher at 512." in text  # xl: 1.2–1.3 < 1.4
    assert "driver 123.45" in text and "python3 -m cut" not in text
    assert "5 at 512 tokens compiled (`alibi`, `t5`, `kerple`, `fire`, `xl`)" in gpu_speed.readme()
