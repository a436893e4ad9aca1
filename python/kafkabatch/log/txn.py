"""The transaction pre-pass for ``read_committed``: aborted and open transactions of a partition from its batch headers.

>>> [t.producer_id for t in hidden_transactions([source])]  # doctest: +SKIP
[1000]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kafkabatch._kafkabatch import partition_transactions as _native_partition_transactions
from kafkabatch._kafkabatch import source_transactions as _native_source_transactions
from kafkabatch.log.bounds import Bounds
from kafkabatch.log.listing import Segment

#: Default window for :func:`~kafkabatch.log.scan.scan_log`: the bytes of complete batches decoded at once.
DEFAULT_MAX_CHUNK_BYTES: int = 16 << 20


@dataclass(frozen=True)
class Transaction:
    """An aborted (or still open) transaction: what a broker's ``.txnindex`` or a
    Fetch response's aborted list says, with ``last_offset`` the marker's
    offset (``None`` while open)."""

    producer_id: int
    first_offset: int
    last_offset: int | None


def hidden_transactions(
    sources: Iterable[Any],
    *,
    max_chunk_bytes: int = DEFAULT_MAX_CHUNK_BYTES,
    spans: Iterable[tuple[int, int | None, Bounds]] | None = None,
) -> list[Transaction]:
    """Aborted and still-open transactions of one topic-partition, found by
    walking the batch headers of its segments (open sources, in log order:
    :class:`kafkabatch.log.fs.Source` s) in the Rust core, about
    ``max_chunk_bytes`` read at a time.

    ``read_committed`` decodes pieces of a log independently (a window, a
    Spark task); the marker that ends a transaction may be in a later piece,
    so each piece is given the aborted list of the whole partition (what a
    broker gives a consumer with each fetch) instead of relying on markers
    alone.

    ``spans`` (one per source: start byte, end byte or None, offset bounds)
    restricts each source to the offsets it is read for, when segments from
    several places overlap: each batch is then seen once.
    (:func:`partition_transactions` walks a partition's listed segments,
    remote ones and their twins included.)
    """
    sources = list(sources)
    span_list = list(spans) if spans is not None else [(0, None, Bounds())] * len(sources)
    if max_chunk_bytes <= 0:
        raise ValueError("max_chunk_bytes must be positive")
    pieces = [
        (source, start, end, bounds.start_offset, bounds.end_offset)
        for source, (start, end, bounds) in zip(sources, span_list)
    ]
    found = _native_source_transactions(pieces, max_chunk_bytes=max_chunk_bytes)
    return [Transaction(pid, first, last) for pid, first, last in found]


def partition_transactions(group: list[Segment], *, skip: bool = False) -> list[Transaction]:
    """The pre-pass over one partition's segments (local or remote, in the
    core), each walked only over the offsets the overlap rule leaves to it
    (see :func:`kafkabatch.log.listing.segment_bounds`); a damaged remote
    segment is walked in its twin (another copy of its offsets) when it has
    one, as the read does. ``skip`` (``on_error="skip"``): a remote segment
    that can't be opened is left out here, and a chunk that can't be undone
    walked around (the read that follows counts both)."""
    keys = next((s.keys for s in group if s.keys), ())  # remote segments hold the resolved keys
    found = _native_partition_transactions(group, tiered_keys=dict(keys), on_error="skip" if skip else "raise")
    return [Transaction(pid, first, last) for pid, first, last in found]
