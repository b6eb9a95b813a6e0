"""Reading runs back through TensorBoard's own event reader, saying what could not be read.

TensorBoard's reader stops quietly at the first damaged record of an event file (and a
record that frames correctly but is not an ``Event`` raises a protobuf error), so every
event file is first checked against the TFRecord framing it is written in::

    uint64 length | uint32 masked_crc32c(length) | data[length] | uint32 masked_crc32c(data)

:func:`check_event_file` verifies every record's length, header checksum and data checksum,
as TensorBoard's reader does (it reads every byte anyway): a record whose data is damaged
ends what that reader returns, without a word, so a damaged record in the middle of a file
would otherwise table the values logged before it as the run's last ones (a final
``val/ppl`` replaced by an earlier validation's). Whatever is wrong goes into
:attr:`RunEvents.problems`, one short sentence per file; the scalars hold whatever
TensorBoard could read.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf.message import DecodeError
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.compat.tensorflow_stub.errors import OpError
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

from roformer_lit.run_files import EVENT_FILE_PREFIX

EVENT_FILE_GLOB = EVENT_FILE_PREFIX + "*"
_HEADER = struct.Struct("<QI")  # length, masked crc32c of the length's 8 bytes
_CRC = struct.Struct("<I")


@dataclass
class Scalar:
    step: int
    wall_time: float
    value: float


@dataclass
class RunEvents:
    """Every scalar series of one run directory, its hyperparameters' plugin data, and a
    sentence per event file that could not be read completely (``problems``)."""

    path: Path
    scalars: dict[str, list[Scalar]] = field(default_factory=dict)
    has_hparams: bool = False
    problems: list[str] = field(default_factory=list)
    files: int = 0

    def last(self, tag: str) -> float | None:
        series = self.scalars.get(tag)
        return series[-1].value if series else None


def event_files(run_dir: str | Path) -> list[Path]:
    """The event files directly in ``run_dir`` (regular files only), sorted by name."""
    return sorted(p for p in Path(run_dir).glob(EVENT_FILE_GLOB) if os.path.isfile(p))


def check_event_file(path: str | Path) -> str | None:
    """None if ``path`` is a complete TFRecord file, else why not (one short sentence).

    An empty file is complete (a writer that logged nothing). Raises OSError if the file
    cannot be read at all.
    """
    path = Path(path)
    with open(path, "rb") as f:
        size = f.seek(0, 2)
        offset = records = 0
        while offset < size:
            f.seek(offset)
            header = f.read(_HEADER.size)
            if len(header) < _HEADER.size:
                return _truncated(offset, records)
            length, crc = _HEADER.unpack(header)
            if masked_crc32c(header[:8]) != crc:
                if records == 0:
                    return "not a TensorBoard event file (bad record header at byte 0)"
                return f"damaged at byte {offset} ({records} complete records before it)"
            end = offset + _HEADER.size + length + _CRC.size
            if end > size:
                return _truncated(offset, records)
            data = f.read(length)
            (crc,) = _CRC.unpack(f.read(_CRC.size))
            if masked_crc32c(data) != crc:
                if end == size:
                    return f"its last record is damaged ({records} complete records before it)"
                return (
                    f"damaged at byte {offset}: the record's data fails its checksum, and "
                    f"nothing after it can be read ({records} complete records before it)"
                )
            offset, records = end, records + 1
    return None


def _truncated(offset: int, records: int) -> str:
    return (
        f"truncated: the record at byte {offset} is incomplete ({records} complete records "
        "before it; a copy cut short, a full disk, or a run still writing)"
    )


def read_run(run_dir: str | Path) -> RunEvents:
    """All scalars of the event files in ``run_dir`` (not its subdirectories), by tag.

    Never raises for a damaged or unreadable event file: its problem is recorded in
    ``problems`` and the scalars hold what TensorBoard could read (nothing, if the reader
    itself failed).
    """
    run_dir = Path(run_dir)
    files = event_files(run_dir)
    problems = []
    for path in files:
        try:
            problem = check_event_file(path)
        except OSError as exc:
            problem = f"cannot be read ({exc.strerror or exc})"
        if problem is not None:
            problems.append(f"{path.name}: {problem}")
    try:
        accumulator = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
        accumulator.Reload()
        tags = accumulator.Tags()
        scalars = {
            tag: [Scalar(e.step, e.wall_time, e.value) for e in accumulator.Scalars(tag)]
            for tag in tags.get("scalars", [])
        }
        has_hparams = bool(_hparams_tags(accumulator))
    except (OSError, OpError, DecodeError, ValueError) as exc:
        problems.append(f"TensorBoard cannot read the event files ({_one_line(exc)})")
        return RunEvents(run_dir, {}, False, problems, len(files))
    return RunEvents(run_dir, scalars, has_hparams, problems, len(files))


def _hparams_tags(accumulator: EventAccumulator) -> list[str]:
    try:
        return list(accumulator.PluginTagToContent("hparams"))
    except KeyError:
        return []


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:160]
