"""Errors that name the file: a decoding error moved to file positions, its
message naming the file, and a cheap guess of what a file that does not start
with a Kafka batch is instead.

>>> guess_content(b"\\x1f\\x8b\\x08\\x00" + bytes(60), "orders-0/00000000000000000000.log")
'this looks like a gzip-compressed file, not a Kafka segment'
"""

from __future__ import annotations

import contextlib
import os
import struct

from kafkabatch._kafkabatch import KafkaBatchError

#: Leading bytes of files people mistake for segments, and what they are.
_SIGNATURES: tuple[tuple[int, bytes, str], ...] = (
    (0, b"\x1f\x8b", "a gzip-compressed file"),
    (0, b"\x28\xb5\x2f\xfd", "a zstd-compressed file"),
    (0, b"\x04\x22\x4d\x18", "an LZ4-compressed file"),
    (0, b"\xff\x06\x00\x00sNaPpY", "a Snappy-compressed file"),
    (0, b"BZh", "a bzip2-compressed file"),
    (0, b"\xfd7zXZ\x00", "an xz-compressed file"),
    (0, b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (0, b"PK\x03\x04", "a zip archive"),
    (257, b"ustar", "a tar archive"),
    (0, b"PAR1", "a Parquet file"),
    (0, b"Obj\x01", "an Avro container file"),
    (0, b"ORC", "an ORC file"),
    (0, b"ARROW1", "an Arrow IPC file"),
)

#: Kafka's other files in a partition folder, by suffix.
_KAFKA_FILES = {
    ".index": "an offset index file (read it with kb.read_offset_index)",
    ".timeindex": "a time index file (read it with kb.read_time_index)",
    ".txnindex": "a transaction index file (read it with kb.read_txn_index)",
    ".snapshot": "a producer state snapshot",
    ".checkpoint": "a checkpoint file",
}


def guess_content(head: bytes, path: str | os.PathLike[str] | None = None) -> str | None:
    """What a file whose first bytes are not a Kafka batch looks like, from its
    name and first bytes (``head``, 512 are plenty), or None when nothing is
    recognised.

    >>> guess_content(bytes(8), "orders-0/00000000000000000000.index")
    'this looks like an offset index file (read it with kb.read_offset_index), not a Kafka segment'
    """
    name = os.fspath(path) if path is not None else ""
    for suffix, what in _KAFKA_FILES.items():
        if name.endswith(suffix):
            return f"this looks like {what}, not a Kafka segment"
    for at, signature, what in _SIGNATURES:
        if head[at : at + len(signature)] == signature:
            return f"this looks like {what}, not a Kafka segment"
    if _looks_like_offset_index(head):
        return f"this looks like {_KAFKA_FILES['.index']}, not a Kafka segment"
    if _looks_like_time_index(head):
        return f"this looks like {_KAFKA_FILES['.timeindex']}, not a Kafka segment"
    text = head[:64]
    if len(text) >= 8 and all(32 <= b < 127 or b in b"\t\r\n" for b in text):
        return "this looks like a text file, not a Kafka segment"
    return None


def _looks_like_offset_index(head: bytes) -> bool:
    """Entries of (relative offset int32, position int32), both ascending."""
    count = min(len(head) // 8, 8)
    if count < 2:
        return False
    entries = [struct.unpack_from(">ii", head, 8 * i) for i in range(count)]
    return all(0 <= a[0] < b[0] and 0 <= a[1] < b[1] for a, b in zip(entries, entries[1:]))


def _looks_like_time_index(head: bytes) -> bool:
    """Entries of (timestamp int64 in ms, relative offset int32): times in
    2000-2100, offsets ascending."""
    count = min(len(head) // 12, 8)
    if count < 2:
        return False
    entries = [struct.unpack_from(">qi", head, 12 * i) for i in range(count)]
    return all(946_684_800_000 <= ts < 4_102_444_800_000 for ts, _ in entries) and all(
        0 <= a[1] < b[1] for a, b in zip(entries, entries[1:])
    )


def in_file(error: Exception, path: str | os.PathLike[str], base: int = 0, head: bytes | None = None) -> Exception:
    """The same kind of error with positions counted from the start of the
    file (the error's are from ``base``) and the file named. An error at the
    file's first byte gets a guess of what the file is, from ``head`` (its
    first bytes) and its name.

    >>> try:
    ...     kb.read_segment("notes-0/00000000000000000000.log")           # doctest: +SKIP
    ... except kb.KafkaBatchError as error:
    ...     print(error)
    notes-0/00000000000000000000.log: batch at byte 0, at byte 16: not a Kafka batch: ...; this looks like a text file, not a Kafka segment
    """
    if not isinstance(error, KafkaBatchError):
        return error
    path = os.fspath(path)
    batch_pos = getattr(error, "batch_position", None)
    if batch_pos is None:  # not a framing error (e.g. a value that does not parse): name the file
        new = type(error)(f"{path}: {error}")
        for name, value in vars(error).items():
            with contextlib.suppress(AttributeError):
                setattr(new, name, value)
        with contextlib.suppress(AttributeError):
            new.path = path  # type: ignore[attr-defined]
        return new
    byte_pos = getattr(error, "byte_position", None)
    batch_pos = batch_pos + base
    byte_pos = None if byte_pos is None else byte_pos + base
    reason = getattr(error, "reason", None) or str(error)
    base_offset = getattr(error, "base_offset", None)
    detail = f" (base offset {base_offset})" if base_offset is not None else ""
    message = f"{path}: batch at byte {batch_pos}{detail}, at byte {byte_pos}: {reason}"
    if batch_pos == 0:
        guess = guess_content(head or b"", path)
        if guess:
            message += f"; {guess}"
    new = type(error)(message)
    for name in ("base_offset", "in_payload", "reason"):
        with contextlib.suppress(AttributeError):
            setattr(new, name, getattr(error, name, None))
    for name, value in (("batch_position", batch_pos), ("byte_position", byte_pos), ("path", path)):
        with contextlib.suppress(AttributeError):
            setattr(new, name, value)
    return new
