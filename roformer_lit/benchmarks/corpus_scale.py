"""Does the data path scale? ``python -m roformer_lit bench-data --corpus PATH --sizes-mb 25 100 400``.

For each size, a corpus of that many MB is synthesised in ``--workdir`` by repeating the
documents of ``--corpus`` (a file, glob or directory, e.g. wikitext-2), and then:

* ``fit`` with preparation (empty cache: tokenizer trained on a sample, corpus tokenized
  by ``--num-proc`` processes, one training step, no validation): wall time and peak RSS;
* preparation rate (tokens/s, from the prepared corpus's ``meta.json``) against the ceiling:
  raw ``tokenizers`` ``encode_batch`` and ``encode_batch_fast`` (all cores, results
  discarded) on the first ``--ceiling-mb`` MB of the same text with the same tokenizer;
* ``fit`` on the prepared corpus (cached): wall time of the whole command to its first
  training step (imports included) and peak RSS;
* ``prepare`` when cached (what every further run of a sweep pays: nothing is tokenized).

Peak RSS is ``ru_maxrss`` of the command's process tree (the largest process), read with
``os.wait4``. Each command runs in a fresh process; the machine should be otherwise idle.
This is a manual benchmark (minutes at 400 MB); the tests never run it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from roformer_lit.errors import ConfigError
from roformer_lit.machine import describe_machine
from roformer_lit.safe_input import check_readable_file
from roformer_lit.tool_arguments import OUTPUT_DIRECTORY, PROG, ToolParser, integer


def synthesise(corpus: str, size_mb: int, out: Path) -> Path:
    """Write ``out``: the documents of ``corpus`` repeated until ``size_mb`` MB (one per line).

    Always written anew (to a temporary file renamed into place): a file left in
    ``--workdir`` by a run on another ``--corpus`` is never measured in its place."""
    from roformer_lit.data.sources import expand_paths, iter_documents

    docs = list(iter_documents(expand_paths(corpus, "--corpus")))
    target = size_mb * 1_000_000
    written = 0
    partial = out.with_name(out.name + ".partial")
    with open(partial, "w", encoding="utf-8") as f:
        while written < target:
            for doc in docs:
                line = doc + "\n"
                f.write(line)
                written += len(line.encode("utf-8"))
                if written >= target:
                    break
    partial.replace(out)
    return out


def timed(argv: Sequence[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MB of the process tree, stderr tail) of one command."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        list(argv), cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    assert proc.stderr is not None
    err = proc.stderr.read().decode("utf-8", "replace")
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(argv)}\n{err[-3000:]}")
    return wall, usage.ru_maxrss / 1024, err


def ceiling_rates(corpus: Path, tokenizer_path: Path, mb: int) -> tuple[float, float]:
    """Tokens/s of raw ``encode_batch`` and of raw ``encode_batch_fast`` (no offsets; what
    preparation calls), each with its own thread pool on all cores and its results
    discarded, on the first ``mb`` MB, the two calls alternating batch by batch."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_path))
    calls = {"encode_batch": tok.encode_batch, "encode_batch_fast": tok.encode_batch_fast}
    seconds = dict.fromkeys(calls, 0.0)
    tokens = 0

    def run(docs: list[str]) -> None:
        nonlocal tokens
        for name, call in calls.items():
            start = time.perf_counter()
            encodings = call(docs, add_special_tokens=False)
            seconds[name] += time.perf_counter() - start
        tokens += sum(len(e.ids) for e in encodings) + len(docs)

    batch: list[str] = []
    size = read = 0
    with open(corpus, encoding="utf-8") as f:
        for line in f:
            if doc := line.strip():
                batch.append(doc)
                size += len(line)
            if size >= 4_000_000:
                run(batch)
                read += size
                batch, size = [], 0
                if read >= mb * 1_000_000:
                    break
    if batch:
        run(batch)
    return tokens / seconds["encode_batch"], tokens / seconds["encode_batch_fast"]


#: ``--config``'s default: the source checkout's ``configs/rope.yaml``, found from this file
#: (never from the current directory, which the command may be run from anywhere).
DEFAULT_CONFIG = Path(__file__).resolve().parents[2] / "configs" / "rope.yaml"


def build_parser() -> ToolParser:
    """``bench-data --corpus``'s parser: every numeric flag declares its range."""
    parser = ToolParser(
        "bench-data", prog=f"{PROG} bench-data --corpus", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--corpus", required=True, help="text to repeat: a file, glob or directory")
    parser.add_argument("--sizes-mb", nargs="+", type=integer(1, 100_000), default=[25, 100, 400])
    parser.add_argument("--workdir", type=OUTPUT_DIRECTORY, default="bench-data")
    parser.add_argument(
        "--config",
        default=None,
        help=f"the experiment config every fit runs (default: {DEFAULT_CONFIG.name} of the "
        "roformer_lit source checkout)",
    )
    parser.add_argument("--num-proc", type=integer(1, 4096), default=None)
    parser.add_argument("--ceiling-mb", type=integer(1, 100_000), default=25)
    return parser


def parse_args(args: Sequence[str]) -> argparse.Namespace:
    """The parsed arguments with ``config`` an absolute path to a readable file: the given
    one (relative to the current directory), else :data:`DEFAULT_CONFIG`; one ConfigError
    line if either is missing. ``workdir`` is made absolute (the commands run inside it)."""
    ns = build_parser().parse_args(list(args))
    if ns.config is None:
        if not DEFAULT_CONFIG.is_file():
            raise ConfigError(
                f"bench-data: the default --config {DEFAULT_CONFIG} is not there (an installed "
                "package has no configs/); give --config the experiment config to run"
            )
        ns.config = str(DEFAULT_CONFIG)
    ns.config = str(check_readable_file(ns.config, "--config file").resolve())
    ns.workdir = Path(ns.workdir).resolve()  # each command runs inside it: no path relative to here
    return ns


def check_corpus(corpus: str) -> None:
    """Read every document of ``corpus`` once: a path that matches nothing, an empty, binary
    or truncated file is one ConfigError line before ``--workdir`` is created."""
    from roformer_lit.data.sources import expand_paths, iter_documents

    for _ in iter_documents(expand_paths(corpus, "--corpus")):
        pass


def run(args: Sequence[str]) -> int:
    ns = parse_args(args)
    check_corpus(ns.corpus)  # a bad --corpus leaves no empty --workdir behind
    ns.workdir.mkdir(parents=True, exist_ok=True)
    config = ns.config
    python = [sys.executable, "-m", "roformer_lit"]
    rows = []
    for size in ns.sizes_mb:
        corpus = synthesise(ns.corpus, size, ns.workdir / f"corpus-{size}mb.txt")
        cache = ns.workdir / f"cache-{size}mb"
        subprocess.run(["rm", "-rf", str(cache)], check=True)
        env = {**os.environ, "ROFORMER_LIT_CACHE": str(cache)}
        data = ["--data.train_files", str(corpus)]
        if ns.num_proc is not None:
            data += ["--data.num_proc", str(ns.num_proc)]
        fit = [
            *python,
            "fit",
            "--config",
            config,
            *data,
            "--trainer.max_steps",
            "1",
            "--trainer.limit_val_batches",
            "0",
            "--trainer.enable_progress_bar",
            "false",
            "--trainer.enable_model_summary",
            "false",
        ]
        fresh_s, fresh_mb, _ = timed(fit, ns.workdir, env)
        [meta_path] = (cache / "prepared").glob("*/meta.json")
        meta = json.loads(meta_path.read_text())
        prep_rate = meta["tokens"] / meta["seconds"]
        ceiling, fast = ceiling_rates(corpus, meta_path.parent / "tokenizer.json", ns.ceiling_mb)
        cached_s, cached_mb, _ = timed(fit, ns.workdir, env)
        prep_cached_s, _, _ = timed(
            [*python, "prepare", "--config", config, *data], ns.workdir, env
        )
        rows.append(
            (size, meta["tokens"], fresh_s, fresh_mb, meta["seconds"], prep_rate, ceiling, fast,
             cached_s, cached_mb, prep_cached_s, meta["num_proc"])
        )  # fmt: skip
        print(f"{size} MB done", file=sys.stderr, flush=True)
    print(f"Data path at scale on {describe_machine()}\n")
    print(
        "| corpus | tokens | fit with preparation: wall / peak RSS | tokenizing: s / tokens/s "
        "(processes) | raw encode_batch / encode_batch_fast, tokens/s | preparation / raw "
        "encode_batch / encode_batch_fast | fit, prepared: wall to first step / peak RSS | "
        "prepare, cached |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for size, tokens, fs, fm, ps, rate, ceil, fast, cs, cm, pcs, procs in rows:
        print(
            f"| {size} MB | {tokens / 1e6:.1f} M | {fs:.0f} s / {fm:,.0f} MB | {ps:.0f} s / "
            f"{rate:,.0f} ({procs}) | {ceil:,.0f} / {fast:,.0f} | {100 * rate / ceil:.0f} % / "
            f"{100 * rate / fast:.0f} % | {cs:.1f} s / {cm:,.0f} MB | {pcs:.1f} s |"
        )
    return 0
