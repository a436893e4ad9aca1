"""The transaction pre-pass for ``read_committed``: aborted and open transactions of a partition from its batch headers.

>>> [t.producer_id for t in hidden_transactions([source])]  # doctest: +SKIP
[1000]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kafkabatch._kafkabatch import partition_transactions as _native_partition_transactions
from kafkabatch._kafkabatch import transaction_pass as _transaction_pass
from kafkabatch.log.bounds import Bounds
from kafkabatch.log.listing import Segment
from kafkabatch.log.windows import DEFAULT_MAX_CHUNK_BYTES, batch_windows, segment_walk, walked_windows


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
    walking the batch headers of its segments (open sources, in log order).

    ``read_committed`` decodes pieces of a log independently (a window, a
    Spark task); the marker that ends a transaction may be in a later piece,
    so each piece is given the aborted list of the whole partition (what a
    broker gives a consumer with each fetch) instead of relying on markers
    alone.

    ``spans`` (one per source: start byte, end byte or None, offset bounds)
    restricts each source to the offsets it is read for, when segments from
    several places overlap: each batch is then seen once.
    (:func:`partition_transactions` walks a partition's segments, remote ones
    and their twins included, in the core.)
    """
    open_txns: dict[int, int] = {}
    done: list[Transaction] = []
    sources = list(sources)
    span_list = list(spans) if spans is not None else [(0, None, Bounds())] * len(sources)
    for source, span in zip(sources, span_list):
        _walk(source, span, open_txns, done, max_chunk_bytes)
    done.extend(Transaction(pid, first, None) for pid, first in open_txns.items())
    return sorted(done, key=lambda t: (t.first_offset, t.producer_id))


def _walk(
    source: Any,
    span: tuple[int, int | None, Bounds],
    open_txns: dict[int, int],
    done: list[Transaction],
    max_chunk_bytes: int = DEFAULT_MAX_CHUNK_BYTES,
) -> None:
    """One source's batch headers over ``span`` into ``open_txns``/``done``."""
    start, end, bounds = span
    stop = source.size if end is None else min(end, source.size)
    if _walk_local(source, start, stop, bounds, open_txns, done, max_chunk_bytes):
        return
    for a, b, _last in batch_windows(source, start, stop, max_chunk_bytes, bounds):
        _collect_transactions(source.read(a, b - a), open_txns, done, bounds)
        source.release()


def _walk_local(
    source: Any,
    start: int,
    stop: int,
    bounds: Bounds,
    open_txns: dict[int, int],
    done: list[Transaction],
    max_chunk_bytes: int,
) -> bool:
    """:func:`_walk` of a local segment from its one header walk (see
    :func:`kafkabatch.log.windows.segment_walk`); False for other sources."""
    walk = segment_walk(source, start)
    windows = walked_windows(source, start, stop, max_chunk_bytes, bounds.start_offset, bounds.end_offset)
    if walk is None or windows is None:
        return False
    data = source.read(0, source.size)
    try:
        for a, b, _last in windows:
            step = walk.transaction_pass(
                data, a, b, list(open_txns.items()), start_offset=bounds.start_offset, end_offset=bounds.end_offset
            )
            if step is None:  # a window the kept walk does not start a batch at: walk that window alone
                step = _transaction_pass(
                    data[a:b], list(open_txns.items()), start_offset=bounds.start_offset, end_offset=bounds.end_offset
                )
            _record(step, open_txns, done)
    finally:
        del data
        source.release()
    return True


def _record(
    step: tuple[list[tuple[int, int]], list[tuple[int, int, int]]], open_txns: dict[int, int], done: list[Transaction]
) -> None:
    """One pre-pass step's result into ``open_txns``/``done``."""
    still_open, aborted = step
    open_txns.clear()
    open_txns.update(still_open)
    done.extend(Transaction(pid, first, marker) for pid, first, marker in aborted)


def _collect_transactions(
    data: Any, open_txns: dict[int, int], done: list[Transaction], bounds: Bounds = Bounds()
) -> None:
    """One piece's batch headers, walked in the Rust core: ``open_txns``
    (producer id -> first offset) updated, the transactions an ABORT marker
    ends appended to ``done`` (see ``_kafkabatch.transaction_pass``)."""
    step = _transaction_pass(
        data, list(open_txns.items()), start_offset=bounds.start_offset, end_offset=bounds.end_offset
    )
    _record(step, open_txns, done)


def aborted_for(transactions: list[Transaction], first_offset: int) -> list[tuple[int, int]]:
    """The ``(producer_id, first_offset)`` pairs a piece starting at
    ``first_offset`` needs: those not finished before it (as a broker sends
    with a fetch from that offset)."""
    return [
        (t.producer_id, t.first_offset) for t in transactions if t.last_offset is None or t.last_offset >= first_offset
    ]


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
