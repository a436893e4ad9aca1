"""Typed values and keys: JSON, Avro, Protobuf (plain or Schema Registry framed) and UTF-8 into Arrow columns.

The parsing runs in the Rust core (arrow-rs's ``arrow-json`` and
``arrow-avro`` readers, ``prost-reflect`` for Protobuf) on every core, with the GIL released. This module
turns the user's options into a :class:`ValueSpec` (fetching schemas from a
registry when one is named) and maps a bad row back to its Kafka offset.

>>> orders = pa.struct([("order_id", pa.string()), ("qty", pa.int64())])
>>> kb.parse_values(table.column("value"), format="json", schema=orders)   # doctest: +SKIP
<pyarrow.lib.ChunkedArray object at ...>
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc

from kafkabatch import _kafkabatch as _native
from kafkabatch.values.headers import guid_ids as header_guid_ids
from kafkabatch.values.headers import with_header_frames
from kafkabatch.values.protobuf import ProtoFile, protobuf_schema, registered_file, registry_files
from kafkabatch.values.registry import SchemaRegistry, SchemaRegistryError, registry_file, registry_of
from kafkabatch.values.schemas import avro_text, is_json_schema, json_schema_to_arrow

ValueFormat = Literal["binary", "string", "json", "avro", "protobuf"]


OnValueError = Literal["raise", "null"]


FORMATS = ("binary", "string", "json", "avro", "protobuf")


ON_VALUE_ERROR = ("raise", "null")


#: Raised for a value (or key) that can't be parsed: ``topic``, ``partition``,
#: ``offset`` (when known), ``column`` and ``reason`` say which and why.
ValueDecodeError = _native.ValueDecodeError


@dataclass(frozen=True)
class ValueSpec:
    """How one column (``value`` or ``key``) is parsed: resolved, with every
    schema in hand, so it can be pickled to Spark tasks and never needs the
    network again."""

    column: str
    format: str
    arrow_type: pa.DataType | None = None
    avro_schema: str | None = None
    writers: tuple[tuple[int, str], ...] | None = None
    confluent: bool = False
    on_error: str = "raise"
    #: Protobuf: the files of plain values, or each schema id's files, and the message read.
    proto_files: tuple[ProtoFile, ...] | None = None
    proto_writers: tuple[tuple[int, tuple[ProtoFile, ...]], ...] | None = None
    message: str | None = None
    #: Local schema ids of the GUIDs found in schema-id headers (see :mod:`kafkabatch.values.headers`).
    guid_ids: tuple[tuple[str, int], ...] = ()

    def parser(self) -> _native.ValueParser:
        """The core's parser for this spec, its schemas compiled (made per
        call: it is not picklable, and specs travel to Spark tasks)."""
        return _native.value_parser(
            format=self.format,
            data_type=self.arrow_type,
            avro_schema=self.avro_schema,
            writers=list(self.writers) if self.writers is not None else None,
            confluent=self.confluent,
            on_error=self.on_error,
            proto_files=list(self.proto_files) if self.proto_files is not None else None,
            proto_writers=[(i, list(f)) for i, f in self.proto_writers] if self.proto_writers is not None else None,
            message=self.message,
        )

    def parse(self, values: Any, threads: int | None = None) -> pa.ChunkedArray:
        """Parse a binary (or string) column; the first bad row raises
        :class:`ValueDecodeError` with its ``row`` unless ``on_error="null"``."""
        return pa.table(self.parser().parse(_column_table(values), threads=threads)).column(0)

    @cached_property
    def output_type(self) -> pa.DataType:
        """The Arrow type of the parsed column."""
        return self.parse(pa.array([], pa.binary())).type

    def apply(self, table: pa.Table, threads: int | None = None) -> pa.Table:
        """``table`` with this spec's column parsed; a bad value raises
        :class:`ValueDecodeError` naming its topic, partition and offset."""
        index = table.schema.get_field_index(self.column)
        values = table.column(index)
        if self.confluent:
            values = with_header_frames(table, self.column, dict(self.guid_ids))
        try:
            parsed = self.parse(values, threads)
        except ValueDecodeError as error:
            raise framing_hint(located(error, table, self.column), self, table) from None
        return table.set_column(index, pa.field(self.column, parsed.type), parsed)


def located(error: Exception, table: pa.Table | pa.RecordBatch, column: str) -> Exception:
    """The same error, its message naming the record's topic, partition and offset."""
    row = getattr(error, "row", None)
    reason = getattr(error, "reason", str(error))
    where = f"row {row}"
    attrs: dict[str, Any] = {"row": row, "reason": reason, "column": column}
    if row is not None and row < table.num_rows:
        names = table.schema.names
        for name in ("topic", "partition", "offset"):
            attrs[name] = table.column(name)[row].as_py() if name in names else None
        if attrs.get("offset") is not None:
            where = f"offset {attrs['offset']}"
            if attrs.get("topic") is not None:
                where += f" of {attrs['topic']}-{attrs['partition']}"
    new = ValueDecodeError(f"{column} at {where}: {reason}")
    for name, value in attrs.items():
        setattr(new, name, value)
    return new


def arrow_type_of(schema: Any) -> pa.DataType:
    """A JSON target type from a pyarrow type, field or schema (a struct of
    its fields); a JSON Schema document (dict or text, as JSON Schema
    serializers register them); an Avro record schema (dict or text, by
    Arrow's Avro mapping); or a Spark ``StructType`` / DDL string (needs pyspark)."""
    if isinstance(schema, pa.Schema):
        return pa.struct(list(schema))
    if isinstance(schema, pa.Field):
        return schema.type
    if isinstance(schema, pa.DataType):
        return schema
    document = schema
    if isinstance(schema, str) and schema.lstrip().startswith("{"):
        document = json.loads(schema)
    if isinstance(document, Mapping) and document.get("type") == "record":
        return ValueSpec("value", "avro", avro_schema=json.dumps(document)).output_type
    if isinstance(document, Mapping) and is_json_schema(document):
        return json_schema_to_arrow(document)
    if isinstance(schema, str) or type(schema).__module__.startswith("pyspark"):
        from kafkabatch.values.ddl import spark_type_to_arrow

        return spark_type_to_arrow(schema)
    raise TypeError(f"a JSON schema must be a pyarrow type or schema, not {type(schema).__name__}")


def _is_json_schema_text(text: str) -> bool:
    """Whether Avro schema text is a JSON Schema document instead."""
    try:
        document = json.loads(text)
    except ValueError:
        return False
    return isinstance(document, Mapping) and document.get("type") != "record" and is_json_schema(document)


def confluent_ids(values: pa.ChunkedArray | pa.Array) -> list[int]:
    """The distinct schema ids in a column of Confluent-framed values."""
    heads = pc.unique(pc.binary_slice(values, 1, 5)).drop_null().to_pylist()
    return sorted(int.from_bytes(h, "big") for h in heads if len(h) == 4)


def resolve(
    column: str,
    format: str | None,
    schema: Any = None,
    schema_registry: Any = None,
    on_error: str = "raise",
    *,
    values: pa.ChunkedArray | pa.Array | None = None,
    topics: Iterable[str] = (),
    subjects: Iterable[str] | None = None,
    guid_ids: Mapping[str, int] | None = None,
    sample: Callable[[], pa.ChunkedArray] | None = None,
) -> ValueSpec | None:
    """The :class:`ValueSpec` for one column, or None to leave it binary.

    A registry URL is asked, here and only here, for the writer schemas:
    those of the ids found in ``values``, else every version of the subjects
    ``<topic>-<column>`` (TopicNameStrategy) of ``topics`` (Protobuf: or of
    ``subjects``). Framed Protobuf read as no named message is read as the
    message the frames of ``values`` name, else those of ``sample()`` (a
    few of the values, read before a scan).
    """
    schema_registry = registry_file(schema_registry)  # a {schema id: schema} JSON file, read
    format = "binary" if format is None else str(format).lower()
    if format not in FORMATS:
        raise ValueError(f"{column}_format must be one of {', '.join(FORMATS)}, not {format!r}")
    if on_error not in ON_VALUE_ERROR:
        raise ValueError(f"on_value_error must be 'raise' or 'null', not {on_error!r}")
    if format == "binary":
        if schema is not None:
            raise ValueError(f"{column}_schema needs a typed {column}_format ('json', 'avro' or 'protobuf')")
        return None
    if format == "string":
        return ValueSpec(column, "string", on_error=on_error)
    registry = registry_of(schema_registry)
    if format == "json":
        if schema is None:
            raise ValueError(f"{column}_format='json' needs {column}_schema (a pyarrow struct type or schema)")
        if registry is not None:
            registry.check()  # unreachable: fail before any work
        return ValueSpec(
            column, "json", arrow_type=arrow_type_of(schema), confluent=schema_registry is not None, on_error=on_error
        )
    if format == "protobuf":
        if subjects is None:
            subjects = [f"{t}-{column}" for t in topics]
        return _protobuf_spec(
            column, schema, schema_registry, registry, on_error, values, list(subjects), guid_ids or {}, sample
        )
    reader = None if schema is None else avro_text(schema)
    if reader is not None and _is_json_schema_text(reader):
        raise ValueError(
            f"{column}_schema is a JSON Schema, not an Avro schema: JSON values are read with "
            f"{column}_format='json' and this schema"
        )
    if schema_registry is None:
        if reader is None:
            raise ValueError(
                f"{column}_format='avro' needs {column}_schema (the writer schema) or schema_registry "
                "(for Confluent-framed values)"
            )
        return ValueSpec(column, "avro", avro_schema=reader, on_error=on_error)
    if registry is not None:
        writers, latest = _fetch_writers(registry, column, values, topics, guid_ids or {})
        reader = reader or latest
    elif isinstance(schema_registry, Mapping):
        writers = {int(k): avro_text(v) for k, v in schema_registry.items()}
    else:
        raise TypeError(
            "schema_registry must be a URL, a confluent-style config dict with 'url', "
            f"or a dict of schema id -> schema, not {type(schema_registry).__name__}"
        )
    if not writers:
        raise ValueError(f"no writer schemas for {column}: the registry has none for these topics")
    return ValueSpec(
        column,
        "avro",
        avro_schema=reader,
        writers=tuple(sorted(writers.items())),
        confluent=True,
        on_error=on_error,
    )


def _protobuf_spec(
    column: str,
    schema: Any,
    schema_registry: Any,
    registry: SchemaRegistry | None,
    on_error: str,
    values: pa.ChunkedArray | pa.Array | None,
    subjects: list[str],
    guid_ids: Mapping[str, int],
    sample: Callable[[], pa.ChunkedArray] | None = None,
) -> ValueSpec:
    """Protobuf values: plain ones of ``schema``'s message, or framed ones
    whose writer schemas (and their references) the registry holds."""
    files, message = (None, None) if schema is None else protobuf_schema(schema)
    if schema_registry is None:
        if files is None or message is None:
            raise ValueError(
                f"{column}_format='protobuf' needs {column}_schema (a generated message class, or a dict with "
                "'message' and 'descriptor_set' or 'proto') or schema_registry (for Confluent-framed values)"
            )
        return ValueSpec(column, "protobuf", proto_files=files, message=message, on_error=on_error)
    writers: dict[int, tuple[ProtoFile, ...]] = {}
    if registry is not None:
        if values is not None:
            ids = confluent_ids(values)
            if not ids:
                registry.check()
            by_id = {i: g for g, i in guid_ids.items()}
            for schema_id in ids:
                try:
                    entry = (
                        registry.schema_by_guid(by_id[schema_id])
                        if schema_id in by_id
                        else registry.schema_entry(schema_id)
                    )
                except SchemaRegistryError as error:
                    if error.status != 404:
                        raise
                    continue  # an unknown id fails only its values
                writers[schema_id] = registry_files(registry, *entry)
        else:
            known = set(registry.subjects())
            for subject in (s for s in subjects if s in known):
                for schema_id, text, refs in registry.subject_entries(subject):
                    writers[schema_id] = registry_files(registry, text, refs)
    elif isinstance(schema_registry, Mapping):
        writers = {int(k): (registered_file("schema.proto", v),) for k, v in schema_registry.items()}
    else:
        raise TypeError(
            "schema_registry must be a URL, a confluent-style config dict with 'url', "
            f"or a dict of schema id -> schema, not {type(schema_registry).__name__}"
        )
    if not writers:
        where = "for the schema ids in the values" if values is not None else f"for the subjects {subjects}"
        raise ValueError(f"no writer schemas for {column}: the registry has none {where}")
    proto_writers = tuple(sorted(writers.items()))
    frames = None
    framed = values if values is not None or message is not None or sample is None else sample()
    if message is None and framed is not None:
        frames = _native.protobuf_frames(_column_table(framed))
    message = _native.protobuf_message([(i, list(f)) for i, f in proto_writers], message=message, frames=frames)
    return ValueSpec(
        column, "protobuf", proto_writers=proto_writers, message=message, confluent=True, on_error=on_error
    )


def _column_table(values: pa.ChunkedArray | pa.Array) -> pa.Table:
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    return pa.Table.from_batches(
        [pa.record_batch([c], names=["value"]) for c in chunks if len(c)],
        schema=pa.schema([("value", values.type)]),
    )


def _fetch_writers(
    registry: SchemaRegistry, column: str, values: Any, topics: Iterable[str], guid_ids: Mapping[str, int]
) -> tuple[dict[int, str], str | None]:
    """Writer schemas by id and the newest one of their subject: the ids
    found in ``values``, else the subjects ``<topic>-<column>`` of ``topics``."""
    if values is None:
        known = set(registry.subjects())
        return subject_writers(registry, [f"{t}-{column}" for t in topics if f"{t}-{column}" in known])
    writers: dict[int, str] = {}
    subjects: list[str] = []
    ids = confluent_ids(values)
    if not ids:
        registry.check()
    by_id = {i: g for g, i in guid_ids.items()}
    for schema_id in ids:
        if schema_id in by_id:
            writers[schema_id] = registry.schema_by_guid(by_id[schema_id])[0]
            continue
        writers[schema_id] = registry.schema(schema_id)
        subjects.extend(s for s in registry.subjects_of(schema_id) if s not in subjects)
    latest = None
    if len(subjects) == 1:
        latest_id, latest = registry.latest(subjects[0])
        writers.setdefault(latest_id, latest)
    return writers, latest


def subject_writers(registry: SchemaRegistry, subjects: list[str]) -> tuple[dict[int, str], str | None]:
    """Every version of ``subjects`` by schema id, and the newest schema when
    there is one subject (the reader schema by default)."""
    writers: dict[int, str] = {}
    for subject in subjects:
        writers.update(registry.subject_schemas(subject))
    latest = registry.latest(subjects[0])[1] if len(subjects) == 1 else None
    return writers, latest


def parse_values(
    values: Any,
    *,
    format: ValueFormat = "json",
    schema: Any = None,
    schema_registry: Any = None,
    on_value_error: OnValueError = "raise",
    threads: int | None = None,
) -> pa.ChunkedArray:
    """Parse a binary column (Spark's Kafka source ``value``, a Parquet
    column, :func:`kafkabatch.decode`'s) into a typed column.

    ``format`` is ``"string"`` (UTF-8 checked), ``"json"`` (``schema`` a
    pyarrow struct type or schema), ``"avro"`` or ``"protobuf"``. Avro:
    plain datums of ``schema`` (Avro JSON text or dict), or with
    ``schema_registry`` (a URL, a confluent-kafka style config dict or
    client, or ``{schema_id: schema}``) Confluent-framed values, each writer
    schema resolved to ``schema`` or else the newest writer schema.
    Protobuf: plain messages of ``schema`` (a generated message class, or
    ``{"message": "pkg.Msg", "descriptor_set": ...}`` / ``{"message": ...,
    "proto": ...}``), or with ``schema_registry`` Confluent-framed messages
    (the registry's schemas, ``.proto`` text or base64 descriptors, and their
    references), read as ``schema``'s message or else the one message the
    values' frames name. Nulls stay null; a bad value raises
    :class:`ValueDecodeError` (with its ``row``) unless
    ``on_value_error="null"``.

    >>> col = pa.array([b'{"id": 1}', None, b'{"id": 2}'])
    >>> kb.parse_values(col, format="json", schema=pa.struct([("id", pa.int64())])).to_pylist()  # doctest: +SKIP
    [{'id': 1}, None, {'id': 2}]
    """
    if isinstance(values, (pa.Table, pa.RecordBatch)):
        raise TypeError("parse_values takes a column: table.column('value')")
    if not isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = pa.array(values, pa.binary())
    spec = resolve("value", format, schema, schema_registry, on_value_error, values=values)
    if spec is None:
        return values if isinstance(values, pa.ChunkedArray) else pa.chunked_array([values])
    return spec.parse(values, threads)


#: The keywords of :func:`kafkabatch.decode` that type the value and key columns.
VALUE_OPTIONS = ("value_format", "value_schema", "key_format", "key_schema", "schema_registry", "on_value_error")


def typed_options(options: Mapping[str, Any]) -> dict[str, Any] | None:
    """``options`` (:data:`VALUE_OPTIONS` keywords) when they ask for a typed
    column, else None. A registry they name is asked here, before any
    decoding, and handed on as its client, so it is asked once."""
    if (
        options.get("value_format", "binary") == "binary"
        and options.get("key_format", "binary") == "binary"
        and options.get("value_schema") is None
        and options.get("key_schema") is None
    ):
        return None
    registry = registry_of(options.get("schema_registry"))
    if registry is None:
        return dict(options)
    registry.check()  # unreachable: fail before any work
    return {**options, "schema_registry": registry}


def specs(
    options: Mapping[str, Any],
    *,
    table: pa.Table | None = None,
    topics: Iterable[str] = (),
    sample: Callable[[str], pa.ChunkedArray] | None = None,
) -> list[ValueSpec]:
    """The specs for ``value`` and ``key`` (those not left binary) from
    :data:`VALUE_OPTIONS` keywords; ``table``'s columns or ``topics`` tell a
    registry URL which schemas to fetch (see :func:`resolve`), and without a
    table ``sample(column)`` gives a few of the values to follow their frames."""
    out = []
    registry = registry_of(options.get("schema_registry"))
    for column in ("value", "key"):
        values = table.column(column) if table is not None else None
        guid_ids: dict[str, int] = {}
        if table is not None and "headers" in table.schema.names and registry is not None:
            # Schema ids in headers: GUIDs get local ids, and values the prefix they stand for.
            guid_ids = header_guid_ids(table, column)
            values = with_header_frames(table, column, guid_ids)
        spec = resolve(
            column,
            options.get(f"{column}_format", "binary"),
            options.get(f"{column}_schema"),
            options.get("schema_registry"),
            options.get("on_value_error", "raise"),
            values=values,
            topics=topics,
            guid_ids=guid_ids,
            sample=None if sample is None or values is not None else functools.partial(sample, column),
        )
        if spec is not None:
            out.append(dataclasses.replace(spec, guid_ids=tuple(sorted(guid_ids.items()))) if guid_ids else spec)
    return out


def parsed_while_decoding(options: Mapping[str, Any] | None) -> ValueSpec | None:
    """The spec of ``options`` when the values can be parsed chunk by chunk
    as they are decoded (``_native.decode(values=spec.parser())``): only the
    value column is typed, and its spec needs nothing from the decoded table
    (no registry to ask which schema ids the values carry)."""
    if options is None or options.get("schema_registry") is not None:
        return None
    if options.get("key_format", "binary") != "binary" or options.get("key_schema") is not None:
        return None
    return value_only(specs(options))


def value_only(value_specs: Sequence[ValueSpec]) -> ValueSpec | None:
    """The one spec of ``value_specs`` when it is the value's and reads the
    values alone (not Confluent frames, whose schema ids may come from the
    headers): the values can then be parsed as they are decoded."""
    if len(value_specs) != 1 or value_specs[0].column != "value" or value_specs[0].confluent:
        return None
    return value_specs[0]


def parse_columns(table: pa.Table, options: Mapping[str, Any], threads: int | None = None) -> pa.Table:
    """``table`` with the columns :data:`VALUE_OPTIONS` keywords ask for parsed."""
    return apply_all(table, specs(options, table=table), threads)


def apply_all(table: pa.Table, value_specs: Iterable[ValueSpec], threads: int | None = None) -> pa.Table:
    for spec in value_specs:
        table = spec.apply(table, threads)
    return table


def framing_hint(error: Exception, spec: ValueSpec, table: pa.Table | pa.RecordBatch) -> Exception:
    """``error`` with a hint when plain Avro failed on a value that looks
    Schema Registry framed (magic byte 0, then a plausible schema id).

    >>> kb.decode(data, value_format="avro", value_schema=schema)            # doctest: +SKIP
    ValueDecodeError: value at offset 0 of shipments-0: truncated Avro datum ...; these values look
    Schema Registry framed (magic 0, schema id 2); pass schema_registry
    """
    row = getattr(error, "row", None)
    if spec.format != "avro" or spec.confluent or row is None or row >= table.num_rows:
        return error
    value = table.column(spec.column)[row].as_py()
    if not isinstance(value, (bytes, bytearray)) or len(value) < 6 or value[0] != 0:
        return error
    schema_id = int.from_bytes(value[1:5], "big")
    if not 0 < schema_id < 1 << 24:  # registries count ids up from 1
        return error
    hinted = type(error)(
        f"{error}; these values look Schema Registry framed (magic 0, schema id {schema_id}); pass schema_registry"
    )
    for name, attr in vars(error).items():
        setattr(hinted, name, attr)
    return hinted
