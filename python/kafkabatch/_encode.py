"""The encoding API: records (Arrow tables or dicts) to raw Kafka record batches.

Arguments are checked and columns normalised here with pyarrow compute (no
Python loop over Arrow data); the batches are written by the Rust core with
the GIL released, borrowing the Arrow buffers.
"""

from __future__ import annotations

import datetime as _dt
import operator
import os
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc

from kafkabatch import _kafkabatch as _native

__all__ = ["CODECS", "control_batch", "encode", "write_segment"]

#: Compression codec names, as Kafka spells them.
CODECS: tuple[str, ...] = ("none", "gzip", "snappy", "lz4", "zstd")

Compression = Literal["none", "gzip", "snappy", "lz4", "zstd"]
TimestampType = Literal["create", "log_append"]

_INT16 = (-(1 << 15), (1 << 15) - 1)
_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)

#: The largest timestamp (ms) that :func:`kafkabatch.decode` can show: its
#: ``timestamp`` column is microseconds in an int64.
MAX_TIMESTAMP_MS = _INT64[1] // 1000

# Compression levels each codec takes (Kafka's compression.<codec>.level).
_LEVELS: dict[str, tuple[int, int]] = {"gzip": (1, 9), "lz4": (1, 17), "zstd": (-131072, 22)}

_HEADER_STRUCT = pa.struct([pa.field("key", pa.large_string()), pa.field("value", pa.large_binary())])
_HEADERS = pa.large_list(pa.field("item", _HEADER_STRUCT))
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_MS = _dt.timedelta(milliseconds=1)
_UNIT_PER_MS = {"us": 1000, "ns": 1_000_000}
_TIMESTAMP_ALIASES = {
    "create": "create",
    "createtime": "create",
    "create_time": "create",
    "log_append": "log_append",
    "logappendtime": "log_append",
    "log_append_time": "log_append",
}


# --------------------------------------------------------------------------
# options
# --------------------------------------------------------------------------


def _int(name: str, value: Any, bounds: tuple[int, int], *, what: str = "") -> int:
    """An integer argument in ``bounds`` (bools and floats are refused)."""
    try:
        if isinstance(value, bool):
            raise TypeError
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, not {type(value).__name__}") from None
    lo, hi = bounds
    if not lo <= value <= hi:
        raise ValueError(f"invalid {name}: {value} is out of range ({what or f'{lo}..{hi}'})")
    return int(value)


def _millis(name: str, value: Any) -> int:
    """A timestamp argument: int milliseconds or a datetime (naive = UTC)."""
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.UTC)
        return (value - _EPOCH) // _MS
    return _int(name, value, _INT64)


def _codec(compression: Any, magic: int) -> str:
    if compression is None:
        return "none"
    if not isinstance(compression, str):
        raise TypeError(f"compression must be a str (one of {', '.join(CODECS)}), not {type(compression).__name__}")
    name = compression.lower()
    if name not in CODECS:
        raise ValueError(f"unknown compression {compression!r}; use one of {', '.join(map(repr, CODECS))}")
    if name == "zstd" and magic < 2:
        raise ValueError(
            f"invalid compression: zstd needs magic 2 (magic is {magic}); Kafka added zstd with the v2 format"
        )
    return name


def _level(level: Any, codec: str) -> int | None:
    if level is None:
        return None
    if codec not in _LEVELS:
        raise ValueError(f"invalid compression_level: {codec} takes no level (levels are for {', '.join(_LEVELS)})")
    lo, hi = _LEVELS[codec]
    value = _int("compression_level", level, _INT32)
    if codec == "gzip" and value == -1:
        return value  # Deflater.DEFAULT_COMPRESSION
    if not lo <= value <= hi:
        raise ValueError(
            f"invalid compression_level: {codec} levels are {lo}..{hi}"
            + (" (or -1)" if codec == "gzip" else "")
            + f", not {value}"
        )
    return value


def _native_options(
    *,
    magic: Any,
    compression: Any,
    base_offset: Any,
    records_per_batch: Any,
    producer_id: Any,
    producer_epoch: Any,
    base_sequence: Any,
    transactional: Any,
    partition_leader_epoch: Any,
    timestamp_type: Any,
    compression_level: Any,
    snappy_framing: Any,
    log_append_time: Any,
    max_batch_bytes: Any,
) -> dict[str, Any]:
    """Check every option; the keyword arguments of ``_native.encode``."""
    magic = _int("magic", magic, (0, 2), what="a Kafka message format is 0, 1 or 2")
    codec = _codec(compression, magic)
    if snappy_framing not in ("raw", "xerial"):
        raise ValueError(f"snappy_framing must be 'raw' or 'xerial', not {snappy_framing!r}")
    if records_per_batch is not None:
        records_per_batch = _int("records_per_batch", records_per_batch, (1, _INT32[1]), what="at least 1")
    if max_batch_bytes is not None:
        max_batch_bytes = _int("max_batch_bytes", max_batch_bytes, (0, _INT64[1]), what=">= 0")
    if not isinstance(transactional, bool):
        raise TypeError(f"transactional must be a bool, not {type(transactional).__name__}")
    if not isinstance(timestamp_type, str) or timestamp_type.lower() not in _TIMESTAMP_ALIASES:
        raise ValueError(f"timestamp_type must be 'create' or 'log_append', not {timestamp_type!r}")
    timestamp_type = _TIMESTAMP_ALIASES[timestamp_type.lower()]
    if log_append_time is not None:
        log_append_time = _millis("log_append_time", log_append_time)
        if not -1 <= log_append_time <= MAX_TIMESTAMP_MS:
            raise ValueError(
                f"invalid log_append_time: {log_append_time} is out of range (-1 or 0..{MAX_TIMESTAMP_MS} ms)"
            )
    return {
        "magic": magic,
        "compression": codec,
        "compression_level": _level(compression_level, codec),
        "snappy_xerial": snappy_framing == "xerial",
        "base_offset": _int("base_offset", base_offset, (0, _INT64[1]), what="offsets start at 0"),
        "records_per_batch": records_per_batch,
        "max_batch_bytes": max_batch_bytes,
        "producer_id": _int("producer_id", producer_id, (-1, _INT64[1]), what="-1 for none, or >= 0"),
        "producer_epoch": _int("producer_epoch", producer_epoch, (-1, _INT16[1]), what="-1 for none, or 0..32767"),
        "base_sequence": _int("base_sequence", base_sequence, (-1, _INT32[1]), what="-1 for none, or >= 0"),
        "transactional": transactional,
        "partition_leader_epoch": _int(
            "partition_leader_epoch", partition_leader_epoch, (-1, _INT32[1]), what="-1 for none, or >= 0"
        ),
        "timestamp_type": timestamp_type,
        "log_append_time": log_append_time,
    }


# --------------------------------------------------------------------------
# records -> one Arrow table of known column types
# --------------------------------------------------------------------------


def _unwrap_dictionary(col: pa.ChunkedArray) -> pa.ChunkedArray:
    if pa.types.is_dictionary(col.type):
        return col.cast(col.type.value_type)
    return col


def _is_stringish(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _is_binaryish(t: pa.DataType) -> bool:
    return (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
        or pa.types.is_fixed_size_binary(t)
        or _is_stringish(t)
        or pa.types.is_null(t)
    )


def _binary_column(col: pa.ChunkedArray, name: str) -> pa.ChunkedArray:
    col = _unwrap_dictionary(col)
    t = col.type
    if pa.types.is_large_binary(t):
        return col
    if not _is_binaryish(t):
        raise TypeError(f"column {name!r} must be binary or string (bytes, or text written as UTF-8), not {t}")
    if _is_stringish(t) and not pa.types.is_string(t):
        col = col.cast(pa.string())
    return col.cast(pa.large_binary())


def _floor_div(values: pa.ChunkedArray, divisor: int) -> pa.ChunkedArray:
    quotient = pc.divide(values, divisor)  # truncates toward zero
    below = pc.less(values, pc.multiply(quotient, divisor))
    return pc.subtract(quotient, pc.cast(below, pa.int64()))


def _timestamp_column(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """Milliseconds as int64, nulls as -1 (Kafka's "no timestamp")."""
    col = _unwrap_dictionary(col)
    t = col.type
    if pa.types.is_timestamp(t):
        raw = col.cast(pa.int64())
        if t.unit == "s":
            ms = pc.multiply_checked(raw, 1000)
        elif t.unit == "ms":
            ms = raw
        else:
            ms = _floor_div(raw, _UNIT_PER_MS[t.unit])
    elif pa.types.is_integer(t):
        try:
            ms = col.cast(pa.int64())
        except pa.ArrowInvalid as e:
            raise ValueError(f"column 'timestamp': values out of range for int64 milliseconds ({e})") from None
    elif pa.types.is_null(t):
        ms = col.cast(pa.int64())
    else:
        raise TypeError(f"column 'timestamp' must be a timestamp or integer milliseconds, not {t}")
    ms = pc.fill_null(ms, -1)
    if len(ms):
        high = pc.max(ms).as_py()
        if high is not None and high > MAX_TIMESTAMP_MS:
            index = pc.index(pc.greater(ms, MAX_TIMESTAMP_MS), True).as_py()
            raise ValueError(
                f"record {index}: column 'timestamp': {high} ms is out of range (at most {MAX_TIMESTAMP_MS} ms, "
                "the largest that kafkabatch.decode's microsecond timestamps can hold)"
            )
    return ms


def _headers_column(col: pa.ChunkedArray) -> pa.ChunkedArray:
    t = col.type
    if pa.types.is_null(t):
        return col.cast(_HEADERS)
    if not (
        pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t) or pa.types.is_large_list_view(t)
    ):
        raise TypeError(f"column 'headers' must be list<struct<key: string, value: binary>>, not {t}")
    item = t.value_type
    if not pa.types.is_struct(item) or {item.field(i).name for i in range(item.num_fields)} != {"key", "value"}:
        raise TypeError(f"column 'headers' must be list<struct<key: string, value: binary>>, not {t}")
    key_type, value_type = item.field("key").type, item.field("value").type
    if pa.types.is_dictionary(key_type):
        key_type = key_type.value_type
    if not (_is_stringish(key_type) or pa.types.is_null(key_type)):
        raise TypeError(
            f"column 'headers': header keys must be strings (Kafka header keys are UTF-8 text), not {key_type}"
        )
    if pa.types.is_dictionary(value_type):
        value_type = value_type.value_type
    if not _is_binaryish(value_type):
        raise TypeError(f"column 'headers': header values must be binary or string, not {value_type}")
    if pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        col = col.cast(pa.large_list(item))
    try:
        return col.cast(_HEADERS)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        # Casts of nested string views or dictionaries are not everywhere: go field by field.
        return pa.chunked_array([_headers_chunk(chunk) for chunk in col.chunks], type=_HEADERS)


def _headers_chunk(chunk: pa.Array) -> pa.Array:
    if not pa.types.is_large_list(chunk.type):
        chunk = chunk.cast(pa.large_list(chunk.type.value_type))
    entries = chunk.values  # the whole child; offsets index into it
    keys = _unwrap_dictionary(pa.chunked_array([entries.field("key")])).combine_chunks()
    keys = keys.cast(pa.string()).cast(pa.large_string()) if not pa.types.is_large_string(keys.type) else keys
    values = _binary_column(pa.chunked_array([entries.field("value")]), "headers").combine_chunks()
    struct = pa.StructArray.from_arrays([keys, values], fields=list(_HEADER_STRUCT), mask=entries.is_null())
    return pa.LargeListArray.from_arrays(chunk.offsets, struct, mask=chunk.is_null())


def _arrow_table(records: Any) -> pa.Table | None:
    """``records`` as a pyarrow Table, or None when it is not Arrow data."""
    if isinstance(records, pa.Table):
        return records
    if isinstance(records, pa.RecordBatch):
        return pa.Table.from_batches([records])
    if isinstance(records, pa.RecordBatchReader):
        return records.read_all()
    if hasattr(records, "__arrow_c_stream__"):
        return pa.table(records)
    if hasattr(records, "__arrow_c_array__"):
        return pa.Table.from_batches([pa.record_batch(records)])
    return None


def _normalize_table(table: pa.Table) -> pa.Table:
    names = table.column_names
    if "value" not in names:
        raise ValueError(f"records need a 'value' column (kafkabatch.SCHEMA names); found {names}")
    for name in ("key", "value", "timestamp", "headers"):
        if names.count(name) > 1:
            raise ValueError(f"records have {names.count(name)} columns named {name!r}")
    columns = {"value": _binary_column(table.column("value"), "value")}
    if "key" in names:
        columns["key"] = _binary_column(table.column("key"), "key")
    if "timestamp" in names:
        columns["timestamp"] = _timestamp_column(table.column("timestamp"))
    if "headers" in names:
        columns["headers"] = _headers_column(table.column("headers"))
    return pa.table(columns)


def _bytes(value: Any, index: int, field: str) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"record {index}: {field!r} must be bytes, str or None, not {type(value).__name__}")


def _record_timestamp(value: Any, index: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, _dt.datetime):
        return _millis("timestamp", value)
    if isinstance(value, bool) or isinstance(value, float):
        raise TypeError(
            f"record {index}: 'timestamp' must be int milliseconds or a datetime, not {type(value).__name__}"
        )
    try:
        ms = operator.index(value)
    except TypeError:
        raise TypeError(
            f"record {index}: 'timestamp' must be int milliseconds or a datetime, not {type(value).__name__}"
        ) from None
    if not _INT64[0] <= ms <= _INT64[1]:
        raise ValueError(f"record {index}: column 'timestamp': {ms} is out of range for int64 milliseconds")
    return ms


def _record_headers(value: Any, index: int) -> list[tuple[str, bytes | None]] | None:
    if value is None:
        return None
    items = value.items() if isinstance(value, Mapping) else value
    if isinstance(items, (str, bytes)):
        raise TypeError(f"record {index}: 'headers' must be a list of (key, value) pairs, not {type(value).__name__}")
    out = []
    for pair in items:
        if isinstance(pair, Mapping):
            try:
                key, hvalue = pair["key"], pair["value"]
            except KeyError:
                raise TypeError(f"record {index}: a header dict needs 'key' and 'value'") from None
        else:
            try:
                key, hvalue = pair
            except (TypeError, ValueError):
                raise TypeError(f"record {index}: each header must be a (key, value) pair, not {pair!r}") from None
        if not isinstance(key, str):
            raise TypeError(
                f"record {index}: header keys must be str (Kafka header keys are UTF-8 text), "
                f"not {type(key).__name__}: {key!r}"
            )
        out.append((key, _bytes(hvalue, index, "headers")))
    return out


def _dicts_table(records: Iterable[Any]) -> pa.Table:
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    timestamps: list[int | None] = []
    headers: list[list[tuple[str, bytes | None]] | None] = []
    for index, record in enumerate(records):
        if not isinstance(record, Mapping):
            raise TypeError(
                f"record {index}: expected a dict with 'value' (and optionally 'key', 'timestamp', "
                f"'headers'), not {type(record).__name__}"
            )
        if "value" not in record:
            raise ValueError(f"record {index} has no 'value' (use None for a tombstone)")
        values.append(_bytes(record["value"], index, "value"))
        keys.append(_bytes(record.get("key"), index, "key"))
        timestamps.append(_record_timestamp(record.get("timestamp"), index))
        headers.append(_record_headers(record.get("headers"), index))
    table = pa.table(
        {
            "key": pa.array(keys, pa.large_binary()),
            "value": pa.array(values, pa.large_binary()),
            "timestamp": pa.array(timestamps, pa.int64()),
            "headers": pa.array(
                [None if h is None else [{"key": k, "value": v} for k, v in h] for h in headers], _HEADERS
            ),
        }
    )
    return _normalize_table(table)


def _records_table(records: Any) -> pa.Table:
    table = _arrow_table(records)
    if table is not None:
        return _normalize_table(table)
    if isinstance(records, (str, bytes, bytearray, memoryview, Mapping)):
        raise TypeError(
            "records must be an Arrow table or record batch (pyarrow, polars, ... with kafkabatch.SCHEMA "
            f"column names) or an iterable of dicts, not {type(records).__name__}"
        )
    try:
        iterator = iter(records)
    except TypeError:
        raise TypeError(
            f"records must be an Arrow table or record batch, or an iterable of dicts, not {type(records).__name__}"
        ) from None
    return _dicts_table(iterator)


# --------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------


def encode(
    records: Any,
    *,
    magic: int = 2,
    compression: Compression = "none",
    base_offset: int = 0,
    records_per_batch: int | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    partition_leader_epoch: int = -1,
    timestamp_type: TimestampType = "create",
    compression_level: int | None = None,
    snappy_framing: Literal["raw", "xerial"] = "raw",
    log_append_time: int | _dt.datetime | None = None,
    max_batch_bytes: int | None = None,
) -> bytes:
    """Encode records as raw Kafka record batches, as a producer (and broker) would write them.

    ``records`` is Arrow data with the column names of :data:`kafkabatch.SCHEMA`
    (a pyarrow Table/RecordBatch/RecordBatchReader, a polars DataFrame, anything
    with ``__arrow_c_stream__`` or ``__arrow_c_array__``), or an iterable of
    dicts with the same keys. ``value`` is required (binary or string; null is
    a tombstone); ``key`` (binary or string), ``timestamp`` (a timestamp
    column, or int milliseconds; in dicts int ms or a ``datetime``, naive
    meaning UTC) and ``headers`` (``list<struct<key: string, value: binary>>``;
    in dicts a list of ``(key, value)`` pairs or ``{"key", "value"}`` dicts)
    are optional. Other columns (``topic``, ``partition``, ``offset``,
    ``timestampType``, ...) are ignored, so ``encode(decode(data))`` works.
    Arrow input is never turned into Python objects.

    Timestamps are Kafka milliseconds; a missing or null timestamp is written
    as -1 (Kafka's "no timestamp", which reads back as -1 ms). Magic 1 and 2
    take -1 or 0.. ``MAX_TIMESTAMP_MS`` (Kafka's Java producer refuses
    negative timestamps; the upper bound is what a microsecond timestamp can
    hold). Magic 0 has no timestamps: they are dropped.

    Options are the batch header fields: ``magic`` (0, 1, 2), ``compression``
    (none, gzip, snappy, lz4, zstd (magic 2 only)) with ``compression_level``
    (gzip 1-9, lz4 1-17, zstd -131072..22; default Kafka's) and, for magic 2,
    ``snappy_framing`` (``"raw"`` block as librdkafka writes, or ``"xerial"``
    as the Java client writes; magic 0/1 snappy is always xerial),
    ``base_offset`` (offsets are consecutive from it), ``producer_id`` /
    ``producer_epoch`` / ``base_sequence`` (an idempotent producer; the
    sequence advances batch by batch) and ``transactional`` (magic 2),
    ``partition_leader_epoch``, ``timestamp_type`` (``"create"`` or
    ``"log_append"``, with ``log_append_time`` as the broker's append time,
    default each batch's largest timestamp).

    Batching: ``records_per_batch`` records per batch, or batches closed before
    ``max_batch_bytes`` (uncompressed, like ``batch.size``); by default one
    batch. Uncompressed v0/v1 messages are each their own entry.

    Every argument and record is checked before anything is encoded; bad
    input raises ``TypeError`` or ``ValueError`` naming the argument or column
    (and record index), also as ``.argument`` and ``.record`` attributes when
    the check ran in the core.

    >>> import kafkabatch as kb
    >>> data = kb.encode([{"key": b"k", "value": b"v", "timestamp": 1_700_000_000_000}], compression="zstd")  # doctest: +SKIP
    >>> kb.decode(data).column("value").to_pylist()                                                        # doctest: +SKIP
    [b'v']
    """
    options = _native_options(
        magic=magic,
        compression=compression,
        base_offset=base_offset,
        records_per_batch=records_per_batch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        transactional=transactional,
        partition_leader_epoch=partition_leader_epoch,
        timestamp_type=timestamp_type,
        compression_level=compression_level,
        snappy_framing=snappy_framing,
        log_append_time=log_append_time,
        max_batch_bytes=max_batch_bytes,
    )
    table = _records_table(records)
    return _native.encode(table, **options)


def control_batch(
    kind: Literal["commit", "abort"],
    producer_id: int,
    producer_epoch: int,
    base_offset: int,
    coordinator_epoch: int = 0,
    timestamp: int | _dt.datetime | None = None,
    partition_leader_epoch: int = -1,
) -> bytes:
    """A control batch: the COMMIT or ABORT marker a transaction coordinator
    writes to end ``producer_id``'s transaction in a partition.

    One v2 batch at ``base_offset`` with the control and transactional bits
    set and one record (key: version 0 + type, 1 commit / 0 abort; value:
    version 0 + ``coordinator_epoch``). ``timestamp``: ms or a datetime,
    default now.

    >>> import kafkabatch as kb
    >>> data = kb.encode([{"value": b"v"}], producer_id=7, producer_epoch=0, base_sequence=0,  # doctest: +SKIP
    ...                  transactional=True)
    >>> data += kb.control_batch("abort", producer_id=7, producer_epoch=0, base_offset=1)  # doctest: +SKIP
    >>> kb.decode(data, isolation="read_committed").num_rows                              # doctest: +SKIP
    0
    """
    if not isinstance(kind, str) or kind.lower() not in ("commit", "abort"):
        raise ValueError(f"kind must be 'commit' or 'abort', not {kind!r}")
    ts = int(time.time() * 1000) if timestamp is None else _millis("timestamp", timestamp)
    if not -1 <= ts <= MAX_TIMESTAMP_MS:
        raise ValueError(f"invalid timestamp: {ts} is out of range (-1, meaning none, or 0..{MAX_TIMESTAMP_MS} ms)")
    return _native.control_batch(
        kind.lower(),
        _int("producer_id", producer_id, (0, _INT64[1]), what="a marker needs the producer's id, >= 0"),
        _int("producer_epoch", producer_epoch, (0, _INT16[1]), what="a marker needs the producer's epoch, 0..32767"),
        _int("base_offset", base_offset, (0, _INT64[1]), what="offsets start at 0"),
        _int("coordinator_epoch", coordinator_epoch, _INT32),
        ts,
        _int("partition_leader_epoch", partition_leader_epoch, (-1, _INT32[1]), what="-1 for none, or >= 0"),
    )


def write_segment(path: str | os.PathLike[str], records: Any, **encode_options: Any) -> int:
    """Encode ``records`` (see :func:`encode`, which takes the keyword arguments)
    and write them to the segment file ``path``; returns the bytes written.

    All or nothing: the records are encoded first, then written to a temporary
    file in the same folder, flushed to disk, and renamed over ``path``; any
    failure leaves no file behind (and an existing ``path`` untouched).
    Parent folders are created. Name segments as Kafka does,
    ``<topic>-<partition>/<20-digit base offset>.log``, for
    :func:`kafkabatch.read_segment` to find topic and partition.

    >>> import kafkabatch as kb
    >>> kb.write_segment("/tmp/logs/orders-0/00000000000000000000.log", [{"value": b"v"}])  # doctest: +SKIP
    72
    """
    data = encode(records, **encode_options)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            if hasattr(os, "fchmod"):
                os.fchmod(f.fileno(), 0o644)  # mkstemp makes 0600; a broker's segments are 0644
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return len(data)
