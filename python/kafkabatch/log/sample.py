"""A few values read from the start of a log, before a scan: what the
Confluent frames of framed Protobuf values name (a schema id in a record's
header frames its value as a prefix would), so a read that names no
message follows them (as :func:`kafkabatch.decode` does on the values it has).

>>> first_values(list_segments("/data/orders-0"), "value").num_chunks  # doctest: +SKIP
1
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import pyarrow as pa

from kafkabatch._decode import DEFAULT_MAX_DECOMPRESSED_SIZE, decode
from kafkabatch._kafkabatch import KafkaBatchError
from kafkabatch.log.listing import Segment, open_segment
from kafkabatch.values.headers import with_header_frames

log = logging.getLogger(__name__)

#: Bytes read from the start of each sampled segment.
SAMPLE_BYTES = 1 << 20


def first_values(
    segments: Iterable[Segment],
    column: str,
    max_bytes: int = SAMPLE_BYTES,
    max_decompressed_size: int | None = None,
    cap_name: str = "max_decompressed_size",
) -> pa.ChunkedArray:
    """``column`` (``"value"`` or ``"key"``) of the complete batches in the
    first ``max_bytes`` of each topic's first readable segment (batches that
    don't decode are left out: the scan reports them). A segment that can't
    be read (a bad chunk, a missing key or object) is passed over for the
    topic's next one; the scan reports it. ``max_decompressed_size`` (named
    ``cap_name`` in errors) caps each batch and remote chunk, as in the scan."""
    chunks: list[pa.Array] = []
    topics: set[str | None] = set()
    for seg in segments:
        if seg.topic in topics:
            continue
        try:
            source = open_segment(seg, max_decompressed_size, cap_name)
            try:
                data = source.read(0, min(source.size, max_bytes))
                cap = DEFAULT_MAX_DECOMPRESSED_SIZE if max_decompressed_size is None else max_decompressed_size
                table = decode(data, on_error="skip", max_decompressed_size=cap)
            finally:
                source.close()
        except (KafkaBatchError, OSError) as error:
            log.debug("not sampled: %s", error)
            continue
        topics.add(seg.topic)
        # values whose schema ids are in their headers get the prefix they stand for (GUIDs: an id no schema has)
        chunks.extend(c for c in with_header_frames(table, column, {}).chunks if len(c))
    return pa.chunked_array(chunks, pa.binary())
