"""A checkpoint whose bytes were damaged (a disk error, a bad copy) is one line naming the
file, from the one reader (:func:`~roformer_lit.training.checkpoint_io.read_checkpoint`)
and every loader through it, never torch's exception.

Flipping bytes of a ``fit`` checkpoint's pickled records, about 1 in 100 flips made the
weights-only unpickler raise a ``KeyError`` (a memo key that is not there) or an
``IndexError`` (an opcode on an empty stack), which every command showed as a traceback;
a zip archive that is not torch's was reported as ``([enforce fail at
inline_container.cc:180] )``, torch's C++ location, not what is wrong; a weight whose
recorded device was damaged passed the reader (which maps every storage to the CPU) and
stopped ``load_from_checkpoint`` with torch's exception. The damage here is
made the same way, deterministically: the first opcodes of ``data.pkl`` replaced in place
(the archive's offsets unchanged).

Builds no Trainer (fast tier).
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from roformer_lit.encoder_config import EncoderConfig
from roformer_lit.errors import ConfigError
from roformer_lit.module import MaskedLM
from roformer_lit.training.checkpoint_io import PRETRAINING, read_checkpoint

CONFIG = EncoderConfig(
    vocab_size=19, hidden_size=8, num_layers=1, num_heads=2, intermediate_size=16
)


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model = MaskedLM(model=CONFIG)
    checkpoint: dict[str, Any] = {
        "epoch": 0,
        "global_step": 1,
        "state_dict": model.state_dict(),
        "hyper_parameters": dict(model.hparams),
    }
    path = tmp_path_factory.mktemp("bytes") / "saved.ckpt"
    torch.save(checkpoint, path)
    return path


def _pickle_replaced(source: Path, target: Path, opcodes: bytes) -> None:
    """``target``: ``source`` with the opcodes after ``data.pkl``'s protocol header replaced
    by ``opcodes``, in place (torch stores the archive's entries uncompressed)."""
    data = bytearray(source.read_bytes())
    archive = zipfile.ZipFile(io.BytesIO(bytes(data)))
    (entry,) = [i for i in archive.infolist() if i.filename.endswith("/data.pkl")]
    assert entry.compress_type == zipfile.ZIP_STORED
    header = entry.header_offset  # the local header's own name and extra (padding) lengths
    names, extra = (int.from_bytes(data[header + i : header + i + 2], "little") for i in (26, 28))
    start = header + 30 + names + extra
    assert data[start] == 0x80  # PROTO: the pickle begins here
    data[start + 2 : start + 2 + len(opcodes)] = opcodes
    target.write_bytes(bytes(data))


def _device_replaced(source: Path, target: Path) -> None:
    """``target``: ``source`` with the device its first weight's storage records, ``'cpu'``,
    replaced in place by ``'xyz'`` (same length)."""
    data = source.read_bytes()
    cpu = b"X\x03\x00\x00\x00cpu"  # BINUNICODE 'cpu'
    assert cpu in data
    target.write_bytes(data.replace(cpu, b"X\x03\x00\x00\x00xyz", 1))


def _not_torchs(source: Path, target: Path) -> None:
    with zipfile.ZipFile(target, "w") as archive:
        archive.writestr("notes.txt", "not a checkpoint")


#: case -> (how the damaged file is made, what torch raised, what the line says instead).
DAMAGE: dict[str, tuple[Callable[[Path, Path], None], type, str]] = {
    "a memo key that is not there": (
        lambda s, t: _pickle_replaced(s, t, b"h\xff"),  # BINGET 255, nothing memoised
        KeyError,
        "it is damaged (its pickled records do not unpickle: KeyError: 255)",
    ),
    "an item appended to nothing": (
        lambda s, t: _pickle_replaced(s, t, b"a"),  # APPEND on an empty stack
        IndexError,
        "it is damaged (its pickled records do not unpickle: IndexError",
    ),
    "a device that is not one": (  # the reader maps to the CPU; every other loader read it
        _device_replaced,
        RuntimeError,
        "it is damaged (a weight's storage records the device 'xyz', not a device name)",
    ),
    "a zip archive that is not torch's": (
        _not_torchs,
        RuntimeError,
        "not a PyTorch checkpoint (file in archive is not in a subdirectory: notes.txt)",
    ),
}

#: loader -> how it is called on a checkpoint's path.
LOADERS: dict[str, Callable[[Path], Any]] = {
    "read_checkpoint": lambda path: read_checkpoint(path, kind=PRETRAINING),
    "MaskedLM.from_checkpoint": MaskedLM.from_checkpoint,
    "MaskedLM.load_from_checkpoint": MaskedLM.load_from_checkpoint,
}


@pytest.mark.parametrize("loader", list(LOADERS))
@pytest.mark.parametrize("case", list(DAMAGE))
def test_damaged_bytes_are_one_line_naming_the_file(saved, tmp_path, case, loader):
    make, raised, says = DAMAGE[case]
    path = tmp_path / "damaged.ckpt"
    make(saved, path)
    with pytest.raises(raised):  # the damage is what torch cannot load
        torch.load(path, weights_only=True, mmap=True)
    before = path.read_bytes()
    with pytest.raises(ConfigError) as refused:
        LOADERS[loader](path)
    message = str(refused.value)
    assert "\n" not in message and f"cannot read checkpoint {path}: " in message, message
    assert says in message and "enforce fail" not in message, message
    assert path.read_bytes() == before
