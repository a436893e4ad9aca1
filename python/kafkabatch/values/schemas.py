"""Schema conversions to Arrow: JSON Schema documents and Avro schema text.

>>> json_schema_to_arrow({"type": "object", "properties": {"id": {"type": "integer"}}})
StructType(struct<id: int64>)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pyarrow as pa


def is_json_schema(document: Mapping[str, Any]) -> bool:
    return "$schema" in document or "properties" in document or document.get("type") == "object"


def json_schema_to_arrow(document: Mapping[str, Any]) -> pa.DataType:
    """The Arrow type of values described by a JSON Schema: objects with
    ``properties`` → struct, ``additionalProperties`` alone → map, arrays →
    list, ``integer`` → int64, ``number`` → float64, ``string`` (``date-time``
    → timestamp, ``date`` → date32), ``["T", "null"]`` → nullable T. Anything
    else (several types, free-form objects) is kept as its JSON text.

    >>> json_schema_to_arrow({"type": "object", "properties": {"id": {"type": "integer"}}})
    StructType(struct<id: int64>)
    """
    definitions = {**document.get("definitions", {}), **document.get("$defs", {})}

    def convert(node: Any, depth: int = 0) -> pa.DataType:
        if not isinstance(node, Mapping) or depth > 64:
            return pa.string()
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(("#/definitions/", "#/$defs/")):
            return convert(definitions.get(ref.rsplit("/", 1)[1]), depth + 1)
        for key in ("anyOf", "oneOf"):
            if key in node:
                members = [m for m in node[key] if not (isinstance(m, Mapping) and m.get("type") == "null")]
                return convert(members[0], depth + 1) if len(members) == 1 else pa.string()
        kind = node.get("type")
        kinds = [k for k in (kind if isinstance(kind, list) else [kind]) if k != "null"]
        if not kinds and "properties" in node:
            kinds = ["object"]
        if len(kinds) != 1:
            return pa.string()
        kind = kinds[0]
        if kind == "object":
            properties = node.get("properties")
            if properties:
                return pa.struct([pa.field(name, convert(sub, depth + 1)) for name, sub in properties.items()])
            extra = node.get("additionalProperties")
            if isinstance(extra, Mapping):
                return pa.map_(pa.string(), convert(extra, depth + 1))
            return pa.string()
        if kind == "array":
            return pa.list_(convert(node.get("items", {}), depth + 1))
        if kind == "string":
            return {"date-time": pa.timestamp("us", "UTC"), "date": pa.date32()}.get(
                str(node.get("format")), pa.string()
            )
        return {"integer": pa.int64(), "number": pa.float64(), "boolean": pa.bool_()}.get(str(kind), pa.string())

    return convert(document)


def avro_text(schema: Any) -> str:
    """An Avro schema as JSON text, from text, a dict/list, or a
    confluent-kafka ``Schema`` / ``RegisteredSchema``."""
    if isinstance(schema, str):
        return schema
    if isinstance(schema, (Mapping, list)):
        return json.dumps(schema)
    inner = getattr(schema, "schema", None)
    text = getattr(schema, "schema_str", None) or getattr(inner, "schema_str", None)
    if isinstance(text, str):
        return text
    raise TypeError(f"an Avro schema must be JSON text or a dict, not {type(schema).__name__}")
