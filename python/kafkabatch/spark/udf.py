"""UDF helpers over Spark columns: raw batch bytes to records, values to typed columns.

>>> raw = spark.read.format("binaryFile").load("/dumps/orders-0/*.log")   # doctest: +SKIP
>>> records = kbs.explode_batches(raw, "content", path_column="path")     # doctest: +SKIP
"""

# No `from __future__ import annotations`: pandas_udf reads the functions' type hints at runtime.

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql.types import ArrayType, DataType, StructType

import kafkabatch.log.fs as fs
from kafkabatch._decode import decode
from kafkabatch._util import check_keywords, keyword_names
from kafkabatch.log.scan import DECODE_OPTIONS
from kafkabatch.log.segment import topic_partition_from_path
from kafkabatch.spark.options import DEFAULT_MAX_RECORDS_PER_BATCH, ISOLATIONS, task_threads
from kafkabatch.spark.types import (
    _SPARK_RECORD_STRUCT,
    KAFKA_SCHEMA,
    SPARK_ARROW_SCHEMA,
    SPARK_RECORDS_LIST,
    cast_for_spark,
    json_spark_type,
    nullable,
    spark_type_of,
    to_spark_arrow,
)
from kafkabatch.values.ddl import arrow_type_for_spark
from kafkabatch.values.registry import registry_of
from kafkabatch.values.spec import ValueSpec, resolve, subject_writers

_DECODE_KWARGS = ("topic", "partition", *DECODE_OPTIONS)


def _check_decode_kwargs(options: dict[str, Any], function: str, also: Iterable[str] = ()) -> dict[str, Any]:
    check_keywords(function, options, [*also, *_DECODE_KWARGS])
    if options.get("on_error", "raise") not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', not {options['on_error']!r}")
    if options.get("isolation", "read_uncommitted") not in ISOLATIONS:
        raise ValueError(f"isolation must be read_uncommitted or read_committed, not {options['isolation']!r}")
    threads = options.get("threads")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ValueError(f"threads must be a positive integer (default: the task's CPUs), not {threads!r}")
    return {k: v for k, v in options.items() if not (k == "isolation" and v == "read_uncommitted")}


def _as_buffer(value: Any) -> Any:
    """A pyarrow binary scalar, bytes or bytearray as something the decoder
    reads without copying; None for a null cell (None, a null scalar,
    pandas' NA)."""
    if isinstance(value, pa.Scalar):
        buffer = value.as_buffer()
        return None if buffer is None else memoryview(buffer).cast("B")
    if value is None or isinstance(value, (bytes, bytearray, memoryview)):
        return value
    if type(value).__name__ in ("NAType", "NaTType") or (isinstance(value, float) and value != value):
        return None  # pandas' missing-value markers
    return value


def _decode_to_list(values: Iterable[Any], options: dict[str, Any]) -> pa.ListArray:
    """One list of records per input value (null in, null out)."""
    import numpy as np

    options = {**options, "threads": task_threads(options.get("threads"))}
    tables = []
    lengths = []
    nulls = []
    for value in values:
        data = _as_buffer(value)
        if data is None:
            lengths.append(0)
            nulls.append(True)
            continue
        table = decode(data, **options)
        tables.append(table)
        lengths.append(table.num_rows)
        nulls.append(False)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] > np.iinfo(np.int32).max:
        raise ValueError(
            "more than 2**31 records in one Arrow batch of input rows; "
            "lower spark.sql.execution.arrow.maxRecordsPerBatch"
        )
    batches = [to_spark_arrow(b) for t in tables for b in t.to_batches()]
    if batches:
        records = pa.Table.from_batches(batches, schema=SPARK_ARROW_SCHEMA).combine_chunks().to_struct_array()
        values = records.chunk(0) if records.num_chunks == 1 else pa.concat_arrays(records.chunks)
    else:  # every cell null or empty (pyarrow 18 can't make a struct array of a table with no chunks)
        values = pa.array([], type=_SPARK_RECORD_STRUCT)
    return pa.ListArray.from_arrays(
        pa.array(offsets.astype(np.int32)), values, type=SPARK_RECORDS_LIST, mask=pa.array(nulls, type=pa.bool_())
    )


def decode_batches(col: Any, **options: Any) -> Any:
    """A column of ``array<struct<key, value, topic, partition, offset,
    timestamp, timestampType, headers>>``: the records of each row's raw
    Kafka batches (a ``pandas_udf``; null in, null out).

    ``options`` are those of :func:`kafkabatch.decode` (``topic``,
    ``partition``, ``validate_crc``, ``include_control``, ``isolation``,
    ``on_error``, ``max_decompressed_size``).

    >>> from pyspark.sql import functions as F
    >>> raw = spark.read.format("binaryFile").load("/data/orders-0/*.log")   # doctest: +SKIP
    >>> records = raw.select(F.explode(kbs.decode_batches("content", topic="orders", partition=0)).alias("r")) \\
    ...              .select("r.*")                                             # doctest: +SKIP
    """
    import pandas as pd
    from pyspark.sql.functions import pandas_udf

    opts = _check_decode_kwargs(options, "decode_batches")

    def decode_kafka_batches(content: pd.Series) -> pd.Series:
        import pandas as pd

        records = pd.arrays.ArrowExtensionArray(_decode_to_list(content, opts))
        if records.isna().any():
            # Spark converts the result value by value and only knows None as
            # null: pd.NA would fail the task ("'NAType' object is not iterable").
            return pd.Series(records.to_numpy(dtype=object, na_value=None), index=content.index, dtype=object)
        return pd.Series(records, index=content.index)

    return pandas_udf(decode_kafka_batches, ArrayType(KAFKA_SCHEMA))(col)  # type: ignore[call-overload]


def decode_batches_arrow(col: Any, **options: Any) -> Any:
    """Like :func:`decode_batches`, as an Arrow UDF (``pyspark.sql.functions.arrow_udf``,
    PySpark 4.1+): Arrow in, Arrow out, no pandas.

    >>> raw.select(kbs.decode_batches_arrow("content", topic="orders", partition=0))  # doctest: +SKIP
    """
    opts = _check_decode_kwargs(options, "decode_batches_arrow")
    try:
        from pyspark.sql.functions import arrow_udf
    except ImportError:
        import pyspark

        raise RuntimeError(
            f"decode_batches_arrow needs PySpark 4.1 or later (pyspark.sql.functions.arrow_udf); "
            f"this is PySpark {pyspark.__version__}: use decode_batches or explode_batches"
        ) from None

    def decode_kafka_batches(content: pa.Array) -> pa.Array:
        return _decode_to_list(content, opts)

    return arrow_udf(decode_kafka_batches, ArrayType(KAFKA_SCHEMA))(col)  # type: ignore[call-overload]


def parse_values_udf(
    col: Any,
    *,
    format: str = "json",
    schema: Any = None,
    schema_registry: Any = None,
    on_value_error: str = "raise",
    subject: str | None = None,
) -> Any:
    """``kbs.parse_values``: a column of ``col``'s values parsed in the Rust
    core (see :func:`kafkabatch.parse_values`), for Spark's own Kafka source
    or any binary column: ``"string"``, ``"json"`` (``schema`` DDL, a
    ``StructType``, a JSON Schema or a pyarrow type), ``"avro"``
    (``schema`` the Avro schema, or ``schema_registry`` a URL, a
    confluent-style config dict or ``{id: schema}`` for Confluent-framed
    values) or ``"protobuf"`` (``schema`` as for
    :func:`kafkabatch.parse_values`, or ``schema_registry`` for framed
    values, ``schema`` then naming the message). An Arrow UDF on PySpark 4.1+, a pandas UDF before (where a null
    struct comes back as a struct of nulls). Schemas are fetched here, on the
    driver; tasks never call the registry. With a registry URL the writer
    schemas are the versions of ``subject`` (default: every subject's).

    >>> kafka_df.select(kbs.parse_values("value", format="avro", schema_registry=url).alias("v"))  # doctest: +SKIP
    """
    spark_type = None
    arrow_schema: Any = schema
    if format == "json":
        if schema is None:
            raise ValueError("format='json' needs schema (DDL, StructType or a pyarrow type)")
        if isinstance(schema, (pa.DataType, pa.Schema, pa.Field)):
            from kafkabatch.values.spec import arrow_type_of

            arrow_schema = arrow_type_of(schema)
            spark_type = spark_type_of(arrow_schema)
        else:
            spark_type = nullable(json_spark_type(json.dumps(schema) if isinstance(schema, Mapping) else schema))
            arrow_schema = arrow_type_for_spark(spark_type)
    registry: Any = schema_registry
    if format == "protobuf":
        client = registry_of(schema_registry)
        if client is not None:
            registry = client
        subjects = [subject] if subject is not None else (client.subjects() if client is not None else [])
        spec = resolve("value", format, schema, registry, on_value_error, subjects=subjects)
        return _parse_udf(col, spec, None)
    client = registry_of(schema_registry) if format == "avro" else None
    if client is not None:
        registry, latest = subject_writers(client, [subject] if subject is not None else client.subjects())
        if schema is None:
            arrow_schema = latest
    spec = resolve("value", format, arrow_schema, registry, on_value_error)
    return _parse_udf(col, spec, spark_type)


def _parse_udf(col: Any, spec: ValueSpec | None, spark_type: DataType | None) -> Any:
    if spec is None:
        raise ValueError("format must be 'string', 'json', 'avro' or 'protobuf'")
    spark_type = spark_type or spark_type_of(spec.output_type)
    target = arrow_type_for_spark(spark_type)

    def parse(values: pa.Array) -> pa.Array:
        parsed = spec.parse(values, threads=1).combine_chunks()
        return cast_for_spark(parsed, target)

    try:
        from pyspark.sql.functions import arrow_udf
    except ImportError:
        return _pandas_parse_udf(parse, spark_type)(col)
    return arrow_udf(parse, spark_type)(col)  # type: ignore[call-overload]


def _pandas_parse_udf(parse: Any, spark_type: DataType) -> Any:
    """PySpark 4.0: the same through a pandas UDF (a struct comes back as a DataFrame)."""
    import pandas as pd
    from pyspark.sql.functions import pandas_udf

    def parse_pandas(values: pd.Series) -> Any:
        array = pa.array(values.to_numpy(dtype=object, na_value=None), pa.binary())
        parsed = parse(array)
        if isinstance(spark_type, StructType):
            return pa.Table.from_arrays(parsed.flatten(), names=[f.name for f in spark_type.fields]).to_pandas()
        return pd.Series(parsed.to_pandas(), index=values.index)

    # pandas_udf reads the UDF kind from real annotations (this module's are strings).
    returns = pd.DataFrame if isinstance(spark_type, StructType) else pd.Series
    parse_pandas.__annotations__ = {"values": pd.Series, "return": returns}
    return pandas_udf(parse_pandas, spark_type)  # type: ignore[call-overload]


def explode_batches(
    df: Any,
    column: str,
    *,
    keep: Iterable[str] = (),
    path_column: str | None = None,
    max_records_per_batch: int = DEFAULT_MAX_RECORDS_PER_BATCH,
    **options: Any,
) -> Any:
    """One row per record of the raw Kafka batches in ``df[column]``
    (``df.mapInArrow``: Arrow in, Arrow out), with the columns of
    :data:`KAFKA_SCHEMA` followed by the input columns named in ``keep``.

    ``path_column`` names a column of file paths (``binaryFile``'s
    ``path``): topic and partition then come from each file's folder
    ``<topic>-<partition>`` unless given in ``options``. Other ``options``
    are those of :func:`kafkabatch.decode`. Null inputs give no rows.

    >>> raw = spark.read.format("binaryFile").load("/data/*/*.log")           # doctest: +SKIP
    >>> kbs.explode_batches(raw, "content", path_column="path", keep=["path"]).count()  # doctest: +SKIP
    12345
    """
    opts = _check_decode_kwargs(options, "explode_batches", keyword_names(explode_batches)[2:])
    keep = list(keep)
    names = set(df.columns)
    for name in [column, *keep, *([path_column] if path_column else [])]:
        if name not in names:
            raise ValueError(f"no column {name!r} in the DataFrame (columns: {', '.join(df.columns)})")
    clash = sorted(set(keep) & set(KAFKA_SCHEMA.fieldNames()))
    if clash:
        raise ValueError(f"kept column(s) {', '.join(clash)} clash with the record columns; rename them first")
    if max_records_per_batch <= 0:
        raise ValueError("max_records_per_batch must be positive")
    out_schema = StructType(KAFKA_SCHEMA.fields + [df.schema[name] for name in keep])
    wanted = list(dict.fromkeys([column, *keep, *([path_column] if path_column else [])]))

    def explode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import numpy as np

        threads = task_threads(opts.get("threads"))
        for rb in batches:
            content = rb.column(column)
            paths = rb.column(path_column).to_pylist() if path_column else None
            kept = [rb.column(name) for name in keep]
            schema = pa.schema(list(SPARK_ARROW_SCHEMA) + [pa.field(name, col.type) for name, col in zip(keep, kept)])
            for i in range(rb.num_rows):
                data = _as_buffer(content[i])
                if data is None:
                    continue
                row_opts = {**opts, "threads": threads}
                if (
                    paths is not None
                    and paths[i] is not None
                    and (row_opts.get("topic") is None or row_opts.get("partition") is None)
                ):
                    found = topic_partition_from_path(path_text(paths[i]))
                    if found is not None:
                        if row_opts.get("topic") is None:
                            row_opts["topic"] = found[0]
                        if row_opts.get("partition") is None:
                            row_opts["partition"] = found[1]
                table = decode(data, **row_opts)
                for batch in table.to_batches(max_chunksize=max_records_per_batch):
                    batch = to_spark_arrow(batch)
                    if kept:
                        repeat = pa.array(np.full(batch.num_rows, i, dtype=np.int64))
                        batch = pa.RecordBatch.from_arrays(
                            list(batch.columns) + [col.take(repeat) for col in kept], schema=schema
                        )
                    yield batch

    return df.select(*wanted).mapInArrow(explode, out_schema)


def path_text(path: str) -> str:
    """A local path from a Spark file URI (``file:/a/b`` → ``/a/b``); other URIs as they are."""
    return fs.local_path(path) if path.startswith("file:") else path


#: ``kbs.parse_values(col, format=..., schema=..., schema_registry=..., on_value_error=..., subject=...)``:
#: see :func:`parse_values_udf`.
parse_values = parse_values_udf
