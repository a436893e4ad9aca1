"""Schema ids carried in record headers instead of the value's prefix.

Newer Confluent serializers (``schema.id.serializer=header_schema_id_serializer``)
leave the value bare and put the schema id in the ``__value_schema_id`` (or
``__key_schema_id``) header: magic byte 1 and the schema's 16-byte GUID, or
magic byte 0 and the 4-byte id, then for Protobuf the message indexes. The
deserializers look at the header first, then at the prefix. The core
(``_native.header_frames``) gives a value with such a header the prefix it
stands for (magic 0, id, indexes), so the parsers read one framing; here each
GUID is given a local id, under which the caller fetches its schema by GUID.

>>> guid_ids(records, "value")   # doctest: +SKIP
{'0f8e...-...': 2130706432}
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa

from kafkabatch import _kafkabatch as _native

#: Local schema ids given to GUIDs, above the ids registries hand out.
GUID_IDS = 0x7F00_0000


def guid_ids(records: pa.Table, column: str) -> dict[str, int]:
    """A local id for each schema GUID (UUID text) in ``column``'s schema-id
    headers of ``records``' ``headers`` column."""
    return {g: GUID_IDS + i for i, g in enumerate(_native.header_guids(records, column))}


def with_header_frames(records: pa.Table, column: str, guid_ids: Mapping[str, int]) -> pa.ChunkedArray:
    """``records``' ``column`` with the prefix of each row's schema-id header
    put in front (rows without one are left as they are); ``guid_ids`` are
    the GUIDs' local ids (see :func:`guid_ids`)."""
    if "headers" not in records.schema.names:
        return records.column(column)
    framed = _native.header_frames(records.select([column, "headers"]), column, dict(guid_ids))
    return records.column(column) if framed is None else pa.table(framed).column(0)
