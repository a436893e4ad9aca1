"""Typed values in Spark: schemas as Spark writes them, Arrow as Spark reads it.

A Python data source is planned in a Python worker with no JVM, so
``valueSchema`` DDL (``"order_id string, qty long, items array<struct<sku:
string, n: int>>"``) is parsed here rather than by Spark's parser. Parsed
values leave in the exact Arrow types Spark expects for their Spark type:
Avro enums (dictionaries) become strings, uuids and fixed binary,
timestamps microseconds in UTC, every field nullable.

>>> spark_schema_of("id string, qty bigint").simpleString()
'struct<id:string,qty:bigint>'
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_type, to_arrow_type
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from kafkabatch.registry import BASIC_AUTH, BEARER_TOKEN, registry_of
from kafkabatch.values import ValueSpec, avro_text, resolve, subject_writers

_SIMPLE: dict[str, DataType] = {
    "string": StringType(),
    "varchar": StringType(),
    "char": StringType(),
    "binary": BinaryType(),
    "boolean": BooleanType(),
    "bool": BooleanType(),
    "tinyint": ByteType(),
    "byte": ByteType(),
    "smallint": ShortType(),
    "short": ShortType(),
    "int": IntegerType(),
    "integer": IntegerType(),
    "bigint": LongType(),
    "long": LongType(),
    "float": FloatType(),
    "real": FloatType(),
    "double": DoubleType(),
    "date": DateType(),
    "timestamp": TimestampType(),
    "timestamp_ltz": TimestampType(),
    "timestamp_ntz": TimestampNTZType(),
}

_TOKEN = re.compile(r"\s*(?:(`(?:[^`]|``)*`)|([A-Za-z_][A-Za-z0-9_]*)|(\d+)|('(?:[^'\\]|\\.)*')|([<>(),:]))")


class _DDL:
    """A recursive-descent reader of Spark's type DDL."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[str] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            match = _TOKEN.match(text, pos)
            if not match:
                raise ValueError(f"cannot read the schema DDL at character {pos}: {text[pos : pos + 20]!r}")
            self.tokens.append(next(g for g in match.groups() if g is not None))
            pos = match.end()
        self.i = 0

    def peek(self) -> str | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token.lower() != expected):
            want = f"{expected!r}" if expected else "more"
            raise ValueError(f"schema DDL {self.text!r}: expected {want}, found {token!r}")
        self.i += 1
        return token

    def fields(self, end: str | None) -> StructType:
        fields = []
        while self.peek() is not None and self.peek() != end:
            name = self.take()
            name = name[1:-1].replace("``", "`") if name.startswith("`") else name
            if self.peek() == ":":
                self.take(":")
            data_type = self.type()
            nullable = True
            if (self.peek() or "").lower() == "not":
                self.take("not")
                self.take("null")
                nullable = False
            if (self.peek() or "").lower() == "comment":
                self.take("comment")
                self.take()
            fields.append(StructField(name, data_type, nullable))
            if self.peek() == ",":
                self.take(",")
        return StructType(fields)

    def type(self) -> DataType:
        word = self.take().lower()
        if word in ("varchar", "char") and self.peek() == "(":
            self.take("(")
            self.take()
            self.take(")")
        if word in _SIMPLE:
            return _SIMPLE[word]
        if word in ("decimal", "dec", "numeric"):
            precision, scale = 10, 0
            if self.peek() == "(":
                self.take("(")
                precision = int(self.take())
                if self.peek() == ",":
                    self.take(",")
                    scale = int(self.take())
                self.take(")")
            return DecimalType(precision, scale)
        if word == "array":
            self.take("<")
            element = self.type()
            self.take(">")
            return ArrayType(element)
        if word == "map":
            self.take("<")
            key = self.type()
            self.take(",")
            value = self.type()
            self.take(">")
            return MapType(key, value)
        if word == "struct":
            self.take("<")
            struct = self.fields(">")
            self.take(">")
            return struct
        raise ValueError(f"schema DDL {self.text!r}: unknown type {word!r}")


def _from_repr(text: str) -> DataType:
    """A Spark type from its Python repr, which is what ``.option("valueSchema",
    StructType(...))`` passes (PySpark turns option values into ``str``).
    Read with :mod:`ast`: only pyspark type constructors and literals."""
    import ast

    from pyspark.sql import types

    def build(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.List):
            return [build(e) for e in node.elts]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            cls = getattr(types, node.func.id, None)
            if isinstance(cls, type) and (issubclass(cls, DataType) or cls is StructField):
                return cls(*[build(a) for a in node.args], **{k.arg: build(k.value) for k in node.keywords if k.arg})
        raise ValueError(f"not a Spark type: {ast.unparse(node)!r}")

    built = build(ast.parse(text, mode="eval").body)
    if not isinstance(built, DataType):
        raise ValueError(f"not a Spark type: {text!r}")
    return built


def spark_schema_of(schema: Any) -> DataType:
    """A Spark type from DDL (``"a int, b string"`` or ``"struct<...>"``),
    Spark's JSON form (``StructType.json()``), a ``StructType``'s repr, or a
    Spark ``DataType``."""
    if isinstance(schema, DataType):
        return schema
    text = str(schema).strip()
    if text.startswith("{"):
        return StructType.fromJson(json.loads(text))
    if re.match(r"^[A-Za-z]+Type\(", text):
        return _from_repr(text)
    ddl = _DDL(text)
    if (ddl.peek() or "").lower() in ("struct", "array", "map") and len(ddl.tokens) > 1 and ddl.tokens[1] == "<":
        data_type = ddl.type()
    else:
        data_type = ddl.fields(None)
    if ddl.peek() is not None:
        raise ValueError(f"schema DDL {text!r}: unexpected {ddl.peek()!r}")
    return data_type


def _json_spark_type(schema: Any) -> DataType:
    """``valueSchema`` for JSON values: Spark DDL, StructType JSON or repr, or a
    JSON Schema / Avro record schema document (through its Arrow type)."""
    text = str(schema).strip()
    if text.startswith("{"):
        document = json.loads(text)
        if document.get("type") == "record" or "properties" in document or "$schema" in document:
            from kafkabatch.values import arrow_type_of

            return spark_type_of(arrow_type_of(document))
    return spark_schema_of(schema)


def arrow_type_for_spark(data_type: DataType) -> pa.DataType:
    """The Arrow type Spark reads for ``data_type``, timestamps in UTC."""
    try:
        return to_arrow_type(data_type, timezone="UTC")
    except TypeError:  # PySpark 4.0: no timezone argument, timestamps are UTC
        return to_arrow_type(data_type)


def spark_type_to_arrow(schema: Any) -> pa.DataType:
    """The Arrow type Spark uses for a Spark type, DDL or JSON schema."""
    return arrow_type_for_spark(spark_schema_of(schema))


def _spark_ready(arrow_type: pa.DataType) -> pa.DataType:
    """``arrow_type`` with every part Spark can't take replaced by one it can."""
    if pa.types.is_dictionary(arrow_type):
        return _spark_ready(arrow_type.value_type)
    if pa.types.is_fixed_size_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return pa.binary()
    if pa.types.is_large_string(arrow_type) or pa.types.is_string_view(arrow_type):
        return pa.string()
    if pa.types.is_timestamp(arrow_type):
        return pa.timestamp("us", tz="UTC" if arrow_type.tz else None)
    if pa.types.is_time(arrow_type):
        return pa.int64()
    if pa.types.is_struct(arrow_type):
        return pa.struct([pa.field(f.name, _spark_ready(f.type)) for f in arrow_type])
    if pa.types.is_map(arrow_type):
        return pa.map_(_spark_ready(arrow_type.key_type), _spark_ready(arrow_type.item_type))
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return pa.list_(_spark_ready(arrow_type.value_type))
    if pa.types.is_union(arrow_type):
        raise ValueError(
            f"Spark has no union type for {arrow_type}: give a reader schema whose unions are "
            '["null", T] (or read the values with kafkabatch.parse_values in Python)'
        )
    return arrow_type


def spark_type_of(arrow_type: pa.DataType) -> DataType:
    """The Spark type of a parsed column, every field nullable."""
    return _nullable(from_arrow_type(_spark_ready(arrow_type), prefer_timestamp_ntz=False))


def _nullable(data_type: DataType) -> DataType:
    if isinstance(data_type, StructType):
        return StructType([StructField(f.name, _nullable(f.dataType), True) for f in data_type.fields])
    if isinstance(data_type, ArrayType):
        return ArrayType(_nullable(data_type.elementType), True)
    if isinstance(data_type, MapType):
        return MapType(_nullable(data_type.keyType), _nullable(data_type.valueType), True)
    return data_type


def _cast(array: pa.Array, target: pa.DataType) -> pa.Array:
    """A cast that also takes dictionaries and fixed binary nested in structs,
    lists and maps (pyarrow's cast stops at some of those)."""
    if array.type.equals(target):
        return array
    if pa.types.is_struct(target) and pa.types.is_struct(array.type):
        children = [_cast(array.field(i), target.field(i).type) for i in range(target.num_fields)]
        return pa.StructArray.from_arrays(
            children, fields=list(target), mask=array.is_null() if array.null_count else None
        )
    mask = array.is_null() if array.null_count else None
    if pa.types.is_map(target) and pa.types.is_map(array.type):
        keys = _cast(array.keys, target.key_type)
        items = _cast(array.items, target.item_type)
        return pa.MapArray.from_arrays(array.offsets, keys, items, type=target, mask=mask)
    if pa.types.is_list(target) and (pa.types.is_list(array.type) or pa.types.is_large_list(array.type)):
        # offsets of a sliced list point into its whole child, as .values is
        values = _cast(array.values, target.value_type)
        return pa.ListArray.from_arrays(array.offsets.cast(pa.int32()), values, type=target, mask=mask)
    if pa.types.is_dictionary(array.type):
        return _cast(array.dictionary_decode(), target)
    if pa.types.is_fixed_size_binary(array.type) and pa.types.is_binary(target):
        try:
            return array.cast(target)
        except pa.ArrowNotImplementedError:  # older pyarrow: no fixed -> variable binary cast
            return pa.array(array.to_pylist(), target)
    return array.cast(target)


# --------------------------------------------------------------------------
# the kafka-log source's value options
# --------------------------------------------------------------------------

#: The ``kafka-log`` options that type ``value`` and ``key`` (docs/spark.md).
VALUE_OPTIONS: tuple[str, ...] = (
    "valueFormat",
    "valueSchema",
    "keyFormat",
    "keySchema",
    "schemaRegistry",
    "schemaRegistry.basic.auth.user.info",
    "schemaRegistry.bearer.auth.token",
    "onValueError",
)


def registry_option(options: Mapping[str, Any]) -> Any:
    """The ``schemaRegistry`` option (lower-cased names) as :func:`kafkabatch.values.resolve`
    takes it: a confluent-style config dict for a URL, ``{id: schema}`` for a JSON object."""
    text = options.get("schemaregistry")
    if text is None or str(text).strip() == "":
        return None
    text = str(text).strip()
    if text.startswith("{"):
        return {int(k): avro_text(v) for k, v in json.loads(text).items()}
    config = {"url": text}
    for name in (BASIC_AUTH, BEARER_TOKEN):
        if options.get(f"schemaregistry.{name}"):
            config[name] = str(options[f"schemaregistry.{name}"])
    return config


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
        columns = [_cast(batch.column(i), target.field(i).type) for i in range(batch.num_columns)]
        return pa.RecordBatch.from_arrays(columns, schema=target)


def value_columns(options: Mapping[str, Any], topics: Iterable[str]) -> SparkValueColumns | None:
    """The typed columns the (lower-cased) options ask for, or None."""
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
        if fmt == "json" and schema_text is not None:
            spark_type = _nullable(_json_spark_type(schema_text))
            schema = arrow_type_for_spark(spark_type)
        spec = resolve(column, fmt, schema, registry, on_error, topics=topics)
        if spec is None:
            continue
        specs.append(spec)
        spark_types.append((column, spark_type or spark_type_of(spec.output_type)))
    if not specs:
        return None
    return SparkValueColumns(tuple(specs), tuple(spark_types))


# --------------------------------------------------------------------------
# parse_values over any binary column (Spark's own Kafka source)
# --------------------------------------------------------------------------


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
    ``StructType``, a JSON Schema or a pyarrow type) or ``"avro"``
    (``schema`` the Avro schema, or ``schema_registry`` a URL, a
    confluent-style config dict or ``{id: schema}`` for Confluent-framed
    values). An Arrow UDF on PySpark 4.1+, a pandas UDF before (where a null
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
            from kafkabatch.values import arrow_type_of

            arrow_schema = arrow_type_of(schema)
            spark_type = spark_type_of(arrow_schema)
        else:
            spark_type = _nullable(_json_spark_type(json.dumps(schema) if isinstance(schema, Mapping) else schema))
            arrow_schema = arrow_type_for_spark(spark_type)
    registry: Any = schema_registry
    client = registry_of(schema_registry) if format == "avro" else None
    if client is not None:
        registry, latest = subject_writers(client, [subject] if subject is not None else client.subjects())
        if schema is None:
            arrow_schema = latest
    spec = resolve("value", format, arrow_schema, registry, on_value_error)
    if spec is None:
        raise ValueError("format must be 'string', 'json' or 'avro'")
    spark_type = spark_type or spark_type_of(spec.output_type)
    target = arrow_type_for_spark(spark_type)

    def parse(values: pa.Array) -> pa.Array:
        parsed = spec.parse(values, threads=1).combine_chunks()
        return _cast(parsed, target)

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
