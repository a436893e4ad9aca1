"""The batch reader of ``spark.read.format("kafka-log")``: plans splits on the driver, decodes them in tasks.

>>> spark.read.format("kafka-log").load("/data/kafka").count()  # doctest: +SKIP
1000000
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from kafkabatch.log.listing import Segment
from kafkabatch.log.prune import RecordFilter
from kafkabatch.spark.errors import headline_first
from kafkabatch.spark.options import Options
from kafkabatch.spark.planning import LogSplit, plan_tasks, splits_of
from kafkabatch.spark.pushdown import pushed
from kafkabatch.spark.reading import read_planned
from kafkabatch.spark.values import SparkValueColumns
from kafkabatch.values.mismatch import Warned
from kafkabatch.values.vocabulary import SPARK, speaks

log = logging.getLogger("kafkabatch.spark")


class KafkaLogReader(DataSourceReader):
    """Reads the tasks the core plans (segments split when large, small ones
    sharing a task), each split with the core's reader."""

    def __init__(self, options: Options, segments: list[Segment], values: SparkValueColumns | None = None) -> None:
        self._options = options
        self._segments = segments
        self._values = values

    #: The pushed filters (see :class:`KafkaLogPushdownReader`); none by default.
    record_filter: RecordFilter = RecordFilter()

    #: The pushed filters as the core's predicates (see :func:`kafkabatch.spark.pushdown.pushed`).
    predicates: list[Any] = []

    @headline_first
    @speaks(SPARK)  # a tiered segment's errors name tieredKeys
    def partitions(self) -> list[InputPartition]:
        where = self.record_filter
        tasks, kept = plan_tasks(self._options, self.predicates)
        if not where.empty or log.isEnabledFor(logging.DEBUG):
            log_plan(where, self._segments, kept, [split for task in tasks for split in splits_of(task)])
        return tasks

    @headline_first
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        warned: Warned = set()
        for split in splits_of(partition):  # none for Spark's placeholder when there is nothing to read
            yield from read_planned(self._options, self._values, split, warned)


def log_plan(where: RecordFilter, segments: list[Segment], kept: int, splits: list[LogSplit]) -> None:
    """One INFO line: the pushed filters and what they pruned."""
    folders = len({(seg.topic, seg.partition) for seg in segments})
    total = sum(seg.size for seg in segments)
    read = sum(split.end - split.start for split in splits)
    read_segments = len({split.path for split in splits})
    log.info(
        "kafka-log pushdown: %s; read %d of %d folders, %d of %d segments, %s of %s bytes (%s skipped by "
        "folder names, file names, indexes and batch headers)",
        where.describe(),
        kept,
        folders,
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
            self.record_filter, rest, self.predicates = pushed(filters)
            return rest

    KafkaLogPushdownReader = _PushdownReader
