"""The ``kafka-log`` data source: options and listing at ``load()``, then a batch or a stream reader.

>>> kbs.register(spark)                                                              # doctest: +SKIP
>>> spark.read.format("kafka-log").option("mode", "PERMISSIVE").load("/data/kafka")  # doctest: +SKIP
DataFrame[key: binary, value: binary, ...]
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

import kafkabatch.spark.values as spark_values
from kafkabatch.log.listing import Segment
from kafkabatch.log.sample import first_values
from kafkabatch.spark.batch import KafkaLogPushdownReader, KafkaLogReader
from kafkabatch.spark.errors import headline_first
from kafkabatch.spark.internal import internal_columns
from kafkabatch.spark.options import Options
from kafkabatch.spark.planning import list_source_segments
from kafkabatch.spark.pushdown import planning_without_pushdown
from kafkabatch.spark.types import KAFKA_SCHEMA
from kafkabatch.values.vocabulary import SPARK, speaks


class KafkaLogDataSource(DataSource):
    """``spark.read.format("kafka-log").load(path)``: Kafka log folders as Spark's Kafka source schema.

    ``path`` is what :func:`kafkabatch.list_segments` takes (a broker
    log dir, ``<topic>-<partition>`` folders, segment files, globs; local or
    a pyarrow.fs URI such as ``s3a://bucket/kafka/``); ``load([...])`` takes
    several. Segments larger than ``maxBytesPerPartition`` are split at batch
    boundaries, and small ones share a task (at least ``minPartitions``
    tasks, packed like Spark's file sources). Options: see ``docs/spark.md``.

    >>> import kafkabatch.spark as kbs
    >>> kbs.register(spark)                                                  # doctest: +SKIP
    >>> spark.read.format("kafka-log").option("mode", "PERMISSIVE").load("/data/kafka").count()  # doctest: +SKIP
    1000000
    """

    @headline_first
    def __init__(self, options: Any) -> None:
        super().__init__(options)
        self._options = Options(options)
        # List once, at load(): errors about paths and folder names surface
        # there, and every action on the DataFrame reads the same files (as
        # Spark's file sources do).
        self._segments = self._list()
        # valueFormat/keyFormat: schemas fetched here, on the driver, once.
        topics = sorted({s.topic for s in self._segments})
        self._values: Any = spark_values.value_columns(
            self._options.value_options,
            topics,
            sample=lambda column: first_values(
                self._segments,
                column,
                max_decompressed_size=self._options.max_decompressed_size,
                cap_name="maxDecompressedSize",
            ),
        )
        if self._options.internal is not None:  # internalTopic: decoded columns where typed values would be
            self._values = internal_columns(self._options.internal, topics)

    @classmethod
    def name(cls) -> str:
        return "kafka-log"

    @headline_first
    def schema(self) -> StructType:
        return KAFKA_SCHEMA if self._values is None else self._values.schema(KAFKA_SCHEMA)

    #: Whether readers take Spark's pushed filters (``kbs.register(..., filter_pushdown=False)`` turns it off).
    filter_pushdown: bool = True

    @headline_first
    def reader(self, schema: StructType) -> KafkaLogReader:
        _check_schema(schema, self.schema())
        self._options.check_batch()
        self._options.check_named_partitions((s.topic, s.partition) for s in self._segments)
        # A reader with pushFilters only where Spark may call it: with PySpark
        # 4.1+, and not for Spark's planner of reads without pushdown, which
        # refuses such a reader while spark.sql.python.filterPushdown.enabled is off.
        if self.filter_pushdown and KafkaLogPushdownReader is not None and not planning_without_pushdown():
            return KafkaLogPushdownReader(self._options, self._segments, self._values)
        return KafkaLogReader(self._options, self._segments, self._values)

    @headline_first
    def streamReader(self, schema: StructType) -> Any:
        """``spark.readStream.format("kafka-log")``: see :mod:`kafkabatch.spark.stream`
        (PySpark 4.2+: a stream reader with read limits and Trigger.AvailableNow)."""
        _check_schema(schema, self.schema())
        try:
            from kafkabatch.spark.stream import KafkaLogStreamReader
        except ImportError as error:
            import pyspark

            raise RuntimeError(
                "spark.readStream.format('kafka-log') needs PySpark 4.2 or later (streaming Python data sources "
                f"with read limits and Trigger.AvailableNow); this is PySpark {pyspark.__version__} ({error}). "
                "Batch reads (spark.read) work here"
            ) from None
        return KafkaLogStreamReader(self._options, self._values)

    @speaks(SPARK)  # tiered_keys' errors as tieredKeys
    def _list(self) -> list[Segment]:
        return list_source_segments(self._options)


def _check_schema(schema: StructType, expected: StructType) -> None:
    if schema != expected:
        raise ValueError(
            "kafka-log has a fixed schema (Spark's Kafka source schema, value and key typed by "
            f"valueFormat/keyFormat): {expected.simpleString()}; got {schema.simpleString()}"
        )


class KafkaLogDataSourceWithoutPushdown(KafkaLogDataSource):
    """``kafka-log`` whose readers never take pushed filters: what
    ``kbs.register(spark, filter_pushdown=False)`` registers. Spark filters
    every row itself; options such as ``startingTimestamp`` still prune.

    >>> kbs.register(spark, filter_pushdown=False)  # doctest: +SKIP
    """

    filter_pushdown = False


#: The Python source's own name, which :func:`kafkabatch.spark.register` always
#: registers: ``kafka-log`` is the JVM source wherever its jar is on Spark's
#: classpath (Spark looks JVM sources up first), and this one stays reachable.
PYTHON_SOURCE_NAME = "kafka-log-python"


class KafkaLogPythonDataSource(KafkaLogDataSource):
    """The Python ``kafka-log`` source under the name ``kafka-log-python``.

    >>> spark.read.format("kafka-log-python").load("/data/kafka")  # doctest: +SKIP
    """

    @classmethod
    def name(cls) -> str:
        return PYTHON_SOURCE_NAME


class KafkaLogPythonDataSourceWithoutPushdown(KafkaLogDataSourceWithoutPushdown):
    """``kafka-log-python`` whose readers never take pushed filters
    (``kbs.register(spark, filter_pushdown=False)``).

    >>> kbs.register(spark, filter_pushdown=False)  # doctest: +SKIP
    """

    @classmethod
    def name(cls) -> str:
        return PYTHON_SOURCE_NAME
