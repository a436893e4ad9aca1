"""kafkabatch: Apache Kafka record batches (magic v0, v1, v2; every codec) to Arrow, fast.

>>> import kafkabatch as kb
>>> table = kb.read_segment("orders-0/00000000000000000000.log")   # doctest: +SKIP
>>> table.schema == kb.SCHEMA                                      # doctest: +SKIP
True

The work happens in a Rust core with the GIL released; this module is a thin,
typed layer over the native extension ``kafkabatch._kafkabatch``.
"""

from __future__ import annotations

from kafkabatch._decode import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    SCHEMA,
    VIEW_SCHEMA,
    DecodeReport,
    decode,
    decode_report,
    iter_batches,
    valid_bytes,
)
from kafkabatch._encode import control_batch, encode, write_segment
from kafkabatch._kafkabatch import (
    Batch,
    BatchIterator,
    ControlRecord,
    CorruptBatchError,
    CrcMismatchError,
    DecompressionError,
    KafkaBatchError,
    Record,
    TieredStorageError,
    UnsupportedFormatError,
    __version__,
)
from kafkabatch.generate import GenerateSummary, TopicSpec, TopicSummary, generate
from kafkabatch.internal.at_time import ClusterImage, cluster_image_at, consumer_offsets_at
from kafkabatch.log import (
    IndexFileWarning,
    TieredStorageWarning,
    read_offset_index,
    read_segment,
    read_time_index,
    read_txn_index,
    scan_log,
    topic_partition_from_path,
)
from kafkabatch.polars_io import scan_polars
from kafkabatch.values import SchemaRegistry, SchemaRegistryError, ValueDecodeError, parse_values
from kafkabatch.values.mismatch import SchemaMismatchWarning

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "SCHEMA",
    "VIEW_SCHEMA",
    "Batch",
    "BatchIterator",
    "ClusterImage",
    "ControlRecord",
    "CorruptBatchError",
    "CrcMismatchError",
    "DecodeReport",
    "GenerateSummary",
    "DecompressionError",
    "IndexFileWarning",
    "KafkaBatchError",
    "Record",
    "SchemaMismatchWarning",
    "SchemaRegistry",
    "SchemaRegistryError",
    "TieredStorageError",
    "TieredStorageWarning",
    "TopicSpec",
    "TopicSummary",
    "UnsupportedFormatError",
    "ValueDecodeError",
    "__version__",
    "cluster_image_at",
    "consumer_offsets_at",
    "control_batch",
    "decode",
    "decode_report",
    "encode",
    "generate",
    "iter_batches",
    "parse_values",
    "read_offset_index",
    "read_segment",
    "read_time_index",
    "read_txn_index",
    "scan_log",
    "scan_polars",
    "topic_partition_from_path",
    "valid_bytes",
    "write_segment",
]
