"""Reading one planned split in a Spark task: the core's reader decodes it, typed columns are parsed,
Spark gets its Arrow types.

Shared by the batch reader and the stream reader.

>>> for batch in read_planned(options, None, split):  # doctest: +SKIP
...     print(batch.num_rows)
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator

import pyarrow as pa

import kafkabatch._kafkabatch as _native
from kafkabatch._kafkabatch import KafkaBatchError, TieredStorageError
from kafkabatch.log.errors import in_file
from kafkabatch.log.index import IndexFileWarning
from kafkabatch.spark.options import Options, task_threads
from kafkabatch.spark.planning import LogSplit
from kafkabatch.spark.types import KAFKA_SCHEMA, to_spark_arrow
from kafkabatch.spark.values import SparkValueColumns
from kafkabatch.values.mismatch import Warned, warn_unmatched
from kafkabatch.values.spec import apply_all
from kafkabatch.values.vocabulary import SPARK, speaks

log = logging.getLogger("kafkabatch.spark")


@speaks(SPARK)  # a value that does not parse names the Spark options
def read_planned(
    opts: Options, values: SparkValueColumns | None, split: LogSplit, warned: Warned | None = None
) -> Iterator[pa.RecordBatch]:
    """The record batches of one split the core planned, read by the core's
    reader, in exactly the Arrow types Spark expects. ``warned``: the topics a
    JSON schema matching nothing was warned about in this task."""
    arrow_schema = None if values is None else values.arrow_schema(KAFKA_SCHEMA)
    specs = () if values is None else values.specs
    json_columns = [spec.column for spec in specs if spec.format == "json"]
    threads = task_threads(opts.threads)
    warned = set() if warned is None else warned
    read = _native._spark_read_split(split.split, opts._given, threads)
    pieces = iter(read)
    while True:
        try:
            one = next(pieces, None)
        except TieredStorageError:
            raise
        except KafkaBatchError as error:  # its positions are the file's
            raise in_file(error, split.path) from None
        if one is None:
            break
        for batch in pa.RecordBatchReader.from_stream(one).read_all().to_batches(opts.max_records_per_batch):
            out = apply_all(pa.Table.from_batches([batch]), specs, threads).to_batches() if specs else [batch]
            for piece in out:
                if json_columns:
                    warn_unmatched(piece, json_columns, split.topic, warned)
                yield (
                    to_spark_arrow(piece)
                    if values is None or arrow_schema is None
                    else values.to_spark(piece, arrow_schema)
                )
    report = read.report()
    if report is not None:
        lost, text, index_warnings = report
        for warning in index_warnings:
            warnings.warn(warning, IndexFileWarning, stacklevel=3)
        if lost and opts.mode == "PERMISSIVE":
            log.warning("kafka-log PERMISSIVE: %s", text)
