"""Planning a ``kafka-log`` read: which byte ranges of which segments, cut and packed into Spark tasks.

Shared by the batch reader and the stream reader's micro-batches.

>>> [len(p.value) for p in pack(splits, 128 << 20, 2)]  # doctest: +SKIP
[17, 18]
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from typing import Any

from pyspark.sql.datasource import InputPartition

import kafkabatch._kafkabatch as _native
import kafkabatch.log.fs as fs
import kafkabatch.log.tiered as tiered
from kafkabatch.log.bounds import Bounds
from kafkabatch.log.index import IndexFileWarning, offset_index_entries
from kafkabatch.log.listing import Segment, open_segment, segment_bounds
from kafkabatch.log.roots import list_roots
from kafkabatch.log.scan import BYTES, SKIPPED, next_start, plan_segments, seek_position
from kafkabatch.log.txn import Transaction
from kafkabatch.log.windows import batch_length, batch_ranges
from kafkabatch.spark.options import Options

log = logging.getLogger("kafkabatch.spark")


class LogSplit(InputPartition):
    """One Spark task: bytes ``[start, end)`` of one segment (a batch-aligned range)."""

    def __init__(
        self,
        segment: Segment,
        start: int,
        end: int,
        bounds: Bounds,
        transactions: list[Transaction] | None,
        check_start: bool = False,
        work: int | None = None,
        twin_stop: int | None = None,
    ) -> None:
        super().__init__((segment.path, start, end))
        self.segment = segment
        self.start = start
        self.end = end
        self.bounds = bounds
        self.transactions = transactions
        self.check_start = check_start  # the start came from a .index file: make sure it's a batch
        # Spark's work for these bytes, in bytes of wire data (see estimate_work).
        self.work = end - start if work is None else work
        # Where the partition's next segment takes over: a damaged segment's twin is read up to there.
        self.twin_stop = twin_stop


class LogSplitGroup(InputPartition):
    """One Spark task reading several consecutive splits, in order."""

    def __init__(self, splits: list[LogSplit]) -> None:
        super().__init__(tuple(split.value for split in splits))
        self.splits = splits


#: Spark's ``spark.sql.files.openCostInBytes``: what a split costs beyond its bytes when packing tasks.
OPEN_COST_BYTES: int = _native.SPARK_OPEN_COST_BYTES


#: The weights of the core's work estimate (``kafkabatch::scan::tasks``), as the
#: tests state them: a compressed batch counts this many times its wire size,
#: and each record :data:`_RECORD_WORK` bytes more. Fitted on the JVM CPU time of
#: ``kafka-log`` -> Parquet tasks (one segment each, every codec): about 2 ms
#: per 1,000 rows plus 5.8 ms per MB of Arrow, so rows count about as much as
#: 350 bytes; lz4/zstd/snappy batches of JSON-like values decode to 3.2-4x
#: their wire size.
_COMPRESSED_WORK = 3


_RECORD_WORK = 350


def estimate_work(source: Any, start: int, end: int) -> int:
    """What decoding ``[start, end)`` of a segment costs Spark downstream, in
    bytes, judged by its first data batches (up to 16; control batches
    skipped): their compression and records per byte, estimated in the core
    (``kafkabatch::scan::tasks::estimate_work``, which the JVM source uses too).
    The JVM's work (Arrow to rows, then the sink) follows rows and decoded
    bytes, not wire bytes: a segment of compressed small records costs it
    3x one of uncompressed large ones of the same size."""
    view = source.read(start, end - start) if end > start else b""
    try:
        return int(_native._spark_estimate_work(view, start, end))
    finally:
        del view
        release = getattr(source, "release", None)
        if release is not None:
            release()


def pack(splits: list[LogSplit], max_bytes: int, min_partitions: int) -> list[InputPartition]:
    """Consecutive splits packed into balanced tasks, so a task reads a
    partition's segments in offset order (the core's rule,
    ``kafkabatch::scan::tasks::pack``, which the JVM source uses too).

    The number of tasks is ``min_partitions``, or, when that would make
    tasks read more than ``max_bytes`` of segments, the next multiple of
    ``min_partitions`` that doesn't, so the last wave of tasks keeps every
    core busy. Each split also costs :data:`OPEN_COST_BYTES` (as in Spark's
    ``FilePartition``) when placing cuts and in the smallest task allowed,
    but not against ``max_bytes``. Never more tasks than splits. Cuts go
    where the running estimated work (``split.work``, see
    :func:`estimate_work`) is nearest to a multiple of ``total / tasks``,
    so tasks take about the same time."""
    if not splits:
        return []
    groups = _native._spark_pack(
        [s.end - s.start for s in splits], [s.work for s in splits], max(max_bytes, 0), max(min_partitions, 0)
    )
    if len(groups) == len(splits):
        return list(splits)
    return [splits[a] if b - a == 1 else LogSplitGroup(splits[a:b]) for a, b in groups]


def list_source_segments(options: Options) -> list[Segment]:
    """The segments under the ``path``/``paths`` options (see :func:`kafkabatch.list_segments`),
    filtered by ``pathGlobFilter``, in topic, partition, offset order."""
    if not options.paths:
        return []
    problems: list[tuple[Segment, Exception]] | None = None if options.mode == "FAILFAST" else []
    # Every path joined (each offset once where a partition lies under several), as scan_log joins a list.
    segments = list_roots(
        list(options.paths),
        topic=options.topic,
        partition=options.partition,
        tiered_keys=options.tiered_keys,
        problems=problems,
        name_glob=options.path_glob_filter or None,  # as Spark's pathGlobFilter: a glob on file names only
    )
    for _seg, error in problems or ():  # mode DROPMALFORMED/PERMISSIVE: left out, and said
        log.warning("kafka-log %s: skipped %s", options.mode, error)
    # each partition's segments come in offset order: sorted by partition alone (a stable sort)
    return sorted(segments, key=lambda s: (s.topic, s.partition))


def plan_partition(
    opts: Options,
    group: list[Segment],
    bounds: Bounds,
    transactions: list[Transaction] | None,
    seek: Callable[[Segment, Bounds, Any], tuple[int, int | None]] = seek_position,
) -> list[LogSplit]:
    """The splits (byte ranges, at most ``maxBytesPerPartition`` each) that read
    ``bounds`` of one topic-partition's segments ``group`` (in offset order);
    shared by the batch reader and the stream reader's micro-batches (whose
    ``seek`` knows batch positions from its own walk of the headers)."""
    splits: list[LogSplit] = []
    # The core's plan: segments skipped by their names; with the default seek, local
    # files sought and narrowed there too (a segment whose headers rule out every batch is left out).
    planned = plan_segments(group, bounds, open_files=seek is seek_position)
    for i, (seg, (how, a, b)) in enumerate(zip(group, planned)):
        if seg.size == 0 or how == SKIPPED or (how == BYTES and a >= b):
            continue
        seg_bounds = segment_bounds(seg, bounds)
        txns = None if transactions is None else transactions_for(transactions, group, i)
        twin_stop = next_start(group, i)
        if seg.twins:
            # Another copy of its offsets (a repeated upload, rare): one task reads the
            # whole segment, so that a damaged piece is read from the copy (see reading._read_split).
            splits.append(LogSplit(seg, 0, seg.size, seg_bounds, txns, twin_stop=twin_stop))
            continue
        try:
            source = open_segment(seg)
        except tiered.TieredStorageError:
            if opts.mode == "FAILFAST":
                raise
            # One task for the segment: the mode counts it (see reading.read_split).
            splits.append(LogSplit(seg, 0, seg.size, seg_bounds, txns, twin_stop=twin_stop))
            continue
        try:
            start, end = (a, b) if how == BYTES else seek(seg, seg_bounds, source)
            # Remote objects: a read per split would cost a request each; count wire bytes.
            local = not fs.is_remote(seg.path) and seg.layout != "aiven"
            for a, b, from_index in split_segment(seg, start, opts.max_bytes_per_partition):
                if end is not None:
                    if a >= end:
                        break
                    b = min(b, end)
                splits.append(
                    LogSplit(
                        seg,
                        a,
                        b,
                        seg_bounds,
                        txns,
                        check_start=from_index and a > 0,
                        work=estimate_work(source, a, b) if local else None,
                        twin_stop=twin_stop,
                    )
                )
        finally:
            source.close()
    return splits


def transactions_for(transactions: list[Transaction], group: list[Segment], i: int) -> list[Transaction]:
    """The transactions a task reading segment ``i`` of a partition may need."""
    seg = group[i]
    nxt = group[i + 1].base_offset if i + 1 < len(group) else None
    out = []
    for t in transactions:
        if seg.base_offset is not None and t.last_offset is not None and t.last_offset < seg.base_offset:
            continue
        if nxt is not None and t.first_offset >= nxt:
            continue
        out.append(t)
    return out


def split_segment(seg: Segment, start: int, max_bytes: int) -> list[tuple[int, int, bool]]:
    """Byte ranges of one segment for separate tasks: ``(start, end, from_index)``."""
    if max_bytes <= 0 or seg.size - start <= max_bytes:
        return [(start, seg.size, False)]
    if seg.layout == "aiven" and seg.base_offset is not None:
        # Cut at the first indexed batch of a chunk: each task fetches its own chunks.
        source = open_segment(seg)
        try:
            indexes = tiered.sibling(seg.path, ".indexes")
            cuts = tiered.chunk_cuts(source, indexes, seg.base_offset, start, max_bytes)
        finally:
            source.close()
        edges = [start, *cuts, seg.size]
        return [(a, b, bool(cuts) and a > start) for a, b in zip(edges, edges[1:])]
    if fs.is_remote(seg.path):
        # Walking batch headers would read the whole object: use the broker's
        # offset index (an entry every index.interval.bytes, 4 KiB by default).
        cuts = index_cuts(seg, start, max_bytes)
        if not cuts:
            return [(start, seg.size, False)]
        edges = [start, *cuts, seg.size]
        return [(a, b, True) for a, b in zip(edges, edges[1:])]
    source = open_segment(seg)
    try:
        return [(a, b, False) for a, b in batch_ranges(source, start, seg.size, max_bytes)]
    finally:
        source.close()


def index_cuts(seg: Segment, start: int, max_bytes: int) -> list[int]:
    """Task cuts of a remote segment from its ``.index`` (parsed by
    :func:`kafkabatch.log.index.offset_index_entries`, as the seek path does),
    each checked to be a batch start that agrees with its entry. An index
    that is missing, stale or garbage gives no cuts (one task for the
    segment, with an :class:`~kafkabatch.IndexFileWarning`), never an error."""
    base, _, query = seg.path.partition("?")
    if not base.endswith(".log") or seg.base_offset is None:
        return []
    index_path = base[: -len(".log")] + ".index" + (f"?{query}" if query else "")
    try:
        filesystem, fs_path = fs.resolve_remote(index_path)
        with filesystem.open_input_file(fs_path) as f:
            offsets, positions = offset_index_entries(f.read(), seg.base_offset)
    except (OSError, ValueError) as e:
        if not isinstance(e, FileNotFoundError):
            warnings.warn(f"{index_path}: {e}; reading {seg.path} in one task", IndexFileWarning, stacklevel=2)
        return []
    cuts = []
    last = start
    for offset, position in zip(offsets, positions):
        if position >= seg.size:
            break
        if position - last >= max_bytes:
            cuts.append((offset, position))
            last = position
    if not cuts:
        return []
    source = open_segment(seg)
    try:
        for offset, position in cuts:
            header = bytes(source.read(position, 61))
            length = batch_length(header) if len(header) >= 17 else None
            base_offset = int.from_bytes(header[:8], "big", signed=True) if len(header) >= 8 else None
            if (
                length is None
                or position + length > seg.size
                or header[16] > 2
                or base_offset is None
                or (base_offset > offset)
            ):
                warnings.warn(
                    f"{index_path}: entry {offset} -> byte {position} is not a batch of that offset in "
                    f"{seg.path} (a stale index?); reading the segment in one task",
                    IndexFileWarning,
                    stacklevel=2,
                )
                return []
    finally:
        source.close()
    return [position for _, position in cuts]
