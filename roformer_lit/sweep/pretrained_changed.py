"""A ``command: finetune`` sweep skips or resumes a fine-tune only while the pretrained
checkpoint at its ``model.pretrained`` path is still the one it was fine-tuned from.

The run's settings name the checkpoint by path, and a pretraining run retrained at that path
(moved aside and run again: another seed, more steps, another scheme) leaves the path, and
so the fine-tune's ``config.yaml``, as they were: the sweep skipped the fine-tune of the old
checkpoint as the fine-tune of the new one, exit 0. A fine-tuned ``last.ckpt`` records the
pretrained encoder's architecture digest
(:mod:`~roformer_lit.finetune.encoder_record`) and the digest of its weights
(:mod:`~roformer_lit.finetune.pretrained_weights`); :func:`check_pretrained_unchanged`
compares both with the file now at the path, for every run the sweep would skip or resume,
before anything runs, and refuses in one line naming the run and the changed checkpoint. A
fine-tuned checkpoint from before the records is not compared.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from roformer_lit.errors import ConfigError
from roformer_lit.sweep.finished import CONTINUED

#: A run the sweep would skip or resume: (its name as said, its directory, the action, the
#: pretrained checkpoint the sweep gives it now).
Continued = tuple[str, str | Path, str, Any]


def _recorded(last_ckpt: Path) -> tuple[str | None, str | None]:
    """(architecture digest, weights digest) a fine-tuned checkpoint records, the first of
    its encoder record as the config holds it (:func:`~roformer_lit.finetune.
    encoder_record.held_record_digest`); Nones where it records none or cannot be read (the fine-tune's own checks say why when it runs)."""
    from roformer_lit.finetune.encoder_record import held_record_digest
    from roformer_lit.finetune.pretrained_weights import PRETRAINED_WEIGHTS_KEY
    from roformer_lit.training.architecture_digest import ENCODER_DIGEST_KEY, ENCODER_RECORD_KEY
    from roformer_lit.training.checkpoint_io import read_checkpoint

    if not last_ckpt.is_file():
        return None, None
    try:
        checkpoint = read_checkpoint(last_ckpt, require_state_dict=False)
    except ConfigError:
        return None, None
    # the record as the config holds it (read_checkpoint checked it against its digest): a
    # record written before block was held canonical is the encoder written now
    held = held_record_digest(checkpoint.get(ENCODER_RECORD_KEY))
    architecture, weights = (
        held or checkpoint.get(ENCODER_DIGEST_KEY),
        checkpoint.get(PRETRAINED_WEIGHTS_KEY),
    )
    return (
        architecture if isinstance(architecture, str) else None,
        weights if isinstance(weights, str) else None,
    )


def _now(pretrained: str) -> tuple[str, str]:
    """(architecture digest, weights digest) of the pretrained checkpoint at the path now."""
    from roformer_lit.finetune.encoder_record import encoder_record
    from roformer_lit.finetune.pretrained import encoder_config, read_pretrained
    from roformer_lit.finetune.pretrained_weights import checkpoint_weights_digest
    from roformer_lit.training.architecture_digest import record_digest

    checkpoint = read_pretrained(pretrained)
    return (
        record_digest(encoder_record(encoder_config(checkpoint))),
        checkpoint_weights_digest(checkpoint),
    )


def _short(digest: str) -> str:
    return digest.removeprefix("sha256:")[:12]


def check_pretrained_unchanged(continued: Sequence[Continued]) -> None:
    """Refuse (one ConfigError line) to skip or resume a fine-tune whose recorded
    pretrained encoder (architecture or weights) is not the checkpoint now at its
    ``model.pretrained`` path (module docstring); each path is read once."""
    now: dict[str, tuple[str, str]] = {}
    for version, run_dir, action, pretrained in continued:
        if action not in CONTINUED or not isinstance(pretrained, str):
            continue
        architecture, weights = _recorded(Path(run_dir) / "checkpoints" / "last.ckpt")
        if architecture is None and weights is None:
            continue
        if pretrained not in now:
            now[pretrained] = _now(pretrained)
        changed = [
            f"{what} {_short(ran)} -> {_short(given)}"
            for what, ran, given in zip(
                ("architecture", "weights"), (architecture, weights), now[pretrained], strict=True
            )
            if ran is not None and ran != given
        ]
        if changed:
            state, what = CONTINUED[action]
            raise ConfigError(
                f"sweep: run {version} {state} from another pretrained checkpoint than the "
                f"one now at {pretrained} (encoder {', '.join(changed)}: retrained at that "
                f"path since): {what}; move {run_dir} aside to fine-tune the checkpoint now "
                "there, or give the sweep another name"
            )
