"""Structured Streaming over growing Kafka log folders: ``spark.readStream.format("kafka-log")``.

The stream reader behind :meth:`kafkabatch.spark.KafkaLogDataSource.streamReader`
(PySpark 4.2+). Offsets are those of Spark's Kafka source, JSON
``{"orders": {"0": 1200, "1": 877}}``: per topic-partition the next offset to
read (a batch's ``last_offset + 1``). A micro-batch from ``start`` to ``end``
is exactly the batch source's read with ``startingOffsets=start`` and
``endingOffsets=end`` (exclusive), planned by the same code
(:func:`kafkabatch.spark.plan_partition`), so a replayed micro-batch after a
restart reads the same records.

What the driver keeps between triggers, per topic-partition
(:class:`_PartitionLog`): the segment listing, and a walk of the batch
headers of the complete batches it has seen (where each segment's walk
stopped, the next offset, the transactions still open or aborted, and the
byte position of each batch end for ``maxBytesPerTrigger``). A trigger lists
the folders again (file names and sizes only) and walks only the bytes added
since; a half-written batch at the tail of the active segment stops the walk
and is walked again, complete, on a later trigger. After a restart the walk
starts at the batch holding the checkpoint's offset (found with the
segment's ``.index``), not at the start of the log.

With ``isolation=read_committed`` the end of a micro-batch never passes a
partition's last stable offset: the first offset of its earliest open
transaction. Those records are read after their COMMIT marker arrives (and
aborted ones never), as a read_committed Kafka consumer sees them.

>>> q = (spark.readStream.format("kafka-log")                        # doctest: +SKIP
...      .option("maxOffsetsPerTrigger", 1_000_000).load("/data/orders-*")
...      .writeStream.format("parquet").option("checkpointLocation", ck)
...      .trigger(availableNow=True).start(out))
"""

from __future__ import annotations

import bisect
import dataclasses
import logging
import math
import warnings
from array import array
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from kafkabatch._decode import iter_batches, valid_bytes
from kafkabatch._kafkabatch import CorruptBatchError, KafkaBatchError
from kafkabatch.log.bounds import Bounds
from kafkabatch.log.listing import Segment, open_segment
from kafkabatch.log.scan import seek_position
from kafkabatch.log.txn import Transaction
from kafkabatch.log.windows import big_batch
from kafkabatch.spark.options import Options
from kafkabatch.spark.planning import LogSplit, LogSplitGroup, list_source_segments, pack, plan_partition
from kafkabatch.spark.reading import read_split
from kafkabatch.spark.values import SparkValueColumns

__all__ = ["DataLossError", "KafkaLogStreamReader"]

log = logging.getLogger("kafkabatch.spark.stream")

TopicPartition = tuple[str, int]

#: Bytes of segment read at once while walking batch headers.
_WALK_CHUNK = 8 << 20


class DataLossError(KafkaBatchError):
    """Records a stream was due to read are gone (segments deleted by retention
    before they were read, or a checkpoint ahead of the log). Raised with
    ``failOnDataLoss=true`` (the default); with ``false`` it is a warning and
    the stream goes on from the earliest offset still there."""


class DataLossWarning(UserWarning):
    """See :class:`DataLossError`: what ``failOnDataLoss=false`` reports instead."""


# --------------------------------------------------------------------------
# what the driver knows of one topic-partition
# --------------------------------------------------------------------------


class _PartitionLog:
    """One topic-partition's segments and a walk of their complete batches
    from offset ``origin`` on."""

    def __init__(self, topic: str, partition: int, segments: list[Segment], origin: int | None) -> None:
        self.topic = topic
        self.partition = partition
        self.segments = segments
        # Where the walk starts: the segment holding ``origin`` (the last one
        # whose base offset is <= origin), at the batch holding it.
        first = 0
        if origin is not None:
            for i, each in enumerate(segments):
                if each.base_offset is not None and each.base_offset <= origin:
                    first = i
        self.first = first  # index in segments where the walk started
        self.walked: dict[str, int] = {}  # segment path -> end of its complete batches walked
        self.seg_base: dict[str, int] = {}  # segment path -> walked bytes (total_bytes) at its byte 0
        self.cursor = first  # the segment being walked
        start_byte = 0
        seg = segments[first] if segments else None
        if seg is not None and origin is not None and seg.base_offset is not None and origin > seg.base_offset:
            source = open_segment(seg)
            try:
                start_byte, _ = seek_position(seg, Bounds(start_offset=origin), source)
            finally:
                source.close()
        if seg is not None:
            self.walked[seg.path] = start_byte
        base = seg.base_offset if seg is not None and seg.base_offset is not None else 0
        self.origin = max(base, origin) if origin is not None else base
        # After the last complete batch walked: from the batch headers only, so
        # an origin past the end of the log shows (a checkpoint ahead of it).
        self.next_offset = base
        if seg is not None and start_byte > 0:
            source = open_segment(seg)
            try:
                header = bytes(source.read(start_byte, 8))
            finally:
                source.close()
            if len(header) == 8:
                self.next_offset = max(base, int.from_bytes(header, "big", signed=True))
        self.open_txns: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self.aborted: list[Transaction] = []
        # For maxBytesPerTrigger: the next offset after each walked batch, and
        # the bytes walked up to its end (cumulative over segments).
        self.ends = array("q")
        self.bytes_at = array("q")
        self.total_bytes = 0

    # ---- listing and walking ----------------------------------------------

    @property
    def earliest(self) -> int:
        """The first offset still in the log, by the first segment's file name."""
        for seg in self.segments:
            if seg.base_offset is not None:
                return seg.base_offset
        return 0

    def stale(self, segments: list[Segment]) -> bool:
        """Whether a new listing invalidates the walk (a walked segment gone or
        shrunk: compaction swapped it, or the folder was recreated)."""
        sizes = {seg.path: seg.size for seg in segments}
        for path, walked in self.walked.items():
            size = sizes.get(path)
            if size is None:
                # retention deleting an old, fully walked segment does not matter
                if path != self._cursor_path():
                    continue
                return True
            if size < walked:
                return True
        return False

    def _cursor_path(self) -> str | None:
        return self.segments[self.cursor].path if self.cursor < len(self.segments) else None

    def update(self, segments: list[Segment], mode: str) -> None:
        """Take a new listing and walk the bytes added since the last one."""
        current = self._cursor_path()
        self.segments = segments
        paths = [seg.path for seg in segments]
        if current is not None and current in paths:
            self.cursor = paths.index(current)
        elif current is None and self.walked:
            # every walked segment was the last: continue after the last one walked
            self.cursor = len(segments)
            for i, seg in enumerate(segments):
                if seg.path not in self.walked:
                    self.cursor = i
                    break
        self._walk(mode)

    def _walk(self, mode: str) -> None:
        while self.cursor < len(self.segments):
            seg = self.segments[self.cursor]
            pos = self.walked.setdefault(seg.path, 0)
            self.seg_base.setdefault(seg.path, self.total_bytes - pos)
            if pos == 0 and seg.base_offset is not None and seg.base_offset > self.next_offset:
                self.next_offset = seg.base_offset  # offsets between segments are a gap
            if seg.size > pos:
                pos = self._walk_segment(seg, pos)
                self.walked[seg.path] = pos
            if self.cursor + 1 >= len(self.segments):
                return  # the active segment: a partial batch at its tail waits for the next trigger
            if pos < seg.size:
                # not the last segment, yet bytes that don't frame a batch
                message = (
                    f"{seg.path}: bytes {pos}-{seg.size} are not complete Kafka batches, and the partition "
                    "has later segments, so they will never complete"
                )
                if mode == "FAILFAST":
                    raise CorruptBatchError(message + " (option mode=DROPMALFORMED skips them)")
                log.warning("kafka-log stream: %s; skipped", message)
            self.cursor += 1

    def _walk_segment(self, seg: Segment, pos: int) -> int:
        source = open_segment(seg)
        try:
            end = source.size
            while pos < end:
                n = min(_WALK_CHUNK, end - pos)
                valid = valid_bytes(source.read(pos, n))
                source.release()
                if valid == 0:
                    big = big_batch(source, pos, end, n)  # a batch larger than the chunk
                    source.release()
                    if big is None:
                        break  # an incomplete batch at the tail (or bytes that aren't one)
                    valid = big
                self._walk_batches(source.read(pos, valid))
                source.release()  # the walk keeps no reference to the bytes
                pos += valid
            return pos
        finally:
            source.close()

    def _walk_batches(self, data: Any) -> None:
        for batch in iter_batches(data, validate_crc=False, on_error="keep"):
            self.total_bytes += batch.size_in_bytes
            if batch.error is None:
                nxt = batch.last_offset + 1
                if batch.magic < 2 and batch.last_offset < batch.base_offset + batch.record_count - 1:
                    nxt = batch.base_offset + batch.record_count  # a producer's wrapper (see _ends_before)
                if nxt > self.next_offset:
                    self.next_offset = nxt
                if batch.magic >= 2 and batch.is_transactional:
                    self._transaction(batch)
            self.ends.append(self.next_offset)
            self.bytes_at.append(self.total_bytes)

    def _transaction(self, batch: Any) -> None:
        """As :func:`kafkabatch._collect_transactions`, one batch at a time."""
        pid = batch.producer_id
        if batch.is_control:
            first = self.open_txns.pop(pid, None)
            control = batch.control
            if first is not None and control is not None and control.type == "ABORT":
                self.aborted.append(Transaction(pid, first, batch.base_offset))
        else:
            self.open_txns.setdefault(pid, batch.base_offset)

    # ---- what can be read -------------------------------------------------

    def last_stable(self) -> int:
        """The first offset of the earliest open transaction, else the next offset."""
        return min([self.next_offset, *self.open_txns.values()])

    def transactions(self) -> list[Transaction]:
        """Aborted and open transactions walked, as the planner takes them."""
        txns = self.aborted + [Transaction(pid, first, None) for pid, first in self.open_txns.items()]
        return sorted(txns, key=lambda t: (t.first_offset, t.producer_id))

    def bytes_before(self, offset: int) -> int:
        """Bytes walked of the batches wholly before ``offset``."""
        i = bisect.bisect_right(self.ends, offset)
        return self.bytes_at[i - 1] if i else 0

    def offset_within(self, begin: int, budget: int, limit: int) -> int:
        """The furthest batch end after ``begin`` (at most ``limit``) whose
        bytes from ``begin`` fit in ``budget``; at least one batch."""
        base = self.bytes_before(begin)
        first = bisect.bisect_right(self.ends, begin)
        if first >= len(self.ends):
            return begin
        last = bisect.bisect_right(self.bytes_at, base + budget, lo=first) - 1
        end = self.ends[max(first, last)]
        return min(limit, end)

    def seek(self, seg: Segment, bounds: Bounds, source: Any) -> tuple[int, int | None]:
        """Where to start reading ``seg`` for ``bounds``: the batch holding
        ``bounds.start_offset``, from the walk (no index file needed); what
        :func:`kafkabatch.seek_position` says for a segment not walked."""
        base = self.seg_base.get(seg.path)
        if base is None or bounds.start_offset is None:
            return seek_position(seg, bounds, source) if base is None else (0, None)
        position = self.bytes_before(bounds.start_offset) - base
        if not 0 <= position <= self.walked.get(seg.path, 0):
            return 0, None  # before this segment's first batch walked (or the index was trimmed)
        return position, None

    def forget_before(self, offset: int) -> None:
        """Drop the byte index below a committed offset (keeping the batch
        before it, which says where ``offset``'s batch starts)."""
        i = bisect.bisect_left(self.ends, offset) - 1
        if i > 0:
            del self.ends[:i]
            del self.bytes_at[:i]
        # aborted transactions whose marker is below it matter to no later read
        self.aborted = [t for t in self.aborted if t.last_offset is None or t.last_offset >= offset]


# --------------------------------------------------------------------------
# offsets
# --------------------------------------------------------------------------


def _to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """``{(topic, partition): offset}`` as Spark's Kafka source writes offsets,
    topics and partitions sorted (Spark compares offsets as JSON text)."""
    out: dict[str, dict[str, int]] = {}
    for topic, partition in sorted(offsets):
        out.setdefault(topic, {})[str(partition)] = int(offsets[(topic, partition)])
    return out


def _from_json(offsets: Mapping[str, Any] | None) -> dict[TopicPartition, int]:
    out: dict[TopicPartition, int] = {}
    for topic, partitions in (offsets or {}).items():
        if not isinstance(partitions, Mapping):
            raise ValueError(
                f"kafka-log stream offset: topic {topic!r} must map partitions to offsets, not {partitions!r}"
            )
        for partition, offset in partitions.items():
            out[(str(topic), int(partition))] = int(offset)
    return out


def _rate_limit(
    begin: Mapping[TopicPartition, int],
    until: Mapping[TopicPartition, int],
    limit: int,
    sizes: Mapping[TopicPartition, int],
) -> dict[TopicPartition, int]:
    """Spark's Kafka source's ``rateLimit``: ``limit`` shared between
    partitions in proportion to ``sizes`` (what each has available), rounding
    down, except that a partition with less than one unit due gets one."""
    total = sum(size for size in sizes.values() if size > 0)
    if total <= limit:
        return dict(until)
    out = dict(until)
    for tp, size in sizes.items():
        if size <= 0:
            continue
        prorate = limit * (size / total)
        share = math.ceil(prorate) if prorate < 1 else math.floor(prorate)
        out[tp] = min(until[tp], begin[tp] + share)
    return out


# --------------------------------------------------------------------------
# the stream reader
# --------------------------------------------------------------------------


class KafkaLogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("kafka-log")``: micro-batches over growing log folders.

    Created by :meth:`kafkabatch.spark.KafkaLogDataSource.streamReader`; Spark
    keeps one per running query on the driver (planning), and makes others
    only to ship :meth:`read` to executors, so construction does no I/O.
    """

    def __init__(self, options: Options, values: SparkValueColumns | None = None) -> None:
        if options.has_ending:
            raise ValueError(
                "kafka-log options endingOffsets/endingTimestamp are for batch reads (spark.read); a stream "
                "reads what arrives. Use trigger(availableNow=True) to stop at what is there when it starts"
            )
        if options.starting_timestamp is not None:
            raise ValueError(
                "kafka-log option startingTimestamp is not supported by the stream reader yet; "
                "use startingOffsets (earliest, latest or JSON)"
            )
        self._options = options
        self._values = values  # valueFormat/keyFormat, resolved at load()
        self._logs: dict[TopicPartition, _PartitionLog] = {}
        self._target: dict[TopicPartition, int] | None = None  # Trigger.AvailableNow's end
        self._latest: dict[TopicPartition, int] = {}

    def __getstate__(self) -> dict[str, Any]:
        # Shipped to executors for read(): the options only.
        return {"_options": self._options, "_values": self._values, "_logs": {}, "_target": None, "_latest": {}}

    # ---- driver: listing ----------------------------------------------------

    def _list(self) -> dict[TopicPartition, list[Segment]]:
        try:
            segments = list_source_segments(self._options)
        except FileNotFoundError:
            if not self._logs:
                raise
            segments = []  # the folders went away: nothing new (and nothing to fail on until read)
        groups: dict[TopicPartition, list[Segment]] = {}
        for seg in segments:
            groups.setdefault((seg.topic, seg.partition), []).append(seg)
        return groups

    def _refresh(self, wanted: Mapping[TopicPartition, int | None] | None = None) -> None:
        """List the folders again and walk what was added. ``wanted``: the
        offsets each partition's walk must start at or before (a checkpoint's)."""
        groups = self._list()
        wanted = wanted or {}
        for tp, segments in groups.items():
            state = self._logs.get(tp)
            need = wanted.get(tp)
            if state is None or state.stale(segments) or self._needs_walk(tp, need):
                origin = need if need is not None else (state.origin if state is not None else None)
                state = _PartitionLog(tp[0], tp[1], segments, origin)
                self._logs[tp] = state
            state.update(segments, self._options.mode)
        for tp in list(self._logs):
            if tp not in groups:
                self._logs[tp].segments = []
        self._latest = {tp: self._available(state) for tp, state in self._logs.items() if state.segments}

    def _needs_walk(self, tp: TopicPartition, offset: int | None) -> bool:
        state = self._logs.get(tp)
        if state is None:
            return True
        return offset is not None and offset < state.origin and state.origin > state.earliest

    def _available(self, state: _PartitionLog) -> int:
        if self._options.isolation == "read_committed":
            return state.last_stable()
        return state.next_offset

    def _no_logs_error(self) -> ValueError:
        return ValueError(
            f"kafka-log found no Kafka log segments under {', '.join(map(repr, self._options.paths))}: "
            "a stream needs at least one <topic>-<partition> folder holding *.log segment files "
            "(new partitions and topics matching the path are picked up once it runs)"
        )

    # ---- driver: offsets -------------------------------------------------

    def initialOffset(self) -> dict:
        self._refresh()
        if not self._latest:
            raise self._no_logs_error()
        spec = self._options.starting_spec
        offsets: dict[TopicPartition, int] = {}
        if isinstance(spec, dict):
            unknown = sorted(set(spec) - set(self._latest))
            if unknown:
                raise ValueError(
                    "kafka-log option 'startingOffsets' names topic-partitions that have no log under "
                    f"{', '.join(map(repr, self._options.paths))}: "
                    f"{', '.join(f'{t}-{p}' for t, p in unknown)} (found: "
                    f"{', '.join(f'{t}-{p}' for t, p in sorted(self._latest))})"
                )
        for tp, latest in self._latest.items():
            wanted = spec.get(tp, -2) if isinstance(spec, dict) else (-1 if spec == "latest" else -2)
            if wanted == -2:
                offsets[tp] = self._logs[tp].earliest
            elif wanted == -1:
                offsets[tp] = latest
            else:
                offsets[tp] = wanted
        return _to_json(offsets)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self._options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self._options.max_offsets_per_trigger)
        if self._options.max_bytes_per_trigger is not None:
            return ReadMaxBytes(self._options.max_bytes_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._refresh()
        self._target = dict(self._latest)

    def reportLatestOffset(self) -> dict | None:
        return _to_json(self._latest) if self._latest else None

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = _from_json(start)
        self._refresh(begin)
        until: dict[TopicPartition, int] = {}
        starts: dict[TopicPartition, int] = {}
        for tp, latest in self._latest.items():
            if self._target is not None:
                if tp not in self._target:
                    continue  # appeared after Trigger.AvailableNow started
                latest = min(latest, self._target[tp])
            state = self._logs[tp]
            first = begin.get(tp, state.earliest)
            first = self._check_start(tp, first, state)
            starts[tp] = first
            until[tp] = max(first, latest)
        max_offsets = max_bytes = None
        if isinstance(limit, ReadMaxRows):
            max_offsets, max_bytes = limit.max_rows, self._options.max_bytes_per_trigger
        elif isinstance(limit, ReadMaxBytes):
            max_offsets, max_bytes = self._options.max_offsets_per_trigger, limit.max_bytes
        elif not isinstance(limit, ReadAllAvailable):
            max_offsets, max_bytes = self._options.max_offsets_per_trigger, self._options.max_bytes_per_trigger
        if max_offsets is not None:
            until = _rate_limit(starts, until, max_offsets, {tp: until[tp] - starts[tp] for tp in until})
        if max_bytes is not None:
            sizes = {
                tp: self._logs[tp].bytes_before(until[tp]) - self._logs[tp].bytes_before(starts[tp]) for tp in until
            }
            budget = _rate_limit({tp: 0 for tp in until}, sizes, max_bytes, sizes)
            until = {
                tp: self._logs[tp].offset_within(starts[tp], budget[tp], until[tp]) if sizes[tp] > 0 else until[tp]
                for tp in until
            }
        end = dict(begin)  # partitions that went away keep their offsets
        end.update(until)
        return _to_json(end)

    def _check_start(self, tp: TopicPartition, first: int, state: _PartitionLog) -> int:
        """``first`` checked against the log: gone (retention) or ahead of it."""
        name = f"{tp[0]}-{tp[1]}"
        if first < state.earliest:
            self._data_loss(
                f"{name}: offsets {first}-{state.earliest - 1} were deleted (retention) before this stream read them; "
                f"the earliest offset left is {state.earliest}"
            )
            return state.earliest
        if first > state.next_offset:
            self._data_loss(
                f"{name}: the stream's offset {first} is ahead of the log, which ends at {state.next_offset} "
                "(the folder was recreated, or the checkpoint belongs to other data); starting again from "
                f"the earliest offset, {state.earliest}"
            )
            return state.earliest
        return first

    def _data_loss(self, message: str) -> None:
        if self._options.fail_on_data_loss:
            raise DataLossError(
                f"kafka-log stream: {message}. Set option failOnDataLoss=false to go on with a warning instead"
            )
        warnings.warn(f"kafka-log stream: {message}", DataLossWarning, stacklevel=3)
        log.warning("kafka-log stream: %s", message)

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        begin = _from_json(start)
        until = _from_json(end)
        # -1: a partition new in this micro-batch is read from its earliest offset
        wanted = {tp: begin.get(tp, -1) for tp in until}
        if any(self._needs_walk(tp, offset) for tp, offset in wanted.items()):
            # a restart replaying the micro-batch in the checkpoint's offset log
            self._refresh(wanted)
        # else: plan with what latestOffset listed and walked, the state its end came from
        opts = self._options
        splits: list[LogSplit] = []
        for tp in sorted(until):
            stop = until[tp]
            state = self._logs.get(tp)
            if state is None or not state.segments:
                continue
            first: int | None = begin.get(tp)
            if first is not None and first == stop:
                continue
            if first is not None and first < state.earliest:
                self._data_loss(
                    f"{tp[0]}-{tp[1]}: offsets {first}-{state.earliest - 1} were deleted (retention) "
                    "before this stream read them"
                )
                first = None
            if first is not None and stop < first:
                self._data_loss(f"{tp[0]}-{tp[1]}: the log went back from offset {first} to {stop} (recreated?)")
                first = None
            bounds = Bounds(first, stop)
            if bounds.empty():
                continue
            # Plan only the complete batches walked: the active segment's tail may be half-written.
            group = [
                dataclasses.replace(seg, size=min(seg.size, state.walked[seg.path]))
                if seg.path in state.walked
                else seg
                for seg in state.segments
            ]
            transactions = state.transactions() if opts.isolation == "read_committed" else None
            splits.extend(plan_partition(opts, group, bounds, transactions, seek=state.seek))
        return pack(splits, opts.max_bytes_per_partition, opts.min_partitions)

    def commit(self, end: dict) -> None:
        for tp, offset in _from_json(end).items():
            state = self._logs.get(tp)
            if state is not None:
                state.forget_before(offset)

    def stop(self) -> None:
        self._logs.clear()

    # ---- executors ----------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, LogSplitGroup):
            splits = partition.splits
        elif isinstance(partition, LogSplit):
            splits = [partition]
        else:  # Spark's placeholder when there is nothing to read
            return
        for split in splits:
            try:
                yield from read_split(self._options, self._values, split)
            except FileNotFoundError as error:
                message = (
                    f"kafka-log stream: segment {split.segment.path} was deleted (retention?) before this "
                    f"micro-batch read it ({error})"
                )
                if self._options.fail_on_data_loss:
                    raise DataLossError(
                        message + ". Set option failOnDataLoss=false to skip it with a warning"
                    ) from None
                log.warning("%s; skipped (failOnDataLoss=false)", message)
