"""Kafka's per-segment index files as Arrow tables.

Next to each segment ``00000000000000001234.log`` a broker keeps three index
files named after the same base offset. All integers are big-endian:

``.index`` (offset index, 8-byte entries)
    relative offset int32 (offset - base offset), byte position int32 of a
    batch in the ``.log``. Sparse: one entry per ~4 KiB of log
    (``index.interval.bytes``).
``.timeindex`` (time index, 12-byte entries)
    timestamp int64 (ms), relative offset int32: "the largest timestamp seen
    before this offset".
``.txnindex`` (aborted transactions, 34-byte entries)
    version int16, producerId int64, firstOffset int64, lastOffset int64,
    lastStableOffset int64.

The active segment's ``.index`` and ``.timeindex`` are preallocated (10 MiB by
default) and filled with zeros past the last entry; a broker that stops
uncleanly leaves them that way. The readers here drop that zero tail the way
Kafka does (``kafka-dump-log.sh`` stops at the first entry after the first
whose relative offset is 0). A file whose size is not a whole number of
entries has its partial last entry ignored, with a :class:`IndexFileWarning`.

The files are read in one go and converted column by column (strided byte
copies into Arrow buffers): no Python loop over entries, no numpy needed.

>>> import kafkabatch as kb
>>> kb.read_offset_index("orders-0/00000000000000000000.index").to_pylist()[:2]   # doctest: +SKIP
[{'relative_offset': 57, 'offset': 57, 'position': 4153}, {'relative_offset': 113, 'offset': 113, 'position': 8291}]
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from kafkabatch._kafkabatch import index_entries_used as _index_entries_used
from kafkabatch._kafkabatch import offset_index_entries as _offset_index_entries
from kafkabatch._util import segment_base_offset

__all__ = [
    "OFFSET_INDEX_ENTRY_SIZE",
    "TIME_INDEX_ENTRY_SIZE",
    "TXN_INDEX_ENTRY_SIZE",
    "IndexFileWarning",
    "InvalidIndexError",
    "base_offset_from_path",
    "offset_index_entries",
    "read_offset_index",
    "read_time_index",
    "read_txn_index",
]

OFFSET_INDEX_ENTRY_SIZE = 8
TIME_INDEX_ENTRY_SIZE = 12
TXN_INDEX_ENTRY_SIZE = 34

_LITTLE = sys.byteorder == "little"


class IndexFileWarning(UserWarning):
    """An index file with a partial entry at its end (the partial entry is ignored)."""


class InvalidIndexError(ValueError):
    """An offset index whose entries a broker could not have written (see
    :func:`offset_index_entries`); readers then ignore the index."""


def offset_index_entries(data: bytes | bytearray | memoryview, base_offset: int) -> tuple[list[int], list[int]]:
    """``(offsets, positions)`` of the entries of a ``.index`` file's bytes,
    by Kafka's rules, in the Rust core; the one parser behind the core's
    seeks (``read_segment``, ``scan_log``) and Spark's task planning.

    - A size that is not a multiple of 8 is corrupt (``OffsetIndex.sanityCheck``).
    - The preallocated zero tail ends the entries: they stop at the first
      entry after the first whose relative offset is 0, as
      ``kafka-dump-log.sh`` does (entry 0 itself may be ``(0, 0)``: a
      one-record first batch with ``index.interval.bytes=0``).
    - What remains must be what ``OffsetIndex.append`` allows: relative
      offsets and positions not negative, offsets strictly increasing
      ("no larger than the last offset appended" is refused), positions
      strictly increasing. Anything else is stale or garbage:
      :class:`InvalidIndexError`, and the caller reads without the index.

    >>> offset_index_entries(bytes.fromhex("0000003900001029 0000007100002063 0000000000000000"), 1000)
    ([1057, 1113], [4137, 8291])
    """
    try:
        return _offset_index_entries(data, base_offset)
    except ValueError as e:
        raise InvalidIndexError(str(e)) from None


def base_offset_from_path(path: str | os.PathLike[str]) -> int:
    """The segment base offset in an index or log file name.

    >>> base_offset_from_path("orders-0/00000000000000001234.timeindex")
    1234
    """
    base_offset = segment_base_offset(Path(path).name)
    if base_offset is None:
        raise ValueError(
            f"can't tell the base offset of {os.fspath(path)!r}: Kafka names segment files "
            "<20-digit base offset>.<suffix>; pass base_offset= explicitly"
        )
    return base_offset


def _load(path: str | os.PathLike[str], entry_size: int, base_offset: int | None) -> tuple[bytes, int, int]:
    """(whole entries' bytes, number of entries, base offset)."""
    base = base_offset_from_path(path) if base_offset is None else int(base_offset)
    data = Path(path).read_bytes()
    n = len(data) // entry_size
    warn_partial_entry(path, len(data), entry_size, stacklevel=4)
    return data[: n * entry_size], n, base


def warn_partial_entry(path: str | os.PathLike[str], size: int, entry_size: int, stacklevel: int = 2) -> None:
    """The :class:`IndexFileWarning` for an index file of ``size`` bytes that ends in a partial entry."""
    partial = size % entry_size
    if partial:
        warnings.warn(
            f"{os.fspath(path)}: {size} bytes is not a multiple of the {entry_size}-byte entry size; "
            f"the last {partial} bytes (a partial entry) are ignored",
            IndexFileWarning,
            stacklevel=stacklevel,
        )


def _column(data: bytes, n: int, entry_size: int, at: int, width: int, type_: pa.DataType) -> pa.Array:
    """Field ``data[at:at+width]`` of every ``entry_size``-byte entry, big-endian,
    as an Arrow array: ``width`` strided byte copies (C speed), no per-entry loop."""
    out = bytearray(n * width)
    for k in range(width):  # bytes of one field, not entries
        source = at + (width - 1 - k if _LITTLE else k)
        out[k::width] = data[source::entry_size]
    return pa.Array.from_buffers(type_, n, [None, pa.py_buffer(out)])


def read_offset_index(path: str | os.PathLike[str], *, base_offset: int | None = None) -> pa.Table:
    """Read a ``.index`` file: which byte position of the ``.log`` holds which offset.

    Columns: ``relative_offset`` (int32, as stored), ``offset`` (int64, the
    segment base offset from the file name plus the relative offset) and
    ``position`` (int32, byte position of the batch in the ``.log``). Each
    entry's batch is the one starting at ``position``; its offsets are at
    most ``offset``, so reading from ``position`` finds every offset >= ``offset``.

    The preallocated zero tail is dropped: entries stop at the first entry
    after the first whose relative offset is 0 (offsets only grow within a
    segment, so such an entry is never real). ``base_offset`` overrides the
    one in the file name.

    >>> import kafkabatch as kb
    >>> t = kb.read_offset_index("orders-0/00000000000000001000.index")   # doctest: +SKIP
    >>> t.column_names                                                    # doctest: +SKIP
    ['relative_offset', 'offset', 'position']
    >>> t.slice(0, 2).to_pylist()                                         # doctest: +SKIP
    [{'relative_offset': 57, 'offset': 1057, 'position': 4153}, {'relative_offset': 113, 'offset': 1113, 'position': 8291}]
    """
    data, n, base = _load(path, OFFSET_INDEX_ENTRY_SIZE, base_offset)
    n = _index_entries_used(data, "offset")  # before the zero tail
    data = data[: n * OFFSET_INDEX_ENTRY_SIZE]
    relative = _column(data, n, OFFSET_INDEX_ENTRY_SIZE, 0, 4, pa.int32())
    position = _column(data, n, OFFSET_INDEX_ENTRY_SIZE, 4, 4, pa.int32())
    offset = pc.add(relative.cast(pa.int64()), pa.scalar(base, pa.int64()))
    return pa.table({"relative_offset": relative, "offset": offset, "position": position})


def read_time_index(path: str | os.PathLike[str], *, base_offset: int | None = None) -> pa.Table:
    """Read a ``.timeindex`` file: the largest timestamp seen before each indexed offset.

    Columns: ``timestamp`` (int64, epoch milliseconds), ``relative_offset``
    (int32, as stored) and ``offset`` (int64, base offset + relative offset).
    Segments of magic-0 data (no timestamps) have an empty time index.

    The preallocated zero tail is dropped: entries stop at the first one
    that is all zeros (timestamp 0 at the base offset), or, as
    ``kafka-dump-log.sh`` does, at the first entry after the first whose
    relative offset is 0.

    >>> import kafkabatch as kb
    >>> t = kb.read_time_index("orders-0/00000000000000001000.timeindex")  # doctest: +SKIP
    >>> t.slice(0, 1).to_pylist()                                         # doctest: +SKIP
    [{'timestamp': 1700000000412, 'relative_offset': 57, 'offset': 1057}]
    """
    data, n, base = _load(path, TIME_INDEX_ENTRY_SIZE, base_offset)
    n = _index_entries_used(data, "time")  # before the zero tail
    data = data[: n * TIME_INDEX_ENTRY_SIZE]
    timestamp = _column(data, n, TIME_INDEX_ENTRY_SIZE, 0, 8, pa.int64())
    relative = _column(data, n, TIME_INDEX_ENTRY_SIZE, 8, 4, pa.int32())
    offset = pc.add(relative.cast(pa.int64()), pa.scalar(base, pa.int64()))
    return pa.table({"timestamp": timestamp, "relative_offset": relative, "offset": offset})


def read_txn_index(path: str | os.PathLike[str]) -> pa.Table:
    """Read a ``.txnindex`` file: the transactions aborted in this segment.

    Columns (all as stored, absolute offsets): ``version`` (int16),
    ``producer_id`` (int64), ``first_offset`` (int64, the transaction's first
    offset), ``last_offset`` (int64, its ABORT marker) and
    ``last_stable_offset`` (int64, the partition's last stable offset when
    it was aborted). The table can be passed as ``aborted_transactions`` to
    :func:`kafkabatch.decode`. The file is appended to, never preallocated,
    so nothing is trimmed.

    >>> import kafkabatch as kb
    >>> kb.read_txn_index("orders-0/00000000000000000000.txnindex").to_pylist()  # doctest: +SKIP
    [{'version': 0, 'producer_id': 2000, 'first_offset': 3, 'last_offset': 8, 'last_stable_offset': 3}]
    """
    data, n, _ = _load(path, TXN_INDEX_ENTRY_SIZE, 0)
    return pa.table(
        {
            "version": _column(data, n, TXN_INDEX_ENTRY_SIZE, 0, 2, pa.int16()),
            "producer_id": _column(data, n, TXN_INDEX_ENTRY_SIZE, 2, 8, pa.int64()),
            "first_offset": _column(data, n, TXN_INDEX_ENTRY_SIZE, 10, 8, pa.int64()),
            "last_offset": _column(data, n, TXN_INDEX_ENTRY_SIZE, 18, 8, pa.int64()),
            "last_stable_offset": _column(data, n, TXN_INDEX_ENTRY_SIZE, 26, 8, pa.int64()),
        }
    )
