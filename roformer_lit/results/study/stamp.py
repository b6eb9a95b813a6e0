"""A figure's PNG bound to the values it was drawn from, so ``--check`` can verify the PNG.

The PNG bytes of one drawing differ between matplotlib versions, so ``--check`` cannot
compare them with a fresh drawing. Instead :func:`stamp` writes one ``tEXt`` chunk,
keyword :data:`KEYWORD`, before ``IEND``: the SHA-256 of the JSON sidecar the figure was
drawn from and the SHA-256 of every other byte of the file. :func:`problem` reads it back
with the standard library alone: a PNG drawn from other values, edited after drawing
(a byte changed, bytes appended), or never stamped is stale, in words naming why.
"""

from __future__ import annotations

import hashlib
import struct
import zlib

SIGNATURE = b"\x89PNG\r\n\x1a\n"
KEYWORD = b"roformer-lit-values"


def _chunks(data: bytes) -> list[tuple[bytes, bytes, bytes]]:
    """``(type, payload, raw chunk bytes)`` for each chunk; ValueError if not a whole PNG."""
    if not data.startswith(SIGNATURE):
        raise ValueError("not a PNG")
    out, at = [], len(SIGNATURE)
    while at < len(data):
        if at + 8 > len(data):
            raise ValueError("cut inside a chunk header")
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind = data[at + 4 : at + 8]
        end = at + 12 + length
        if end > len(data):
            raise ValueError("cut inside a chunk")
        out.append((kind, data[at + 8 : at + 8 + length], data[at:end]))
        at = end
        if kind == b"IEND":
            break
    if not out or out[-1][0] != b"IEND":
        raise ValueError("no IEND chunk")
    if at != len(data):
        raise ValueError(f"{len(data) - at} bytes after IEND")
    return out


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _chunk(kind: bytes, payload: bytes) -> bytes:
    return (
        struct.pack(">I", len(payload))
        + kind
        + payload
        + struct.pack(">I", zlib.crc32(kind + payload) & 0xFFFFFFFF)
    )


def _unstamped(chunks: list[tuple[bytes, bytes, bytes]]) -> bytes:
    return SIGNATURE + b"".join(
        raw for kind, payload, raw in chunks if not _is_stamp(kind, payload)
    )


def _is_stamp(kind: bytes, payload: bytes) -> bool:
    return kind == b"tEXt" and payload.startswith(KEYWORD + b"\x00")


def unstamped(png: bytes) -> bytes:
    """``png`` without its stamp (the bytes matplotlib wrote)."""
    return _unstamped(_chunks(png))


def stamp(png: bytes, values: str) -> bytes:
    """``png`` with the stamp of ``values`` (the sidecar's text) before its ``IEND``."""
    chunks = _chunks(png)
    body = _unstamped(chunks)
    text = f"values={_digest(values.encode())} image={_digest(body)}".encode()
    iend = chunks[-1][2]
    return body[: len(body) - len(iend)] + _chunk(b"tEXt", KEYWORD + b"\x00" + text) + iend


def problem(png: bytes, values: str) -> str | None:
    """None when ``png`` was drawn from ``values`` and not changed since; else why not."""
    try:
        chunks = _chunks(png)
    except ValueError as exc:
        return f"not a whole PNG ({exc})"
    stamps = [payload for kind, payload, _ in chunks if _is_stamp(kind, payload)]
    if len(stamps) != 1:
        return "no stamp of the values it was drawn from"
    fields = dict(
        field.split("=", 1)
        for field in stamps[0][len(KEYWORD) + 1 :].decode(errors="replace").split()
        if "=" in field
    )
    if fields.get("values") != _digest(values.encode()):
        return "drawn from other values than its sidecar's"
    if fields.get("image") != _digest(_unstamped(chunks)):
        return "changed since it was drawn"
    return None
