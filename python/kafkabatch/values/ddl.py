"""Spark types from their text forms without a JVM: DDL (``"id string, qty bigint"``), StructType JSON or repr.

A Python data source is planned in a Python worker with no JVM, so DDL is
parsed here rather than by Spark's parser. Needs pyspark (for its type classes).

>>> spark_schema_of("id string, qty bigint").simpleString()
'struct<id:string,qty:bigint>'
"""

from __future__ import annotations

import json
import re
from typing import Any

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_type
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


#: How deep struct, array and map types may nest in a schema given as text.
MAX_NESTING = 64


class _DDL:
    """A recursive-descent reader of Spark's type DDL, nesting at most
    :data:`MAX_NESTING` types deep (the recursion follows the text)."""

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
        self.depth = 0

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
        self.depth += 1
        try:
            return self._type()
        finally:
            self.depth -= 1

    def _type(self) -> DataType:
        word = self.take().lower()
        if self.depth > MAX_NESTING and word in ("array", "map", "struct"):
            raise ValueError(f"schema DDL {self.text[:60]!r}...: types nest more than {MAX_NESTING} deep")
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
    try:
        if text.startswith("{"):
            return StructType.fromJson(json.loads(text))
        if re.match(r"^[A-Za-z]+Type\(", text):
            return _from_repr(text)
    except (RecursionError, MemoryError):  # Python's stack, not a crash: the schema is too deep to read
        raise ValueError(f"schema {text[:60]!r}...: nested too deeply to read") from None
    ddl = _DDL(text)
    if (ddl.peek() or "").lower() in ("struct", "array", "map") and len(ddl.tokens) > 1 and ddl.tokens[1] == "<":
        data_type = ddl.type()
    else:
        data_type = ddl.fields(None)
    if ddl.peek() is not None:
        raise ValueError(f"schema DDL {text!r}: unexpected {ddl.peek()!r}")
    return data_type


def arrow_type_for_spark(data_type: DataType) -> pa.DataType:
    """The Arrow type Spark reads for ``data_type``, timestamps in UTC."""
    try:
        return to_arrow_type(data_type, timezone="UTC")
    except TypeError:  # PySpark 4.0: no timezone argument, timestamps are UTC
        return to_arrow_type(data_type)


def spark_type_to_arrow(schema: Any) -> pa.DataType:
    """The Arrow type Spark uses for a Spark type, DDL or JSON schema."""
    return arrow_type_for_spark(spark_schema_of(schema))
