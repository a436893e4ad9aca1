"""Golden Kafka record batches written by other people's encoders, with the
reference decoding given by their own readers.

Nothing in here imports kafkabatch: these builders are the yardstick the
tests hold kafkabatch against.  Every builder checks its own output on the way
out (``_self_check``): the bytes are read back with the writing library's own
reader (and, where it can, the other Python library's reader), every CRC must
validate, the codec bits must say the requested codec, and the records must be
exactly the ones that were appended.  ``python tests/realclients.py`` builds
everything and prints a summary.

Sources
-------
* ``kafka-python``  — ``kafka.record.memory_records.MemoryRecordsBuilder``
  (v0/v1 via ``LegacyRecordBatchBuilder``, v2 via ``DefaultRecordBatchBuilder``);
  reference reader ``kafka.record.memory_records.MemoryRecords``.
* ``aiokafka``      — ``aiokafka.record.default_records.DefaultRecordBatchBuilder``
  and ``aiokafka.record.legacy_records.LegacyRecordBatchBuilder`` (Cython);
  reference reader ``aiokafka.record.memory_records.MemoryRecords``.
* ``librdkafka``    — confluent-kafka's producer against librdkafka's in-process
  mock cluster; the stored bytes are fetched back with a Fetch v4 request built
  from kafka-python's protocol classes.  Reference: what was produced, and
  kafka-python's reader over the fetched bytes (and librdkafka's own consumer
  for the non-transactional topics).
* ``hand-built``    — control batches and broker-style rewrites from the spec
  layout (``/work/shared/spec``), CRCs recomputed, checked with kafka-python's
  reader.

Broker-style offset assignment for legacy compressed producers
---------------------------------------------------------------
kafka-python and aiokafka write a legacy *compressed* wrapper the way a
producer sends it: wrapper offset 0 and wrapper timestamp 0.  A broker
rewrites the wrapper before storing it (LogValidator, in-place assignment):
the wrapper offset becomes the absolute offset of the last inner message, and
for magic 1 the wrapper timestamp becomes the max inner timestamp (CRC redone).
The builders here apply exactly that rewrite (``legacy_broker_assign``), so the
fixtures look like what a ``.log`` file or a Fetch response holds.  v1 inner
offsets stay relative (0..n-1), v0 inner offsets are written absolute (the
producer is given the absolute offsets, as a broker recompressing v0 would).

Reference record dicts
----------------------
``{"offset", "timestamp", "timestamp_type", "key", "value", "headers"}`` with
headers a list of ``(str, bytes | None)`` tuples.  v0 records: timestamp -1 and
timestamp_type -1 (the readers say ``None``; Kafka's Java client says -1).

Reference batch dicts: see ``reference_batches``.

Determinism
-----------
Data sets are seeded.  kafka-python and aiokafka gzip through
``gzip.GzipFile``, which stamps the current time into the gzip header; the
builders zero it (``zero_gzip_mtime``, batch CRC redone), so every client
fixture is the same bytes on every run.  librdkafka fixtures differ between
runs only in the producer id the mock cluster hands out (and so the CRCs).
kafka-python's magic-0 lz4 needs ``xxhash``; when it is not installed the
builders lend kafka-python a pure-Python XXH32 (``_ensure_xxhash``), which
gives identical bytes.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import random
import socket
import struct
import sys
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path

import crc32c as _crc32c

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
CODEC_ID = {name: i for i, name in enumerate(CODECS)}
BASE_TS = 1_700_000_000_000  # 2023-11-14T22:13:20Z, in ms

ATTR_CODEC_MASK = 0x07
ATTR_LOG_APPEND_TIME = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20

V2_HEADER = struct.Struct(">qiibIhiqqqhii")  # 61 bytes
V2_CRC_START = 21  # CRC32-C covers attributes .. end of batch
LEGACY_V0 = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
LEGACY_V1 = struct.Struct(">qiIbbq")  # ... timestamp
LOG_OVERHEAD = 12  # offset int64 + length int32

LEGACY_MAGICS = (0, 1)


def codecs_for(magic: int) -> tuple[str, ...]:
    """Codecs Kafka allows for a message format (zstd needs magic 2)."""
    return CODECS if magic == 2 else CODECS[:4]


# --------------------------------------------------------------------------
# crc helpers
# --------------------------------------------------------------------------


def crc32c(data: bytes | bytearray | memoryview) -> int:
    return _crc32c.crc32c(bytes(data)) & 0xFFFFFFFF


def crc32(data: bytes | bytearray | memoryview) -> int:
    return zlib.crc32(bytes(data)) & 0xFFFFFFFF


_M32 = 0xFFFFFFFF
_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 (the LZ4 frame header checksum hash), pure Python."""
    data = bytes(data)
    n, i = len(data), 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        while i + 16 <= n:
            for lane in range(4):
                (w,) = struct.unpack_from("<I", data, i + 4 * lane)
                v[lane] = (_rotl32((v[lane] + w * _P2) & _M32, 13) * _P1) & _M32
            i += 16
        h = (_rotl32(v[0], 1) + _rotl32(v[1], 7) + _rotl32(v[2], 12) + _rotl32(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        (w,) = struct.unpack_from("<I", data, i)
        h = (_rotl32((h + w * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl32((h + data[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


class _PyXXH32:
    def __init__(self, data: bytes = b"", seed: int = 0):
        self._h = xxh32(data, seed)

    def digest(self) -> bytes:
        return struct.pack(">I", self._h)

    def intdigest(self) -> int:
        return self._h


def _ensure_xxhash() -> None:
    """kafka-python's magic-0 lz4 (KAFKA-3160) codec needs ``xxhash``, which is
    not one of kafkabatch's test extras: lend it a pure-Python XXH32."""
    from kafka import codec as kc

    if kc.xxhash is None:
        kc.xxhash = type("xxhash", (), {"xxh32": _PyXXH32})


# Cells a library cannot write at all: (source, magic, codec) -> reason.
UNSUPPORTED = {
    ("aiokafka", 0, "lz4"): "aiokafka raises UnsupportedCodecError: LZ4 is not supported for magic 0 (KAFKA-3160)",
}


# --------------------------------------------------------------------------
# input data sets (deterministic)
# --------------------------------------------------------------------------

_WORDS = [
    w.encode()
    for w in (
        "kafka ",
        "record ",
        "batch ",
        "offset ",
        "topic ",
        "partition ",
        "leader ",
        "epoch ",
        "producer ",
        "sequence ",
        "header ",
        "value ",
        "key ",
        "timestamp ",
        "crc ",
        "magic ",
        "\x00\x01\x02 ",
        "\xff\xfe ",
        "ключ ",
        "数据 ",
        "🔑 ",
        "gzip ",
        "snappy ",
        "lz4 ",
        "zstd ",
        '{"id": ',
        "}, ",
        "null ",
    )
]


def _compressible(rng: random.Random, n: int) -> bytes:
    """Deterministic text-like bytes that every codec (snappy included) shrinks."""
    out = bytearray()
    while len(out) < n:
        out += rng.choice(_WORDS)
    return bytes(out[:n])


@functools.cache
def _mixed_base() -> tuple[dict, ...]:
    rng = random.Random(0x5EED_0001)
    recs: list[dict] = []

    def add(key, value, headers=(), dt=None):
        ts = BASE_TS + 7 * len(recs) if dt is None else BASE_TS + dt
        recs.append({"key": key, "value": value, "headers": list(headers), "timestamp": ts})

    add(None, b"null key")
    add(b"", b"empty key")
    add(b"null value", None)
    add(b"empty value", b"")
    add(None, None)
    add(b"", b"")
    add(bytes(range(256)), bytes(range(255, -1, -1)), [("all-bytes", bytes(range(256)))])
    add(b"dup-headers", b"v", [("dup", b"1"), ("dup", b"2"), ("other", b"x"), ("dup", b"3")])
    add(b"null-header", b"v", [("n", None), ("e", b""), ("n", None)])
    add(
        b"unicode-header",
        "värde ✓".encode(),
        [("ключ-🔑", "значение".encode()), ("日本語", b"\x00\xff"), ("", b"empty key")],
    )
    add(b"earlier timestamp", b"v", dt=-5_000)  # negative delta in v2
    add(b"k" * 127, b"v" * 128)  # varint length boundaries
    add(b"k" * 16_383, b"v" * 16_384)
    add(b"many headers", b"v", [(f"h{i}", bytes([i])) for i in range(70)])  # count > 63: 2-byte zigzag varint
    add(b"large", _compressible(rng, 100 * 1024))  # 100 KiB value
    add(b"large-key" + _compressible(rng, 100 * 1024), b"large key")
    for i in range(24):
        key = None if i % 5 == 0 else f"key-{i:03d}".encode()
        value = b"payload-%03d-" % i + _compressible(rng, rng.randrange(0, 300))
        headers = [] if i % 3 else [("seq", str(i).encode()), ("trace", rng.randbytes(8))]
        add(key, value, headers)
    add(b"later timestamp", b"v", dt=86_400_000)  # max timestamp is not the last record's
    add(b"last", b"end", [("last", None)])
    return tuple(recs)


@functools.cache
def _ten_k_base() -> tuple[dict, ...]:
    recs = []
    for i in range(10_000):
        recs.append(
            {
                "key": b"key-%05d" % i if i % 10 else None,
                "value": b"value-%d-" % i + b"x" * (i % 50),
                "headers": [("i", str(i).encode()), ("n", None)] if i % 1000 == 0 else [],
                "timestamp": BASE_TS + i,
            }
        )
    return tuple(recs)


DATASETS: dict[str, Callable[[], tuple[dict, ...]]] = {"mixed": _mixed_base, "10k": _ten_k_base}


def dataset(name: str, magic: int) -> list[dict]:
    """Input records for a message format: legacy formats have no headers; v0
    has no timestamps."""
    out = []
    for r in DATASETS[name]():
        r = dict(r)
        if magic < 2:
            r["headers"] = []
        if magic == 0:
            r["timestamp"] = -1
        out.append(r)
    return out


# --------------------------------------------------------------------------
# raw layout: walking, header parsing
# --------------------------------------------------------------------------


def batch_spans(data: bytes | bytearray | memoryview) -> list[tuple[int, int]]:
    """(position, size) of every complete top-level batch/message, in order.
    Stops at the first incomplete one (like Kafka's readers)."""
    mv = memoryview(data)
    spans = []
    pos = 0
    while len(mv) - pos >= LOG_OVERHEAD:
        (length,) = struct.unpack_from(">i", mv, pos + 8)
        size = LOG_OVERHEAD + length
        if length < 0 or pos + size > len(mv):
            break
        spans.append((pos, size))
        pos += size
    return spans


def complete_length(data) -> int:
    """Bytes of the complete leading batches (what ``kb.valid_bytes`` must say)."""
    spans = batch_spans(data)
    return spans[-1][0] + spans[-1][1] if spans else 0


def parse_header(data, pos: int = 0) -> dict:
    """Header fields of the batch (v2) or message (v0/v1) at ``pos``."""
    magic = data[pos + 16]
    if magic >= 2:
        (
            base_offset,
            length,
            leader_epoch,
            magic,
            crc,
            attributes,
            last_offset_delta,
            base_ts,
            max_ts,
            pid,
            pepoch,
            base_seq,
            count,
        ) = V2_HEADER.unpack_from(data, pos)
        return dict(
            magic=magic,
            base_offset=base_offset,
            length=length,
            partition_leader_epoch=leader_epoch,
            crc=crc,
            attributes=attributes,
            last_offset_delta=last_offset_delta,
            base_timestamp=base_ts,
            max_timestamp=max_ts,
            producer_id=pid,
            producer_epoch=pepoch,
            base_sequence=base_seq,
            record_count=count,
        )
    if magic == 1:
        offset, length, crc, magic, attributes, ts = LEGACY_V1.unpack_from(data, pos)
    else:
        offset, length, crc, magic, attributes = LEGACY_V0.unpack_from(data, pos)
        ts = -1
    return dict(magic=magic, offset=offset, length=length, crc=crc, attributes=attributes & 0xFF, timestamp=ts)


# --------------------------------------------------------------------------
# broker-style rewrites (all return new bytes; ``pos`` is the batch position)
# --------------------------------------------------------------------------


def set_base_offset(data, pos: int, base_offset: int) -> bytes:
    """Set a v2 batch's base offset, or a legacy message's offset.  Not covered
    by either CRC, so nothing else changes."""
    buf = bytearray(data)
    struct.pack_into(">q", buf, pos, base_offset)
    return bytes(buf)


def set_partition_leader_epoch(data, pos: int, epoch: int) -> bytes:
    """v2 only; bytes 12..16, outside the CRC."""
    buf = bytearray(data)
    assert buf[pos + 16] == 2
    struct.pack_into(">i", buf, pos + 12, epoch)
    return bytes(buf)


def recompute_crc(data, pos: int = 0) -> bytes:
    """Recompute the CRC of the batch/message at ``pos`` (CRC32-C over
    attributes..end for v2, CRC32 over magic..end for v0/v1)."""
    buf = bytearray(data)
    (length,) = struct.unpack_from(">i", buf, pos + 8)
    end = pos + LOG_OVERHEAD + length
    if buf[pos + 16] >= 2:
        struct.pack_into(">I", buf, pos + 17, crc32c(buf[pos + V2_CRC_START : end]))
    else:
        struct.pack_into(">I", buf, pos + 12, crc32(buf[pos + 16 : end]))
    return bytes(buf)


def set_log_append_time(data, pos: int, timestamp: int) -> bytes:
    """What a broker with ``message.timestamp.type=LogAppendTime`` stores:
    v2: attributes bit 3 + maxTimestamp; v1: wrapper attributes bit 3 +
    wrapper timestamp.  CRC recomputed."""
    buf = bytearray(data)
    magic = buf[pos + 16]
    if magic == 2:
        (attrs,) = struct.unpack_from(">h", buf, pos + 21)
        struct.pack_into(">h", buf, pos + 21, attrs | ATTR_LOG_APPEND_TIME)
        struct.pack_into(">q", buf, pos + 35, timestamp)
    elif magic == 1:
        buf[pos + 17] |= ATTR_LOG_APPEND_TIME
        struct.pack_into(">q", buf, pos + 18, timestamp)
    else:
        raise ValueError("magic 0 has no timestamps")
    return recompute_crc(buf, pos)


def set_attributes(data, pos: int, attributes: int, *, fix_crc: bool = True) -> bytes:
    buf = bytearray(data)
    if buf[pos + 16] == 2:
        struct.pack_into(">h", buf, pos + 21, attributes)
    else:
        buf[pos + 17] = attributes & 0xFF
    return recompute_crc(buf, pos) if fix_crc else bytes(buf)


def legacy_broker_assign(wrapper: bytes, last_offset: int) -> bytes:
    """Broker in-place offset assignment for one legacy compressed wrapper:
    wrapper offset := ``last_offset``; for magic 1 wrapper timestamp := max
    inner timestamp (CRC recomputed)."""
    buf = bytearray(set_base_offset(wrapper, 0, last_offset))
    if buf[16] == 1:
        inner = legacy_inner_messages(bytes(buf))
        max_ts = max(h["timestamp"] for h in inner)
        struct.pack_into(">q", buf, 18, max_ts)
        buf = bytearray(recompute_crc(buf, 0))
    return bytes(buf)


def legacy_inner_messages(wrapper: bytes) -> list[dict]:
    """Headers of the inner messages of a legacy compressed wrapper (kafka-python's codecs)."""
    from kafka import codec as kc

    h = parse_header(wrapper)
    start, end = _payload_span(wrapper)
    payload = wrapper[start:end]
    codec = CODECS[h["attributes"] & ATTR_CODEC_MASK]
    if codec == "gzip":
        inner = kc.gzip_decode(payload)
    elif codec == "snappy":
        inner = kc.snappy_decode(payload)
    elif codec == "lz4":
        if h["magic"] == 0:
            _ensure_xxhash()
        inner = kc.lz4_decode_old_kafka(payload) if h["magic"] == 0 else kc.lz4_decode(payload)
    else:
        raise ValueError(codec)
    return [parse_header(inner, p) for p, _ in batch_spans(inner)]


# --------------------------------------------------------------------------
# a minimal v2 encoder from the spec (control batches, hand-built cases)
# --------------------------------------------------------------------------


def _zigzag_varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    z &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        if z:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _nullable(b: bytes | None) -> bytes:
    return _zigzag_varint(-1) if b is None else _zigzag_varint(len(b)) + b


def encode_v2_record(offset_delta: int, timestamp_delta: int, key, value, headers=()) -> bytes:
    body = bytearray(b"\x00")  # record attributes (unused)
    body += _zigzag_varint(timestamp_delta)
    body += _zigzag_varint(offset_delta)
    body += _nullable(key) + _nullable(value)
    body += _zigzag_varint(len(headers))
    for hk, hv in headers:
        hkb = hk.encode()
        body += _zigzag_varint(len(hkb)) + hkb + _nullable(hv)
    return _zigzag_varint(len(body)) + bytes(body)


def encode_v2_batch(
    records: list[dict],
    *,
    base_offset: int = 0,
    attributes: int = 0,
    partition_leader_epoch: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    max_timestamp: int | None = None,
    raw_records: list[bytes] | None = None,
) -> bytes:
    """Uncompressed v2 batch from the spec layout.  ``records``: dicts with
    key, value, headers, timestamp and optional offset_delta.
    ``raw_records``: already-encoded records to use instead (same count)."""
    base_ts = records[0]["timestamp"]
    encoded = [
        encode_v2_record(r.get("offset_delta", i), r["timestamp"] - base_ts, r["key"], r["value"], r.get("headers", ()))
        for i, r in enumerate(records)
    ]
    body = b"".join(raw_records if raw_records is not None else encoded)
    last_delta = max(r.get("offset_delta", i) for i, r in enumerate(records))
    max_ts = max(r["timestamp"] for r in records) if max_timestamp is None else max_timestamp
    header = bytearray(
        V2_HEADER.pack(
            base_offset,
            61 - LOG_OVERHEAD + len(body),
            partition_leader_epoch,
            2,
            0,
            attributes,
            last_delta,
            base_ts,
            max_ts,
            producer_id,
            producer_epoch,
            base_sequence,
            len(records),
        )
    )
    return recompute_crc(bytes(header) + body, 0)


CONTROL_TYPES = {"ABORT": 0, "COMMIT": 1}


def control_batch(
    kind: str,
    *,
    base_offset: int,
    producer_id: int,
    producer_epoch: int = 0,
    coordinator_epoch: int = 0,
    timestamp: int = BASE_TS,
    partition_leader_epoch: int = 0,
    version: int = 0,
) -> bytes:
    """A transaction marker as a broker writes it: transactional + control
    attributes, one record, key = version int16 + type int16, value =
    version int16 + coordinatorEpoch int32, base sequence -1."""
    key = struct.pack(">hh", version, CONTROL_TYPES[kind])
    value = struct.pack(">hi", 0, coordinator_epoch)
    return encode_v2_batch(
        [{"key": key, "value": value, "timestamp": timestamp}],
        base_offset=base_offset,
        attributes=ATTR_TRANSACTIONAL | ATTR_CONTROL,
        partition_leader_epoch=partition_leader_epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=-1,
    )


# --------------------------------------------------------------------------
# corruption helpers
# --------------------------------------------------------------------------


def truncate(data, n: int) -> bytes:
    return bytes(data[:n])


def flip_bit(data, byte_index: int, bit: int = 0) -> bytes:
    buf = bytearray(data)
    buf[byte_index] ^= 1 << bit
    return bytes(buf)


def set_length(data, pos: int, length: int) -> bytes:
    """Overwrite the int32 length field of the batch/message at ``pos``."""
    buf = bytearray(data)
    struct.pack_into(">i", buf, pos + 8, length)
    return bytes(buf)


def set_magic(data, pos: int, magic: int) -> bytes:
    buf = bytearray(data)
    buf[pos + 16] = magic & 0xFF
    return bytes(buf)


# --------------------------------------------------------------------------
# segment folders
# --------------------------------------------------------------------------


def write_segment(root: str | os.PathLike, topic: str, partition: int, data: bytes, base_offset: int = 0) -> Path:
    """Write ``<root>/<topic>-<partition>/<base_offset:020d>.log`` like a broker's log dir."""
    folder = Path(root) / f"{topic}-{partition}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{base_offset:020d}.log"
    path.write_bytes(bytes(data))
    return path


# --------------------------------------------------------------------------
# reference readers
# --------------------------------------------------------------------------


def _norm_record(r, magic: int) -> dict:
    ts = r.timestamp
    tt = r.timestamp_type
    return {
        "offset": r.offset,
        "timestamp": -1 if ts is None else ts,
        "timestamp_type": -1 if tt is None else tt,
        "key": None if r.key is None else bytes(r.key),
        "value": None if r.value is None else bytes(r.value),
        "headers": [(k, None if v is None else bytes(v)) for k, v in (r.headers or [])],
    }


def reference_batches(data, reader: str = "kafka-python") -> list[dict]:
    """Decode ``data`` with a third-party reader.  One dict per top-level batch
    (v2 batch, legacy message or legacy compressed wrapper) with the fields
    kafkabatch's ``Batch`` exposes, plus ``crc_ok`` (the reader's own CRC
    check: batch CRC for v2/legacy, and every inner message CRC for legacy
    wrappers) and ``records`` (all records, control records included, as the
    reader yields them).

    Legacy batches follow Kafka's Java client: base_offset = first inner
    offset, last_offset = wrapper offset, max_timestamp = wrapper timestamp
    (-1 for v0), partition_leader_epoch None; base_timestamp and the producer
    fields are left out (undefined for legacy formats).
    """
    data = bytes(data)
    if reader == "kafka-python":
        from kafka.record.memory_records import MemoryRecords

        _ensure_xxhash()  # magic-0 lz4 is read with the KAFKA-3160 header checksum
    elif reader == "aiokafka":
        from aiokafka.record.memory_records import MemoryRecords

        if len({data[p + 16] for p, _ in batch_spans(data)}) > 1:
            # aiokafka 0.14's Cython MemoryRecords takes the first batch's
            # magic for the whole buffer and misreads a mixed-magic log; its
            # pure-Python twin checks the magic per batch.
            from aiokafka.record.memory_records import _MemoryRecordsPy as MemoryRecords
    else:
        raise ValueError(reader)
    mr = MemoryRecords(data)
    out = []
    pos = 0
    while mr.has_next():
        b = mr.next_batch()
        h = parse_header(data, pos)
        size = LOG_OVERHEAD + h["length"]
        magic = h["magic"]
        crc_ok = bool(b.validate_crc())
        recs_raw = list(b)
        if magic < 2 and reader == "kafka-python":
            crc_ok = crc_ok and all(r.validate_crc() for r in recs_raw)
        recs = [_norm_record(r, magic) for r in recs_raw]
        attrs = h["attributes"]
        codec = CODECS[attrs & ATTR_CODEC_MASK]
        if magic == 2:
            # the library's view of the header must agree with the raw parse
            assert (
                b.base_offset,
                b.crc,
                b.attributes,
                b.producer_id,
                b.producer_epoch,
                b.base_sequence,
                b.max_timestamp,
                b.first_timestamp,
            ) == (
                h["base_offset"],
                h["crc"],
                attrs,
                h["producer_id"],
                h["producer_epoch"],
                h["base_sequence"],
                h["max_timestamp"],
                h["base_timestamp"],
            ), (reader, pos)
            is_control = bool(b.is_control_batch)
            control = None
            if is_control:
                ck, cv = recs[0]["key"], recs[0]["value"]
                version, ctype = struct.unpack(">hh", ck[:4])
                coordinator_epoch = struct.unpack(">i", cv[2:6])[0] if cv is not None and len(cv) >= 6 else None
                control = {
                    "type": {0: "ABORT", 1: "COMMIT"}.get(ctype, ctype),
                    "version": version,
                    "coordinator_epoch": coordinator_epoch,
                }
            batch = {
                "position": pos,
                "size_in_bytes": size,
                "magic": 2,
                "base_offset": h["base_offset"],
                "last_offset": h["base_offset"] + h["last_offset_delta"],
                "partition_leader_epoch": h["partition_leader_epoch"],
                "crc": h["crc"],
                "attributes": attrs,
                "compression": codec,
                "timestamp_type": 1 if attrs & ATTR_LOG_APPEND_TIME else 0,
                "is_transactional": bool(b.is_transactional),
                "is_control": is_control,
                "base_timestamp": h["base_timestamp"],
                "max_timestamp": h["max_timestamp"],
                "producer_id": h["producer_id"],
                "producer_epoch": h["producer_epoch"],
                "base_sequence": h["base_sequence"],
                "record_count": h["record_count"],
                "control": control,
            }
        else:
            batch = {
                "position": pos,
                "size_in_bytes": size,
                "magic": magic,
                "base_offset": recs[0]["offset"] if recs else h["offset"],
                "last_offset": h["offset"],
                "partition_leader_epoch": None,
                "crc": h["crc"],
                "attributes": attrs,
                "compression": codec,
                "timestamp_type": -1 if magic == 0 else (1 if attrs & ATTR_LOG_APPEND_TIME else 0),
                "is_transactional": False,
                "is_control": False,
                "max_timestamp": h["timestamp"],
                "record_count": len(recs),
                "control": None,
            }
        batch["crc_ok"] = crc_ok
        batch["records"] = recs
        out.append(batch)
        pos += size
    return out


# --------------------------------------------------------------------------
# fixtures
# --------------------------------------------------------------------------


@dataclasses.dataclass
class Fixture:
    """Raw bytes plus their reference decoding.

    ``batches``: ``reference_batches`` output (the reference reader's view).
    ``produced``: for librdkafka fixtures, what was handed to the producer
    (with ``txn``: "commit"/"abort"/None), in log order.
    ``crc_valid``: False when the bytes knowingly carry bad CRCs (the mock
    cluster's control batches); ``bad_crc_positions`` says which batches.
    """

    name: str
    source: str
    data: bytes
    batches: list[dict]
    magic: int | None = None
    codec: str | None = None
    dataset: str | None = None
    produced: list[dict] | None = None
    notes: str = ""
    reader: str = "kafka-python"

    @property
    def bad_crc_positions(self) -> list[int]:
        return [b["position"] for b in self.batches if not b["crc_ok"]]

    @property
    def crc_valid(self) -> bool:
        return not self.bad_crc_positions

    @property
    def has_control(self) -> bool:
        return any(b["is_control"] for b in self.batches)

    def records(self, include_control: bool = False, isolation: str = "read_uncommitted") -> list[dict]:
        """Reference records in log order, filtered as ``kb.decode`` filters."""
        aborted = aborted_batch_positions(self.batches) if isolation == "read_committed" else set()
        out = []
        for b in self.batches:
            if b["is_control"] and not include_control:
                continue
            if b["position"] in aborted:
                continue
            out.extend(b["records"])
        return out

    def rows(self, topic=None, partition=None, include_control=False, isolation="read_uncommitted") -> list[dict]:
        return expected_rows(self.records(include_control, isolation), topic, partition)


def aborted_batch_positions(batches: list[dict]) -> set[int]:
    """Positions of transactional data batches whose transaction ended with an
    ABORT marker (per producer id, up to the next marker).  Transactions
    still open at the end of the data count as not aborted."""
    pending: dict[int, list[int]] = {}
    aborted: set[int] = set()
    for b in batches:
        if b["magic"] < 2 or not b["is_transactional"]:
            continue
        pid = b["producer_id"]
        if b["is_control"]:
            if b["control"] and b["control"]["type"] == "ABORT":
                aborted.update(pending.get(pid, []))
            pending[pid] = []
        else:
            pending.setdefault(pid, []).append(b["position"])
    return aborted


def timestamp_us(ts_ms: int) -> int:
    """The table's timestamp column: Kafka milliseconds × 1000 (so v0's -1
    becomes -1000 µs, as Spark's Kafka source shows it)."""
    return ts_ms * 1000


def expected_rows(records: Iterable[dict], topic=None, partition=None) -> list[dict]:
    """Reference records as rows of ``kb.SCHEMA`` (timestamp as int µs)."""
    return [
        {
            "key": r["key"],
            "value": r["value"],
            "topic": topic,
            "partition": partition,
            "offset": r["offset"],
            "timestamp": timestamp_us(r["timestamp"]),
            "timestampType": r["timestamp_type"],
            "headers": [{"key": k, "value": v} for k, v in r["headers"]],
        }
        for r in records
    ]


def _self_check(
    fx: Fixture, inputs: list[dict] | None, *, first_offset: int | None, cross_readers: Iterable[str] = ()
) -> Fixture:
    """Refuse to hand out a fixture its own library can't read back exactly."""
    assert fx.batches, fx.name
    assert sum(b["size_in_bytes"] for b in fx.batches) == len(fx.data), f"{fx.name}: trailing bytes"
    if fx.produced is None:
        assert fx.crc_valid, f"{fx.name}: reference reader rejects CRCs at {fx.bad_crc_positions}"
    if fx.codec is not None:
        codecs = {b["compression"] for b in fx.batches if not b["is_control"]}
        assert codecs == {fx.codec}, f"{fx.name}: codec bits say {codecs}"
    recs = fx.records(include_control=False)
    if inputs is not None:
        got = [{k: r[k] for k in ("key", "value", "headers")} for r in recs]
        want = [{k: r[k] for k in ("key", "value", "headers")} for r in inputs]
        assert got == want, f"{fx.name}: records differ from the input"
        log_append = any(b["timestamp_type"] == 1 for b in fx.batches)
        if not log_append:
            assert [r["timestamp"] for r in recs] == [r["timestamp"] for r in inputs], fx.name
    if first_offset is not None:
        all_recs = fx.records(include_control=True)
        assert [r["offset"] for r in all_recs] == list(range(first_offset, first_offset + len(all_recs))), fx.name
    for other in cross_readers:
        theirs = reference_batches(fx.data, other)
        mine = [{k: v for k, v in b.items()} for b in fx.batches]
        assert [b["records"] for b in theirs] == [b["records"] for b in mine], f"{fx.name}: {other} disagrees"
        assert [b["crc_ok"] for b in theirs] == [b["crc_ok"] for b in mine], f"{fx.name}: {other} CRC disagrees"
    return fx


def _chunks(records: list[dict], n: int) -> list[list[dict]]:
    if n <= 1:
        return [records]
    size = -(-len(records) // n)
    return [records[i : i + size] for i in range(0, len(records), size)]


def _payload_span(data: bytes, pos: int = 0) -> tuple[int, int]:
    """(start, end) of the (compressed) payload of the batch/wrapper at ``pos``."""
    h = parse_header(data, pos)
    end = pos + LOG_OVERHEAD + h["length"]
    if h["magic"] == 2:
        return pos + 61, end
    key_pos = pos + (18 if h["magic"] == 0 else 26)
    (klen,) = struct.unpack_from(">i", data, key_pos)
    vpos = key_pos + 4 + max(klen, 0)
    (vlen,) = struct.unpack_from(">i", data, vpos)
    return vpos + 4, vpos + 4 + max(vlen, 0)


def zero_gzip_mtime(data: bytes) -> bytes:
    """kafka-python and aiokafka gzip through ``gzip.GzipFile``, which stamps
    the current time into the gzip header (bytes 4..8).  Zero it (as
    librdkafka writes it) and redo the batch CRC, so fixtures are the same
    bytes on every run.  The gzip stream's own CRC covers only the
    uncompressed data, so the stream stays valid."""
    buf = bytearray(data)
    for pos, _ in batch_spans(data):
        if CODECS[parse_header(data, pos)["attributes"] & ATTR_CODEC_MASK] != "gzip":
            continue
        start, _ = _payload_span(data, pos)
        assert buf[start : start + 3] == b"\x1f\x8b\x08", "not a gzip member"
        buf[start + 4 : start + 8] = b"\x00\x00\x00\x00"
        buf = bytearray(recompute_crc(buf, pos))
    return bytes(buf)


def _build_kafka_python_batch(
    magic,
    codec,
    recs,
    start_offset,
    *,
    transactional=False,
    producer_id=-1,
    producer_epoch=-1,
    base_sequence=-1,
    deltas=None,
) -> bytes:
    """One kafka-python batch (v2) or message set (legacy) at ``start_offset``.
    ``deltas``: offset of each record relative to ``start_offset`` (default
    0..n-1; gaps model a compacted log, via the builder's ``skip()``)."""
    from kafka.record.memory_records import MemoryRecordsBuilder

    cid = CODEC_ID[codec]
    if magic == 0 and codec == "lz4":
        _ensure_xxhash()
    deltas = list(range(len(recs))) if deltas is None else list(deltas)
    if magic == 2:
        b = MemoryRecordsBuilder(
            2,
            cid,
            batch_size=1 << 30,
            offset=0,
            transactional=transactional,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
        )
        for d, r in zip(deltas, recs):
            b.skip(d - b.next_offset())
            assert b.append(r["timestamp"], r["key"], r["value"], r["headers"]) is not None
        b.close()
        return set_base_offset(zero_gzip_mtime(bytes(b.buffer())), 0, start_offset)
    # legacy: uncompressed messages and v0 inner messages carry absolute
    # offsets; v1 inner offsets are relative; a compressed wrapper gets the
    # broker's offset assignment.
    inner_start = 0 if (magic == 1 and codec != "none") else start_offset
    b = MemoryRecordsBuilder(magic, cid, batch_size=1 << 30, offset=inner_start)
    for d, r in zip(deltas, recs):
        b.skip(inner_start + d - b.next_offset())
        ts = None if magic == 0 else r["timestamp"]
        assert b.append(ts, r["key"], r["value"]) is not None
    b.close()
    data = zero_gzip_mtime(bytes(b.buffer()))
    if codec != "none":
        data = legacy_broker_assign(data, start_offset + deltas[-1])
    return data


def _build_aiokafka_batch(
    magic,
    codec,
    recs,
    start_offset,
    *,
    transactional=False,
    producer_id=-1,
    producer_epoch=-1,
    base_sequence=-1,
    deltas=None,
) -> bytes:
    from aiokafka.record.default_records import DefaultRecordBatchBuilder
    from aiokafka.record.legacy_records import LegacyRecordBatchBuilder

    cid = CODEC_ID[codec]
    deltas = list(range(len(recs))) if deltas is None else list(deltas)
    if magic == 2:
        b = DefaultRecordBatchBuilder(2, cid, int(transactional), producer_id, producer_epoch, base_sequence, 1 << 30)
        for d, r in zip(deltas, recs):
            assert b.append(d, r["timestamp"], r["key"], r["value"], r["headers"]) is not None
        return set_base_offset(zero_gzip_mtime(bytes(b.build())), 0, start_offset)
    inner_start = 0 if (magic == 1 and codec != "none") else start_offset
    b = LegacyRecordBatchBuilder(magic, cid, 1 << 30)
    for d, r in zip(deltas, recs):
        ts = -1 if magic == 0 else r["timestamp"]
        assert b.append(inner_start + d, ts, r["key"], r["value"]) is not None
    data = zero_gzip_mtime(bytes(b.build()))
    if codec != "none":
        data = legacy_broker_assign(data, start_offset + deltas[-1])
    return data


BATCH_BUILDERS = {"kafka-python": _build_kafka_python_batch, "aiokafka": _build_aiokafka_batch}
CROSS_READER = {"kafka-python": "aiokafka", "aiokafka": "kafka-python"}


def build_client(
    source: str,
    magic: int,
    codec: str,
    dataset_name: str = "mixed",
    *,
    base_offset: int = 0,
    n_batches: int = 1,
    transactional: bool = False,
    producer: tuple[int, int, int] | None = None,
    partition_leader_epoch: int = 0,
) -> Fixture:
    """Records of ``dataset_name`` written by ``source`` as ``n_batches``
    consecutive batches starting at ``base_offset``.  ``producer``: (id,
    epoch, base sequence) for idempotent/transactional v2 batches."""
    reason = UNSUPPORTED.get((source, magic, codec))
    if reason:
        raise NotImplementedError(reason)
    recs = dataset(dataset_name, magic)
    parts = []
    offset = base_offset
    pid, pepoch, seq = producer if producer else (-1, -1, -1)
    for chunk in _chunks(recs, n_batches):
        kw = {}
        if magic == 2:
            kw = dict(
                transactional=transactional,
                producer_id=pid,
                producer_epoch=pepoch,
                base_sequence=seq if seq < 0 else seq + (offset - base_offset),
            )
        part = BATCH_BUILDERS[source](magic, codec, chunk, offset, **kw)
        if magic == 2 and partition_leader_epoch:
            part = set_partition_leader_epoch(part, 0, partition_leader_epoch)
        parts.append(part)
        offset += len(chunk)
    data = b"".join(parts)
    name = f"{source}-v{magic}-{codec}-{dataset_name}"
    fx = Fixture(
        name,
        source,
        data,
        reference_batches(data, source),
        magic=magic,
        codec=codec,
        dataset=dataset_name,
        reader=source,
    )
    cross = [CROSS_READER[source]] if not (magic == 0 and codec == "lz4") else []  # aiokafka can't read v0 lz4
    return _self_check(fx, recs, first_offset=base_offset, cross_readers=cross)


def client_matrix() -> list[tuple[str, int, str, str]]:
    """Every (source, magic, codec, dataset) cell: each library × magic 0/1/2 ×
    every codec the format allows × {mixed, 10k}.  Includes cells that may
    no library can write (see ``UNSUPPORTED``)."""
    cells = []
    for source in ("kafka-python", "aiokafka"):
        for magic in (0, 1, 2):
            for codec in codecs_for(magic):
                for ds in ("mixed", "10k"):
                    cells.append((source, magic, codec, ds))
    return cells


def client_fixture_names(include_unbuildable: bool = True) -> list[str]:
    out = []
    for source, magic, codec, ds in client_matrix():
        if not include_unbuildable and UNSUPPORTED.get((source, magic, codec)):
            continue
        out.append(f"{source}-v{magic}-{codec}-{ds}")
    return out


def skip_reason(name: str) -> str | None:
    """Why a named fixture can't be built (None if it can)."""
    if name.startswith(tuple(f"{src}-v" for src in BATCH_BUILDERS)):
        return UNSUPPORTED.get(_cell(name))
    return None


# ---- derived / hand-built fixtures ----------------------------------------


def multi_batch(source: str, magic: int, codec: str) -> Fixture:
    """The mixed data set as 3 batches at a large non-zero base offset (and
    partition leader epoch 7 for v2): offsets 1e12 + i."""
    fx = build_client(source, magic, codec, "mixed", base_offset=10**12, n_batches=3, partition_leader_epoch=7)
    fx.name = f"{source}-v{magic}-{codec}-multibatch"
    return fx


def log_append_time(source: str, magic: int, codec: str, ts: int = BASE_TS + 999_999) -> Fixture:
    """Each batch (v2) / message or wrapper (v1) rewritten to LogAppendTime ``ts``."""
    base = build_client(source, magic, codec, "mixed", base_offset=5, n_batches=2)
    data = base.data
    for pos, _ in batch_spans(data):
        data = set_log_append_time(data, pos, ts)
    fx = Fixture(
        f"{source}-v{magic}-{codec}-logappendtime",
        source,
        data,
        reference_batches(data, source),
        magic=magic,
        codec=codec,
        dataset="mixed",
        reader=source,
        notes="broker LogAppendTime rewrite; every record's timestamp is the batch/wrapper timestamp",
    )
    _self_check(fx, dataset("mixed", magic), first_offset=5, cross_readers=[CROSS_READER[source]])
    for r in fx.records():
        assert (r["timestamp"], r["timestamp_type"]) == (ts, 1), fx.name
    return fx


def empty_v2_batch(
    *,
    base_offset: int,
    last_offset_delta: int,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    timestamp: int = -1,
    partition_leader_epoch: int = 0,
    attributes: int = 0,
) -> bytes:
    """A v2 batch with no records, as log compaction leaves behind to keep an
    idempotent producer's state (Java ``DefaultRecordBatch.writeEmptyHeader``)."""
    header = V2_HEADER.pack(
        base_offset,
        61 - LOG_OVERHEAD,
        partition_leader_epoch,
        2,
        0,
        attributes,
        last_offset_delta,
        timestamp,
        timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        0,
    )
    return recompute_crc(header, 0)


def set_last_offset_delta(data, pos: int, last_offset_delta: int) -> bytes:
    """v2: what compaction keeps when a batch's trailing records are removed."""
    buf = bytearray(data)
    struct.pack_into(">i", buf, pos + 23, last_offset_delta)
    return recompute_crc(buf, pos)


COMPACTED_DELTAS = (0, 1, 3, 4, 9, 10, 11, 20, 21, 35, 36, 37, 38, 50)


def compacted(source: str, magic: int, codec: str) -> Fixture:
    """A compacted log: offset gaps inside and between batches.  Two batches
    holding the first 14 mixed records at ``COMPACTED_DELTAS`` from 100 and
    from 300.  For v2, the first batch also keeps its original last offset
    (+5 past its last record), and an empty batch (offsets 400-409, records
    all removed) sits in between."""
    recs = dataset("mixed", magic)[:28]
    first, second = recs[:14], recs[14:]
    build = BATCH_BUILDERS[source]
    b1 = build(magic, codec, first, 100, deltas=COMPACTED_DELTAS)
    b2 = build(magic, codec, second, 300, deltas=COMPACTED_DELTAS)
    parts = [b1]
    if magic == 2:
        parts = [
            set_last_offset_delta(b1, 0, COMPACTED_DELTAS[-1] + 5),
            empty_v2_batch(
                base_offset=200,
                last_offset_delta=9,
                producer_id=5,
                producer_epoch=0,
                base_sequence=0,
                timestamp=BASE_TS,
            ),
        ]
    parts.append(b2)
    data = b"".join(parts)
    fx = Fixture(
        f"{source}-v{magic}-{codec}-compacted",
        source,
        data,
        reference_batches(data, source),
        magic=magic,
        codec=codec,
        dataset="mixed",
        reader=source,
        notes="offset gaps (log compaction); v2: last offset kept past the last record, one empty batch",
    )
    if magic == 2:
        fx.codec = None  # the empty batch has no codec bits
    _self_check(
        fx, recs, first_offset=None, cross_readers=[CROSS_READER[source]] if (magic, codec) != (0, "lz4") else []
    )
    want = [100 + d for d in COMPACTED_DELTAS] + [300 + d for d in COMPACTED_DELTAS]
    assert [r["offset"] for r in fx.records()] == want, fx.name
    if magic == 2:
        assert fx.batches[0]["last_offset"] == 100 + COMPACTED_DELTAS[-1] + 5
        assert fx.batches[1]["record_count"] == 0 and fx.batches[1]["records"] == []
    return fx


def transactions_hand_built() -> Fixture:
    """kafka-python transactional batches with hand-built markers, two producers
    interleaved:  P1 data(0-2) | P2 data(3-4) | P1 COMMIT(5) | P1 data(6-7) |
    P2 ABORT(8) | P1 ABORT(9) | non-transactional data(10-11).
    read_committed keeps 0-2 and 10-11 (P1's 6-7 and P2's 3-4 are aborted)."""
    p1, p2 = 1000, 2000

    def txn_batch(pid, start, recs, seq):
        return _build_kafka_python_batch(
            2, "none", recs, start, transactional=True, producer_id=pid, producer_epoch=3, base_sequence=seq
        )

    def data_recs(tag, n, t0):
        return [
            {
                "key": f"{tag}-{i}".encode(),
                "value": f"value {tag} {i}".encode(),
                "headers": [("txn", tag.encode())],
                "timestamp": BASE_TS + t0 + i,
            }
            for i in range(n)
        ]

    parts = [
        txn_batch(p1, 0, data_recs("p1a", 3, 0), 0),
        txn_batch(p2, 3, data_recs("p2a", 2, 10), 0),
        control_batch(
            "COMMIT", base_offset=5, producer_id=p1, producer_epoch=3, coordinator_epoch=11, timestamp=BASE_TS + 20
        ),
        txn_batch(p1, 6, data_recs("p1b", 2, 30), 3),
        control_batch(
            "ABORT", base_offset=8, producer_id=p2, producer_epoch=3, coordinator_epoch=12, timestamp=BASE_TS + 40
        ),
        control_batch(
            "ABORT", base_offset=9, producer_id=p1, producer_epoch=3, coordinator_epoch=11, timestamp=BASE_TS + 50
        ),
        _build_kafka_python_batch(2, "gzip", data_recs("plain", 2, 60), 10),
    ]
    data = b"".join(parts)
    fx = Fixture("hand-built-transactions", "hand-built", data, reference_batches(data), magic=2)
    _self_check(fx, None, first_offset=0, cross_readers=["aiokafka"])
    committed = [r["offset"] for r in fx.records(isolation="read_committed")]
    assert committed == [0, 1, 2, 10, 11], committed
    return fx


def mixed_magic_log() -> Fixture:
    """A log across a message-format upgrade, written with kafka-python:
    v0 plain, v0 gzip, v1 plain, v1 snappy, v1 lz4, v2 plain, v2 zstd, v2 gzip
    — consecutive offsets from 0."""
    rng = random.Random(0x5EED_0002)
    layout = [
        (0, "none", 3),
        (0, "gzip", 3),
        (0, "snappy", 2),
        (1, "none", 3),
        (1, "snappy", 3),
        (1, "lz4", 2),
        (1, "gzip", 2),
        (2, "none", 3),
        (2, "zstd", 3),
        (2, "gzip", 2),
        (2, "lz4", 2),
    ]
    parts, inputs, offset = [], [], 0
    for magic, codec, n in layout:
        recs = []
        for i in range(n):
            r = {
                "key": f"m{magic}-{codec}-{i}".encode() if i else None,
                "value": b"v%d " % magic + _compressible(rng, 400 + 10 * i),
                "headers": [("magic", str(magic).encode())] if magic == 2 else [],
                "timestamp": -1 if magic == 0 else BASE_TS + offset * 1000,
            }
            recs.append(r)
        part = _build_kafka_python_batch(magic, codec, recs, offset)
        assert all(
            CODECS[parse_header(part, p)["attributes"] & ATTR_CODEC_MASK] == codec for p, _ in batch_spans(part)
        ), (magic, codec)
        parts.append(part)
        inputs.extend(recs)
        offset += n
    data = b"".join(parts)
    fx = Fixture("kafka-python-mixed-magic", "kafka-python", data, reference_batches(data))
    _self_check(fx, inputs, first_offset=0, cross_readers=["aiokafka"])
    assert fx.batches[0]["magic"] == 0 and fx.batches[-1]["magic"] == 2
    return fx


def idempotent(source: str, codec: str = "zstd") -> Fixture:
    """v2 batches with producer id/epoch/sequence (idempotent producer)."""
    fx = build_client(source, 2, codec, "mixed", base_offset=42, n_batches=2, producer=(123_456_789_012, 17, 1_000))
    fx.name = f"{source}-v2-{codec}-idempotent"
    b0, b1 = fx.batches
    assert (b0["producer_id"], b0["producer_epoch"], b0["base_sequence"]) == (123_456_789_012, 17, 1_000)
    assert b1["base_sequence"] == 1_000 + b0["record_count"]
    return fx


def transactional_open(source: str, codec: str = "none") -> Fixture:
    """A transactional v2 batch with no marker yet (transactional flag set)."""
    fx = build_client(source, 2, codec, "mixed", producer=(77, 1, 0), transactional=True)
    fx.name = f"{source}-v2-{codec}-transactional"
    assert all(b["is_transactional"] for b in fx.batches)
    return fx


# --------------------------------------------------------------------------
# librdkafka via confluent-kafka's mock cluster
# --------------------------------------------------------------------------

_rdlog = logging.getLogger("kbtest.librdkafka")


class MockCluster:
    """librdkafka's in-process mock cluster, owned by a throw-away producer.
    Only 127.0.0.1 is ever contacted."""

    def __init__(self):
        from confluent_kafka import Producer

        self._owner = Producer({"test.mock.num.brokers": 1, "logger": _rdlog})
        md = self._owner.list_topics(timeout=10)
        (broker,) = md.brokers.values()
        assert broker.host in ("127.0.0.1", "localhost"), broker.host
        self.host, self.port = "127.0.0.1", broker.port
        self.bootstrap = f"{self.host}:{self.port}"

    def producer(self, **conf):
        from confluent_kafka import Producer

        return Producer({"bootstrap.servers": self.bootstrap, "logger": _rdlog, **conf})

    def _fetch_once(self, topic: str, partition: int, offset: int, isolation: int = 0):
        try:  # kafka-python 3.x keeps the hand-written protocol classes here
            from kafka.protocol.old.fetch import FetchRequest_v4, FetchResponse_v4
        except ImportError:  # kafka-python 2.x
            from kafka.protocol.fetch import FetchRequest_v4, FetchResponse_v4

        req = FetchRequest_v4(
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=0,
            max_bytes=64 << 20,
            isolation_level=isolation,
            topics=[(topic, [(partition, offset, 64 << 20)])],
        )
        req.with_header(correlation_id=offset & 0x7FFFFFFF, client_id="kafkabatch-tests")
        with socket.create_connection((self.host, self.port), timeout=10) as s:
            s.settimeout(10)
            s.sendall(req.encode(header=True, framed=True))
            f = s.makefile("rb")
            head = f.read(4)
            (size,) = struct.unpack(">i", head)
            body = f.read(size)
            assert len(body) == size
        resp = FetchResponse_v4.decode(body, header=True)
        ((_topic, parts),) = resp.responses
        ((_index, error_code, high_watermark, _lso, _aborted, records),) = parts
        assert error_code == 0, error_code
        return high_watermark, bytes(records or b"")

    def fetch_log(self, topic: str, partition: int = 0) -> bytes:
        """The partition's stored bytes from offset 0.  The mock answers one
        message set per Fetch, so this walks batch by batch (bounded)."""
        out = bytearray()
        offset = 0
        for _ in range(10_000):
            hw, chunk = self._fetch_once(topic, partition, offset)
            if not chunk:
                break
            for pos, _size in batch_spans(chunk):
                h = parse_header(chunk, pos)
                offset = (h["base_offset"] + h["last_offset_delta"] + 1) if h["magic"] == 2 else h["offset"] + 1
            out += chunk[: complete_length(chunk)]
            if offset >= hw:
                break
        else:
            raise RuntimeError("fetch loop did not finish")
        return bytes(out)

    def consume(self, topics: list[tuple[str, int]]) -> dict[tuple[str, int], list[dict]]:
        """librdkafka's own reader (read_uncommitted, check.crcs on) over whole partitions."""
        from confluent_kafka import Consumer, KafkaError, TopicPartition

        c = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": "kafkabatch-tests",
                "logger": _rdlog,
                "enable.partition.eof": True,
                "enable.auto.commit": False,
                "check.crcs": True,
                "auto.offset.reset": "earliest",
                "fetch.max.bytes": 64 << 20,
                "max.partition.fetch.bytes": 64 << 20,
            }
        )
        c.assign([TopicPartition(t, p, 0) for t, p in topics])
        out: dict[tuple[str, int], list[dict]] = {tp: [] for tp in topics}
        remaining = set(topics)
        try:
            for _ in range(1_000_000):
                if not remaining:
                    break
                m = c.poll(10)
                if m is None:
                    raise RuntimeError(f"librdkafka consumer timed out on {remaining}")
                tp = (m.topic(), m.partition())
                if m.error():
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        remaining.discard(tp)
                        continue
                    raise RuntimeError(str(m.error()))
                tstype, ts = m.timestamp()
                out[tp].append(
                    {
                        "offset": m.offset(),
                        "timestamp": ts,
                        "timestamp_type": {1: 0, 2: 1}.get(tstype, -1),
                        "key": m.key(),
                        "value": m.value(),
                        "headers": [(k, v) for k, v in (m.headers() or [])],
                    }
                )
        finally:
            c.close()
        return out

    def close(self):
        self._owner.flush(5)
        self._owner = None


def _rdkafka_mixed() -> list[dict]:
    """The whole mixed data set: librdkafka sends all of it as-is (null vs
    empty keys/values, null header values, unicode header keys included)."""
    return [dict(r) for r in _mixed_base()]


def _produce_all(p, topic: str, recs: list[dict], partition: int = 0, flush: bool = True) -> None:
    for r in recs:
        for _ in range(100):
            try:
                p.produce(
                    topic,
                    key=r["key"],
                    value=r["value"],
                    partition=partition,
                    timestamp=r["timestamp"],
                    headers=list(r["headers"]) or None,
                )
                break
            except BufferError:
                p.poll(0.1)
        else:
            raise RuntimeError("librdkafka queue stayed full")
    if flush:
        _flush(p)


def _flush(p) -> None:
    left = p.flush(30)
    assert left == 0, f"{left} messages not delivered to the mock cluster"


def _delivered(produced: list[dict]) -> list[dict]:
    return [
        {"key": r["key"], "value": r["value"], "headers": list(r["headers"]), "timestamp": r["timestamp"]}
        for r in produced
    ]


@functools.lru_cache(maxsize=1)
def librdkafka_fixtures() -> dict[str, Fixture]:
    """Built once per process (the session cache): one mock cluster, one topic per case.

    * ``librdkafka-v2-<codec>-mixed``: the mixed data set, idempotent producer
      (``enable.idempotence``), ``compression.type`` = codec.
    * ``librdkafka-v2-<codec>-10k``: 10k records, one producer batch (none, zstd).
    * ``librdkafka-transactions``: a transactional producer: commit 3 records,
      abort 2, commit 1 — raw as stored by the mock, whose control batches carry
      CRC 0 (so ``crc_valid`` is False for them: decode needs validate_crc=False,
      or expect CrcMismatchError at the first marker's position).
    * ``librdkafka-transactions-crcfixed``: the same bytes with each control
      batch's CRC32-C recomputed.
    """
    cluster = MockCluster()
    out: dict[str, Fixture] = {}
    try:
        topics = []
        plan = [(codec, "mixed", _rdkafka_mixed()) for codec in CODECS]
        plan += [(codec, "10k", [dict(r) for r in _ten_k_base()]) for codec in ("none", "zstd")]
        producers = []
        for codec, ds, recs in plan:  # all producers work concurrently; then flush each
            p = cluster.producer(
                **{
                    "compression.type": codec,
                    "enable.idempotence": True,
                    "linger.ms": 50,
                    "batch.num.messages": 10_000,
                    "batch.size": 16 << 20,
                    "message.max.bytes": 16 << 20,
                }
            )
            _produce_all(p, f"rd-{codec}-{ds}", recs, flush=False)
            producers.append(p)
        for p in producers:
            _flush(p)
        del producers, p
        for codec, ds, recs in plan:
            topic = f"rd-{codec}-{ds}"
            data = cluster.fetch_log(topic)
            produced = [dict(r, txn=None) for r in recs]
            fx = Fixture(
                f"librdkafka-v2-{codec}-{ds}",
                "librdkafka",
                data,
                reference_batches(data),
                magic=2,
                codec=codec,
                dataset=ds,
                produced=produced,
                notes="idempotent producer; bytes fetched from the mock broker",
            )
            assert fx.crc_valid, fx.name
            _self_check(fx, _delivered(recs), first_offset=0, cross_readers=["aiokafka"])
            assert [r["timestamp"] for r in fx.records()] == [r["timestamp"] for r in recs]
            assert all(b["producer_id"] >= 0 for b in fx.batches), "idempotence did not take"
            out[fx.name] = fx
            topics.append((topic, fx.name))

        # librdkafka's own reader must agree with kafka-python's on every record
        consumed = cluster.consume([(t, 0) for t, _ in topics])
        for t, name in topics:
            assert consumed[(t, 0)] == out[name].records(), f"{name}: librdkafka consumer disagrees"

        # transactions
        p = cluster.producer(**{"transactional.id": "kafkabatch-tests-txn", "linger.ms": 5})
        p.init_transactions(30)
        produced = []
        for outcome, n in (("commit", 3), ("abort", 2), ("commit", 1)):
            p.begin_transaction()
            recs = [
                {
                    "key": f"{outcome}-{len(produced) + i}".encode(),
                    "value": f"{outcome} value {i}".encode(),
                    "headers": [("txn", outcome.encode()), ("nil", None)] if i == 0 else [],
                    "timestamp": BASE_TS + 1000 * len(produced) + i,
                }
                for i in range(n)
            ]
            for r in recs:
                p.produce(
                    "rd-txn",
                    key=r["key"],
                    value=r["value"],
                    partition=0,
                    timestamp=r["timestamp"],
                    headers=r["headers"] or None,
                )
            p.flush(30)
            if outcome == "commit":
                p.commit_transaction(30)
            else:
                p.abort_transaction(30)
            produced += [dict(r, txn=outcome) for r in recs]
        del p
        data = cluster.fetch_log("rd-txn")
        fx = Fixture(
            "librdkafka-transactions",
            "librdkafka",
            data,
            reference_batches(data),
            magic=2,
            produced=produced,
            notes="mock cluster writes control batches with CRC 0 (and timestamps 0, base sequence 0)",
        )
        _self_check(fx, _delivered(produced), first_offset=0)
        controls = [b for b in fx.batches if b["is_control"]]
        assert [b["control"]["type"] for b in controls] == ["COMMIT", "ABORT", "COMMIT"], controls
        assert fx.bad_crc_positions == [b["position"] for b in controls], "expected exactly the markers to fail CRC"
        committed = [r for r in fx.records(isolation="read_committed")]
        assert [{k: r[k] for k in ("key", "value", "headers")} for r in committed] == [
            {k: r[k] for k in ("key", "value", "headers")} for r in produced if r["txn"] == "commit"
        ]
        out[fx.name] = fx

        fixed = data
        for b in controls:
            fixed = recompute_crc(fixed, b["position"])
        fx2 = Fixture(
            "librdkafka-transactions-crcfixed",
            "librdkafka",
            fixed,
            reference_batches(fixed),
            magic=2,
            produced=produced,
            notes="librdkafka-transactions with the control batches' CRC recomputed",
        )
        _self_check(fx2, _delivered(produced), first_offset=0, cross_readers=["aiokafka"])
        assert fx2.crc_valid
        out[fx2.name] = fx2
    finally:
        cluster.close()
    return out


# --------------------------------------------------------------------------
# one cache for everything
# --------------------------------------------------------------------------


def _derived_builders() -> dict[str, Callable[[], Fixture]]:
    b: dict[str, Callable[[], Fixture]] = {}
    for source in ("kafka-python", "aiokafka"):
        for magic in (0, 1, 2):
            for codec in codecs_for(magic):
                if (source, magic, codec) in UNSUPPORTED:
                    continue
                b[f"{source}-v{magic}-{codec}-multibatch"] = functools.partial(multi_batch, source, magic, codec)
                b[f"{source}-v{magic}-{codec}-compacted"] = functools.partial(compacted, source, magic, codec)
                if magic >= 1:
                    b[f"{source}-v{magic}-{codec}-logappendtime"] = functools.partial(
                        log_append_time, source, magic, codec
                    )
        b[f"{source}-v2-zstd-idempotent"] = functools.partial(idempotent, source, "zstd")
        b[f"{source}-v2-none-transactional"] = functools.partial(transactional_open, source, "none")
    b["hand-built-transactions"] = transactions_hand_built
    b["kafka-python-mixed-magic"] = mixed_magic_log
    return b


DERIVED = _derived_builders()
LIBRDKAFKA_NAMES = [f"librdkafka-v2-{c}-mixed" for c in CODECS] + [
    "librdkafka-v2-none-10k",
    "librdkafka-v2-zstd-10k",
    "librdkafka-transactions",
    "librdkafka-transactions-crcfixed",
]


def all_fixture_names() -> list[str]:
    """Every fixture this module can build (cells in ``UNSUPPORTED`` left out;
    cells needing an optional package are kept: the tests skip them)."""
    names = [n for n in client_fixture_names() if not UNSUPPORTED.get(_cell(n))]
    return names + list(DERIVED) + LIBRDKAFKA_NAMES


def _cell(name: str) -> tuple[str, int, str]:
    source, rest = name.split("-v", 1)
    magic_s, codec, _ = rest.split("-", 2)
    return source, int(magic_s), codec


@functools.cache
def get(name: str) -> Fixture:
    """Build (once per process) the fixture called ``name``."""
    if name in DERIVED:
        return DERIVED[name]()
    if name.startswith("librdkafka-"):
        return librdkafka_fixtures()[name]
    source, rest = name.split("-v", 1)
    magic_s, codec, ds = rest.split("-", 2)
    return build_client(source, int(magic_s), codec, ds)


def main(argv: list[str]) -> int:
    import time

    t0 = time.time()
    names = argv or all_fixture_names()
    for n in names:
        why = skip_reason(n)
        if why:
            print(f"SKIP {n}: {why}")
            continue
        t = time.time()
        fx = get(n)
        codecs = sorted({b["compression"] for b in fx.batches})
        print(
            f"ok   {n:45s} {len(fx.data):>9d} B {len(fx.batches):>6d} batches "
            f"{len(fx.records(include_control=True)):>6d} records magics={sorted({b['magic'] for b in fx.batches})} "
            f"codecs={codecs} crc_ok={fx.crc_valid} {time.time() - t:.2f}s"
        )
    print(f"{len(names)} fixtures in {time.time() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
