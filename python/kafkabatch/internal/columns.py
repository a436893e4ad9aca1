"""The decoded columns of an internal topic's records, appended to a decoded table.

Row for row with the table (see the native ``decode_internal``):
``record_type`` (Kafka's name: ``OffsetCommit``, ``GroupMetadata``,
``TopicRecord``, ``LeaderChange``, ...), ``record_type_id`` (the key's record
type or the api key), ``key_version``, ``value_version``, ``tombstone``, one
struct column per record type of the kind (``offset_commit``,
``partition_change_record``, ...; Kafka's field names inside), ``error`` (why
this row could not be decoded, else null) and, when asked, ``json``
(kafka-dump-log's JSON form).
"""

from __future__ import annotations

import functools
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from kafkabatch import _kafkabatch as _native
from kafkabatch.internal.kinds import Internal, Kind

#: Kinds whose partitions can hold transaction markers (transactional offset commits).
_MARKER_KINDS = ("consumer_offsets", "share_group_state")

_Tabular = TypeVar("_Tabular", pa.Table, pa.RecordBatch)


@functools.lru_cache(maxsize=64)
def _kind_schema(kind: Kind, definitions: str | None, json: bool) -> pa.Schema:
    empty = pa.array([], pa.binary())
    return pa.table(
        _native.decode_internal(kind, empty, empty, control=None, definitions=definitions, json=json)
    ).schema


def internal_schema(kinds: Any, internal: Internal) -> pa.Schema:
    """The columns appended for tables of ``kinds`` (one kind, or several:
    their union, the shared columns first, each kind's struct columns after)."""
    if isinstance(kinds, str):
        kinds = [kinds]
    fields: dict[str, pa.Field] = {}
    tail: dict[str, pa.Field] = {}
    for kind in kinds:
        for f in _kind_schema(kind, internal.definitions, internal.json):
            if f.name in ("error", "json"):
                tail.setdefault(f.name, f)
            else:
                fields.setdefault(f.name, f)
    return pa.schema([*fields.values(), *tail.values()])


def control_mask(kind: Kind, keys: pa.Array) -> pa.Array | None:
    """Which rows are control records, judged by their keys.

    Metadata records have no key and KRaft control records have one, so in
    ``__cluster_metadata`` a keyed row is a control record. In
    ``__consumer_offsets`` and ``__share_group_state`` a transaction marker's
    key is 4 bytes, version 0 and type 0 or 1, shorter than any record key of
    those record types could be.
    """
    if kind == "cluster_metadata":
        return pc.is_valid(keys)
    if kind in _MARKER_KINDS:
        short = pc.fill_null(pc.equal(pc.binary_length(keys), 4), False)
        if not pc.any(short).as_py():  # no key could be a marker's (the common case: a cheap length check)
            return None
        markers = pc.is_in(keys, value_set=pa.array([b"\0\0\0\0", b"\0\0\0\1"], keys.type))
        return pc.fill_null(pc.and_(short, markers), False)
    return None


def _single(col: Any) -> pa.Array:
    """One array of a column (no copy when it is one chunk already)."""
    if not isinstance(col, pa.ChunkedArray):
        return col
    return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()


def _column(data: _Tabular, name: str) -> pa.Array:
    return _single(data.column(name))


def _topics(column: Any) -> list[str]:
    """The topics of a column that normally holds one (checked without a hash of every row)."""
    valid = column.drop_null()
    if len(valid) == 0:
        return []
    first = valid[0].as_py()
    if pc.all(pc.equal(valid, first)).as_py():
        return [first]
    return sorted(pc.unique(valid).to_pylist())


def decode_internal_columns(data: _Tabular, internal: Internal, schema: pa.Schema | None = None) -> _Tabular:
    """``data`` (a decoded table or record batch of one topic) with the
    decoded columns appended; ``schema`` fixes which (a union over kinds:
    the columns of other kinds, or all of them for a topic that is not
    decoded, are null). Without ``schema``, a topic that is not decoded
    comes back unchanged."""
    topics = _topics(data.column("topic"))
    kinds = {internal.kind_for(t) for t in topics} if topics else {internal.kind_for(None)}
    if len(kinds) > 1:
        raise ValueError(f"internal: one table holds topics of several kinds ({', '.join(map(str, sorted(topics)))})")
    kind = kinds.pop() if kinds else None
    if kind is None:
        if schema is None:
            return data
        columns: dict[str, pa.Array] = {}
    else:
        keys, values = _column(data, "key"), _column(data, "value")
        decoded = pa.table(
            _native.decode_internal(
                kind,
                keys,
                values,
                control=control_mask(kind, keys),
                definitions=internal.definitions,
                json=internal.json,
            )
        )
        if decoded.num_rows != data.num_rows:
            raise RuntimeError(f"decode_internal gave {decoded.num_rows} rows for {data.num_rows}")
        columns = {name: _single(decoded.column(name)) for name in decoded.column_names}
        if schema is None:
            schema = decoded.schema
    arrays = [columns.get(f.name, pa.nulls(data.num_rows, f.type)) for f in schema]
    arrays = [a if a.type == f.type else a.cast(f.type) for f, a in zip(schema, arrays)]
    out: Any = data
    for f, array in zip(schema, arrays):
        out = out.append_column(f, array)
    return out
