"""Seeking in a segment with its index files, as Kafka's ``LogSegment.translateOffset``
and ``findOffsetByTimestamp`` do — and never trusting them blindly.

An index entry is a claim about the log. Every position taken from an index
is checked against the ``.log`` (a batch must start there, with a valid CRC and
offsets that agree with the entry); a missing, stale, truncated or garbage
index gives a :class:`~kafkabatch.IndexFileWarning` and a scan from the start
instead, so a bad index can cost time but never rows.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

from kafkabatch import _kafkabatch as _native
from kafkabatch.log.index import (
    TIME_INDEX_ENTRY_SIZE,
    IndexFileWarning,
    base_offset_from_path,
    warn_partial_entry,
)


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
    checked against the data in the Rust core (a batch must start at every
    position taken, with a valid CRC and offsets that agree with the entry;
    the batches a time index skips must all be older than the target); when
    they can't be trusted (or are missing), an :class:`IndexFileWarning` says
    so and the whole segment is read. Callers still filter rows exactly.

    >>> seek_range("orders-0/00000000000000000000.log", data, start_offset=5000)  # doctest: +SKIP
    (1232896, None)
    """
    if start_offset is None and end_offset is None and start_timestamp_ms is None:
        return 0, None
    path = Path(log_path)
    index_path, time_path = path.with_suffix(".index"), path.with_suffix(".timeindex")
    index = index_path.read_bytes() if index_path.is_file() else None
    base = base_offset_from_path(path) if index is not None else 0
    time_index = None
    if index is not None and start_timestamp_ms is not None and time_path.is_file():
        time_index = time_path.read_bytes()
        warn_partial_entry(time_path, len(time_index), TIME_INDEX_ENTRY_SIZE, stacklevel=3)
    start, end, reason = _native.seek_range(
        data,
        base,
        index_path.name,
        index,
        time_path.name,
        time_index,
        start_offset=start_offset,
        end_offset=end_offset,
        start_timestamp_ms=start_timestamp_ms,
    )
    if reason is not None:
        warnings.warn(f"{path}: {reason}; scanning the whole segment instead", IndexFileWarning, stacklevel=3)
        return 0, None
    return start, end
