"""A few values read from the start of a log, before a scan: what the
Confluent frames of framed Protobuf values name, so a read that names no
message follows them (as :func:`kafkabatch.decode` does on the values it has).

>>> first_values(list_segments("/data/orders-0"), "value").num_chunks  # doctest: +SKIP
1
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from kafkabatch._decode import decode
from kafkabatch.log.listing import Segment, open_segment

#: Bytes read from the start of each sampled segment.
SAMPLE_BYTES = 1 << 20


def first_values(segments: Iterable[Segment], column: str, max_bytes: int = SAMPLE_BYTES) -> pa.ChunkedArray:
    """``column`` (``"value"`` or ``"key"``) of the complete batches in the
    first ``max_bytes`` of each topic's first segment (batches that don't
    decode are left out: the scan reports them)."""
    chunks: list[pa.Array] = []
    topics: set[str | None] = set()
    for seg in segments:
        if seg.topic in topics:
            continue
        topics.add(seg.topic)
        source = open_segment(seg)
        try:
            data = source.read(0, min(source.size, max_bytes))
            table = decode(data, on_error="skip")
        finally:
            source.close()
        chunks.extend(c for c in table.column(column).chunks if len(c))
    return pa.chunked_array(chunks, pa.binary())
