"""Turning kafkabatch's output into plain Python data, and comparing it with the
reference decodings from ``realclients`` precisely (bytes and ints, no
approximations), with short failure messages even for 10k-row tables."""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa

# The contract, spelled out independently of kb.SCHEMA.
CONTRACT_COLUMNS = [
    ("key", pa.binary()),
    ("value", pa.binary()),
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("offset", pa.int64()),
    ("timestamp", pa.timestamp("us", tz="UTC")),
    ("timestampType", pa.int32()),
    ("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
]


def type_shape(t: pa.DataType) -> Any:
    """A type with list item names and nullability stripped (those aren't part
    of the contract), everything else kept: unit, time zone, field names."""
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return ("list" if pa.types.is_list(t) else "large_list", type_shape(t.value_type))
    if pa.types.is_struct(t):
        return ("struct", tuple((t.field(i).name, type_shape(t.field(i).type)) for i in range(t.num_fields)))
    if pa.types.is_timestamp(t):
        return ("timestamp", t.unit, t.tz)
    return str(t)


def schema_shape(schema: pa.Schema) -> list:
    return [(f.name, type_shape(f.type)) for f in schema]


CONTRACT_SHAPE = [(name, type_shape(t)) for name, t in CONTRACT_COLUMNS]


def table_rows(table: pa.Table) -> list[dict]:
    """``table.to_pylist()`` with the timestamp column as int64 microseconds."""
    ts = table.column("timestamp").cast(pa.int64()).to_pylist()
    rows = table.to_pylist()
    for row, t in zip(rows, ts):
        row["timestamp"] = t
    return rows


def record_view(r) -> dict:
    """A ``kb`` Record as a reference record dict."""
    return {
        "offset": r.offset,
        "timestamp": r.timestamp,
        "timestamp_type": r.timestamp_type,
        "key": r.key,
        "value": r.value,
        "headers": [tuple(h) for h in r.headers],
    }


def _short(v: Any, n: int = 120) -> str:
    s = repr(v)
    return s if len(s) <= n else s[:n] + f"... ({len(s)} chars)"


def assert_same_list(got: list, want: list, what: str = "rows") -> None:
    """Equal lists of dicts, reporting the first differing item/field only."""
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            if isinstance(g, dict) and isinstance(w, dict):
                diffs = {
                    k: (g.get(k, "<missing>"), w.get(k, "<missing>"))
                    for k in sorted(set(g) | set(w))
                    if g.get(k, "<missing>") != w.get(k, "<missing>")
                }
                detail = "; ".join(f"{k}: got {_short(a)}, want {_short(b)}" for k, (a, b) in diffs.items())
            else:
                detail = f"got {_short(g)}, want {_short(w)}"
            raise AssertionError(f"{what}[{i}] differs: {detail}")
    assert len(got) == len(want), f"{what}: got {len(got)}, want {len(want)}"


# Batch fields compared exactly against the reference for every batch.
EXACT_BATCH_FIELDS = (
    "position",
    "size_in_bytes",
    "magic",
    "base_offset",
    "last_offset",
    "partition_leader_epoch",
    "crc",
    "attributes",
    "compression",
    "timestamp_type",
    "is_transactional",
    "is_control",
    "max_timestamp",
    "record_count",
)
V2_ONLY_FIELDS = ("base_timestamp", "producer_id", "producer_epoch", "base_sequence")


def batch_view(b, magic: int) -> dict:
    fields = EXACT_BATCH_FIELDS + (V2_ONLY_FIELDS if magic == 2 else ())
    out = {f: getattr(b, f) for f in fields}
    c = b.control
    out["control"] = (
        None if c is None else {"type": c.type, "version": c.version, "coordinator_epoch": c.coordinator_epoch}
    )
    return out


def expected_batch_view(ref: dict) -> dict:
    fields = EXACT_BATCH_FIELDS + (V2_ONLY_FIELDS if ref["magic"] == 2 else ())
    out = {f: ref[f] for f in fields}
    out["control"] = ref["control"]
    return out


def assert_names_batch(exc: BaseException, position: int, *base_offsets: int) -> None:
    """The exception message names the batch's byte position and (one of) its
    base offset(s).  Callers pick batches at a non-zero position."""
    msg = str(exc)
    assert re.search(rf"(?<![0-9]){position}(?![0-9])", msg), f"position {position} not in {msg!r}"
    if base_offsets:
        assert any(re.search(rf"(?<![0-9]){o}(?![0-9])", msg) for o in base_offsets), (
            f"base offset {base_offsets} not in {msg!r}"
        )
