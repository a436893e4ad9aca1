"""Structured Streaming over growing Kafka log folders: ``spark.readStream.format("kafka-log")``.

The stream reader behind :meth:`kafkabatch.spark.KafkaLogDataSource.streamReader`
(PySpark 4.2+). Offsets are those of Spark's Kafka source, JSON
``{"orders": {"0": 1200, "1": 877}}``: per topic-partition the next offset to
read (a batch's ``last_offset + 1``). A micro-batch from ``start`` to ``end``
is exactly the batch source's read with ``startingOffsets=start`` and
``endingOffsets=end`` (exclusive), planned by the core into tasks as a batch
read is (and as the JVM source plans its micro-batches), so a replayed
micro-batch after a restart reads the same records.

What the driver keeps between triggers, per topic-partition (the core's
stream state, ``kafkabatch::scan::stream``, shared with the JVM source): the segment listing, and a walk of the batch
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

import json
import logging
import warnings
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

import kafkabatch._kafkabatch as _native
from kafkabatch._kafkabatch import KafkaBatchError, StreamState
from kafkabatch.log.listing import Segment
from kafkabatch.spark.options import Options
from kafkabatch.spark.planning import list_source_segments, splits_of, tasks_of
from kafkabatch.spark.reading import read_planned
from kafkabatch.spark.values import SparkValueColumns
from kafkabatch.values.mismatch import Warned

__all__ = ["DataLossError", "KafkaLogStreamReader"]

log = logging.getLogger("kafkabatch.spark.stream")

TopicPartition = tuple[str, int]


class DataLossError(KafkaBatchError):
    """Records a stream was due to read are gone (segments deleted by retention
    before they were read, or a checkpoint ahead of the log). Raised with
    ``failOnDataLoss=true`` (the default); with ``false`` it is a warning and
    the stream goes on from the earliest offset still there."""


class DataLossWarning(UserWarning):
    """See :class:`DataLossError`: what ``failOnDataLoss=false`` reports instead."""


def _json(offsets: Mapping[str, Any] | None) -> str:
    """Offsets as Spark hands them to a Python source (parsed JSON), as JSON text for the core."""
    return json.dumps(offsets or {})


def _spec_json(spec: str | Mapping[TopicPartition, int]) -> str:
    """``startingOffsets`` as the core takes it: earliest, latest, or offsets JSON (-2/-1 kept)."""
    if isinstance(spec, str):
        return spec
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in spec.items():
        out.setdefault(topic, {})[str(partition)] = offset
    return json.dumps(out)


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
        self._state: StreamState | None = None  # the core's, made on the driver's first call

    def __getstate__(self) -> dict[str, Any]:
        # Shipped to executors for read(): the options only.
        return {"_options": self._options, "_values": self._values, "_state": None}

    @property
    def _core(self) -> StreamState:
        if self._state is None:
            self._state = StreamState(self._options._given, DataLossError)
        return self._state

    # ---- driver: listing ----------------------------------------------------

    def _list(self) -> dict[TopicPartition, list[Segment]]:
        try:
            segments = list_source_segments(self._options)
        except FileNotFoundError:
            if not self._core.has_logs():
                raise
            segments = []  # the folders went away: nothing new (and nothing to fail on until read)
        groups: dict[TopicPartition, list[Segment]] = {}
        for seg in segments:
            groups.setdefault((seg.topic, seg.partition), []).append(seg)
        return groups

    def _refresh(self, wanted: str = "{}") -> None:
        """List the folders again and walk what was added. ``wanted``: offsets
        JSON of where each partition's walk must start at or before (a checkpoint's)."""
        groups = self._list()
        listed = [
            (
                s.path,
                s.topic,
                s.partition,
                s.base_offset,
                s.size,
                s.layout,
                s.manifest,
                s.segment_id,
                s.topic_id,
                s.floor_offset,
                s.stop_offset,
            )
            for segments in groups.values()
            for s in segments
        ]
        for text in self._core.refresh(listed, wanted):
            log.warning("%s", text)  # mode DROPMALFORMED/PERMISSIVE: bytes that will never be batches

    def _warn_data_loss(self) -> None:
        for text in self._core.take_warnings():
            warnings.warn(text, DataLossWarning, stacklevel=3)
            log.warning("%s", text)

    # ---- driver: offsets -------------------------------------------------

    def initialOffset(self) -> dict:
        self._refresh()
        spec = _spec_json(self._options.starting_spec)
        return json.loads(self._core.initial_offsets(spec, list(self._options.paths)))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self._options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self._options.max_offsets_per_trigger)
        if self._options.max_bytes_per_trigger is not None:
            return ReadMaxBytes(self._options.max_bytes_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._refresh()
        self._core.prepare_available_now()

    def reportLatestOffset(self) -> dict | None:
        latest = self._core.latest()
        return None if latest is None else json.loads(latest)

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = _json(start)
        self._refresh(begin)
        max_offsets = max_bytes = None
        if isinstance(limit, ReadMaxRows):
            max_offsets, max_bytes = limit.max_rows, self._options.max_bytes_per_trigger
        elif isinstance(limit, ReadMaxBytes):
            max_offsets, max_bytes = self._options.max_offsets_per_trigger, limit.max_bytes
        elif not isinstance(limit, ReadAllAvailable):
            max_offsets, max_bytes = self._options.max_offsets_per_trigger, self._options.max_bytes_per_trigger
        try:
            end = self._core.latest_offset(begin, max_offsets, max_bytes)
        finally:
            self._warn_data_loss()
        return json.loads(end)

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        begin, until = _json(start), _json(end)
        wanted = self._core.wanted_for(begin, until)
        if wanted is not None:
            # a restart replaying the micro-batch in the checkpoint's offset log
            self._refresh(wanted)
        # else: plan with what latestOffset listed and walked, the state its end came from
        opts = self._options
        try:
            # the core's micro-batch (only the complete batches walked: the active segment's
            # tail may be half-written), cut and packed into tasks as a batch read's are
            planned = _native._spark_stream_tasks(self._core, begin, until, opts._given, opts.min_partitions)
        finally:
            self._warn_data_loss()
        return tasks_of(planned)

    def commit(self, end: dict) -> None:
        self._core.commit(_json(end))

    def stop(self) -> None:
        if self._state is not None:
            self._state.stop()

    # ---- executors ----------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        warned: Warned = set()
        for split in splits_of(partition):  # none for Spark's placeholder when there is nothing to read
            try:
                yield from read_planned(self._options, self._values, split, warned)
            except FileNotFoundError as error:
                message = (
                    f"kafka-log stream: segment {split.path} was deleted (retention?) before this "
                    f"micro-batch read it ({error})"
                )
                if self._options.fail_on_data_loss:
                    raise DataLossError(
                        message + ". Set option failOnDataLoss=false to skip it with a warning"
                    ) from None
                log.warning("%s; skipped (failOnDataLoss=false)", message)
