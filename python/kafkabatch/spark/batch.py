"""The batch reader of ``spark.read.format("kafka-log")``: plans splits on the driver, decodes them in tasks.

>>> spark.read.format("kafka-log").load("/data/kafka").count()  # doctest: +SKIP
1000000
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from kafkabatch.log.listing import Segment
from kafkabatch.log.prune import RecordFilter
from kafkabatch.log.txn import partition_transactions
from kafkabatch.spark.errors import headline_first
from kafkabatch.spark.options import Options
from kafkabatch.spark.planning import LogSplit, LogSplitGroup, pack, plan_partition
from kafkabatch.spark.pushdown import translate
from kafkabatch.spark.reading import read_split
from kafkabatch.spark.values import SparkValueColumns
from kafkabatch.values.vocabulary import SPARK, speaks

log = logging.getLogger("kafkabatch.spark")


class KafkaLogReader(DataSourceReader):
    """Plans one input partition per segment (split when large) and decodes them."""

    def __init__(self, options: Options, segments: list[Segment], values: SparkValueColumns | None = None) -> None:
        self._options = options
        self._segments = segments
        self._values = values

    #: The pushed filters (see :class:`KafkaLogPushdownReader`); none by default.
    record_filter: RecordFilter = RecordFilter()

    @headline_first
    @speaks(SPARK)  # a tiered segment's errors name tieredKeys
    def partitions(self) -> list[InputPartition]:
        opts = self._options
        where = self.record_filter
        splits: list[LogSplit] = []
        # the segments come sorted by topic and partition (see planning.list_source_segments)
        groups = [list(g) for _, g in itertools.groupby(self._segments, key=lambda s: (s.topic, s.partition))]
        kept = 0
        for group in groups:
            if not where.keeps(group[0].topic, group[0].partition):
                continue
            kept += 1
            bounds = where.bounds(opts.bounds(group[0].topic, group[0].partition))
            if bounds.empty():
                continue
            transactions = None
            if opts.isolation == "read_committed":
                transactions = partition_transactions(group, skip=opts.mode != "FAILFAST")
            splits.extend(plan_partition(opts, group, bounds, transactions))
        if not where.empty or log.isEnabledFor(logging.DEBUG):
            log_plan(where, groups, kept, splits)
        return pack(splits, opts.max_bytes_per_partition, opts.min_partitions)

    @headline_first
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, LogSplitGroup):
            for split in partition.splits:
                yield from read_split(self._options, self._values, split)
        elif isinstance(partition, LogSplit):
            yield from read_split(self._options, self._values, partition)
        # else: Spark's placeholder when there is nothing to read


def log_plan(where: RecordFilter, groups: list[list[Segment]], kept: int, splits: list[LogSplit]) -> None:
    """One INFO line: the pushed filters and what they pruned."""
    segments = [seg for group in groups for seg in group]
    total = sum(seg.size for seg in segments)
    read = sum(split.end - split.start for split in splits)
    read_segments = len({split.segment.path for split in splits})
    log.info(
        "kafka-log pushdown: %s; read %d of %d folders, %d of %d segments, %s of %s bytes (%s skipped by "
        "folder names, file names, indexes and batch headers)",
        where.describe(),
        kept,
        len(groups),
        read_segments,
        len(segments),
        f"{read:,}",
        f"{total:,}",
        f"{total - read:,}",
    )


try:
    from pyspark.sql.datasource import Filter as _Filter  # PySpark 4.1+: filter pushdown
except ImportError:  # PySpark 4.0: no pushFilters, Spark filters every row itself
    KafkaLogPushdownReader: type[KafkaLogReader] | None = None
else:

    class _PushdownReader(KafkaLogReader):
        """A :class:`KafkaLogReader` taking Spark's pushed filters (PySpark 4.1+,
        ``spark.sql.python.filterPushdown.enabled``): those on topic,
        partition, offset and timestamp prune folders, segments and batches
        (see :mod:`kafkabatch.spark.pushdown`)."""

        def pushFilters(self, filters: list[_Filter]) -> Iterable[_Filter]:  # noqa: N802 (Spark's name)
            self.record_filter, rest = translate(filters)
            return rest

    KafkaLogPushdownReader = _PushdownReader
