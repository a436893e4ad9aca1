"""Spark's pushed filters (PySpark 4.1+ ``DataSourceReader.pushFilters``) as a :class:`~kafkabatch.log.prune.RecordFilter`.

Spark hands a Python source the AND of simple filters when
``spark.sql.python.filterPushdown.enabled`` is true (``kbs.register`` turns it
on). Those on ``topic``, ``partition``, ``offset`` and ``timestamp`` prune
folders, segments and batches; the source then applies them exactly, so they
are *pushed* (Spark drops them from its plan). Filters that only narrow the
read (``offset IN (...)``: a range holding the values) or that kafkabatch
can't decide (``key``, ``value``, ``headers``, ``timestampType``, ``!=`` on
offsets...) are returned to Spark, which evaluates them on the rows.

>>> from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual  # doctest: +SKIP
>>> f, rest = translate([EqualTo(("topic",), "orders"), GreaterThanOrEqual(("offset",), 100)])  # doctest: +SKIP
>>> f.describe(), rest                                                                            # doctest: +SKIP
("topic == 'orders' AND offset >= 100", [])
"""

from __future__ import annotations

import datetime as _dt
import sys
from collections.abc import Iterable
from typing import Any

import kafkabatch._kafkabatch as _native
from kafkabatch.log.prune import NotPushable, RecordFilter, to_micros

#: Spark's filter classes by name, with the RecordFilter operator each maps to.
_BINARY = {
    "EqualTo": "==",
    "EqualNullSafe": "==",
    "GreaterThan": ">",
    "GreaterThanOrEqual": ">=",
    "LessThan": "<",
    "LessThanOrEqual": "<=",
    "In": "in",
    "StringStartsWith": "startswith",
    "StringEndsWith": "endswith",
    "StringContains": "contains",
}


def _literal(column: str, value: Any) -> tuple[str, Any]:
    """A Python literal as the core's pushdown rules take it: ``(kind, value)``;
    timestamps (datetime, date) in microseconds since the epoch."""
    if value is None:
        return ("null", None)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, str):
        return ("str", value)
    if column == "timestamp" and isinstance(value, _dt.datetime | _dt.date):
        return ("timestamp_us", to_micros(value))
    return ("other", None)


#: One Spark filter as the core takes it: column, operator, typed literals, negated.
Predicate = tuple[str, str, list[tuple[str, Any]], bool]


def predicate_of(spark_filter: Any) -> tuple[Predicate, Any]:
    """One Spark filter as the core's predicate, and the filter's value as
    given (for descriptions); :class:`NotPushable` when it is not a filter on
    one column the core's rules take."""
    name = type(spark_filter).__name__
    negated = False
    if name == "Not":
        spark_filter = spark_filter.child
        name = type(spark_filter).__name__
        negated = True
    column_path = getattr(spark_filter, "attribute", None)
    if not isinstance(column_path, tuple) or len(column_path) != 1:
        raise NotPushable(f"{spark_filter!r}")
    column = column_path[0]
    literals: list[tuple[str, Any]] = []
    value: Any = None
    if name in ("IsNull", "IsNotNull"):
        op = name.lower()
    else:
        binary = _BINARY.get(name)
        if binary is None:
            raise NotPushable(f"{spark_filter!r}")
        op = binary
        value = spark_filter.value
        if op == "in":
            value = tuple(value)
        literals = [_literal(column, v) for v in (value if op == "in" else [value])]
    return (str(column), op, literals, negated), value


def filter_of(spark_filter: Any) -> tuple[RecordFilter, bool]:
    """One Spark filter as ``(RecordFilter, exact)``: ``exact`` when applying
    the RecordFilter decides the filter by itself (Spark may drop it).
    :class:`NotPushable` when it says nothing kafkabatch can use. The rules
    are the core's (the JVM source takes the same)."""
    (column, op, literals, negated), value = predicate_of(spark_filter)
    try:
        parsed = _native._pushdown_filter(column, op, literals, negated)
    except ValueError:
        raise NotPushable(f"{spark_filter!r}") from None
    if op in ("isnull", "isnotnull"):
        described: tuple[str, ...] = (f"{column} IS NULL",) if parsed["nothing"] else ()
    else:
        described = (f"{column} {parsed['op']} {value!r}",)
    names = tuple(
        (col, name_op, frozenset(values) if name_op in ("in", "not in") else values[0])
        for col, name_op, values in parsed["names"]
    )
    record_filter = RecordFilter(
        names=names,
        start_offset=parsed["start_offset"],
        end_offset=parsed["end_offset"],
        start_ts=parsed["start_ts"],
        end_ts=parsed["end_ts"],
        nothing=parsed["nothing"],
        described=described,
    )
    return record_filter, parsed["exact"]


def translate(filters: Iterable[Any]) -> tuple[RecordFilter, list[Any]]:
    """The AND of Spark ``filters`` as one RecordFilter, and the filters Spark
    must still evaluate (those not decided exactly), as given."""
    record_filter, rest, _ = pushed(filters)
    return record_filter, rest


def pushed(filters: Iterable[Any]) -> tuple[RecordFilter, list[Any], list[Predicate]]:
    """:func:`translate`, and the core's predicates of the filters it takes
    (what the core's planner prunes by, see :mod:`kafkabatch.spark.batch`)."""
    parts = []
    rest = []
    predicates = []
    for spark_filter in filters:
        try:
            record_filter, exact = filter_of(spark_filter)
        except NotPushable:
            rest.append(spark_filter)
            continue
        parts.append(record_filter)
        predicates.append(predicate_of(spark_filter)[0])
        if not exact:
            rest.append(spark_filter)
    return RecordFilter.all_of(parts), rest, predicates


#: The Spark planner module that plans a read whose filters were not pushed.
_PLAN_WITHOUT_PUSHDOWN = "pyspark.sql.worker.plan_data_source_read"


def planning_without_pushdown() -> bool:
    """Whether ``reader()`` is being called by Spark's planner for a read
    whose filters were not pushed (filter pushdown switched off, or nothing to
    push). That planner never calls ``pushFilters`` and, with
    ``spark.sql.python.filterPushdown.enabled`` false, refuses a reader that
    defines it (``DATA_SOURCE_PUSHDOWN_DISABLED``): the source then hands it a
    reader without ``pushFilters``, and Spark filters the rows itself."""
    frame = sys._getframe(1)
    for _ in range(8):
        if frame is None:
            return False
        spec = frame.f_globals.get("__spec__")
        name = getattr(spec, "name", None) or frame.f_globals.get("__name__")
        if name == _PLAN_WITHOUT_PUSHDOWN:
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False
