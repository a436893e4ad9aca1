"""Reading one planned split in a Spark task: decode its byte range, parse typed columns, hand Spark its Arrow types.

Shared by the batch reader and the stream reader.

>>> for batch in read_split(options, None, split):  # doctest: +SKIP
...     print(batch.num_rows)
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from kafkabatch._decode import iter_batches, valid_bytes
from kafkabatch._kafkabatch import CorruptBatchError, TieredStorageError
from kafkabatch.log.listing import Segment, open_segment
from kafkabatch.log.scan import SegmentResult, decode_around_bad_chunks, read_in_core, read_with_twins
from kafkabatch.log.windows import DEFAULT_MAX_CHUNK_BYTES, batch_length
from kafkabatch.spark.options import Options
from kafkabatch.spark.planning import LogSplit
from kafkabatch.spark.types import KAFKA_SCHEMA, to_spark_arrow
from kafkabatch.spark.values import SparkValueColumns
from kafkabatch.values.vocabulary import SPARK, speaks

log = logging.getLogger("kafkabatch.spark")


@speaks(SPARK)  # a value that does not parse names the Spark options
def read_split(opts: Options, values: SparkValueColumns | None, partition: LogSplit) -> Iterator[pa.RecordBatch]:
    """The record batches of one split, in exactly the Arrow types Spark expects."""
    arrow_schema = None if values is None else values.arrow_schema(KAFKA_SCHEMA)
    result = SegmentResult(partition.segment)
    try:
        yield from _read_split(opts, values, partition, result, arrow_schema)
    except TieredStorageError as error:
        if opts.mode == "FAILFAST":
            raise
        result.skipped.append(error)
    if opts.mode == "PERMISSIVE" and (result.skipped or result.trailing_bytes):
        log.warning("kafka-log PERMISSIVE: %s", result.describe())


def _read_split(
    opts: Options,
    values: SparkValueColumns | None,
    partition: LogSplit,
    result: SegmentResult,
    arrow_schema: Any,
) -> Iterator[pa.RecordBatch]:
    seg = partition.segment
    whole = partition.start == 0 and partition.end >= seg.size
    if whole and (seg.twins or seg.layout == "aiven"):
        # A whole segment with another copy of its offsets: read that copy if this one is damaged;
        # a whole Aiven segment by the core's reader, as scan_log reads it.
        read = read_in_core if seg.layout == "aiven" else read_with_twins
        batches = read(
            seg,
            partition.twin_stop,
            partition.bounds,
            DEFAULT_MAX_CHUNK_BYTES,
            partition.transactions,
            opts.max_records_per_batch,
            result,
            () if values is None else values.specs,
            opts.decode_options(),
        )
        for batch in batches:
            yield (
                to_spark_arrow(batch)
                if values is None or arrow_schema is None
                else values.to_spark(batch, arrow_schema)
            )
        return
    source = open_segment(seg, opts.max_decompressed_size, "maxDecompressedSize")
    try:
        if partition.check_start:
            try:
                check_batch_start(source, seg, partition.start)
            except TieredStorageError as error:
                if opts.mode == "FAILFAST" or error.chunk is None:
                    raise
                # The split starts in a chunk that can't be undone: the read below goes on past it.
        for batch in decode_around_bad_chunks(
            source,
            seg,
            start=partition.start,
            end=partition.end,
            skip_chunks=opts.mode != "FAILFAST",
            max_chunk_bytes=min(DEFAULT_MAX_CHUNK_BYTES, max(partition.end - partition.start, 1)),
            bounds=partition.bounds,
            transactions=partition.transactions,
            max_records_per_batch=opts.max_records_per_batch,
            result=result,
            value_specs=() if values is None else values.specs,
            **opts.decode_options(),
        ):
            if values is None or arrow_schema is None:
                yield to_spark_arrow(batch)
            else:
                yield values.to_spark(batch, arrow_schema)
    finally:
        source.close()


def check_batch_start(source: Any, seg: Segment, position: int) -> None:
    header = source.read(position, 12)
    size = batch_length(header) if len(header) == 12 else None
    ok = False
    if size is not None and position + size <= source.size:
        data = source.read(position, size)
        ok = valid_bytes(data) == size and all(
            b.is_valid for b in iter_batches(data, validate_crc=True, on_error="keep")
        )
        del data
    source.release()
    if not ok:
        raise CorruptBatchError(
            f"{seg.path}: byte {position} (from the segment's .index) is not the start of a valid batch; "
            "the .index file may be stale. Read this segment in one task with option maxBytesPerPartition=0"
        )
