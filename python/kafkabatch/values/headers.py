"""Schema ids carried in record headers instead of the value's prefix.

Newer Confluent serializers (``schema.id.serializer=header_schema_id_serializer``)
leave the value bare and put the schema id in the ``__value_schema_id`` (or
``__key_schema_id``) header: magic byte 1 and the schema's 16-byte GUID, or
magic byte 0 and the 4-byte id, then for Protobuf the message indexes. The
deserializers look at the header first, then at the prefix. Here a value
with such a header gets the prefix it stands for (magic 0, id, indexes), so
the parsers read one framing; a GUID is given a local id whose schema was
fetched by GUID.

>>> header_prefix(b"\\x00\\x00\\x00\\x00\\x07\\x00", {})
b'\\x00\\x00\\x00\\x00\\x07\\x00'
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc

#: The header that holds a column's schema id.
HEADER_KEYS = {"value": "__value_schema_id", "key": "__key_schema_id"}
#: Local schema ids given to GUIDs, above the ids registries hand out.
GUID_IDS = 0x7F00_0000
#: The id of a GUID the registry doesn't know: no schema has it.
UNKNOWN_GUID = 0xFFFF_FFFF


def _entries(headers: pa.ChunkedArray | pa.Array, column: str) -> tuple[list[int], list[bytes]]:
    """The rows with ``column``'s schema-id header, and each one's header value."""
    if isinstance(headers, pa.ChunkedArray):
        headers = headers.combine_chunks()
    if len(headers) == 0 or headers.null_count == len(headers):
        return [], []
    flat = pc.list_flatten(headers)
    if len(flat) == 0:
        return [], []
    mask = pc.fill_null(pc.equal(flat.field("key"), HEADER_KEYS[column]), False)
    if not pc.any(mask).as_py():
        return [], []
    rows = pc.list_parent_indices(headers).filter(mask).to_pylist()
    return rows, flat.field("value").filter(mask).to_pylist()


def header_guids(headers: pa.ChunkedArray | pa.Array | None, column: str) -> list[str]:
    """The distinct schema GUIDs in ``column``'s schema-id headers, as UUID text."""
    import uuid

    if headers is None:
        return []
    _, found = _entries(headers, column)
    guids = {bytes(h[1:17]) for h in found if h is not None and len(h) >= 17 and h[0] == 1}
    return sorted(str(uuid.UUID(bytes=g)) for g in guids)


def header_prefix(header: bytes, guid_ids: Mapping[str, int]) -> bytes | None:
    """The Confluent prefix a schema-id header stands for (None: not a schema id)."""
    import uuid

    if len(header) >= 5 and header[0] == 0:
        return header
    if len(header) >= 17 and header[0] == 1:
        schema_id = guid_ids.get(str(uuid.UUID(bytes=header[1:17])), UNKNOWN_GUID)
        return b"\0" + schema_id.to_bytes(4, "big") + header[17:]
    return None


def with_header_frames(
    values: pa.ChunkedArray,
    headers: pa.ChunkedArray | None,
    column: str,
    guid_ids: Mapping[str, int],
) -> pa.ChunkedArray:
    """``values`` with the prefix of each row's schema-id header put in
    front (rows without one are left as they are)."""
    if headers is None:
        return values
    rows, found = _entries(headers, column)
    if not rows:
        return values
    out = values.to_pylist()
    for row, header in zip(rows, found):
        prefix = None if header is None else header_prefix(header, guid_ids)
        if prefix is not None and out[row] is not None:
            out[row] = prefix + out[row]
    return pa.chunked_array([pa.array(out, pa.binary())])
