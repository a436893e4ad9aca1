"""Kafka's index files (``.index``, ``.timeindex``, ``.txnindex``) as Arrow tables: kept importable here; they live in :mod:`kafkabatch.log.index`.

>>> from kafkabatch.index import read_offset_index
>>> read_offset_index("orders-0/00000000000000000000.index").num_rows  # doctest: +SKIP
12
"""

from __future__ import annotations

from kafkabatch.log.index import (
    IndexFileWarning,
    InvalidIndexError,
    offset_index_entries,
    read_offset_index,
    read_time_index,
    read_txn_index,
)

__all__ = [
    "IndexFileWarning",
    "InvalidIndexError",
    "offset_index_entries",
    "read_offset_index",
    "read_time_index",
    "read_txn_index",
]
