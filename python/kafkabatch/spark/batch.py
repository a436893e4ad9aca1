"""The batch reader of ``spark.read.format("kafka-log")``: plans splits on the driver, decodes them in tasks.

>>> spark.read.format("kafka-log").load("/data/kafka").count()  # doctest: +SKIP
1000000
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from kafkabatch.log.listing import Segment, by_partition
from kafkabatch.log.txn import partition_transactions
from kafkabatch.spark.options import Options
from kafkabatch.spark.planning import LogSplit, LogSplitGroup, pack, plan_partition
from kafkabatch.spark.reading import read_split
from kafkabatch.spark.values import SparkValueColumns

log = logging.getLogger("kafkabatch.spark")


class KafkaLogReader(DataSourceReader):
    """Plans one input partition per segment (split when large) and decodes them."""

    def __init__(self, options: Options, segments: list[Segment], values: SparkValueColumns | None = None) -> None:
        self._options = options
        self._segments = segments
        self._values = values

    def partitions(self) -> list[InputPartition]:
        opts = self._options
        splits: list[LogSplit] = []
        for group in by_partition(self._segments):
            bounds = opts.bounds(group[0].topic, group[0].partition)
            if bounds.empty():
                continue
            transactions = None
            if opts.isolation == "read_committed":
                transactions = partition_transactions(group)
            splits.extend(plan_partition(opts, group, bounds, transactions))
        return pack(splits, opts.max_bytes_per_partition, opts.min_partitions)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, LogSplitGroup):
            for split in partition.splits:
                yield from read_split(self._options, self._values, split)
        elif isinstance(partition, LogSplit):
            yield from read_split(self._options, self._values, partition)
        # else: Spark's placeholder when there is nothing to read
