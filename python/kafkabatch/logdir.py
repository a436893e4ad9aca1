"""Kafka log folders: finding segments, and streaming them into Arrow.

A broker keeps each partition in a folder ``<topic>-<partition>`` holding
segment files named after their first offset (``00000000000000000000.log``)
next to their indexes (``.index``, ``.timeindex``, ``.txnindex``) and other
files. This module is the folder walk shared by the Spark data source
(:mod:`kafkabatch.spark`), the command line and :func:`scan_log`.

>>> from kafkabatch.logdir import list_segments, scan_log
>>> [s.path for s in list_segments("/var/lib/kafka/data/orders-*")]   # doctest: +SKIP
['/var/lib/kafka/data/orders-0/00000000000000000000.log', ...]
>>> reader = scan_log("/var/lib/kafka/data", start_offset=1000)      # doctest: +SKIP
>>> for batch in reader:                                             # doctest: +SKIP
...     print(batch.num_rows)

Local paths are memory-mapped. Paths with a URI scheme (``s3://``,
``s3a://``, ``gs://``, ``hdfs://``, ...) go through :mod:`pyarrow.fs` and are
read in windows of at most ``max_chunk_bytes``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import glob as _glob
import logging
import os
import re
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

import kafkabatch as kb
from kafkabatch._util import mapped_file, parse_size, segment_base_offset, topic_partition_of_folder
from kafkabatch.values import VALUE_OPTIONS, ValueSpec, apply_all, specs, typed_options

__all__ = [
    "DEFAULT_MAX_CHUNK_BYTES",
    "Segment",
    "SegmentResult",
    "Transaction",
    "batch_ranges",
    "decode_range",
    "hidden_transactions",
    "list_segments",
    "parse_size",
    "parse_timestamp",
    "scan_log",
    "seek_position",
]

log = logging.getLogger("kafkabatch.logdir")

#: Default window for :func:`scan_log`: the bytes of complete batches decoded at once.
DEFAULT_MAX_CHUNK_BYTES: int = 16 << 20

# Folders a broker is about to delete, or that hold a replica being moved
# between log dirs: "<topic>-<partition>.<uuid hex>-delete|-future|-stray".
_TRANSIENT_FOLDER = re.compile(r"\.[0-9a-fA-F]{32}-(delete|future|stray)$")
_URI = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*)://")
_GLOB_CHARS = re.compile(r"[*?\[]")
_LOG_OVERHEAD = 12  # base offset int64 + length int32


# --------------------------------------------------------------------------
# small parsers shared with the Spark data source and the demo
# --------------------------------------------------------------------------


def parse_timestamp(value: Any) -> int:
    """A point in time as microseconds since the epoch (the unit of the
    ``timestamp`` column).

    Accepts epoch **milliseconds** (an int, or a string of digits, as Kafka
    and Spark's Kafka source use), an ISO-8601 string (``"2024-05-01"``,
    ``"2024-05-01T12:00:00Z"``, ``"2024-05-01 12:00:00.250+02:00"``; no time
    zone means UTC), or a :class:`datetime.datetime` / :class:`datetime.date`.

    >>> parse_timestamp(1700000000000)
    1700000000000000
    >>> parse_timestamp("2023-11-14T22:13:20Z")
    1700000000000000
    """
    if isinstance(value, bool):
        raise ValueError(f"not a timestamp: {value!r}")
    if isinstance(value, int):
        return value * 1000
    if isinstance(value, float):
        return round(value * 1000)
    if isinstance(value, _dt.datetime):
        moment = value
    elif isinstance(value, _dt.date):
        moment = _dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"-?\d+", text):
            return int(text) * 1000
        try:
            moment = _dt.datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(
                f"not a timestamp: {value!r} (expected epoch milliseconds or ISO-8601 such as '2024-05-01T12:00:00Z')"
            ) from None
    else:
        raise ValueError(f"not a timestamp: {value!r}")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.UTC)
    delta = moment - _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


# --------------------------------------------------------------------------
# segments
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Segment:
    """One segment file of one topic-partition.

    ``path`` is a local path, or a URI for remote files (``s3://...``).
    ``base_offset`` comes from the file name (``00000000000000001234.log`` →
    1234); it is ``None`` for a file you named directly whose name isn't an
    offset.
    """

    path: str
    topic: str
    partition: int
    base_offset: int | None
    size: int

    @property
    def name(self) -> str:
        """The file name."""
        return _basename(self.path)


def _basename(path: str) -> str:
    return re.split(r"[\\/]", path.split("?", 1)[0].rstrip("/\\"))[-1]


def _parent_name(path: str) -> str:
    parts = re.split(r"[\\/]", path.split("?", 1)[0].rstrip("/\\"))
    return parts[-2] if len(parts) >= 2 else ""


def _base_offset(file_name: str) -> int | None:
    return segment_base_offset(file_name)


def _is_segment_name(file_name: str) -> bool:
    # Kafka renames segments it is about to delete, or swapping in after
    # compaction, to *.log.deleted / *.log.cleaned / *.log.swap: not ".log".
    return file_name.endswith(".log")


def _folder_topic_partition(folder: str, topic: str | None, partition: int | None) -> tuple[str, int]:
    if topic is not None and partition is not None:
        return topic, partition
    found = topic_partition_of_folder(_basename(folder))
    if found is None:
        missing = " and ".join(n for n, v in (("topic", topic), ("partition", partition)) if v is None)
        raise ValueError(
            f"folder {folder!r} is not named <topic>-<partition> (like 'orders-0'), so its "
            f"segments have no {missing}; rename it, or give the {missing} explicitly "
            "(keyword arguments topic=/partition=, Spark options 'topic'/'partition')"
        )
    return (found[0] if topic is None else topic, found[1] if partition is None else partition)


def _sort_key(s: Segment) -> tuple:
    return (s.topic, s.partition, -1 if s.base_offset is None else s.base_offset, s.path)


def list_segments(
    path_or_glob: str | os.PathLike[str],
    *,
    topic: str | None = None,
    partition: int | None = None,
) -> list[Segment]:
    """The segment files under ``path_or_glob``, sorted by topic, partition
    and base offset.

    ``path_or_glob`` may be a broker log dir (a folder of ``<topic>-<partition>``
    folders; deeper nesting, e.g. one folder per broker, works too), one
    ``<topic>-<partition>`` folder, one segment file, or a glob of any of
    those (``/data/orders-*``, ``/data/*-0/000000000000000*.log``). Only
    ``*.log`` files are segments (indexes, snapshots, checkpoints,
    ``*.deleted``/``*.cleaned``/``*.swap`` are ignored), except that a file
    you name directly is read whatever its name. Folders a broker is
    deleting or moving (``<topic>-<partition>.<id>-delete``/``-future``/
    ``-stray``) are skipped.

    Topic and partition come from each folder's name; ``topic``/``partition``
    override them. A folder holding ``.log`` files that isn't named
    ``<topic>-<partition>`` is a :class:`ValueError` (naming the folder)
    unless both are given. A path that doesn't exist (or a glob matching
    nothing) is a :class:`FileNotFoundError`; an empty folder gives ``[]``.

    >>> [(s.topic, s.partition, s.base_offset) for s in list_segments("/var/lib/kafka/data")]  # doctest: +SKIP
    [('orders', 0, 0), ('orders', 0, 81234), ('orders', 1, 0), ('payments', 0, 0)]
    """
    path = os.fspath(path_or_glob)
    if partition is not None:
        partition = int(partition)
    found: list[tuple[str, str, int]] = []  # (folder, file path, size), before naming
    explicit: set[str] = set()
    uri = _URI.match(path)
    if uri and uri["scheme"].lower() != "file":
        found, explicit = _list_remote(path)
    else:
        found, explicit = _list_local(_local_path(path))
    segments = {}
    for folder, file_path, size in found:
        if _TRANSIENT_FOLDER.search(_basename(folder)) and file_path not in explicit:
            continue
        seg_topic, seg_partition = _folder_topic_partition(folder, topic, partition)
        segments[file_path] = Segment(file_path, seg_topic, seg_partition, _base_offset(_basename(file_path)), size)
    return sorted(segments.values(), key=_sort_key)


def _local_path(path: str) -> str:
    if path.lower().startswith("file:"):
        from urllib.parse import unquote, urlparse

        parsed = urlparse(path)
        return unquote(parsed.path) if not parsed.netloc else f"//{parsed.netloc}{unquote(parsed.path)}"
    return os.path.expanduser(path)


def _list_local(path: str) -> tuple[list[tuple[str, str, int]], set[str]]:
    found: list[tuple[str, str, int]] = []
    explicit: set[str] = set()
    if os.path.exists(path) or not _GLOB_CHARS.search(path):
        roots = [path]
        is_glob = False
    else:
        roots = sorted(_glob.glob(path, recursive=True))
        is_glob = True
        if not roots:
            raise FileNotFoundError(f"no Kafka log files match {path!r}")
    for root in roots:
        if os.path.isfile(root):
            if is_glob and not _is_segment_name(os.path.basename(root)):
                continue
            if not is_glob:
                explicit.add(root)
            found.append((os.path.dirname(os.path.abspath(root)), root, os.path.getsize(root)))
        elif os.path.isdir(root):
            if not os.access(root, os.R_OK | os.X_OK):
                raise PermissionError(f"can't read the folder {root!r}")
            found.extend(_walk_local(root))
        elif not os.path.exists(root):
            raise FileNotFoundError(f"Kafka log path does not exist: {root!r}")
    return found, explicit


def _walk_local(root: str) -> Iterator[tuple[str, str, int]]:
    seen: set[str] = set()

    def onerror(err: OSError) -> None:
        raise err

    for dirpath, dirnames, filenames in os.walk(root, followlinks=True, onerror=onerror):
        real = os.path.realpath(dirpath)
        if real in seen:  # a symlink loop
            dirnames[:] = []
            continue
        seen.add(real)
        dirnames.sort()
        for name in sorted(filenames):
            if _is_segment_name(name):
                file_path = os.path.join(dirpath, name)
                if os.path.isfile(file_path):
                    yield dirpath, file_path, os.path.getsize(file_path)


# ---- remote (pyarrow.fs) ---------------------------------------------------


def _remote_uri(path: str) -> str:
    """pyarrow.fs spells Hadoop's s3a:// and s3n:// as s3://."""
    match = _URI.match(path)
    if match and match["scheme"].lower() in ("s3a", "s3n"):
        return "s3://" + path[match.end() :]
    return path


@functools.lru_cache(maxsize=256)
def _resolve_remote(uri: str) -> tuple[Any, str]:
    from pyarrow import fs as pafs

    return pafs.FileSystem.from_uri(_remote_uri(uri))


def _list_remote(uri: str) -> tuple[list[tuple[str, str, int]], set[str]]:
    from pyarrow import fs as pafs

    base, _, query = uri.partition("?")
    suffix = f"?{query}" if query else ""
    scheme_end = _URI.match(base).end()  # type: ignore[union-attr]
    glob_at = _GLOB_CHARS.search(base, scheme_end)
    if glob_at is None:
        prefix_uri = base
    else:
        prefix_uri = base[: base.rfind("/", 0, glob_at.start())]
    filesystem, prefix_path = _resolve_remote(prefix_uri + suffix)
    prefix_path = prefix_path.rstrip("/")

    def to_uri(fs_path: str) -> str:
        return prefix_uri.rstrip("/") + fs_path[len(prefix_path) :] + suffix

    found: list[tuple[str, str, int]] = []
    explicit: set[str] = set()
    info = filesystem.get_file_info(prefix_path)
    if info.type == pafs.FileType.NotFound:
        raise FileNotFoundError(f"Kafka log path does not exist: {prefix_uri!r}")
    if info.type == pafs.FileType.File:
        if glob_at is None:
            explicit.add(uri)
            return [(_parent_uri(uri), uri, info.size)], explicit
        return [], explicit
    infos = filesystem.get_file_info(pafs.FileSelector(prefix_path, recursive=True))
    pattern = base[len(prefix_uri) :].strip("/").split("/") if glob_at is not None else None
    matched_any = False
    for item in sorted(infos, key=lambda i: i.path):
        if item.type != pafs.FileType.File:
            continue
        rel = item.path[len(prefix_path) :].strip("/").split("/")
        if pattern is not None:
            if len(rel) < len(pattern) or not all(fnmatchcase(p, g) for p, g in zip(rel, pattern)):
                continue
            matched_any = True
        if not _is_segment_name(rel[-1]):
            continue
        file_uri = to_uri(item.path)
        found.append((_parent_uri(file_uri), file_uri, item.size))
    if pattern is not None and not matched_any:
        raise FileNotFoundError(f"no Kafka log files match {uri!r}")
    return found, explicit


def _parent_uri(uri: str) -> str:
    base = uri.split("?", 1)[0]
    return base[: base.rstrip("/").rfind("/")]


# --------------------------------------------------------------------------
# reading bytes: memory maps for local files, pyarrow.fs for remote ones
# --------------------------------------------------------------------------


class _Source:
    """Random access to one segment's bytes; ``read`` returns a buffer-protocol object."""

    size: int

    def read(self, position: int, length: int) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        pass


class _MappedSource(_Source):
    def __init__(self, path: str) -> None:
        self._stack = contextlib.ExitStack()
        self._data = self._stack.enter_context(mapped_file(path))
        self.size = len(self._data)
        self._views: list[memoryview] = []

    def read(self, position: int, length: int) -> Any:
        if not self.size:
            return b""
        view = self._data[position : position + length]
        self._views.append(view)
        return view

    def release(self) -> None:
        """Drop the views handed out so far (the decoder copies what it keeps)."""
        for view in self._views:
            view.release()
        self._views.clear()

    def close(self) -> None:
        self.release()
        self._stack.close()


class _RemoteSource(_Source):
    def __init__(self, uri: str) -> None:
        filesystem, fs_path = _resolve_remote(uri)
        self._file = filesystem.open_input_file(fs_path)
        self.size = self._file.size()

    def read(self, position: int, length: int) -> Any:
        if length <= 0:
            return b""
        return memoryview(self._file.read_at(length, position)).cast("B")

    def release(self) -> None:
        pass

    def close(self) -> None:
        self._file.close()


def _is_remote(path: str) -> bool:
    match = _URI.match(path)
    return bool(match and match["scheme"].lower() != "file")


def _open_source(path: str) -> Any:
    return _RemoteSource(path) if _is_remote(path) else _MappedSource(_local_path(path))


# --------------------------------------------------------------------------
# batch boundaries
# --------------------------------------------------------------------------


def _batch_length(header: Any) -> int | None:
    """The size of the batch starting ``header`` (>= 12 bytes), or None if its
    length field is impossible."""
    (length,) = struct.unpack_from(">i", header, 8)
    return _LOG_OVERHEAD + length if length >= 0 else None


def batch_ranges(source: Any, start: int, end: int, max_bytes: int) -> list[tuple[int, int]]:
    """Cut ``[start, end)`` of a segment at batch boundaries into ranges of at
    most ``max_bytes`` (a batch larger than that gets a range of its own).
    Whatever can't be walked (an incomplete tail, broken framing) stays in
    the last range, where decoding reports or raises it."""
    ranges = []
    pos = start
    while pos < end:
        n = min(max_bytes, end - pos)
        valid = kb.valid_bytes(source.read(pos, n))
        if valid == 0:
            big = _big_batch(source, pos, end, n)
            if big is None:
                ranges.append((pos, end))
                break
            valid = big
        ranges.append((pos, pos + valid))
        pos += valid
    return ranges


def _big_batch(source: Any, pos: int, end: int, window: int) -> int | None:
    """The size of a complete batch at ``pos`` that is larger than ``window``, or None."""
    if end - pos < _LOG_OVERHEAD:
        return None
    size = _batch_length(source.read(pos, _LOG_OVERHEAD))
    if size is None or size <= window or pos + size > end:
        return None
    return size if kb.valid_bytes(source.read(pos, size)) == size else None


# --------------------------------------------------------------------------
# transactions across windows (read_committed)
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Transaction:
    """An aborted (or still open) transaction: what a broker's ``.txnindex`` or a
    Fetch response's aborted list says, with ``last_offset`` the marker's
    offset (``None`` while open)."""

    producer_id: int
    first_offset: int
    last_offset: int | None


def hidden_transactions(sources: Iterable[Any], *, max_chunk_bytes: int = DEFAULT_MAX_CHUNK_BYTES) -> list[Transaction]:
    """Aborted and still-open transactions of one topic-partition, found by
    walking the batch headers of its segments (open sources, in log order).

    ``read_committed`` decodes pieces of a log independently (a window, a
    Spark task); the marker that ends a transaction may be in a later piece,
    so each piece is given the aborted list of the whole partition (what a
    broker gives a consumer with each fetch) instead of relying on markers
    alone.
    """
    open_txns: dict[int, int] = {}
    done: list[Transaction] = []
    for source in sources:
        for a, b, _last in _windows(source, 0, source.size, max_chunk_bytes, _Bounds()):
            _collect_transactions(source.read(a, b - a), open_txns, done)
            source.release()
    done.extend(Transaction(pid, first, None) for pid, first in open_txns.items())
    return sorted(done, key=lambda t: (t.first_offset, t.producer_id))


def _collect_transactions(data: Any, open_txns: dict[int, int], done: list[Transaction]) -> None:
    for batch in kb.iter_batches(data, validate_crc=False, on_error="keep"):
        if batch.magic < 2 or not batch.is_transactional or batch.error is not None:
            continue
        pid = batch.producer_id
        if batch.is_control:
            first = open_txns.pop(pid, None)
            control = batch.control
            if first is not None and control is not None and control.type == "ABORT":
                done.append(Transaction(pid, first, batch.base_offset))
        else:
            open_txns.setdefault(pid, batch.base_offset)


def _aborted_for(transactions: list[Transaction], first_offset: int) -> list[tuple[int, int]]:
    """The ``(producer_id, first_offset)`` pairs a piece starting at
    ``first_offset`` needs: those not finished before it (as a broker sends
    with a fetch from that offset)."""
    return [
        (t.producer_id, t.first_offset) for t in transactions if t.last_offset is None or t.last_offset >= first_offset
    ]


# --------------------------------------------------------------------------
# decoding a byte range window by window
# --------------------------------------------------------------------------


@dataclass
class SegmentResult:
    """What reading one segment (or one byte range of it) found."""

    segment: Segment
    start: int = 0
    end: int = 0
    batches: int = 0
    records: int = 0
    rows: int = 0
    skipped: list[Exception] = field(default_factory=list)
    skipped_bytes: int = 0
    trailing_bytes: int = 0
    status: str = "clean"

    @property
    def problems(self) -> bool:
        return bool(self.skipped) or (self.trailing_bytes > 0 and self.status == "broken")

    def describe(self) -> str:
        """One line, for logs."""
        where = (
            self.segment.path
            if (self.start, self.end) == (0, self.segment.size)
            else (f"{self.segment.path} [bytes {self.start}-{self.end}]")
        )
        text = (
            f"{where}: {self.rows} rows; skipped {len(self.skipped)} corrupt "
            f"batch{'es' if len(self.skipped) != 1 else ''} ({self.skipped_bytes} bytes)"
        )
        if self.trailing_bytes:
            text += f"; {self.trailing_bytes} trailing bytes ({self.status})"
        return text


@dataclass(frozen=True)
class _Bounds:
    """Exact filters: offsets in [start_offset, end_offset), timestamps (µs) in [start_ts, end_ts)."""

    start_offset: int | None = None
    end_offset: int | None = None
    start_ts: int | None = None
    end_ts: int | None = None

    @property
    def offsets(self) -> bool:
        return self.start_offset is not None or self.end_offset is not None

    def empty(self) -> bool:
        return (
            self.start_offset is not None and self.end_offset is not None and self.start_offset >= self.end_offset
        ) or (self.start_ts is not None and self.end_ts is not None and self.start_ts >= self.end_ts)

    def mask(self, batch: pa.RecordBatch) -> pa.Array | None:
        conditions = []
        offset = batch.column("offset")
        if self.start_offset is not None:
            conditions.append(pc.greater_equal(offset, pa.scalar(self.start_offset, pa.int64())))
        if self.end_offset is not None:
            conditions.append(pc.less(offset, pa.scalar(self.end_offset, pa.int64())))
        ts_type = batch.schema.field("timestamp").type
        if self.start_ts is not None:
            conditions.append(pc.greater_equal(batch.column("timestamp"), pa.scalar(self.start_ts, ts_type)))
        if self.end_ts is not None:
            conditions.append(pc.less(batch.column("timestamp"), pa.scalar(self.end_ts, ts_type)))
        if not conditions:
            return None
        return functools.reduce(pc.and_kleene, conditions)


def seek_position(segment: Segment, bounds: _Bounds, source: Any = None) -> tuple[int, int | None]:
    """The byte range of ``segment`` worth reading for ``bounds``: ``(start,
    end)``, end None for the whole rest. Local segments seek with their
    ``.index`` / ``.timeindex`` (checked against the log; a bad or missing
    index warns and reads everything, see :mod:`kafkabatch.seek`); exact
    filters do the rest, so any batch boundary at or before the first wanted
    batch is correct here."""
    wanted = bounds.start_offset is not None or bounds.end_offset is not None or bounds.start_ts is not None
    if not wanted or not isinstance(source, _MappedSource) or source.size == 0:
        return 0, None
    from kafkabatch.seek import seek_range

    view = source.read(0, source.size)
    try:
        return seek_range(
            segment.path,
            view,
            start_offset=bounds.start_offset,
            end_offset=bounds.end_offset,
            start_timestamp_ms=None if bounds.start_ts is None else bounds.start_ts // 1000,
        )
    finally:
        source.release()


#: The keywords of :func:`kafkabatch.decode` that reading segments passes on
#: (topic and partition come from the folders); the Spark UDF helpers take them too.
DECODE_OPTIONS = (
    "validate_crc",
    "include_control",
    "isolation",
    "on_error",
    "max_decompressed_size",
    "aborted_transactions",
    "hide_open_transactions",
    "threads",
)


def _decode_options(options: Mapping[str, Any]) -> dict[str, Any]:
    unknown = set(options) - set(DECODE_OPTIONS)
    if unknown:
        raise TypeError(f"unexpected decode option(s): {', '.join(sorted(unknown))}")
    return dict(options)


def _relocate(error: Exception, segment: Segment, base: int) -> Exception:
    """The same kind of error with positions counted from the start of the
    file and the segment named."""
    if not isinstance(error, kb.KafkaBatchError):
        return error
    batch_pos = getattr(error, "batch_position", None)
    byte_pos = getattr(error, "byte_position", None)
    batch_pos = None if batch_pos is None else batch_pos + base
    byte_pos = None if byte_pos is None else byte_pos + base
    reason = getattr(error, "reason", None) or str(error)
    base_offset = getattr(error, "base_offset", None)
    detail = f" (base offset {base_offset})" if base_offset is not None else ""
    message = f"{segment.path}: batch at byte {batch_pos}{detail}, at byte {byte_pos}: {reason}"
    new = type(error)(message)
    for name in ("base_offset", "in_payload", "reason"):
        with contextlib.suppress(AttributeError):
            setattr(new, name, getattr(error, name, None))
    for name, value in (("batch_position", batch_pos), ("byte_position", byte_pos), ("path", segment.path)):
        with contextlib.suppress(AttributeError):
            setattr(new, name, value)
    return new


def _windows(source: Any, start: int, end: int, chunk: int, bounds: _Bounds) -> Iterator[tuple[int, int, bool]]:
    """Byte windows ``(a, b, last)`` of complete batches in ``[start, end)``,
    each at most ``chunk`` bytes (or one batch). Leading batches wholly below
    ``bounds.start_offset`` are left out, and the walk stops after the batch
    reaching ``bounds.end_offset``. Bytes that can't be walked (incomplete
    tail, broken framing) end up in a final window for the decoder to report."""
    pos = start
    started = bounds.start_offset is None
    while pos < end:
        n = min(chunk, end - pos)
        data = source.read(pos, n)
        if not bounds.offsets or (started and bounds.end_offset is None):
            valid = kb.valid_bytes(data)
            first = 0
            stop = False
        else:
            first, valid, stop = _walk_window(data, bounds, started)
            started = started or first < valid
        del data
        source.release()
        if valid == 0:
            big = _big_batch(source, pos, end, n)
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


def _walk_window(data: Any, bounds: _Bounds, started: bool) -> tuple[int, int, bool]:
    """(first kept byte, end of complete batches, stop) for one window by its batch headers."""
    first = 0
    end = 0
    for batch in kb.iter_batches(data, validate_crc=False, on_error="keep"):
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


def decode_range(
    source: Any,
    segment: Segment,
    *,
    start: int = 0,
    end: int | None = None,
    max_chunk_bytes: int = DEFAULT_MAX_CHUNK_BYTES,
    bounds: _Bounds = _Bounds(),
    transactions: list[Transaction] | None = None,
    max_records_per_batch: int | None = None,
    result: SegmentResult | None = None,
    value_specs: Sequence[ValueSpec] = (),
    **decode_options: Any,
) -> Iterator[pa.RecordBatch]:
    """Decode bytes ``[start, end)`` of an open segment window by window,
    yielding record batches of :data:`kafkabatch.SCHEMA` filtered to
    ``bounds``, with the columns of ``value_specs`` parsed. Counts go into
    ``result``."""
    options = _decode_options(decode_options)
    end = source.size if end is None else min(end, source.size)
    if result is None:
        result = SegmentResult(segment)
    result.start, result.end = start, end
    if bounds.empty():
        return
    read_committed = options.get("isolation") == "read_committed"
    for a, b, _last in _windows(source, start, end, max_chunk_bytes, bounds):
        data = source.read(a, b - a)
        kwargs = dict(options)
        if read_committed and transactions is not None and "aborted_transactions" not in options:
            first_offset = struct.unpack_from(">q", data, 0)[0] if b - a >= 8 else 0
            kwargs["aborted_transactions"] = _aborted_for(transactions, first_offset)
            kwargs["hide_open_transactions"] = False
        try:
            report = kb.decode_report(data, topic=segment.topic, partition=segment.partition, **kwargs)
        except kb.KafkaBatchError as error:
            raise _relocate(error, segment, a) from None
        finally:
            del data
            source.release()
        result.batches += report.batches
        result.records += report.records
        result.skipped.extend(_relocate(e, segment, a) for e in report.skipped)
        result.skipped_bytes += report.skipped_bytes
        result.trailing_bytes += report.trailing_bytes
        if report.end != "clean":
            result.status = report.end
        mask_needed = bounds.start_ts is not None or bounds.end_ts is not None or bounds.offsets
        for batch in report.table.to_batches(max_chunksize=max_records_per_batch):
            if mask_needed and batch.num_rows:
                mask = bounds.mask(batch)
                if mask is not None:
                    kept = pc.sum(mask).as_py() or 0
                    if kept < batch.num_rows:  # filter copies: only when something goes
                        batch = batch.filter(mask) if kept else batch.slice(0, 0)
            if batch.num_rows:
                result.rows += batch.num_rows
                if value_specs:  # only the records in bounds are parsed
                    yield from apply_all(
                        pa.Table.from_batches([batch]), value_specs, options.get("threads")
                    ).to_batches()
                else:
                    yield batch


def _segment_skippable(segments: list[Segment], i: int, bounds: _Bounds) -> bool:
    """Whether file names alone show segment ``i`` (of one partition, in
    order) holds no offset in the bounds."""
    seg = segments[i]
    if seg.base_offset is None:
        return False
    if bounds.end_offset is not None and seg.base_offset >= bounds.end_offset:
        return True
    if bounds.start_offset is not None and i + 1 < len(segments):
        nxt = segments[i + 1]
        if nxt.base_offset is not None and nxt.base_offset <= bounds.start_offset:
            return True
    return False


def _bound_for(spec: Any, topic: str, partition: int, what: str) -> int | None:
    """An offset bound for one topic-partition: an int for all, or a mapping
    ``{topic: {partition: offset}}`` / ``{(topic, partition): offset}``."""
    if spec is None:
        return None
    if isinstance(spec, bool):
        raise TypeError(f"{what} must be an int or a mapping, not {spec!r}")
    if isinstance(spec, int):
        return spec
    if isinstance(spec, Mapping):
        if (topic, partition) in spec:
            return int(spec[(topic, partition)])
        per_topic = spec.get(topic)
        if isinstance(per_topic, Mapping):
            for key in (partition, str(partition)):
                if key in per_topic:
                    return int(per_topic[key])
        return None
    raise TypeError(f"{what} must be an int or a mapping, not {type(spec).__name__}")


def _by_partition(segments: list[Segment]) -> list[list[Segment]]:
    groups: dict[tuple[str, int], list[Segment]] = {}
    for seg in segments:
        groups.setdefault((seg.topic, seg.partition), []).append(seg)
    return list(groups.values())


def scan_log(
    path: str | os.PathLike[str],
    *,
    topic: str | None = None,
    partition: int | None = None,
    max_chunk_bytes: int | str = DEFAULT_MAX_CHUNK_BYTES,
    start_offset: int | Mapping[Any, Any] | None = None,
    end_offset: int | Mapping[Any, Any] | None = None,
    start_timestamp: Any = None,
    end_timestamp: Any = None,
    max_records_per_batch: int | None = None,
    on_segment: Callable[[SegmentResult], None] | None = None,
    **decode_options: Any,
) -> pa.RecordBatchReader:
    """Stream every segment under ``path`` (see :func:`list_segments`) as
    record batches of :data:`kafkabatch.SCHEMA`, in topic, partition, offset
    order, with bounded memory.

    Segments are memory-mapped (remote ones read through :mod:`pyarrow.fs`)
    and decoded in windows of complete batches of about ``max_chunk_bytes``
    (default 16 MiB), so a 1 GiB segment never needs 1 GiB of Arrow at once.

    Bounds are exact filters on the records: ``start_offset`` (inclusive)
    and ``end_offset`` (exclusive) are an int for every partition or a
    mapping ``{"orders": {0: 100, 1: 250}}``; ``start_timestamp``
    (inclusive) / ``end_timestamp`` (exclusive) are epoch milliseconds,
    ISO-8601 strings or datetimes (see :func:`parse_timestamp`). Segments
    and leading batches wholly outside the offset bounds are skipped by
    their file names and batch headers without decoding.

    Other keyword arguments are those of :func:`kafkabatch.decode`
    (``validate_crc``, ``include_control``, ``isolation``, ``on_error``,
    ``max_decompressed_size``); topic and partition come from folder names
    unless given. With ``isolation="read_committed"`` each partition's
    transactions are first collected from its batch headers, so a marker
    in a later window or segment still decides. ``on_segment`` is called
    with a :class:`SegmentResult` after each segment (counts of rows,
    skipped batches and bytes, trailing bytes).

    >>> reader = scan_log("/var/lib/kafka/data/orders-0", start_timestamp="2024-05-01")  # doctest: +SKIP
    >>> reader.read_all().num_rows                                                         # doctest: +SKIP
    1000
    """
    segments = list_segments(path, topic=topic, partition=partition)
    chunk = parse_size(max_chunk_bytes)
    if chunk <= 0:
        raise ValueError("max_chunk_bytes must be positive")
    value_options = typed_options({k: decode_options.pop(k) for k in VALUE_OPTIONS if k in decode_options})
    options = _decode_options(decode_options)
    value_specs = [] if value_options is None else specs(value_options, topics=sorted({s.topic for s in segments}))
    schema = typed_schema(kb.SCHEMA, value_specs)
    start_ts = None if start_timestamp is None else parse_timestamp(start_timestamp)
    end_ts = None if end_timestamp is None else parse_timestamp(end_timestamp)
    if max_records_per_batch is not None and max_records_per_batch <= 0:
        raise ValueError("max_records_per_batch must be positive")
    for spec, what in ((start_offset, "start_offset"), (end_offset, "end_offset")):
        if spec is not None:
            _bound_for(spec, "", 0, what)  # type check now, not halfway through the stream

    def batches() -> Iterator[pa.RecordBatch]:
        for group in _by_partition(segments):
            tp_topic, tp_partition = group[0].topic, group[0].partition
            bounds = _Bounds(
                _bound_for(start_offset, tp_topic, tp_partition, "start_offset"),
                _bound_for(end_offset, tp_topic, tp_partition, "end_offset"),
                start_ts,
                end_ts,
            )
            transactions = None
            if options.get("isolation") == "read_committed" and "aborted_transactions" not in options:
                transactions = _partition_transactions(group)
            for i, seg in enumerate(group):
                result = SegmentResult(seg)
                if not _segment_skippable(group, i, bounds):
                    source = _open_source(seg.path)
                    try:
                        seek_start, seek_end = seek_position(seg, bounds, source)
                        yield from decode_range(
                            source,
                            seg,
                            start=seek_start,
                            end=seek_end,
                            max_chunk_bytes=chunk,
                            bounds=bounds,
                            transactions=transactions,
                            max_records_per_batch=max_records_per_batch,
                            result=result,
                            value_specs=value_specs,
                            **options,
                        )
                    finally:
                        source.close()
                if on_segment is not None:
                    on_segment(result)

    return pa.RecordBatchReader.from_batches(schema, batches())


def typed_schema(schema: pa.Schema, value_specs: Iterable[ValueSpec]) -> pa.Schema:
    """``schema`` with the columns of ``value_specs`` given their parsed types."""
    for spec in value_specs:
        index = schema.get_field_index(spec.column)
        schema = schema.set(index, pa.field(spec.column, spec.output_type))
    return schema


def _partition_transactions(group: list[Segment]) -> list[Transaction]:
    sources = []
    try:
        for seg in group:
            sources.append(_open_source(seg.path))
        return hidden_transactions(sources)
    finally:
        for source in sources:
            source.close()
