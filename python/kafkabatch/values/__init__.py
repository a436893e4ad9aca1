"""Typed values and keys: value specs, schema conversions (JSON Schema, Avro, Spark DDL) and the Schema Registry client.

>>> import pyarrow as pa
>>> from kafkabatch.values import parse_values
>>> orders = pa.struct([("order_id", pa.string()), ("qty", pa.int64())])
>>> parse_values(pa.array([b'{"order_id": "a", "qty": 2}']), format="json", schema=orders).to_pylist()
[{'order_id': 'a', 'qty': 2}]
"""

from __future__ import annotations

from kafkabatch.values.registry import SchemaRegistry, SchemaRegistryError
from kafkabatch.values.spec import ValueDecodeError, ValueSpec, arrow_type_of, parse_values

__all__ = ["SchemaRegistry", "SchemaRegistryError", "ValueDecodeError", "ValueSpec", "arrow_type_of", "parse_values"]
