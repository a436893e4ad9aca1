"""Pushdown for log readers: "could this folder, segment or batch hold a matching record?", answered conservatively.

A :class:`RecordFilter` is the AND of simple predicates on ``topic``,
``partition``, ``offset`` and ``timestamp`` (what Spark's ``pushFilters`` and
polars' predicates turn into). It is decided at three levels, each from
statistics that are proven, never guessed:

* **folders**: topic and partition from ``<topic>-<partition>`` names (exact);
* **segments**: base offsets from file names, ``.index`` seeks (checked
  against the log), and for time bounds the headers of all its batches (a
  segment none of whose batches can match is left out whole);
* **batches**: each v2 header's base/last offset and ``maxTimestamp``.

The segments and batches are judged in the Rust core when a scan is planned
and read (``kafkabatch._kafkabatch.kept_ranges`` is the rule for batches).

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

from kafkabatch.log.bounds import Bounds, parse_timestamp

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
