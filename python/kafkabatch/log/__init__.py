"""Kafka logs at rest: layouts and listing, local and remote file systems, segments, index files, seeks, the transaction pre-pass and ``scan_log``.

>>> from kafkabatch.log import list_segments, scan_log
>>> [s.path for s in list_segments("/var/lib/kafka/data/orders-*")]   # doctest: +SKIP
['/var/lib/kafka/data/orders-0/00000000000000000000.log', ...]
>>> for batch in scan_log("/var/lib/kafka/data", start_offset=1000):  # doctest: +SKIP
...     print(batch.num_rows)

Local paths are memory-mapped. Paths with a URI scheme (``s3://``,
``s3a://``, ``gs://``, ``hdfs://``, ...) go through :mod:`pyarrow.fs` and are
read in windows of at most ``max_chunk_bytes``.
"""

from __future__ import annotations

from kafkabatch.log.bounds import parse_timestamp
from kafkabatch.log.index import IndexFileWarning, read_offset_index, read_time_index, read_txn_index
from kafkabatch.log.listing import Segment, list_segments
from kafkabatch.log.scan import (
    DECODE_OPTIONS,
    SegmentResult,
    batch_ranges,
    decode_range,
    scan_log,
    seek_position,
)
from kafkabatch.log.segment import read_segment, topic_partition_from_path
from kafkabatch.log.tiered import TieredStorageWarning
from kafkabatch.log.txn import DEFAULT_MAX_CHUNK_BYTES, Transaction, hidden_transactions

__all__ = [
    "DECODE_OPTIONS",
    "DEFAULT_MAX_CHUNK_BYTES",
    "IndexFileWarning",
    "Segment",
    "SegmentResult",
    "TieredStorageWarning",
    "Transaction",
    "batch_ranges",
    "decode_range",
    "hidden_transactions",
    "list_segments",
    "parse_timestamp",
    "read_offset_index",
    "read_segment",
    "read_time_index",
    "read_txn_index",
    "scan_log",
    "seek_position",
    "topic_partition_from_path",
]
