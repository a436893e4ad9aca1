"""Spark's side of the schema: Spark's Kafka source schema, its Arrow form, and Spark types for parsed values.

>>> to_spark_arrow(kb.decode(data).to_batches()[0]).schema == SPARK_ARROW_SCHEMA  # doctest: +SKIP
True
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_type
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from kafkabatch.values.ddl import spark_schema_of

#: Spark's Kafka source header type: ``array<struct<key: string, value: binary>>``.
HEADERS_TYPE = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))


#: The schema of Spark's Kafka source (with ``includeHeaders``), the schema of
#: the ``kafka-log`` data source and of each element of :func:`decode_batches`.
KAFKA_SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
        StructField("headers", HEADERS_TYPE),
    ]
)


_SPARK_HEADERS_ARROW = pa.list_(pa.field("element", pa.struct([("key", pa.string()), ("value", pa.binary())])))


#: The Arrow schema Spark derives from :data:`KAFKA_SCHEMA`
#: (``pyspark.sql.pandas.types.to_arrow_schema(KAFKA_SCHEMA, timezone="UTC")``):
#: kafkabatch's :data:`kafkabatch.SCHEMA` with the list item called ``element``.
SPARK_ARROW_SCHEMA = pa.schema(
    [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("timestampType", pa.int32()),
        ("headers", _SPARK_HEADERS_ARROW),
    ]
)


_SPARK_RECORD_STRUCT = pa.struct(list(SPARK_ARROW_SCHEMA))


SPARK_RECORDS_LIST = pa.list_(pa.field("element", _SPARK_RECORD_STRUCT))


def to_spark_arrow(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A record batch of :data:`kafkabatch.SCHEMA` with exactly
    :data:`SPARK_ARROW_SCHEMA`'s types (zero-copy: only the headers list's
    item field is renamed, ``item`` → ``element``)."""
    if batch.schema.equals(SPARK_ARROW_SCHEMA) and batch.column(7).type.value_field.name == "element":
        return batch
    columns = list(batch.columns)
    headers = columns[7]
    if pa.types.is_list(headers.type) and headers.type.value_type.equals(_SPARK_HEADERS_ARROW.value_type):
        columns[7] = headers.view(_SPARK_HEADERS_ARROW)
        try:
            return pa.RecordBatch.from_arrays(columns, schema=SPARK_ARROW_SCHEMA)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            pass
    return batch.cast(SPARK_ARROW_SCHEMA)


def json_spark_type(schema: Any) -> DataType:
    """``valueSchema`` for JSON values: Spark DDL, StructType JSON or repr, or a
    JSON Schema / Avro record schema document (through its Arrow type)."""
    text = str(schema).strip()
    if text.startswith("{"):
        document = json.loads(text)
        if document.get("type") == "record" or "properties" in document or "$schema" in document:
            from kafkabatch.values.spec import arrow_type_of

            return spark_type_of(arrow_type_of(document))
    return spark_schema_of(schema)


def spark_ready(arrow_type: pa.DataType) -> pa.DataType:
    """``arrow_type`` with every part Spark can't take replaced by one it can."""
    if pa.types.is_dictionary(arrow_type):
        return spark_ready(arrow_type.value_type)
    if pa.types.is_fixed_size_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return pa.binary()
    if pa.types.is_large_string(arrow_type) or pa.types.is_string_view(arrow_type):
        return pa.string()
    if pa.types.is_timestamp(arrow_type):
        return pa.timestamp("us", tz="UTC" if arrow_type.tz else None)
    if pa.types.is_time(arrow_type):
        return pa.int64()
    # Spark has no unsigned integers: the next signed width holds each value
    # (spark-protobuf's upcast.unsigned.ints), uint64 as decimal(20, 0).
    if pa.types.is_uint8(arrow_type) or pa.types.is_uint16(arrow_type):
        return pa.int32()
    if pa.types.is_uint32(arrow_type):
        return pa.int64()
    if pa.types.is_uint64(arrow_type):
        return pa.decimal128(20, 0)
    if pa.types.is_struct(arrow_type):
        return pa.struct([pa.field(f.name, spark_ready(f.type)) for f in arrow_type])
    if pa.types.is_map(arrow_type):
        return pa.map_(spark_ready(arrow_type.key_type), spark_ready(arrow_type.item_type))
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return pa.list_(spark_ready(arrow_type.value_type))
    if pa.types.is_union(arrow_type):
        raise ValueError(
            f"Spark has no union type for {arrow_type}: give a reader schema whose unions are "
            '["null", T] (or read the values with kafkabatch.parse_values in Python)'
        )
    return arrow_type


def spark_type_of(arrow_type: pa.DataType) -> DataType:
    """The Spark type of a parsed column, every field nullable."""
    return nullable(from_arrow_type(spark_ready(arrow_type), prefer_timestamp_ntz=False))


def nullable(data_type: DataType) -> DataType:
    if isinstance(data_type, StructType):
        return StructType([StructField(f.name, nullable(f.dataType), True) for f in data_type.fields])
    if isinstance(data_type, ArrayType):
        return ArrayType(nullable(data_type.elementType), True)
    if isinstance(data_type, MapType):
        return MapType(nullable(data_type.keyType), nullable(data_type.valueType), True)
    return data_type


def cast_for_spark(array: pa.Array, target: pa.DataType) -> pa.Array:
    """A cast that also takes dictionaries and fixed binary nested in structs,
    lists and maps (pyarrow's cast stops at some of those)."""
    if array.type.equals(target):
        return array
    if pa.types.is_struct(target) and pa.types.is_struct(array.type):
        children = [cast_for_spark(array.field(i), target.field(i).type) for i in range(target.num_fields)]
        return pa.StructArray.from_arrays(
            children, fields=list(target), mask=array.is_null() if array.null_count else None
        )
    mask = array.is_null() if array.null_count else None
    if pa.types.is_map(target) and pa.types.is_map(array.type):
        keys = cast_for_spark(array.keys, target.key_type)
        items = cast_for_spark(array.items, target.item_type)
        return pa.MapArray.from_arrays(array.offsets, keys, items, type=target, mask=mask)
    if pa.types.is_list(target) and (pa.types.is_list(array.type) or pa.types.is_large_list(array.type)):
        # offsets of a sliced list point into its whole child, as .values is
        values = cast_for_spark(array.values, target.value_type)
        return pa.ListArray.from_arrays(array.offsets.cast(pa.int32()), values, type=target, mask=mask)
    if pa.types.is_dictionary(array.type):
        return cast_for_spark(array.dictionary_decode(), target)
    if pa.types.is_fixed_size_binary(array.type) and pa.types.is_binary(target):
        try:
            return array.cast(target)
        except pa.ArrowNotImplementedError:  # older pyarrow: no fixed -> variable binary cast
            return pa.array(array.to_pylist(), target)
    return array.cast(target)
