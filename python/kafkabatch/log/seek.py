"""Seeking in a segment with its index files, as Kafka's ``LogSegment.translateOffset``
and ``findOffsetByTimestamp`` do — and never trusting them blindly.

An index entry is a claim about the log. Every position taken from an index
is checked against the ``.log`` (a batch must start there, with a valid CRC and
offsets that agree with the entry); a missing, stale, truncated or garbage
index gives a :class:`~kafkabatch.IndexFileWarning` and a scan from the start
instead, so a bad index can cost time but never rows.
"""

from __future__ import annotations

import bisect
import os
import warnings
from pathlib import Path
from typing import Any

from kafkabatch import _kafkabatch as _native
from kafkabatch.log.index import (
    IndexFileWarning,
    InvalidIndexError,
    base_offset_from_path,
    offset_index_entries,
    read_time_index,
)


class _BadIndex(Exception):
    """An index disagrees with its log; the message says how."""


def _first_batch(data: Any, position: int) -> Any:
    """The batch starting at ``position``, CRC checked, or raise _BadIndex."""
    try:
        batches = _native.iter_batches(data, start=position)
        return next(batches)
    except StopIteration:
        raise _BadIndex(f"no complete batch at position {position}") from None
    except (ValueError, _native.KafkaBatchError) as e:
        raise _BadIndex(f"no valid batch at position {position}: {e}") from None


def _offset_entries(log_path: Path, data_len: int) -> tuple[list[int], list[int]]:
    """(offsets, positions) of the ``.index``, checked for order and range."""
    index_path = log_path.with_suffix(".index")
    if not index_path.is_file():
        raise _BadIndex(f"no offset index {index_path.name}")
    try:
        offsets, positions = offset_index_entries(index_path.read_bytes(), base_offset_from_path(log_path))
    except InvalidIndexError as e:
        raise _BadIndex(f"{index_path.name}: {e}") from None
    if positions and (positions[0] < 0 or positions[-1] >= max(data_len, 1)):
        raise _BadIndex(f"{index_path.name} points past the end of the log ({data_len} bytes)")
    return offsets, positions


def _position_for_offset(data: Any, offsets: list[int], positions: list[int], target: int) -> int:
    """A batch position at or before the first batch holding ``target`` or later.

    An entry names a batch position and an offset of that batch (its first
    offset up to Kafka 0.10, its last since 0.11), so the batch there starts
    at or below the entry's offset: every record before it is below
    ``target`` when the entry's offset is.
    """
    i = bisect.bisect_right(offsets, target) - 1
    if i < 0:
        return 0
    batch = _first_batch(data, positions[i])
    if batch.base_offset > offsets[i]:
        raise _BadIndex(
            f"index entry {offsets[i]} -> {positions[i]} disagrees with the log: "
            f"the batch there starts at offset {batch.base_offset}"
        )
    return positions[i]


def _position_for_timestamp(data: Any, log_path: Path, offsets: list[int], positions: list[int], target_ms: int) -> int:
    """A batch position before which every record's timestamp is below ``target_ms``.

    A ``.timeindex`` entry ``(T, O)`` says the largest timestamp appended up to
    offset O's batch is T; with T < target, the records before O's batch are
    all older than the target.
    """
    time_path = log_path.with_suffix(".timeindex")
    if not time_path.is_file():
        raise _BadIndex(f"no time index {time_path.name}")
    table = read_time_index(time_path)
    stamps = table.column("timestamp").to_pylist()
    entry_offsets = table.column("offset").to_pylist()
    for i in range(1, len(stamps)):
        if stamps[i] < stamps[i - 1] or entry_offsets[i] < entry_offsets[i - 1]:
            raise _BadIndex(f"{time_path.name} entries are out of order at entry {i}")
    i = bisect.bisect_left(stamps, target_ms) - 1  # the last entry with T < target
    if i < 0:
        return 0
    # Find the batch holding offset O: the last indexed batch at or before it,
    # then forward by headers.
    position = _position_for_offset(data, offsets, positions, entry_offsets[i])
    for batch in _native.iter_batches(data, start=position, validate_crc=False):
        if batch.last_offset >= entry_offsets[i]:
            position = int(batch.position)
            break
    else:
        raise _BadIndex(f"{time_path.name} names offset {entry_offsets[i]}, which the log does not hold")
    # A time index can't be checked entry by entry, so check its claim: every
    # batch skipped has a max timestamp below the target (headers only).
    for batch in _native.iter_batches(data, validate_crc=False):
        if batch.position >= position:
            break
        if batch.max_timestamp >= target_ms:
            raise _BadIndex(
                f"{time_path.name} disagrees with the log: the batch at {batch.position} "
                f"has timestamp {batch.max_timestamp}, not below {target_ms}"
            )
    return position


def _position_after_offset(data: Any, offsets: list[int], positions: list[int], end: int) -> int | None:
    """A batch position from which every offset is >= ``end``, or None."""
    j = bisect.bisect_left(offsets, end)  # first entry whose batch may reach ``end``
    if j + 1 >= len(offsets):
        return None
    position = positions[j + 1]
    batch = _first_batch(data, position)
    if batch.base_offset < end:
        raise _BadIndex(f"index entry {offsets[j + 1]} -> {position} disagrees with the log")
    return position


def seek_range(
    log_path: str | os.PathLike[str],
    data: Any,
    *,
    start_offset: int | None = None,
    end_offset: int | None = None,
    start_timestamp_ms: int | None = None,
) -> tuple[int, int | None]:
    """The byte range ``(start, end)`` of ``data`` (the segment's bytes) that holds
    every record with offset in ``[start_offset, end_offset)`` and timestamp at
    least ``start_timestamp_ms``; ``end`` None means the end of the data.

    Positions come from the ``.index`` / ``.timeindex`` beside ``log_path``,
    checked against the data; when they can't be trusted (or are missing),
    an :class:`IndexFileWarning` says so and the whole segment is read.
    Callers still filter rows exactly.

    >>> seek_range("orders-0/00000000000000000000.log", data, start_offset=5000)  # doctest: +SKIP
    (1232896, None)
    """
    if start_offset is None and end_offset is None and start_timestamp_ms is None:
        return 0, None
    path = Path(log_path)
    size = len(memoryview(data))
    try:
        offsets, positions = _offset_entries(path, size)
        start = 0
        if start_offset is not None:
            start = _position_for_offset(data, offsets, positions, start_offset)
        if start_timestamp_ms is not None:
            start = max(start, _position_for_timestamp(data, path, offsets, positions, start_timestamp_ms))
        end = None if end_offset is None else _position_after_offset(data, offsets, positions, end_offset)
        if end is not None and end < start:
            end = start
        return start, end
    except _BadIndex as e:
        warnings.warn(f"{path}: {e}; scanning the whole segment instead", IndexFileWarning, stacklevel=3)
        return 0, None
