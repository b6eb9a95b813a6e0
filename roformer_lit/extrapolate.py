"""``python -m roformer_lit extrapolate CKPT [CKPT ...] --lengths 128 512 1024``.

Evaluates trained checkpoints at sequence lengths they may never have seen and prints a
markdown table of masked-token ``val/loss`` per evaluation length, one row per checkpoint.
Each checkpoint is evaluated on its own run's validation data (``config.yaml`` beside its
``checkpoints/`` folder; the bundled corpus otherwise), re-packed into blocks of each
length, with the same fixed validation masking, and about the same number of tokens at
every length. A scheme that cannot encode a length (``learned`` past its table) gets
"refused" in its cell instead of a number.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn.functional as F
import yaml

from roformer_lit.cli import load_checkpoint, run_dir_of
from roformer_lit.data.datamodule import MLMDataModule
from roformer_lit.errors import ConfigError
from roformer_lit.module import MaskedLM

DATA_KEYS = (
    "train_files",
    "val_files",
    "val_fraction",
    "text_field",
    "tokenizer_file",
    "vocab_size",
    "mlm_probability",
    "seed",
    "cache_dir",
)


def data_settings(ckpt: Path) -> dict:
    """The data arguments of the run a checkpoint came from (``{}``: the defaults)."""
    run = run_dir_of(ckpt)
    if run is None:
        return {}
    config = yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8")) or {}
    data = config.get("data") or {}
    return {k: data[k] for k in DATA_KEYS if k in data}


@torch.no_grad()
def evaluate(model: MaskedLM, data: MLMDataModule) -> float:
    """Token-weighted masked-token cross-entropy over the validation set."""
    total, count = 0.0, 0
    for batch in data.val_dataloader():
        batch = {k: v.to(model.device) for k, v in batch.items()}
        logits, targets = model.masked_logits(batch["input_ids"], batch["labels"])
        total += F.cross_entropy(logits.float(), targets, reduction="sum").item()
        count += targets.numel()
    return total / max(count, 1)


def main(args: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m roformer_lit extrapolate", description=__doc__)
    parser.add_argument("checkpoints", nargs="+", type=Path)
    parser.add_argument("--lengths", nargs="+", type=int, default=[128, 256, 512, 1024, 2048])
    parser.add_argument("--tokens", type=int, default=32768, help="validation tokens per length")
    parser.add_argument("--batch-size", type=int, default=4)
    ns = parser.parse_args(list(args))
    for ckpt in ns.checkpoints:
        if not ckpt.is_file():
            raise ConfigError(f"checkpoint not found: {ckpt}")
    if min(ns.lengths) < 8:
        raise ConfigError(f"--lengths must be >= 8, got {min(ns.lengths)}")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    print("| checkpoint | scheme | kernel | " + " | ".join(f"L={n}" for n in ns.lengths) + " |")
    print("|---|---|---|" + "---|" * len(ns.lengths))
    for ckpt in ns.checkpoints:
        model = load_checkpoint(ckpt).to(device).eval()
        cells = []
        for length in ns.lengths:
            if model.max_length is not None and length > model.max_length:
                cells.append(f"refused (max_positions={model.max_length})")
                continue
            data = MLMDataModule(
                **data_settings(ckpt),
                max_length=length,
                batch_size=ns.batch_size,
                max_val_blocks=max(ns.tokens // length, 1),
            )
            cells.append(f"{evaluate(model, data):.3f}")
        hp = model.hparams
        print(f"| {ckpt} | {hp.position} | {hp.attention} | " + " | ".join(cells) + " |")
    return 0
