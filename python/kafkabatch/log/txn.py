"""The transaction pre-pass for ``read_committed``: aborted and open transactions of a partition from its batch headers.

>>> [t.producer_id for t in hidden_transactions([source])]  # doctest: +SKIP
[1000]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import kafkabatch.log.fs as fs
from kafkabatch._decode import iter_batches
from kafkabatch.log.bounds import Bounds
from kafkabatch.log.listing import Segment
from kafkabatch.log.windows import DEFAULT_MAX_CHUNK_BYTES, batch_windows


@dataclass(frozen=True)
class Transaction:
    """An aborted (or still open) transaction: what a broker's ``.txnindex`` or a
    Fetch response's aborted list says, with ``last_offset`` the marker's
    offset (``None`` while open)."""

    producer_id: int
    first_offset: int
    last_offset: int | None


def hidden_transactions(sources: Iterable[Any], *, max_chunk_bytes: int = DEFAULT_MAX_CHUNK_BYTES) -> list[Transaction]:
    """Aborted and still-open transactions of one topic-partition, found by
    walking the batch headers of its segments (open sources, in log order).

    ``read_committed`` decodes pieces of a log independently (a window, a
    Spark task); the marker that ends a transaction may be in a later piece,
    so each piece is given the aborted list of the whole partition (what a
    broker gives a consumer with each fetch) instead of relying on markers
    alone.
    """
    open_txns: dict[int, int] = {}
    done: list[Transaction] = []
    for source in sources:
        for a, b, _last in batch_windows(source, 0, source.size, max_chunk_bytes, Bounds()):
            _collect_transactions(source.read(a, b - a), open_txns, done)
            source.release()
    done.extend(Transaction(pid, first, None) for pid, first in open_txns.items())
    return sorted(done, key=lambda t: (t.first_offset, t.producer_id))


def _collect_transactions(data: Any, open_txns: dict[int, int], done: list[Transaction]) -> None:
    for batch in iter_batches(data, validate_crc=False, on_error="keep"):
        if batch.magic < 2 or not batch.is_transactional or batch.error is not None:
            continue
        pid = batch.producer_id
        if batch.is_control:
            first = open_txns.pop(pid, None)
            control = batch.control
            if first is not None and control is not None and control.type == "ABORT":
                done.append(Transaction(pid, first, batch.base_offset))
        else:
            open_txns.setdefault(pid, batch.base_offset)


def aborted_for(transactions: list[Transaction], first_offset: int) -> list[tuple[int, int]]:
    """The ``(producer_id, first_offset)`` pairs a piece starting at
    ``first_offset`` needs: those not finished before it (as a broker sends
    with a fetch from that offset)."""
    return [
        (t.producer_id, t.first_offset) for t in transactions if t.last_offset is None or t.last_offset >= first_offset
    ]


def partition_transactions(group: list[Segment]) -> list[Transaction]:
    sources = []
    try:
        for seg in group:
            sources.append(fs.open_source(seg.path))
        return hidden_transactions(sources)
    finally:
        for source in sources:
            source.close()
