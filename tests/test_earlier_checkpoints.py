"""Checkpoints written by an earlier version load, evaluate and resume as that version did.

``tests/earlier_checkpoints/<commit>/`` holds checkpoints that the code of ``<commit>`` wrote
(``scripts/earlier_checkpoints.sh``: every built-in scheme, linear attention, a ModernBERT
block with a windowed plan, a plan with a NoPE global layer; tiny copy-task runs at step 40, at a learning rate at which their scheme shapes the logits),
each beside what *that* code computed from it (``<case>.json``, by
``scripts/earlier_checkpoint_record.py``): its logits on fixed padded ids, ``val/loss`` at
its last validation (step 40), and at step 60 of the run resumed from it. The oracle is the earlier code itself, so
these tests fail when today's code reads an old checkpoint's architecture, weights or data
settings otherwise than it was written, whatever the reason.

The commit ``c826de4`` is the one before the architecture became one ``EncoderConfig``
object: its checkpoints hold the flat ``hyper_parameters`` of that time.

On the machine that wrote them the numbers agree exactly; the tolerance below allows for
another CPU's kernels, which differ in the last bits.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from roformer_lit.module import MaskedLM

HERE = Path(__file__).parent
REPO = HERE.parent
CASES = sorted((HERE / "earlier_checkpoints").glob("*/*.ckpt"))
#: Cases whose evaluation and resume run through the command line too (one CLI process
#: each): a bias scheme, a scheme with its own parameters on the embeddings, a windowed plan.
CLI_CASES = ("xl", "learned", "plan-geglu")
# rtol/atol: another CPU's matrix products differ from the writer's in the last bits.
TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}
VAL_LOSS = re.compile(r"val/loss\W+(?P<value>[0-9]+\.[0-9]{8,})")


def case_id(path: Path) -> str:
    return f"{path.parent.name}-{path.stem}"


def record(path: Path) -> dict[str, Any]:
    return json.loads(path.with_suffix(".json").read_text())


def checkpoint_val_loss(earlier: dict[str, Any]) -> float:
    """``val/loss`` of the earlier run's last validation: the checkpoint's weights."""
    return earlier["val_loss"][0][-1]


def resumed_val_loss(earlier: dict[str, Any]) -> float:
    """``val/loss`` of the last validation of the earlier run resumed from the checkpoint."""
    return earlier["val_loss"][-1][-1]


def test_there_are_earlier_checkpoints_of_every_scheme_of_their_time():
    """The fixtures are present (a checkout without them would pass every test below by
    collecting none), and the earliest version's cover the ten schemes it had."""
    earliest = HERE / "earlier_checkpoints" / "c826de4"
    names = {path.stem for path in earliest.glob("*.ckpt")}
    schemes = {"nope", "learned", "sinusoidal", "xl", "deberta", "rope", "alibi", "t5"}
    assert schemes | {"kerple", "fire", "linear-rope", "plan-geglu", "plan-nope-last"} <= names
    assert all(path.with_suffix(".json").is_file() for path in CASES)


@pytest.mark.parametrize("path", CASES, ids=case_id)
def test_an_earlier_checkpoint_gives_the_logits_its_version_gave(path: Path):
    earlier = record(path)
    model = MaskedLM.from_checkpoint(path).eval()
    ids, mask = torch.tensor(earlier["ids"]), torch.tensor(earlier["mask"])
    with torch.no_grad():
        logits = model(ids, attention_mask=mask)
    torch.testing.assert_close(
        logits[mask], torch.tensor(earlier["logits"], dtype=logits.dtype), **TOLERANCE
    )


@pytest.mark.parametrize("path", CASES, ids=case_id)
def test_an_earlier_checkpoint_sees_where_its_tokens_are_unless_it_is_nope(path: Path):
    """The fixtures are trained enough for their scheme to shape the logits: two tokens
    swapped (at 0 and 7: no third token is as far from both, so a bias of distance sees
    the swap) give logits other than the swapped logits, by far more than the tolerance
    above, so a change to how a scheme reads an old checkpoint shows; without positions
    (``nope``) the encoder is equivariant to the order, so they agree."""
    ids = torch.tensor(record(path)["ids"])[:1]
    order = torch.arange(ids.shape[1])
    order[[0, 7]] = order[[7, 0]]
    model = MaskedLM.from_checkpoint(path).eval()
    with torch.no_grad():
        swapped_after = model(ids)[:, order]
        swapped_before = model(ids[:, order])
    gap = (swapped_after - swapped_before).abs().max().item()
    if path.stem == "nope":
        assert gap < TOLERANCE["atol"]
    else:
        assert gap > 100 * TOLERANCE["atol"], gap


def _cli(work: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "roformer_lit", *argv],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _printed_val_loss(result: subprocess.CompletedProcess[str]) -> float:
    found = VAL_LOSS.findall(result.stdout + result.stderr)
    assert found, (result.stdout + result.stderr)[-3000:]
    return float(found[-1])


def _logged_val_losses(runs: Path) -> list[float]:
    """``val/loss`` in the order of its steps, as the run's event files logged it
    (TensorBoard's reader)."""
    logged = {}
    for events in sorted(runs.rglob("events.out.tfevents.*")):
        reader = EventAccumulator(str(events), size_guidance={"scalars": 0})
        reader.Reload()
        if "val/loss" in reader.Tags()["scalars"]:
            logged.update({event.step: event.value for event in reader.Scalars("val/loss")})
    assert logged, f"no val/loss logged under {runs}"
    return [logged[step] for step in sorted(logged)]


def _with_repo_configs(args: list[str]) -> list[str]:
    """The recorded command's arguments, its ``--config`` files read from this checkout."""
    return [str(REPO / arg) if arg.startswith("configs/") else arg for arg in args]


@pytest.mark.trainer
@pytest.mark.parametrize("path", [path for path in CASES if path.stem in CLI_CASES], ids=case_id)
def test_validate_on_an_earlier_checkpoint_gives_its_val_loss(path: Path, tmp_path: Path):
    earlier = record(path)
    checkpoint = shutil.copy(path, tmp_path / path.name)
    result = _cli(tmp_path, "validate", "--ckpt_path", str(checkpoint))
    assert _printed_val_loss(result) == pytest.approx(checkpoint_val_loss(earlier), rel=1e-5)


@pytest.mark.trainer
@pytest.mark.parametrize("path", [path for path in CASES if path.stem in CLI_CASES], ids=case_id)
def test_resuming_an_earlier_checkpoint_continues_as_its_version_did(path: Path, tmp_path: Path):
    """``fit --ckpt_path`` with the run's command, from step 40 to 60: the data stream, the
    optimiser's state and the schedule continue as they did on the earlier code."""
    earlier = record(path)
    checkpoint = shutil.copy(path, tmp_path / path.name)
    before = path.read_bytes()
    result = _cli(
        tmp_path,
        "fit",
        *_with_repo_configs(earlier["args"]),
        "--trainer.max_steps",
        "60",
        "--ckpt_path",
        str(checkpoint),
    )
    assert result.returncode == 0
    assert _logged_val_losses(tmp_path / "runs")[-1] == pytest.approx(
        resumed_val_loss(earlier), rel=1e-5
    )
    assert path.read_bytes() == before  # the fixture itself is never touched
