"""PySpark integration: a ``kafka-log`` data source and UDFs over raw batches.

Options, planning, the batch and stream readers, Spark<->Arrow types, UDF helpers, ``register``
and the worker check. Read broker log folders (local, or anything :mod:`pyarrow.fs` reaches:
``s3a://``, ``gs://``, ``hdfs://``) into a DataFrame with exactly the schema
of Spark's Kafka source::

    import kafkabatch.spark as kbs

    kbs.register(spark)
    df = (spark.read.format("kafka-log")
          .option("startingOffsets", '{"orders": {"0": 1000}}')
          .option("mode", "DROPMALFORMED")
          .load("/var/lib/kafka/data"))

Or decode a column of raw batch bytes (Fetch responses, ``binaryFile``
loads, bytes kept in a table)::

    raw = spark.read.format("binaryFile").load("/dumps/orders-0/*.log")
    records = kbs.explode_batches(raw, "content", path_column="path")
    nested = raw.select(kbs.decode_batches("content", topic="orders", partition=0).alias("records"))

Every Arrow batch handed to Spark is built by kafkabatch's Rust core and
already has the Arrow types Spark expects for this schema (see
:data:`SPARK_ARROW_SCHEMA`); the headers list is relabelled without copying.
Needs PySpark 4.0+ (``pip install 'kafkabatch[spark]'``);
:func:`decode_batches_arrow` needs 4.1+. See ``docs/spark.md``.
"""

from __future__ import annotations

try:
    import pyspark.sql.datasource  # noqa: F401  (PySpark 4.0+: Python data sources)
except ImportError as _error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "kafkabatch.spark needs PySpark 4.0 or later (with Python data sources): pip install 'kafkabatch[spark]'"
    ) from _error

from kafkabatch.spark.jvm import jar_path
from kafkabatch.spark.options import (
    DEFAULT_MAX_BYTES_PER_PARTITION,
    DEFAULT_MAX_RECORDS_PER_BATCH,
    KNOWN_OPTIONS,
    check_option_names,
)
from kafkabatch.spark.session import WorkerImportError, check_worker_import, jvm_source_name, register
from kafkabatch.spark.source import KafkaLogDataSource
from kafkabatch.spark.types import HEADERS_TYPE, KAFKA_SCHEMA, SPARK_ARROW_SCHEMA, to_spark_arrow
from kafkabatch.spark.udf import decode_batches, decode_batches_arrow, explode_batches, parse_values

__all__ = [
    "DEFAULT_MAX_BYTES_PER_PARTITION",
    "DEFAULT_MAX_RECORDS_PER_BATCH",
    "HEADERS_TYPE",
    "KAFKA_SCHEMA",
    "KNOWN_OPTIONS",
    "SPARK_ARROW_SCHEMA",
    "KafkaLogDataSource",
    "WorkerImportError",
    "check_option_names",
    "check_worker_import",
    "decode_batches",
    "decode_batches_arrow",
    "explode_batches",
    "jar_path",
    "jvm_source_name",
    "parse_values",
    "register",
    "to_spark_arrow",
]
