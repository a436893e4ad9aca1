"""Exact record filters (offsets and timestamps) and the parsers of their user-facing forms.

>>> Bounds(start_offset=10, end_offset=5).empty()
True
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from kafkabatch._kafkabatch import row_mask as _row_mask


def parse_timestamp(value: Any) -> int:
    """A point in time as microseconds since the epoch (the unit of the
    ``timestamp`` column).

    Accepts epoch **milliseconds** (an int, or a string of digits, as Kafka
    and Spark's Kafka source use), an ISO-8601 string (``"2024-05-01"``,
    ``"2024-05-01T12:00:00Z"``, ``"2024-05-01 12:00:00.250+02:00"``; no time
    zone means UTC), or a :class:`datetime.datetime` / :class:`datetime.date`.

    >>> parse_timestamp(1700000000000)
    1700000000000000
    >>> parse_timestamp("2023-11-14T22:13:20Z")
    1700000000000000
    """
    if isinstance(value, bool):
        raise ValueError(f"not a timestamp: {value!r}")
    if isinstance(value, int):
        return value * 1000
    if isinstance(value, float):
        return round(value * 1000)
    if isinstance(value, _dt.datetime):
        moment = value
    elif isinstance(value, _dt.date):
        moment = _dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"-?\d+", text):
            return int(text) * 1000
        try:
            moment = _dt.datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(
                f"not a timestamp: {value!r} (expected epoch milliseconds or ISO-8601 such as '2024-05-01T12:00:00Z')"
            ) from None
    else:
        raise ValueError(f"not a timestamp: {value!r}")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.UTC)
    delta = moment - _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


@dataclass(frozen=True)
class Bounds:
    """Exact filters: offsets in [start_offset, end_offset), timestamps (µs) in [start_ts, end_ts)."""

    start_offset: int | None = None
    end_offset: int | None = None
    start_ts: int | None = None
    end_ts: int | None = None

    @property
    def offsets(self) -> bool:
        return self.start_offset is not None or self.end_offset is not None

    def empty(self) -> bool:
        return (
            self.start_offset is not None and self.end_offset is not None and self.start_offset >= self.end_offset
        ) or (self.start_ts is not None and self.end_ts is not None and self.start_ts >= self.end_ts)

    def mask(self, batch: pa.RecordBatch) -> tuple[pa.Array, int] | None:
        """Which rows of ``batch`` (kafkabatch's schema) are in these bounds, as a
        boolean array, and how many; None when the bounds are open.

        Decided in the Rust core from the ``offset`` and ``timestamp`` value
        buffers (pyarrow's compute functions import pandas on first use, a
        quarter of a second in each fresh Spark worker)."""
        if not (self.offsets or self.start_ts is not None or self.end_ts is not None):
            return None
        offsets, stamps = batch.column("offset"), batch.column("timestamp")
        n = batch.num_rows
        if offsets.null_count or stamps.null_count or stamps.type.unit != "us":
            raise TypeError(f"not kafkabatch's record schema (non-null offset, timestamp[us]): {batch.schema}")
        bits, kept = _row_mask(
            _values(offsets),
            _values(stamps),
            n,
            start_offset=self.start_offset,
            end_offset=self.end_offset,
            start_ts_us=self.start_ts,
            end_ts_us=self.end_ts,
        )
        return pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(bits)]), kept


def _values(array: pa.Array) -> pa.Buffer:
    """The 8-byte values of an ``int64``/``timestamp`` array without nulls, from its first row."""
    return array.buffers()[1].slice(array.offset * 8, len(array) * 8)


def bound_for(spec: Any, topic: str, partition: int, what: str) -> int | None:
    """An offset bound for one topic-partition: an int for all, or a mapping
    ``{topic: {partition: offset}}`` / ``{(topic, partition): offset}``."""
    if spec is None:
        return None
    if isinstance(spec, bool):
        raise TypeError(f"{what} must be an int or a mapping, not {spec!r}")
    if isinstance(spec, int):
        return spec
    if isinstance(spec, Mapping):
        if (topic, partition) in spec:
            return int(spec[(topic, partition)])
        per_topic = spec.get(topic)
        if isinstance(per_topic, Mapping):
            for key in (partition, str(partition)):
                if key in per_topic:
                    return int(per_topic[key])
        return None
    raise TypeError(f"{what} must be an int or a mapping, not {type(spec).__name__}")
