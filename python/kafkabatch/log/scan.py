"""Streaming segments into Arrow window by window: ``scan_log`` and the range decoder the Spark source shares.

>>> reader = scan_log("/var/lib/kafka/data/orders-0", start_timestamp="2024-05-01")  # doctest: +SKIP
>>> reader.read_all().num_rows                                                         # doctest: +SKIP
1000
"""

from __future__ import annotations

import functools
import logging
import struct
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

import kafkabatch.log.fs as fs
import kafkabatch.log.tiered as tiered
from kafkabatch._decode import SCHEMA, aborted_pairs, decode_parsing, decode_report, native_kwargs, report_of
from kafkabatch._kafkabatch import KafkaBatchError, TieredStorageError
from kafkabatch._kafkabatch import _read_segment as _native_read_segment
from kafkabatch._kafkabatch import plan_partition as _native_plan_partition
from kafkabatch._kafkabatch import plan_roots as _native_plan_roots
from kafkabatch._util import check_keywords, keyword_names, parse_size
from kafkabatch.internal import INTERNAL_OPTIONS, Internal, decode_internal_columns, internal_schema, pop_internal
from kafkabatch.log.bounds import Bounds, bound_for, parse_timestamp
from kafkabatch.log.errors import in_file
from kafkabatch.log.index import IndexFileWarning
from kafkabatch.log.listing import Segment, listed_roots
from kafkabatch.log.prune import RecordFilter, narrow, prunes_batches, source_kept_ranges
from kafkabatch.log.roots import Roots, root_list
from kafkabatch.log.sample import first_values
from kafkabatch.log.seek import seek_range
from kafkabatch.log.txn import Transaction, aborted_for, partition_transactions
from kafkabatch.log.windows import DEFAULT_MAX_CHUNK_BYTES, batch_windows
from kafkabatch.values.mismatch import Warned, warn_unmatched
from kafkabatch.values.spec import (
    VALUE_OPTIONS,
    ValueDecodeError,
    ValueSpec,
    apply_all,
    specs,
    typed_options,
    value_only,
)

if TYPE_CHECKING:
    from pyarrow import fs as pafs

log = logging.getLogger("kafkabatch.log")
#: ``extra`` of a logged skip that a :class:`SegmentResult` also counts: a caller
#: that prints each result (``kafkabatch convert``) leaves these records out.
REPORTED = {"segment_report": True}


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
    pruned_bytes: int = 0  # batches left undecoded: their headers show they hold no record in the bounds
    end_error: Exception | None = None
    position: int = 0  # where the windows decoded so far end
    last_offset: int | None = None  # the largest offset of the rows returned
    twin: str | None = None  # the other copy read for offsets this (damaged) segment could not give
    fetched_bytes: int = 0  # bytes of remote (Aiven) objects fetched: chunks and index slices

    def merge_twin(self, other: SegmentResult) -> None:
        """Count what the read of a twin (another copy of this segment's offsets) found as this segment's."""
        self.twin = other.segment.path
        self.batches += other.batches
        self.records += other.records
        self.rows += other.rows
        self.skipped.extend(other.skipped)
        self.skipped_bytes += other.skipped_bytes
        self.trailing_bytes += other.trailing_bytes
        self.pruned_bytes += other.pruned_bytes
        if other.status != "clean":
            self.status = other.status
        if other.end_error is not None:
            self.end_error = other.end_error
        if other.last_offset is not None:
            self.last_offset = max(other.last_offset, self.last_offset or other.last_offset)

    @property
    def problems(self) -> bool:
        return bool(self.skipped) or (self.trailing_bytes > 0 and self.status == "broken")

    def describe(self) -> str:
        """One line, for logs."""
        lost = [e for e in self.skipped if isinstance(e, TieredStorageError)]
        if self.twin is not None and lost:
            # The first error is this copy's damage, the rest are from the twin's read.
            reason = getattr(lost[0], "reason", None) or lost[0]
            text = (
                f"{self.segment.path}: damaged ({reason}); its offsets read from {self.twin} instead: {self.rows} rows"
            )
            return text + "".join(f"; skipped {_lost_part(error)}" for error in lost[1:])
        if lost and self.batches == 0 and self.rows == 0:
            reason = getattr(lost[0], "reason", None) or lost[0]
            return f"{self.segment.path}: not read: {reason}"
        where = (
            self.segment.path
            if (self.start, self.end) == (0, self.segment.size)
            else (f"{self.segment.path} [bytes {self.start}-{self.end}]")
        )
        batches = len(self.skipped) - len(lost)
        text = f"{where}: {self.rows} rows"
        if batches or not lost:
            text += f"; skipped {batches} corrupt batch{'es' if batches != 1 else ''} ({self.skipped_bytes} bytes)"
        for error in lost:
            text += f"; skipped {_lost_part(error)}"
        if self.trailing_bytes:
            text += f"; {self.trailing_bytes} trailing bytes ({self.status})"
        if self.end_error is not None:
            reason = getattr(self.end_error, "reason", None) or self.end_error
            text += f" from byte {getattr(self.end_error, 'batch_position', '?')}: {reason}"
        return text


def _lost_part(error: Exception) -> str:
    """What a tiered-storage error cost, for :meth:`SegmentResult.describe`."""
    chunk = getattr(error, "chunk", None)
    reason = getattr(error, "reason", None) or error
    return f"chunk {chunk} ({reason})" if chunk is not None else f"the rest of the segment ({reason})"


def seek_position(
    segment: Segment, bounds: Bounds, source: Any = None, *, keep_control: bool = False
) -> tuple[int, int | None]:
    """The byte range of ``segment`` worth reading for ``bounds``: ``(start,
    end)``, end None for the whole rest. Local segments seek with their
    ``.index`` / ``.timeindex`` (checked against the log; a bad or missing
    index warns and reads everything, see :mod:`kafkabatch.log.seek`); exact
    filters do the rest, so any batch boundary at or before the first wanted
    batch is correct here. Aiven remote segments seek with the offset and
    time indexes of their ``.indexes`` object, fetched slice by slice."""
    wanted = bounds.start_offset is not None or bounds.end_offset is not None or bounds.start_ts is not None
    if wanted and isinstance(source, tiered.TieredSource) and source.size:
        return tiered.seek(
            source,
            tiered.sibling(segment.path, ".indexes"),
            segment.base_offset,
            bounds.start_offset,
            bounds.end_offset,
            None if bounds.start_ts is None else bounds.start_ts // 1000,
        )
    if not (wanted or prunes_batches(bounds)) or not isinstance(source, fs.MappedSource) or source.size == 0:
        return 0, None
    view = source.read(0, source.size)
    try:
        start, end = seek_range(
            segment.path,
            view,
            start_offset=bounds.start_offset,
            end_offset=bounds.end_offset,
            # A .timeindex seek is checked by walking the headers before it;
            # the header walk below (narrow) decides the time bounds by itself.
            start_timestamp_ms=None if bounds.start_ts is None or prunes_batches(bounds) else bounds.start_ts // 1000,
        )
    finally:
        del view
        source.release()
    if prunes_batches(bounds):
        # Time bounds: leading and trailing batches whose headers rule them out
        # go too (out-of-order timestamps: the index seek stops at the first
        # batch it can't rule out; a segment of older batches is left empty).
        return narrow(source, start, end, bounds, keep_control)
    return start, end


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


def check_decode_options(
    options: Mapping[str, Any], function: str = "decode_range", also: Iterable[str] = ()
) -> dict[str, Any]:
    """``options`` when all are :data:`DECODE_OPTIONS`; else the TypeError of
    :func:`kafkabatch._util.check_keywords`, naming ``function`` and
    suggesting from those and ``also`` (the function's other keywords)."""
    check_keywords(function, options, [*also, *DECODE_OPTIONS])
    return dict(options)


def relocate(error: Exception, segment: Segment, base: int, head: bytes | None = None) -> Exception:
    """The same kind of error with positions counted from the start of the
    file and the segment named (see :func:`kafkabatch.log.errors.in_file`)."""
    return in_file(error, segment.path, base, head)


def decode_range(
    source: Any,
    segment: Segment,
    *,
    start: int = 0,
    end: int | None = None,
    max_chunk_bytes: int = DEFAULT_MAX_CHUNK_BYTES,
    bounds: Bounds = Bounds(),
    transactions: list[Transaction] | None = None,
    max_records_per_batch: int | None = None,
    result: SegmentResult | None = None,
    value_specs: Sequence[ValueSpec] = (),
    warned: Warned | None = None,
    **decode_options: Any,
) -> Iterator[pa.RecordBatch]:
    """Decode bytes ``[start, end)`` of an open segment window by window,
    yielding record batches of :data:`kafkabatch.SCHEMA` filtered to
    ``bounds``, with the columns of ``value_specs`` parsed. Counts go into
    ``result``; ``warned``: the topics a JSON schema matching nothing was
    warned about in this read (see :mod:`kafkabatch.values.mismatch`)."""
    options = check_decode_options(decode_options)
    end = source.size if end is None else min(end, source.size)
    if result is None:
        result = SegmentResult(segment)
    result.start, result.end = start, end
    result.position = start
    if bounds.empty():
        return
    read_committed = options.get("isolation") == "read_committed"
    # read_committed without the partition's transactions learns from markers: keep them
    keep_control = read_committed and (transactions is None or "aborted_transactions" in options)
    windows = batch_windows(source, start, end, max_chunk_bytes, bounds)
    mask_needed = bounds.start_ts is not None or bounds.end_ts is not None or bounds.offsets
    # Every record is kept: the values can be parsed as they are decoded.
    parse_spec = None if mask_needed else value_only(value_specs)
    json_columns = [spec.column for spec in value_specs if spec.format == "json"]
    warned = set() if warned is None else warned
    for a, b, _last in prune_windows(source, windows, bounds, result, keep_control):
        result.position = a
        data = source.read(a, b - a)
        kwargs = {"on_error": "raise", **options}  # decode_report's default is to skip
        if read_committed and transactions is not None and "aborted_transactions" not in options:
            first_offset = struct.unpack_from(">q", data, 0)[0] if b - a >= 8 else 0
            kwargs["aborted_transactions"] = aborted_for(transactions, first_offset)
            kwargs["hide_open_transactions"] = False
        try:
            report = None
            if parse_spec is not None:
                native = native_kwargs(topic=segment.topic, partition=segment.partition, **kwargs)
                stream = decode_parsing(data, parse_spec, **native)
                report = None if stream is None else report_of(data, stream, pa.table(stream))
            parsed = report is not None
            if report is None:  # a value failed: parsed after, it is named with its offset
                report = decode_report(data, topic=segment.topic, partition=segment.partition, **kwargs)
        except KafkaBatchError as error:
            raise relocate(error, segment, a, bytes(data[:512]) if a == 0 else None) from None
        finally:
            del data
            source.release()
        result.batches += report.batches
        result.records += report.records
        result.skipped.extend(relocate(e, segment, a) for e in report.skipped)
        result.skipped_bytes += report.skipped_bytes
        result.trailing_bytes += report.trailing_bytes
        if report.end != "clean":
            result.status = report.end
        if report.end_error is not None:
            result.end_error = relocate(report.end_error, segment, a)
        for batch in report.table.to_batches(max_chunksize=max_records_per_batch):
            if mask_needed and batch.num_rows:
                masked = bounds.mask(batch)
                if masked is not None:
                    mask, kept = masked
                    if kept < batch.num_rows:  # filter copies: only when something goes
                        batch = batch.filter(mask) if kept else batch.slice(0, 0)
            if batch.num_rows:
                result.rows += batch.num_rows
                last = batch.column(batch.schema.get_field_index("offset"))[-1].as_py()
                result.last_offset = last if result.last_offset is None else max(result.last_offset, last)
                if value_specs and not parsed:  # only the records in bounds are parsed
                    out = apply_all(pa.Table.from_batches([batch]), value_specs, options.get("threads")).to_batches()
                else:
                    out = [batch]
                for batch in out:
                    if json_columns:
                        warn_unmatched(batch, json_columns, segment.topic, warned)
                    yield batch
        result.position = b


def prune_windows(
    source: Any,
    windows: Iterable[tuple[int, int, bool]],
    bounds: Bounds,
    result: SegmentResult,
    keep_control: bool = False,
) -> Iterator[tuple[int, int, bool]]:
    """``windows`` without the batches whose headers rule out every record in
    ``bounds`` (see :func:`kafkabatch.log.prune.kept_ranges`); a window
    with holes becomes one range per run of kept batches, each decoded on its
    own (under ``read_committed`` each gets the aborted list for its own first
    offset). Their bytes are counted in ``result.pruned_bytes``."""
    for a, b, last in windows:
        if not prunes_batches(bounds):
            yield a, b, last
            continue
        ranges, pruned = source_kept_ranges(source, a, b, bounds, keep_control)
        result.pruned_bytes += pruned
        for i, (x, y) in enumerate(ranges):
            yield x, y, last and i == len(ranges) - 1


#: What :func:`plan_segments` says of a segment: skipped by its name, the
#: bytes of a local file to read, or to be sought by the caller (remote, Aiven).
SKIPPED, BYTES, ELSEWHERE = 0, 1, 2


def plan_segments(
    group: list[Segment], bounds: Bounds, keep_control: bool = False, *, open_files: bool = True
) -> list[tuple[int, int, int]]:
    """The core's plan of each segment of one partition (in offset order) for
    ``bounds``: ``(how, start, end)``, ``how`` one of :data:`SKIPPED` (its
    name shows it holds no offset in the bounds: the overlap rule's offsets),
    :data:`BYTES` (local files: sought with their ``.index``, narrowed by one
    header walk under time bounds; ``start == end``: nothing to read) or
    :data:`ELSEWHERE` (for the caller to seek, e.g. with :func:`seek_position`;
    every segment its name leaves without ``open_files``). Indexes that can't
    be trusted warn here."""
    plans, warned = _native_plan_partition(
        [(s.path, s.base_offset, s.size, s.layout, s.floor_offset, s.stop_offset) for s in group],
        start_offset=bounds.start_offset,
        end_offset=bounds.end_offset,
        start_ts_us=bounds.start_ts,
        end_ts_us=bounds.end_ts,
        keep_control=keep_control,
        open=open_files,
    )
    for text in warned:
        warnings.warn(text, IndexFileWarning, stacklevel=3)
    return plans


def scan_log(
    path: Roots,
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
    tiered_keys: Any = None,
    where: RecordFilter | None = None,
    filesystem: pafs.FileSystem | None = None,
    **decode_options: Any,
) -> pa.RecordBatchReader:
    """Stream every segment under ``path`` (see :func:`list_segments`) as
    record batches of :data:`kafkabatch.SCHEMA`, in topic, partition, offset
    order, with bounded memory. ``path`` may be a list of paths, URIs and
    globs (``["s3://bucket/kafka/", "/var/lib/kafka/data/orders-0"]``): their
    segments are joined, each offset of a partition read once.

    Segments are memory-mapped (remote ones read by ranges, see :mod:`kafkabatch.log.fs`)
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

    Tiered storage (see :mod:`kafkabatch.log.tiered`): ``path`` may be a
    bucket prefix of Aiven remote storage or Kafka's LocalTieredStorage, or a
    glob spanning a bucket and a broker log dir: each offset of a partition is
    returned once. ``tiered_keys`` maps key-pair ids to PEM private keys (paths
    or text) for encrypted segments. A remote segment that can't be read (no
    key, a failing GCM tag, a truncated object, a bad manifest) raises
    :class:`TieredStorageError`, or with ``on_error="skip"`` is counted in
    its :class:`SegmentResult` and the scan goes on.

    ``where`` (a :class:`~kafkabatch.log.prune.RecordFilter`) adds predicates
    on topic, partition, offset and timestamp: folders, segments and batches
    that can't hold a match are skipped, and the rows are filtered exactly.

    ``filesystem`` (a :class:`pyarrow.fs.FileSystem`) reads through it, as
    :func:`pyarrow.dataset.dataset` does: ``path`` is then a path in that
    file system (``"bucket/kafka/"`` for an ``S3FileSystem``, globs and lists
    too); a URI with a scheme is a :class:`ValueError`. Everything else is
    the same (layouts, tiered keys, index seeks, pruning, read_committed),
    each listing and ranged read a call of the file system, so its credentials
    (pyarrow's chain: ``~/.aws`` profiles, SSO...) are the ones used. An fsspec
    file system is wrapped first: ``pyarrow.fs.PyFileSystem(pyarrow.fs.FSSpecHandler(fs))``.

    >>> reader = scan_log("/var/lib/kafka/data/orders-0", start_timestamp="2024-05-01")  # doctest: +SKIP
    >>> reader.read_all().num_rows                                                         # doctest: +SKIP
    1000
    >>> from pyarrow import fs
    >>> s3 = fs.S3FileSystem(region="eu-west-1")  # credentials: AWS_PROFILE, ~/.aws, SSO...  # doctest: +SKIP
    >>> scan_log("my-bucket/kafka/orders-*", filesystem=s3).read_all().num_rows           # doctest: +SKIP
    1000
    """
    skip = decode_options.get("on_error", "raise") != "raise"
    problems: list[tuple[Segment, Exception]] | None = [] if skip else None
    if "aborted_transactions" in decode_options and decode_options["aborted_transactions"] is None:
        del decode_options["aborted_transactions"]  # none given: the pre-pass finds them (as read_segment does)
    read_committed = decode_options.get("isolation") == "read_committed"
    # read_committed learns from markers (kept by the plan) when given the aborted list instead of a pre-pass
    listed = "aborted_transactions" in decode_options
    # hide_open_transactions with a list: the open ones are those no marker in the partition ends (the pre-pass's)
    pre_pass = read_committed and (not listed or bool(decode_options.get("hide_open_transactions")))
    times = functools.cache(
        lambda: tuple(None if t is None else parse_timestamp(t) for t in (start_timestamp, end_timestamp))
    )
    bounds_by: dict[tuple[str, int], Bounds] = {}

    def bounds_of(tp_topic: str, tp_partition: int) -> tuple[int | None, ...] | None:
        if where is not None and not where.keeps(tp_topic, tp_partition):
            return None  # the partition is left out
        b = Bounds(
            bound_for(start_offset, tp_topic, tp_partition, "start_offset"),
            bound_for(end_offset, tp_topic, tp_partition, "end_offset"),
            *times(),
        )
        if where is not None:
            b = where.bounds(b)
        bounds_by[(tp_topic, tp_partition)] = b
        return b.start_offset, b.end_offset, b.start_ts, b.end_ts

    filesystem = fs.filesystem_of(filesystem)
    # One core call: the roots listed and joined, each partition planned (and its local pre-pass walked).
    planned, index_warnings = listed_roots(
        root_list(path, filesystem=filesystem),
        _native_plan_roots,
        topic,
        partition,
        tiered_keys,
        problems,
        filesystem=filesystem,
        bounds_of=bounds_of,
        keep_control=read_committed and listed,
        transactions=pre_pass,
    )
    for text in index_warnings:
        warnings.warn(text, IndexFileWarning, stacklevel=2)
    segments = [seg for segs, _plans, _txns in planned for seg in segs]
    chunk = parse_size(max_chunk_bytes)
    if chunk <= 0:
        raise ValueError("max_chunk_bytes must be positive")
    check_keywords(
        "scan_log", decode_options, [*keyword_names(scan_log)[1:], *VALUE_OPTIONS, *INTERNAL_OPTIONS, *DECODE_OPTIONS]
    )
    internal = pop_internal(decode_options)
    value_options = typed_options({k: decode_options.pop(k) for k in VALUE_OPTIONS if k in decode_options})
    if internal is not None and value_options is not None:
        raise ValueError("internal= decodes the raw key and value: leave value_format and key_format binary")
    options = check_decode_options(decode_options, "scan_log", [*keyword_names(scan_log)[1:], *VALUE_OPTIONS])
    value_specs = (
        []
        if value_options is None
        else specs(
            value_options,
            topics=sorted({s.topic for s in segments}),
            sample=lambda column: first_values(
                segments, column, max_decompressed_size=options.get("max_decompressed_size")
            ),
        )
    )
    schema = typed_schema(SCHEMA, value_specs)
    kinds: list[str] = []
    added = pa.schema([])
    if internal is not None:
        kinds = sorted({k for k in (internal.kind_for(s.topic) for s in segments) if k is not None})
        if kinds:
            added = internal_schema(kinds, internal)
            for f in added:
                schema = schema.append(f)

    times()  # parsed now, not halfway through the stream
    if max_records_per_batch is not None and max_records_per_batch <= 0:
        raise ValueError("max_records_per_batch must be positive")
    for spec, what in ((start_offset, "start_offset"), (end_offset, "end_offset")):
        if spec is not None:
            bound_for(spec, "", 0, what)  # type check now, not halfway through the stream

    warned: Warned = set()  # topics whose JSON values match no field of the schema, warned once
    typed = typed_columns(value_specs)  # the parsers, made once for every segment
    # A Fetch response's aborted list instead of the pre-pass: each listed transaction ends at its producer's
    # ABORT marker, learnt as the partition is read (the plan keeps the markers).
    fetched: list[Transaction] | None = None
    if listed:
        if not read_committed:
            raise ValueError("aborted_transactions needs isolation='read_committed'")
        fetched = [Transaction(pid, first, None) for pid, first in aborted_pairs(options["aborted_transactions"]) or ()]

    def record_batches() -> Iterator[pa.RecordBatch]:
        for seg, error in problems or ():  # segments that could not even be listed: counted, named
            log.warning("skipped %s", error, extra=REPORTED)
            if on_segment is not None:
                on_segment(SegmentResult(seg, skipped=[error]))
        for group, plans, found in planned:
            bounds = bounds_by[(group[0].topic, group[0].partition)]
            transactions = None
            if pre_pass:
                transactions = (
                    [Transaction(*t) for t in found] if found is not None else partition_transactions(group, skip=skip)
                )
            if fetched is not None:  # learnt per partition (with the open ones of the pre-pass)
                transactions = sorted([*(transactions or ()), *fetched], key=lambda t: (t.first_offset, t.producer_id))
            for i, (seg, (how, a, b)) in enumerate(zip(group, plans)):
                if how == SKIPPED:  # its name shows it holds no offset in the bounds
                    if on_segment is not None:
                        on_segment(SegmentResult(seg))
                    continue
                result = SegmentResult(seg)
                if how == BYTES and a >= b:  # its headers rule out every batch: left unread
                    result.start = result.end = result.position = a
                else:  # the bytes planned of a local file; else the core's reader seeks (Aiven) or reads it whole
                    yield from read_in_core(
                        seg,
                        next_start(group, i),
                        bounds,
                        chunk,
                        transactions,
                        max_records_per_batch,
                        result,
                        value_specs,
                        options,
                        on_segment=on_segment,
                        warned=warned,
                        byte_range=(a, b) if how == BYTES else None,
                        typed=typed,
                        fetch_aborted=None if fetched is None else False,
                    )
                if on_segment is not None:
                    on_segment(result)

    batches = record_batches
    if internal is not None and kinds:
        batches = functools.partial(_with_internal, record_batches, internal, added)
    return pa.RecordBatchReader.from_batches(schema, batches())


def _with_internal(
    batches: Callable[[], Iterator[pa.RecordBatch]], internal: Internal, added: pa.Schema
) -> Iterator[pa.RecordBatch]:
    for batch in batches():
        yield decode_internal_columns(batch, internal, added)


def read_in_core(
    seg: Segment,
    following: int | None,
    bounds: Bounds,
    chunk: int,
    transactions: list[Transaction] | None,
    max_records_per_batch: int | None,
    result: SegmentResult,
    value_specs: Sequence[ValueSpec],
    options: Mapping[str, Any],
    on_segment: Callable[[SegmentResult], None] | None = None,
    warned: Warned | None = None,
    byte_range: tuple[int, int] | None = None,
    typed: list[TypedColumn] | None = None,
    fetch_aborted: bool | None = None,
) -> Iterator[pa.RecordBatch]:
    """Read a segment with the core's reader: ``byte_range`` of a local file
    (as planned), a remote (Aiven) segment sought with
    its ``.indexes`` object; its twins read instead when it turns out damaged
    (up to ``following``, where the partition's next segment takes over),
    chunks that can't be undone skipped under ``on_error="skip"``, rows in
    ``bounds`` only (those the overlap rule leaves it), ``transactions``: the
    partition's pre-pass under read_committed; the columns of
    ``value_specs`` parsed by the core as each chunk is decoded (``typed``:
    their parsers, made already); ``fetch_aborted`` (``hide_open``):
    ``transactions`` are a Fetch response's aborted list, each ended at its
    producer's ABORT marker as the read learns them (the list is updated in
    place, for the partition's next segment). What it found (rows, skipped batches
    and bytes, trailing bytes, a twin read instead) goes into ``result``."""
    native = {
        k: options[k]
        for k in ("validate_crc", "include_control", "on_error", "max_decompressed_size")
        if k in options and options[k] is not None
    }
    read = _native_read_segment(
        seg,
        following=following,
        byte_range=byte_range,
        start_offset=bounds.start_offset,
        end_offset=bounds.end_offset,
        start_ts_us=bounds.start_ts,
        end_ts_us=bounds.end_ts,
        transactions=None
        if transactions is None
        else [(t.producer_id, t.first_offset, t.last_offset) for t in transactions],
        tiered_keys=dict(seg.keys),
        max_chunk_bytes=chunk,
        typed=typed_columns(value_specs) if typed is None else typed,
        fetch_aborted=fetch_aborted,
        **native,
    )
    json_columns = [spec.column for spec in value_specs if spec.format == "json"]
    warned = set() if warned is None else warned
    pieces = iter(read)
    while True:
        try:
            one = next(pieces, None)
        except TieredStorageError:
            raise
        except ValueDecodeError:  # named by its offset already
            raise
        except KafkaBatchError as error:  # its positions are the file's
            raise in_file(error, seg.path, head=_head(seg, error)) from None
        if one is None:
            break
        for batch in pa.RecordBatchReader.from_stream(one).read_all().to_batches(max_chunksize=max_records_per_batch):
            if json_columns:
                warn_unmatched(batch, json_columns, seg.topic, warned)
            yield batch
    report = read.report()
    assert report is not None  # the read went to its end
    result.start, result.end = report["start"], report["end"]
    result.position = report["end"]
    result.batches += report["batches"]
    result.records += report["records"]
    result.rows += report["rows"]
    result.skipped.extend(in_file(e, seg.path) for e in report["skipped"])
    result.skipped_bytes += report["skipped_bytes"]
    result.trailing_bytes += report["trailing_bytes"]
    result.pruned_bytes += report["pruned_bytes"]
    result.fetched_bytes += report["fetched"]
    if report["status"] != "clean":
        result.status = report["status"]
    if report["end_error"] is not None:
        result.end_error = in_file(report["end_error"], seg.path)
    if report["last_offset"] is not None:
        result.last_offset = report["last_offset"]
    for text in report["index_warnings"]:
        warnings.warn(text, IndexFileWarning, stacklevel=3)
    if fetch_aborted is not None and transactions is not None and report["transactions"] is not None:
        transactions[:] = [Transaction(*t) for t in report["transactions"]]
    lost = report["lost"]
    if report["twin"] is not None:  # one segment, reported once: the twin's rows and losses are its
        result.twin = report["twin"]
        result.skipped.extend(lost)
        if on_segment is None:  # (a caller taking SegmentResults finds it in the result)
            stop = seg.stop_offset
            if following is not None:
                stop = following if stop is None else min(stop, following)
            warnings.warn(
                f"{lost[0]}; read offsets {report['twin_from']}..{'' if stop is None else stop - 1} "
                f"from {report['twin']} instead",
                tiered.TieredStorageWarning,
                stacklevel=2,
            )
        return
    for damage in lost:
        result.skipped.append(damage)
        log.warning("skipped %s", damage, extra=REPORTED)


#: A typed column as the core's reader takes it: the column, its parser, and
#: the local ids of schema GUIDs when its values are Confluent-framed.
TypedColumn = tuple[str, Any, "dict[str, int] | None"]


def typed_columns(value_specs: Sequence[ValueSpec]) -> list[TypedColumn]:
    """The parsers of ``value_specs`` for the core's reader (see :meth:`ValueSpec.apply`)."""
    return [(spec.column, spec.parser(), dict(spec.guid_ids) if spec.confluent else None) for spec in value_specs]


def _head(seg: Segment, error: Exception) -> bytes | None:
    """The first bytes of a local segment when ``error`` is at its first byte
    (for :func:`~kafkabatch.log.errors.in_file`'s guess of what the file is)."""
    if seg.layout == "aiven" or getattr(error, "batch_position", None) != 0:
        return None
    source = fs.open_source(seg.path, seg.filesystem)
    try:
        return bytes(source.read(0, min(512, source.size)))
    finally:
        source.release()
        source.close()


def next_start(group: list[Segment], i: int) -> int | None:
    """The first offset the segment after ``group[i]`` returns (None for the last)."""
    if i + 1 >= len(group) or group[i + 1].base_offset is None:
        return None
    following = group[i + 1]
    base = following.base_offset or 0
    return base if following.floor_offset is None else max(base, following.floor_offset)


def typed_schema(schema: pa.Schema, value_specs: Iterable[ValueSpec]) -> pa.Schema:
    """``schema`` with the columns of ``value_specs`` given their parsed types."""
    for spec in value_specs:
        index = schema.get_field_index(spec.column)
        schema = schema.set(index, pa.field(spec.column, spec.output_type))
    return schema
