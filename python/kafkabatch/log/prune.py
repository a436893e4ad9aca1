"""Pushdown for log readers: "could this folder, segment or batch hold a matching record?", answered conservatively.

A :class:`RecordFilter` is the AND of simple predicates on ``topic``,
``partition``, ``offset`` and ``timestamp`` (what Spark's ``pushFilters`` and
polars' predicates turn into). It is decided at three levels, each from
statistics that are proven, never guessed:

* **folders**: topic and partition from ``<topic>-<partition>`` names (exact);
* **segments**: base offsets from file names, ``.index`` seeks (checked
  against the log, see :mod:`kafkabatch.log.seek`), and for time bounds the
  headers of all its batches (a segment none of whose batches can match is
  left out whole: :func:`narrow`);
* **batches**: each v2 header's base/last offset and ``maxTimestamp``.

CreateTime timestamps are out of order across and within batches when several
producers write a partition, so a batch's first timestamp is not its minimum
and an upper time bound never stops a scan: only a batch whose *largest*
timestamp is below the lower bound is skipped (and, for LogAppendTime batches,
whose records all carry the header's timestamp, one at or above the upper
bound). Whatever survives is decoded and filtered exactly by
:class:`~kafkabatch.log.bounds.Bounds`, so pruning changes speed, never rows.

>>> f = RecordFilter.where("topic", "==", "orders").and_(RecordFilter.where("offset", ">=", 100))
>>> f.keeps("orders", 3), f.keeps("payments", 0), f.bounds()
(True, False, Bounds(start_offset=100, end_offset=None, start_ts=None, end_ts=None))
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kafkabatch._kafkabatch import kept_ranges as _kept_ranges
from kafkabatch.log.bounds import Bounds, parse_timestamp
from kafkabatch.log.windows import segment_walk

#: Comparison operators a :class:`RecordFilter` takes (``in``/``not in`` take a collection).
OPERATORS = ("==", "!=", "<", "<=", ">", ">=", "in", "not in", "startswith", "endswith", "contains")

#: Columns whose predicates a :class:`RecordFilter` can decide.
COLUMNS = ("topic", "partition", "offset", "timestamp")

_NAME_OPS = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "in": lambda a, b: a in b,
    "not in": lambda a, b: a not in b,
    "startswith": lambda a, b: a.startswith(b),
    "endswith": lambda a, b: a.endswith(b),
    "contains": lambda a, b: b in a,
}


class NotPushable(ValueError):
    """A predicate a :class:`RecordFilter` can't express exactly (the engine keeps it)."""


def _max(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def to_micros(value: Any) -> int:
    """A timestamp literal as microseconds since the epoch: a datetime (naive means UTC),
    a date, or anything :func:`~kafkabatch.log.bounds.parse_timestamp` takes."""
    if isinstance(value, _dt.datetime | _dt.date | str):
        return parse_timestamp(value)
    raise NotPushable(f"not a timestamp literal: {value!r}")


@dataclass(frozen=True)
class RecordFilter:
    """The AND of predicates on ``topic``, ``partition``, ``offset`` and ``timestamp``
    (microseconds since the epoch), in the forms folders and batch headers can decide.

    ``names`` holds the topic/partition predicates as ``(column, operator,
    value)`` (decided per folder, exactly); offsets and timestamps are kept as
    half-open ranges. ``nothing`` is a contradiction (no record can match).

    >>> RecordFilter.where("timestamp", ">", "2026-11-01T00:00:00Z").bounds().start_ts
    1793491200000001
    """

    names: tuple[tuple[str, str, Any], ...] = ()
    start_offset: int | None = None
    end_offset: int | None = None
    start_ts: int | None = None
    end_ts: int | None = None
    nothing: bool = False
    described: tuple[str, ...] = field(default=(), compare=False)

    @classmethod
    def where(cls, column: str, op: str, value: Any) -> RecordFilter:
        """One predicate ``column op value``; :class:`NotPushable` when it isn't
        exactly expressible (the caller leaves it to the engine)."""
        text = f"{column} {op} {value!r}"
        if op not in OPERATORS:
            raise NotPushable(f"operator {op!r}")
        if column == "topic":
            items = _literals(value, str, op)
            if op in ("<", "<=", ">", ">=", "startswith", "endswith", "contains") and len(items) != 1:
                raise NotPushable(text)
            return cls(
                names=((column, op, frozenset(items) if op in ("in", "not in") else items[0]),), described=(text,)
            )
        if column == "partition":
            if op in ("startswith", "endswith", "contains"):
                raise NotPushable(text)
            items = _literals(value, int, op)
            return cls(
                names=((column, op, frozenset(items) if op in ("in", "not in") else items[0]),), described=(text,)
            )
        if column in ("offset", "timestamp"):
            if op in ("!=", "not in", "startswith", "endswith", "contains"):
                raise NotPushable(text)
            if column == "offset":
                numbers = _literals(value, int, op)
            else:
                numbers = [to_micros(v) for v in (value if op == "in" else [value])]
            if op == "in":
                if not numbers:
                    return cls(nothing=True, described=(text,))
                lo, hi = min(numbers), max(numbers) + 1  # a range holding them all: not exact
            else:
                (n,) = numbers
                lo, hi = {
                    "==": (n, n + 1),
                    "<": (None, n),
                    "<=": (None, n + 1),
                    ">": (n + 1, None),
                    ">=": (n, None),
                }[op]
            if column == "offset":
                return cls(start_offset=lo, end_offset=hi, described=(text,))
            return cls(start_ts=lo, end_ts=hi, described=(text,))
        raise NotPushable(f"column {column!r}")

    def and_(self, other: RecordFilter) -> RecordFilter:
        """Both filters."""
        return RecordFilter(
            names=self.names + other.names,
            start_offset=_max(self.start_offset, other.start_offset),
            end_offset=_min(self.end_offset, other.end_offset),
            start_ts=_max(self.start_ts, other.start_ts),
            end_ts=_min(self.end_ts, other.end_ts),
            nothing=self.nothing or other.nothing,
            described=self.described + other.described,
        )

    @classmethod
    def all_of(cls, filters: Iterable[RecordFilter]) -> RecordFilter:
        out = cls()
        for f in filters:
            out = out.and_(f)
        return out

    @property
    def empty(self) -> bool:
        """Whether these predicates are all true (nothing to prune by)."""
        return not (self.names or self.nothing or self.bounds() != Bounds())

    def keeps(self, topic: str, partition: int) -> bool:
        """Whether the folder ``<topic>-<partition>`` could hold a match."""
        if self.nothing:
            return False
        for column, op, value in self.names:
            if not _NAME_OPS[op](topic if column == "topic" else partition, value):
                return False
        return True

    def bounds(self, base: Bounds | None = None) -> Bounds:
        """These offset/timestamp ranges, intersected with ``base`` (a reader's options)."""
        base = base or Bounds()
        return Bounds(
            _max(self.start_offset, base.start_offset),
            _min(self.end_offset, base.end_offset),
            _max(self.start_ts, base.start_ts),
            _min(self.end_ts, base.end_ts),
        )

    def describe(self) -> str:
        return " AND ".join(self.described) if self.described else "none"


def _literals(value: Any, kind: type, op: str) -> list[Any]:
    items = list(value) if op in ("in", "not in") else [value]
    if op in ("in", "not in") and isinstance(value, str | bytes):
        raise NotPushable(f"{op} needs a collection, not {value!r}")
    for item in items:
        if isinstance(item, bool) or not isinstance(item, kind):
            raise NotPushable(f"not a {kind.__name__} literal: {item!r}")
    return items


def kept_ranges(data: Any, base: int, bounds: Bounds, keep_control: bool = False) -> tuple[list[tuple[int, int]], int]:
    """The byte ranges of ``data`` (complete batches starting at file position
    ``base``) whose batches could hold a record in ``bounds``, adjacent batches
    merged, as file positions; and the bytes left out. Bytes after the last
    complete batch stay in the last range, for the decoder to report.

    A batch is judged by its header, in the Rust core (thousands of headers a
    millisecond). Offsets: a v2 batch holds ``[base_offset, last_offset]``.
    Timestamps: a v2 header's ``maxTimestamp`` is the largest of its records'
    (Kafka's brokers set it on append), so a batch whose maximum is below
    ``start_ts`` holds no match; with LogAppendTime every record carries that
    timestamp, so one at or above ``end_ts`` holds none either. CreateTime
    records are out of order, so nothing else follows from a header.
    Legacy message sets: a plain v1 message's timestamp is its record's and a
    LogAppendTime v1 wrapper's is every inner record's (exact for both
    bounds); a CreateTime v1 wrapper carries its records' largest timestamp
    as a broker writes it, so it is ruled out below ``start_ts`` when its
    offset shows a broker assigned it (above the previous batch's last
    offset: a producer's wrapper has offset 0 and timestamp 0); v0 messages
    have no time. Batches that fail to parse are always kept; control
    batches (transaction markers) too with ``keep_control``, for a
    ``read_committed`` decode that learns where transactions end from the
    markers themselves rather than from a partition's aborted list (see
    :mod:`kafkabatch.log.txn`).
    """
    ranges, skipped = _kept_ranges(
        data,
        start_offset=bounds.start_offset,
        end_offset=bounds.end_offset,
        start_ts_us=bounds.start_ts,
        end_ts_us=bounds.end_ts,
        keep_control=keep_control,
    )
    return [(base + a, base + b) for a, b in ranges], skipped


def prunes_batches(bounds: Bounds) -> bool:
    """Whether batch headers can rule anything out for ``bounds`` beyond what
    the window walk already does for offsets."""
    return bounds.start_ts is not None or bounds.end_ts is not None


def source_kept_ranges(
    source: Any, a: int, b: int, bounds: Bounds, keep_control: bool = False
) -> tuple[list[tuple[int, int]], int]:
    """:func:`kept_ranges` of bytes ``[a, b)`` of an open segment: for a local
    one judged from its one header walk
    (:func:`kafkabatch.log.windows.segment_walk`), else from the bytes read."""
    walk = segment_walk(source, a)
    walked = (
        None
        if walk is None
        else walk.kept_ranges(
            a,
            b,
            start_offset=bounds.start_offset,
            end_offset=bounds.end_offset,
            start_ts_us=bounds.start_ts,
            end_ts_us=bounds.end_ts,
            keep_control=keep_control,
        )
    )
    if walked is not None:
        return walked
    data = source.read(a, b - a)
    try:
        return kept_ranges(data, a, bounds, keep_control)
    finally:
        del data
        source.release()


def narrow(source: Any, start: int, end: int | None, bounds: Bounds, keep_control: bool = False) -> tuple[int, int]:
    """``[start, end)`` of a segment without its leading and trailing batches
    that can't hold a record in ``bounds`` (judged by headers, see
    :func:`kept_ranges`); ``(x, x)`` when none can. For planners: the
    rest is pruned batch by batch while decoding."""
    end = source.size if end is None else min(end, source.size)
    if start >= end or not prunes_batches(bounds):
        return start, end
    ranges, _ = source_kept_ranges(source, start, end, bounds, keep_control)
    if not ranges:
        return end, end
    return ranges[0][0], ranges[-1][1]
