"""The ``internalTopic`` option: Kafka's internal topics' records as typed struct columns in Spark.

The columns of :func:`kafkabatch.internal.decode_internal_columns`, in Spark's
types (unsigned integers widened, as :func:`kafkabatch.spark.types.spark_ready`
does), appended to the Kafka source schema. It stands where typed values
stand (``values`` of the readers): same interface, so planning and reading
are unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.types import StructField, StructType

from kafkabatch.internal import Internal, decode_internal_columns, internal_schema, resolve_internal
from kafkabatch.spark.types import cast_for_spark, spark_type_of
from kafkabatch.values.ddl import arrow_type_for_spark


def internal_option(options: Mapping[str, Any]) -> Internal | None:
    """``internalTopic`` (``auto``, a kind, or a JSON object ``{topic: kind}``)
    and ``definitions`` from the (lower-cased) options, checked."""
    value = options.get("internaltopic")
    definitions = options.get("definitions") or None
    if value is None or str(value).strip() == "":
        if definitions is not None:
            raise ValueError("kafka-log option 'definitions' needs option 'internalTopic' (auto or a kind)")
        return None
    text = str(value).strip()
    if text.startswith("{"):
        import json

        try:
            parsed: Any = json.loads(text)
        except ValueError as error:
            raise ValueError(f"kafka-log option 'internalTopic': not a JSON object of topic: kind ({error})") from None
    else:
        parsed = text
    try:
        return resolve_internal(parsed, definitions)
    except (TypeError, ValueError, FileNotFoundError) as error:
        message = str(error).replace("definitions:", "kafka-log option 'definitions':", 1)
        if not message.startswith("kafka-log option"):
            message = f"kafka-log option 'internalTopic': {message}"
        raise ValueError(message) from None


@dataclass(frozen=True)
class SparkInternalColumns:
    """The decoded columns of a ``kafka-log`` read, resolved on the driver, pickled to the tasks."""

    internal: Internal
    added: pa.Schema

    #: no value is parsed: the readers' typed-value steps do nothing
    specs: tuple[Any, ...] = ()

    def schema(self, base: StructType) -> StructType:
        return StructType([*base.fields, *(StructField(f.name, spark_type_of(f.type), True) for f in self.added)])

    def arrow_schema(self, base: StructType) -> pa.Schema:
        return pa.schema([pa.field(f.name, arrow_type_for_spark(f.dataType)) for f in self.schema(base).fields])

    def to_spark(self, batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
        """``batch`` with its decoded columns, in exactly the Arrow types of ``target``."""
        decoded = decode_internal_columns(batch, self.internal, self.added)
        columns = [cast_for_spark(decoded.column(i), target.field(i).type) for i in range(decoded.num_columns)]
        return pa.RecordBatch.from_arrays(columns, schema=target)


def internal_columns(internal: Internal | None, topics: Iterable[str]) -> SparkInternalColumns | None:
    """The columns for the listed ``topics`` (None when none of them is decoded)."""
    if internal is None:
        return None
    kinds = sorted({k for k in (internal.kind_for(t) for t in topics) if k is not None})
    if not kinds:
        return None
    return SparkInternalColumns(internal, internal_schema(kinds, internal))
