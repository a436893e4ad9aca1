"""The ``kafka-log`` options that type ``value`` and ``key``, resolved on the driver and pickled to tasks.

>>> value_columns({"valueformat": "json", "valueschema": "id string"}, ["orders"]).spark_types  # doctest: +SKIP
(('value', StructType([StructField('id', StringType(), True)])),)
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.types import DataType, StructField, StructType

import kafkabatch._kafkabatch as _native
from kafkabatch.spark.types import cast_for_spark, json_spark_type, nullable, spark_type_of
from kafkabatch.values.ddl import arrow_type_for_spark
from kafkabatch.values.registry import BASIC_AUTH, BEARER_TOKEN, is_registry_file, registry_file
from kafkabatch.values.schemas import avro_text
from kafkabatch.values.spec import ValueSpec, resolve
from kafkabatch.values.vocabulary import SPARK, speaks

#: The ``kafka-log`` options that type ``value`` and ``key`` (docs/spark.md); the core's list.
VALUE_OPTIONS: tuple[str, ...] = tuple(_native.SPARK_VALUE_OPTIONS)


def registry_option(options: Mapping[str, Any]) -> Any:
    """The ``schemaRegistry`` option (lower-cased names) as :func:`kafkabatch.values.resolve`
    takes it: a confluent-style config dict for a URL, ``{id: schema}`` for a JSON object."""
    text = options.get("schemaregistry")
    if text is None or str(text).strip() == "":
        return None
    text = str(text).strip()
    if is_registry_file(text):  # the {schema id: schema} file kafkabatch generate writes
        return registry_file(text)
    if text.startswith("{"):
        return {int(k): avro_text(v) for k, v in json.loads(text).items()}
    config = {"url": text}
    for name in (BASIC_AUTH, BEARER_TOKEN):
        if options.get(f"schemaregistry.{name}"):
            config[name] = str(options[f"schemaregistry.{name}"])
    return config


_MESSAGE_NAME = re.compile(r"\.?[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def protobuf_option(options: Mapping[str, Any], column: str) -> Any:
    """The Protobuf schema the (lower-cased) options name for ``column``:
    ``<column>Message`` (the message's full name) with ``<column>DescriptorSet``
    (a ``protoc --descriptor_set_out`` file) or ``<column>Schema`` (``.proto``
    text or a path to a ``.proto`` file); with a registry, the message alone
    (``<column>Schema`` may name it too) or nothing."""
    message = options.get(f"{column}message")
    descriptor_set = options.get(f"{column}descriptorset")
    text = options.get(f"{column}schema")
    if text is not None and message is None and _MESSAGE_NAME.fullmatch(str(text).strip()):
        return str(text).strip()
    if (descriptor_set is not None or text is not None) and message is None:
        raise ValueError(f"{column}Format=protobuf with a schema needs {column}Message (the message's full name)")
    if descriptor_set is not None:
        return {"message": str(message), "descriptor_set": str(descriptor_set)}
    if text is not None:
        return {"message": str(message), "proto": str(text)}
    return None if message is None else str(message)


@dataclass(frozen=True)
class SparkValueColumns:
    """The typed columns of a ``kafka-log`` read: how each is parsed and the
    Spark type it gets. Resolved on the driver (registry schemas included),
    pickled to the tasks."""

    specs: tuple[ValueSpec, ...]
    spark_types: tuple[tuple[str, DataType], ...]

    def schema(self, base: StructType) -> StructType:
        types = dict(self.spark_types)
        return StructType([StructField(f.name, types.get(f.name, f.dataType), f.nullable) for f in base.fields])

    def arrow_schema(self, base: StructType) -> pa.Schema:
        return pa.schema([pa.field(f.name, arrow_type_for_spark(f.dataType)) for f in self.schema(base).fields])

    def to_spark(self, batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
        """A parsed batch in exactly the Arrow types of ``target``."""
        columns = [cast_for_spark(batch.column(i), target.field(i).type) for i in range(batch.num_columns)]
        return pa.RecordBatch.from_arrays(columns, schema=target)


@speaks(SPARK)
def value_columns(
    options: Mapping[str, Any], topics: Iterable[str], sample: Callable[[str], pa.ChunkedArray] | None = None
) -> SparkValueColumns | None:
    """The typed columns the (lower-cased) options ask for, or None;
    ``sample(column)``: a few values, whose frames name the Protobuf message
    when the options don't."""
    registry = registry_option(options)
    on_error = str(options.get("onvalueerror", "raise")).strip().lower()
    on_error = {"failfast": "raise", "permissive": "null"}.get(on_error, on_error)
    specs = []
    spark_types = []
    for column in ("value", "key"):
        fmt = options.get(f"{column}format")
        schema_text = options.get(f"{column}schema")
        fmt = None if fmt is None else str(fmt).strip().lower()
        if fmt in (None, "", "binary") and schema_text is None:
            continue
        spark_type = None
        schema: Any = schema_text
        if fmt == "protobuf":
            schema = protobuf_option(options, column)
        elif fmt == "json" and schema_text is not None:
            spark_type = nullable(json_spark_type(schema_text))
            schema = arrow_type_for_spark(spark_type)
        spec = resolve(
            column,
            fmt,
            schema,
            registry,
            on_error,
            topics=topics,
            sample=None if sample is None else functools.partial(sample, column),
        )
        if spec is None:
            continue
        specs.append(spec)
        spark_types.append((column, spark_type or spark_type_of(spec.output_type)))
    if not specs:
        return None
    return SparkValueColumns(tuple(specs), tuple(spark_types))
