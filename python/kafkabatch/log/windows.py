"""Walking a segment by batch headers: byte windows of complete batches, cut at batch boundaries.

A local segment's headers are walked once, in the Rust core (:func:`segment_walk`);
its windows, the batches pruning keeps (:mod:`kafkabatch.log.prune`) and the
read_committed pre-pass (:mod:`kafkabatch.log.txn`) come from that walk. Other
sources (remote files, tiered segments) are walked window by window as they are read.

>>> batch_ranges(source, 0, source.size, 16 << 20)  # doctest: +SKIP
[(0, 16777170), (16777170, 20000000)]
"""

from __future__ import annotations

import collections
import os
import struct
import weakref
from collections.abc import Iterator
from typing import Any

import kafkabatch.log.fs as fs
from kafkabatch._decode import iter_batches, valid_bytes
from kafkabatch._kafkabatch import SegmentWalk, walk_batches
from kafkabatch.log.bounds import Bounds

#: Default window for :func:`scan_log`: the bytes of complete batches decoded at once.
DEFAULT_MAX_CHUNK_BYTES: int = 16 << 20


LOG_OVERHEAD = 12  # base offset int64 + length int32

#: The header walk of each open local segment (see :func:`segment_walk`).
_WALKS: weakref.WeakKeyDictionary[Any, SegmentWalk] = weakref.WeakKeyDictionary()
#: The file each open local segment was opened from (see :func:`remember_path`).
_PATHS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
#: Recent walks by file: path -> (size, mtime in ns, walk), oldest first; at
#: most :data:`_KEPT_BATCHES` batches' facts in all.
_RECENT: collections.OrderedDict[str, tuple[int, int, SegmentWalk]] = collections.OrderedDict()
_KEPT_BATCHES = 1 << 18  # about 16 MiB of facts


def remember_path(source: Any, path: str) -> None:
    """Note the local file ``source`` reads, so the walk of one file is made
    once for a scan's several opens of it (the read_committed pre-pass, then
    the read; see :func:`segment_walk`)."""
    if isinstance(source, fs.MappedSource):
        _PATHS[source] = path


def segment_walk(source: Any, start: int = 0) -> SegmentWalk | None:
    """The one walk over the batch headers of a local (memory-mapped) segment
    from byte ``start`` (a batch start), made in the Rust core and kept with
    the open source (and, for a file named by :func:`remember_path`, while
    its size and modification time stay the same): the windows a read
    decodes, the batches pruning keeps and the transaction pre-pass all come
    from it. None for other sources (remote ones are read window by window)."""
    if not isinstance(source, fs.MappedSource) or source.size == 0:
        return None
    walk = _WALKS.get(source)
    if walk is not None and walk.start <= start:
        return walk
    path = _PATHS.get(source)
    stamp = None
    if path is not None:
        try:
            st = os.stat(fs.local_path(path))
        except OSError:  # gone since it was opened: no reuse
            st = None
        stamp = None if st is None else (st.st_size, st.st_mtime_ns)
        kept = _RECENT.get(path)
        if (
            kept is not None
            and stamp is not None
            and kept[:2] == stamp
            and kept[2].start <= start
            and stamp[0] == source.size
        ):
            _RECENT.move_to_end(path)
            _WALKS[source] = kept[2]
            return kept[2]
    data = source.read(0, source.size)
    try:
        walk = walk_batches(data, min(start, source.size))
    finally:
        del data
        source.release()
    _WALKS[source] = walk
    if path is not None and stamp is not None and stamp[0] == source.size:
        _RECENT[path] = (*stamp, walk)
        _RECENT.move_to_end(path)
        while sum(len(w) for _, _, w in _RECENT.values()) > _KEPT_BATCHES and len(_RECENT) > 1:
            _RECENT.popitem(last=False)
    return walk


def walked_windows(
    source: Any, start: int, end: int, max_bytes: int, start_offset: int | None = None, end_offset: int | None = None
) -> list[tuple[int, int, bool]] | None:
    """:func:`batch_windows` of a local segment from its one header walk (see
    :func:`segment_walk`); None for other sources."""
    walk = segment_walk(source, start)
    if walk is None:
        return None
    data = source.read(0, source.size)
    try:
        windows = walk.windows(data, start, end, max_bytes, start_offset=start_offset, end_offset=end_offset)
        if windows is None:  # ``start`` inside a batch of the kept walk: walk from there
            windows = walk_batches(data, start).windows(
                data, start, end, max_bytes, start_offset=start_offset, end_offset=end_offset
            )
    finally:
        del data
        source.release()
    return windows


def batch_length(header: Any) -> int | None:
    """The size of the batch starting ``header`` (>= 12 bytes), or None if its
    length field is impossible (or ``header`` is too short to hold it)."""
    if len(header) < 12:
        return None
    (length,) = struct.unpack_from(">i", header, 8)
    return LOG_OVERHEAD + length if length >= 0 else None


def batch_ranges(source: Any, start: int, end: int, max_bytes: int) -> list[tuple[int, int]]:
    """Cut ``[start, end)`` of a segment at batch boundaries into ranges of at
    most ``max_bytes`` (a batch larger than that gets a range of its own).
    Whatever can't be walked (an incomplete tail, broken framing) stays in
    the last range, where decoding reports or raises it."""
    walked = walked_windows(source, start, end, max_bytes)
    if walked is not None:
        return [(a, b) for a, b, _last in walked]
    ranges = []
    pos = start
    while pos < end:
        n = min(max_bytes, end - pos)
        valid = valid_bytes(source.read(pos, n))
        if valid == 0:
            big = big_batch(source, pos, end, n)
            if big is None:
                ranges.append((pos, end))
                break
            valid = big
        ranges.append((pos, pos + valid))
        pos += valid
    return ranges


def big_batch(source: Any, pos: int, end: int, window: int) -> int | None:
    """The size of a complete batch at ``pos`` that is larger than ``window``, or None."""
    if end - pos < LOG_OVERHEAD:
        return None
    size = batch_length(source.read(pos, LOG_OVERHEAD))
    if size is None or size <= window or pos + size > end:
        return None
    return size if valid_bytes(source.read(pos, size)) == size else None


def batch_windows(source: Any, start: int, end: int, chunk: int, bounds: Bounds) -> Iterator[tuple[int, int, bool]]:
    """Byte windows ``(a, b, last)`` of complete batches in ``[start, end)``,
    each at most ``chunk`` bytes (or one batch). Leading batches wholly below
    ``bounds.start_offset`` are left out, and the walk stops after the batch
    reaching ``bounds.end_offset``. Bytes that can't be walked (incomplete
    tail, broken framing) end up in a final window for the decoder to report."""
    walked = walked_windows(source, start, end, chunk, bounds.start_offset, bounds.end_offset)
    if walked is not None:
        yield from walked
        return
    pos = start
    started = bounds.start_offset is None
    while pos < end:
        n = min(chunk, end - pos)
        data = source.read(pos, n)
        if not bounds.offsets or (started and bounds.end_offset is None):
            valid = valid_bytes(data)
            first = 0
            stop = False
        else:
            first, valid, stop = _walk_window(data, bounds, started)
            started = started or first < valid
        del data
        source.release()
        if valid == 0:
            big = big_batch(source, pos, end, n)
            if big is None:
                yield pos, end, True
                return
            if bounds.offsets:
                first, valid, stop = _walk_window(source.read(pos, big), bounds, started)
                started = started or first < valid
                source.release()
                if first < valid:
                    yield pos, pos + valid, stop
                if stop:
                    return
                pos += big
                continue
            valid = big
        if first < valid:
            yield pos + first, pos + valid, stop
        if stop:
            return
        pos += valid


def _ends_before(batch: Any, offset: int) -> bool:
    """Every record of ``batch`` lies before ``offset``, judged by its header.
    A legacy wrapper as a producer writes it (its offset never assigned by a
    broker) keeps its inner offsets, which run past ``last_offset`` (the
    wrapper's own offset, as in Kafka's Java client): never judged by header."""
    if batch.magic < 2 and batch.last_offset < batch.base_offset + batch.record_count - 1:
        return False
    return bool(batch.last_offset < offset)


def _walk_window(data: Any, bounds: Bounds, started: bool) -> tuple[int, int, bool]:
    """(first kept byte, end of complete batches, stop) for one window by its batch headers."""
    first = 0
    end = 0
    for batch in iter_batches(data, validate_crc=False, on_error="keep"):
        batch_end = batch.position + batch.size_in_bytes
        good = batch.error is None
        if not started and good and bounds.start_offset is not None and _ends_before(batch, bounds.start_offset):
            first = batch_end
            end = batch_end
            continue
        started = True
        end = batch_end
        if good and bounds.end_offset is not None and batch.last_offset >= bounds.end_offset - 1:
            return first, end, True
    return first, end, False
