"""kafkabatch.encode / control_batch / write_segment, held against other people's readers.

What ``encode`` writes is read back by kafka-python's and aiokafka's
``MemoryRecords`` (through ``realclients.reference_batches``, which checks
every CRC the reader can check), for every magic x codec cell, and by
kafkabatch's own decoder (hypothesis properties). Bad input must fail with a
``TypeError``/``ValueError`` naming the argument or column, before anything is
written.

Timestamps, by magic (what ``encode`` accepts, as Kafka's Java producer does):
v1 and v2 take -1 ("no timestamp") or 0..MAX_TIMESTAMP_MS; anything below -1
is refused. v0 has no timestamp field: whatever is given is dropped and reads
back as -1.
"""

from __future__ import annotations

import datetime as dt
import os
import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
import realclients as rc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafkabatch as kb
from kafkabatch._encode import MAX_TIMESTAMP_MS, control_batch, encode, write_segment

READERS = ("kafka-python", "aiokafka")
CELLS = [(m, c, "raw") for m in (0, 1) for c in ("none", "gzip", "snappy", "lz4")]
CELLS += [(2, c, "raw") for c in ("none", "gzip", "snappy", "lz4", "zstd")] + [(2, "snappy", "xerial")]
XERIAL_MAGIC = b"\x82SNAPPY\x00"
V2_HEADER = 61


def cell_id(cell) -> str:
    magic, codec, framing = cell
    return f"v{magic}-{codec}" + ("-xerial" if framing == "xerial" else "")


def reference_records(data: bytes, reader: str) -> tuple[list[dict], list[dict]]:
    """(batches, records) as the other library reads them; every CRC checked."""
    batches = rc.reference_batches(data, reader)
    bad = [b["position"] for b in batches if not b["crc_ok"]]
    assert not bad, f"{reader} finds bad CRCs at {bad}"
    return batches, [r for b in batches for r in b["records"]]


def expected(records: list[dict], magic: int, *, base_offset: int = 0) -> list[dict]:
    """What a reader should report for ``records`` written with CreateTime."""
    out = []
    for i, r in enumerate(records):
        ts = r.get("timestamp")
        out.append(
            {
                "offset": base_offset + i,
                "timestamp": -1 if magic == 0 or ts is None else ts,
                "timestamp_type": -1 if magic == 0 else 0,
                "key": r.get("key"),
                "value": r["value"],
                "headers": [tuple(h) for h in r.get("headers") or []],
            }
        )
    return out


def skip_unreadable(reader: str, magic: int, codec: str) -> None:
    if reader == "aiokafka" and magic == 0 and codec == "lz4":
        pytest.skip("aiokafka refuses magic-0 lz4 (KAFKA-3160 framing): UnsupportedCodecError")


def table_rows(table: pa.Table) -> list[dict]:
    """key/value/timestamp (int µs)/headers of a decoded table, as plain data."""
    ts = pc.cast(table.column("timestamp"), pa.int64()).to_pylist()
    return [
        {"key": k, "value": v, "timestamp": t, "headers": [(h["key"], h["value"]) for h in hs]}
        for k, v, t, hs in zip(
            table.column("key").to_pylist(), table.column("value").to_pylist(), ts, table.column("headers").to_pylist()
        )
    ]


def input_rows(records: list[dict], magic: int) -> list[dict]:
    return [
        {
            "key": r.get("key"),
            "value": r["value"],
            "timestamp": -1000 if magic == 0 or r.get("timestamp") is None else r["timestamp"] * 1000,
            "headers": [tuple(h) for h in r.get("headers") or []],
        }
        for r in records
    ]


# --------------------------------------------------------------------------
# other people's readers: every magic x codec
# --------------------------------------------------------------------------


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("cell", CELLS, ids=cell_id)
def test_other_readers_read_every_cell(cell, reader):
    """The curated edge cases (null/empty keys and values, every byte, unicode,
    duplicate and null-valued headers, 100 KiB keys and values, varint length
    boundaries, 70 headers, a timestamp before the batch's first) in one batch
    and split into batches of 7."""
    magic, codec, framing = cell
    skip_unreadable(reader, magic, codec)
    records = rc.dataset("mixed", magic)
    for per_batch in (None, 7):
        data = encode(
            records,
            magic=magic,
            compression=codec,
            snappy_framing=framing,
            records_per_batch=per_batch,
            base_offset=100,
        )
        batches, got = reference_records(data, reader)
        rc_expected = expected(records, magic, base_offset=100)
        assert got == rc_expected, (reader, cell, per_batch)
        assert {b["compression"] for b in batches} == {codec}
        if magic == 2 or codec != "none":
            assert len(batches) == (1 if per_batch is None else -(-len(records) // per_batch))
        else:
            assert len(batches) == len(records)  # uncompressed v0/v1: a message per entry
        # and kafkabatch's own decoder agrees
        assert table_rows(kb.decode(data)) == input_rows(records, magic)


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_large_values_and_ten_thousand_records(magic):
    records = rc.dataset("10k", magic)
    records[5] = dict(records[5], value=os.urandom(3 << 20))  # a 3 MiB incompressible value
    codec = "zstd" if magic == 2 else "gzip"
    data = encode(records, magic=magic, compression=codec, records_per_batch=2500)
    _, got = reference_records(data, "kafka-python")
    assert got == expected(records, magic)


def test_snappy_framing():
    records = [{"value": b"abc" * 1000}]
    raw = encode(records, compression="snappy")
    xerial = encode(records, compression="snappy", snappy_framing="xerial")
    assert not raw[V2_HEADER:].startswith(XERIAL_MAGIC)
    assert xerial[V2_HEADER:].startswith(XERIAL_MAGIC)
    # v0/v1 snappy is always xerial, as the Java client wrote it
    legacy = encode(records, magic=1, compression="snappy")
    assert XERIAL_MAGIC in legacy[:60]
    for data in (raw, xerial, legacy):
        for reader in READERS:
            assert [r["value"] for r in reference_records(data, reader)[1]] == [b"abc" * 1000]


# --------------------------------------------------------------------------
# batch header fields
# --------------------------------------------------------------------------


@pytest.mark.parametrize("reader", READERS)
def test_idempotent_and_transactional_fields(reader):
    records = [{"key": b"k%d" % i, "value": b"v%d" % i, "timestamp": 1_700_000_000_000 + i} for i in range(10)]
    data = encode(
        records,
        records_per_batch=3,
        producer_id=4242,
        producer_epoch=7,
        base_sequence=5,
        transactional=True,
        partition_leader_epoch=12,
        base_offset=1000,
        compression="lz4",
    )
    batches, got = reference_records(data, reader)
    assert got == expected(records, 2, base_offset=1000)
    assert [(b["base_offset"], b["last_offset"], b["base_sequence"], b["record_count"]) for b in batches] == [
        (1000, 1002, 5, 3),
        (1003, 1005, 8, 3),
        (1006, 1008, 11, 3),
        (1009, 1009, 14, 1),
    ]
    for b in batches:
        assert (b["producer_id"], b["producer_epoch"], b["is_transactional"], b["is_control"]) == (4242, 7, True, False)
        assert b["partition_leader_epoch"] == 12
        assert b["max_timestamp"] == max(r["timestamp"] for r in b["records"])


def test_sequence_wraps_like_java():
    data = encode([{"value": b"x"}] * 6, records_per_batch=3, producer_id=1, producer_epoch=0, base_sequence=2**31 - 2)
    assert [b.base_sequence for b in kb.iter_batches(data)] == [2**31 - 2, 1]


def test_plain_producer_fields():
    batch = next(iter(kb.iter_batches(encode([{"value": b"x"}]))))
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.is_transactional) == (-1, -1, -1, False)
    assert batch.partition_leader_epoch == -1


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("magic,codec", [(2, "none"), (2, "gzip"), (1, "none"), (1, "snappy")])
def test_log_append_time(magic, codec, reader):
    records = [{"value": b"v%d" % i, "timestamp": 1_000 + i * 10} for i in range(5)]
    for append_time, want in ((1_700_000_000_123, 1_700_000_000_123), (None, 1_040)):
        data = encode(records, magic=magic, compression=codec, timestamp_type="log_append", log_append_time=append_time)
        batches, got = reference_records(data, reader)
        if magic == 1 and codec == "none" and append_time is None:
            want_ts = [r["timestamp"] for r in records]  # each message is its own batch
        else:
            want_ts = [want] * len(records)
        assert [r["timestamp"] for r in got] == want_ts
        assert {r["timestamp_type"] for r in got} == {1}
        assert {b["timestamp_type"] for b in batches} == {1}
        decoded = kb.decode(data)
        assert pc.cast(decoded.column("timestamp"), pa.int64()).to_pylist() == [t * 1000 for t in want_ts]
        assert set(decoded.column("timestampType").to_pylist()) == {1}


def test_log_append_time_as_datetime():
    when = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    data = encode([{"value": b"v", "timestamp": 5}], timestamp_type="log_append", log_append_time=when)
    assert next(iter(kb.iter_batches(data))).max_timestamp == 1_793_491_200_000


# --------------------------------------------------------------------------
# control batches
# --------------------------------------------------------------------------


def _transactions() -> tuple[bytes, list[bytes]]:
    """pid 7: 2 records committed; pid 8: 2 records aborted; interleaved with a plain batch."""
    data = encode(
        [{"value": b"c1"}, {"value": b"c2"}],
        producer_id=7,
        producer_epoch=1,
        base_sequence=0,
        transactional=True,
        base_offset=0,
    )
    data += encode(
        [{"value": b"a1"}, {"value": b"a2"}],
        producer_id=8,
        producer_epoch=3,
        base_sequence=0,
        transactional=True,
        base_offset=2,
        compression="zstd",
    )
    data += encode([{"value": b"plain"}], base_offset=4)
    data += control_batch(
        "commit", producer_id=7, producer_epoch=1, base_offset=5, coordinator_epoch=9, timestamp=1_700_000_000_000
    )
    data += control_batch(
        "abort",
        producer_id=8,
        producer_epoch=3,
        base_offset=6,
        coordinator_epoch=9,
        timestamp=dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=dt.UTC),
    )
    return data, [b"c1", b"c2", b"plain"]


def test_control_batches_are_markers_to_kafka_python():
    from kafka.record.memory_records import MemoryRecords

    data, _ = _transactions()
    mr = MemoryRecords(data)
    markers = []
    while mr.has_next():
        batch = mr.next_batch()
        assert batch.validate_crc()
        if batch.is_control_batch:
            assert batch.is_transactional and batch.base_sequence == -1
            (record,) = list(batch)
            assert type(record).__name__ == "ControlRecord"
            kind = "COMMIT" if record.commit else "ABORT" if record.abort else None
            markers.append(
                (
                    batch.producer_id,
                    batch.producer_epoch,
                    kind,
                    record.type,
                    record.version,
                    record.offset,
                    struct.unpack(">hi", record.value),
                )
            )
    assert markers == [(7, 1, "COMMIT", 1, 0, 5, (0, 9)), (8, 3, "ABORT", 0, 0, 6, (0, 9))]


@pytest.mark.parametrize("reader", READERS)
def test_control_batches_read_committed(reader):
    data, committed = _transactions()
    batches = rc.reference_batches(data, reader)
    assert all(b["crc_ok"] for b in batches)
    controls = [b["control"] for b in batches if b["is_control"]]
    assert [(c["type"], c["version"], c["coordinator_epoch"]) for c in controls] == [("COMMIT", 0, 9), ("ABORT", 0, 9)]
    hidden = rc.aborted_batch_positions(batches)
    visible = [r["value"] for b in batches if not b["is_control"] and b["position"] not in hidden for r in b["records"]]
    assert visible == committed
    assert kb.decode(data, isolation="read_committed").column("value").to_pylist() == committed
    assert kb.decode(data).column("value").to_pylist() == [b"c1", b"c2", b"a1", b"a2", b"plain"]
    assert [b.control.type for b in kb.iter_batches(data) if b.is_control] == ["COMMIT", "ABORT"]


def test_control_batch_defaults_and_checks():
    before = int(dt.datetime.now(dt.UTC).timestamp() * 1000)
    batch = next(iter(kb.iter_batches(control_batch("commit", 1, 0, 0))))
    assert batch.is_control and batch.partition_leader_epoch == -1 and batch.control.coordinator_epoch == 0
    assert before - 1000 <= batch.max_timestamp <= before + 60_000
    with pytest.raises(ValueError, match="kind"):
        control_batch("rollback", 1, 0, 0)
    with pytest.raises(ValueError, match="producer_id"):
        control_batch("commit", -1, 0, 0)
    with pytest.raises(ValueError, match="producer_epoch"):
        control_batch("commit", 1, -1, 0)
    with pytest.raises(ValueError, match="base_offset"):
        control_batch("abort", 1, 0, -5)
    with pytest.raises(ValueError, match="timestamp"):
        control_batch("abort", 1, 0, 0, timestamp=-2)
    with pytest.raises(TypeError, match="producer_id"):
        control_batch("abort", "1", 0, 0)


# --------------------------------------------------------------------------
# properties: kb.decode(kb.encode(x)) == x
# --------------------------------------------------------------------------

_big = st.builds(lambda n, b: bytes([b]) * n, st.integers(0, 200_000), st.integers(0, 255))
_bytes = st.one_of(st.none(), st.binary(max_size=40), _big)
_header = st.tuples(st.text(max_size=10), st.one_of(st.none(), st.binary(max_size=20)))
_timestamp = st.one_of(
    st.just(-1), st.none(), st.integers(0, MAX_TIMESTAMP_MS), st.integers(1_700_000_000_000, 1_700_000_100_000)
)


def _records(magic: int):
    return st.lists(
        st.fixed_dictionaries(
            {
                "key": _bytes,
                "value": _bytes,
                "timestamp": _timestamp,
                "headers": st.lists(_header, max_size=4) if magic == 2 else st.just([]),
            }
        ),
        max_size=25,
    )


@st.composite
def _cases(draw):
    magic = draw(st.sampled_from([0, 1, 2]))
    codec = draw(st.sampled_from(["none", "gzip", "snappy", "lz4"] + (["zstd"] if magic == 2 else [])))
    per_batch = draw(st.one_of(st.none(), st.integers(1, 6)))
    return magic, codec, per_batch, draw(_records(magic))


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(_cases())
def test_decode_of_encode_is_identity(case):
    magic, codec, per_batch, records = case
    data = encode(records, magic=magic, compression=codec, records_per_batch=per_batch)
    table = kb.decode(data)
    assert table_rows(table) == input_rows(records, magic)
    assert table.column("offset").to_pylist() == list(range(len(records)))
    # The same records as an Arrow table encode to the same bytes.
    arrow = pa.table(
        {
            "key": pa.array([r["key"] for r in records], pa.binary()),
            "value": pa.array([r["value"] for r in records], pa.binary()),
            "timestamp": pa.array([r["timestamp"] for r in records], pa.int64()),
            "headers": pa.array(
                [[{"key": k, "value": v} for k, v in r["headers"]] for r in records], kb.SCHEMA.field("headers").type
            ),
        }
    )
    assert encode(arrow, magic=magic, compression=codec, records_per_batch=per_batch) == data
    # and a decoded table re-encodes to the same bytes
    assert encode(table, magic=magic, compression=codec, records_per_batch=per_batch) == data


@settings(max_examples=40, deadline=None, derandomize=True)
@given(_records(2), st.integers(0, 2**40), st.integers(1, 5))
def test_offsets_and_batches(records, base_offset, per_batch):
    data = encode(records, base_offset=base_offset, records_per_batch=per_batch)
    batches = list(kb.iter_batches(data))
    assert [b.record_count for b in batches] == [
        min(per_batch, len(records) - i) for i in range(0, len(records), per_batch)
    ]
    assert kb.decode(data).column("offset").to_pylist() == list(range(base_offset, base_offset + len(records)))
    assert kb.valid_bytes(data) == len(data)


# --------------------------------------------------------------------------
# input forms
# --------------------------------------------------------------------------


def _sample_dicts() -> list[dict]:
    return [
        {"key": b"a", "value": b"1", "timestamp": 1_700_000_000_001, "headers": [("h", b"x"), ("h", None)]},
        {"key": None, "value": None, "timestamp": 1_700_000_000_002},
        {"key": b"", "value": b"", "timestamp": 1_700_000_000_003, "headers": [("ключ", b"")]},
    ]


def test_a_decoded_table_round_trips_with_its_extra_columns():
    data = encode(_sample_dicts(), compression="gzip")
    table = kb.decode(data, topic="orders", partition=3)
    assert table.schema == kb.SCHEMA
    again = encode(table, compression="gzip")
    assert again == data
    assert encode(table.to_batches()[0], compression="gzip") == data
    assert encode(pa.RecordBatchReader.from_batches(table.schema, table.to_batches()), compression="gzip") == data
    assert encode(table.to_pylist(), compression="gzip") == data  # dicts with datetime timestamps and header dicts


def test_polars_input():
    pl = pytest.importorskip("polars")
    table = kb.decode(encode(_sample_dicts()))
    df = pl.from_arrow(table)
    assert encode(df) == encode(_sample_dicts())
    strings = pl.DataFrame(
        {
            "key": ["a", None],
            "value": ["héllo", ""],
            "timestamp": [dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 2)],
            "headers": [[{"key": "k", "value": b"v"}], []],
        }
    )
    decoded = kb.decode(encode(strings))
    assert decoded.column("value").to_pylist() == ["héllo".encode(), b""]
    assert decoded.column("key").to_pylist() == [b"a", None]
    assert pc.cast(decoded.column("timestamp"), pa.int64()).to_pylist() == [
        1_704_067_200_000_000,
        1_704_153_600_000_000,
    ]
    assert decoded.column("headers").to_pylist() == [[{"key": "k", "value": b"v"}], []]


@pytest.mark.parametrize(
    "unit,raw,want_ms",
    [
        ("s", 1_700_000_000, 1_700_000_000_000),
        ("ms", 1_700_000_000_123, 1_700_000_000_123),
        ("us", 1_700_000_000_123_999, 1_700_000_000_123),
        ("ns", 1_700_000_000_123_999_999, 1_700_000_000_123),
        ("us", -1_000, -1),
    ],
)
@pytest.mark.parametrize("tz", [None, "UTC", "Europe/Berlin"])
def test_timestamp_units(unit, raw, want_ms, tz):
    table = pa.table({"value": [b"v"], "timestamp": pa.array([raw], pa.timestamp(unit, tz=tz))})
    assert next(iter(kb.iter_batches(encode(table)))).max_timestamp == want_ms


def test_other_column_types():
    table = pa.table(
        {
            "key": pa.array(["k1", None, "k3"], pa.large_string()),
            "value": pa.array(["a", "b", "c"]).dictionary_encode(),
            "timestamp": pa.array([1, None, 3], pa.int32()),
            "headers": pa.array(
                [[{"key": "h", "value": "text"}], None, []],
                pa.list_(pa.struct([("key", pa.string()), ("value", pa.string())])),
            ),
            "partition": pa.array([1, 2, 3]),
        }
    )
    got = table_rows(kb.decode(encode(table)))
    assert got == [
        {"key": b"k1", "value": b"a", "timestamp": 1000, "headers": [("h", b"text")]},
        {"key": None, "value": b"b", "timestamp": -1000, "headers": []},
        {"key": b"k3", "value": b"c", "timestamp": 3000, "headers": []},
    ]
    views = pa.table({"value": pa.array([b"x", None], pa.binary_view()), "key": pa.array(["y", "z"], pa.string_view())})
    assert table_rows(kb.decode(encode(views)))[0]["key"] == b"y"
    nulls = pa.table({"value": pa.nulls(2), "key": pa.nulls(2), "timestamp": pa.nulls(2), "headers": pa.nulls(2)})
    assert [r["value"] for r in table_rows(kb.decode(encode(nulls)))] == [None, None]


def test_chunked_input_batches_across_chunks():
    batches = [pa.record_batch({"value": [b"%d" % (i * 4 + j) for j in range(4)]}) for i in range(5)]
    data = encode(pa.Table.from_batches(batches), records_per_batch=3)
    assert [b.record_count for b in kb.iter_batches(data)] == [3] * 6 + [2]
    assert kb.decode(data).column("value").to_pylist() == [b"%d" % i for i in range(20)]


def test_empty_input_writes_nothing():
    assert encode([]) == b""
    assert encode(pa.table({"value": pa.array([], pa.binary())})) == b""


def test_dict_inputs():
    gen = ({"value": "v%d" % i, "key": bytearray(b"k"), "headers": {"a": "1"}} for i in range(3))
    got = table_rows(kb.decode(encode(gen)))
    assert [(r["key"], r["value"], r["headers"]) for r in got] == [(b"k", b"v%d" % i, [("a", b"1")]) for i in range(3)]
    naive = encode([{"value": b"v", "timestamp": dt.datetime(2026, 11, 1)}])
    assert next(iter(kb.iter_batches(naive))).max_timestamp == 1_793_491_200_000


# --------------------------------------------------------------------------
# bad input: a clear error naming the argument or column, nothing written
# --------------------------------------------------------------------------

BAD_OPTIONS = [
    ({"magic": 3}, ValueError, "magic"),
    ({"magic": "2"}, TypeError, "magic"),
    ({"compression": "xz"}, ValueError, "compression"),
    ({"compression": "zstd", "magic": 1}, ValueError, "zstd needs magic 2"),
    ({"compression": "zstd", "magic": 0}, ValueError, "zstd needs magic 2"),
    ({"compression_level": 10, "compression": "gzip"}, ValueError, "compression_level"),
    ({"compression_level": 1, "compression": "snappy"}, ValueError, "compression_level"),
    ({"compression_level": 3}, ValueError, "compression_level"),
    ({"records_per_batch": 0}, ValueError, "records_per_batch"),
    ({"records_per_batch": -3}, ValueError, "records_per_batch"),
    ({"max_batch_bytes": -1}, ValueError, "max_batch_bytes"),
    ({"base_offset": -1}, ValueError, "base_offset"),
    ({"producer_epoch": 40_000}, ValueError, "producer_epoch"),
    ({"producer_id": 5}, ValueError, "producer_epoch"),
    ({"producer_id": 5, "producer_epoch": 0}, ValueError, "base_sequence"),
    ({"transactional": True}, ValueError, "transactional"),
    ({"transactional": 1}, TypeError, "transactional"),
    ({"producer_id": 5, "producer_epoch": 0, "base_sequence": 0, "magic": 1}, ValueError, "producer_id"),
    ({"timestamp_type": "event"}, ValueError, "timestamp_type"),
    ({"log_append_time": 5}, ValueError, "log_append_time"),
    ({"timestamp_type": "log_append", "magic": 0}, ValueError, "timestamp_type"),
    ({"snappy_framing": "framed"}, ValueError, "snappy_framing"),
]


@pytest.mark.parametrize("options,error,match", BAD_OPTIONS, ids=lambda x: str(x) if isinstance(x, dict) else "")
def test_bad_options(options, error, match):
    with pytest.raises(error, match=match):
        encode([{"value": b"v", "timestamp": 5}], **options)


BAD_RECORDS = [
    (pa.table({"value": [1, 2]}), TypeError, "column 'value'"),
    (pa.table({"value": [b"v"], "key": [1.5]}), TypeError, "column 'key'"),
    (pa.table({"value": [b"v"], "timestamp": [1.5]}), TypeError, "column 'timestamp'"),
    (pa.table({"value": [b"v"], "timestamp": ["2024-01-01"]}), TypeError, "column 'timestamp'"),
    (pa.table({"value": [b"v"], "headers": [[1, 2]]}), TypeError, "column 'headers'"),
    (
        pa.table({"value": [b"v"], "headers": pa.array([[{"key": b"k", "value": b"v"}]])}),
        TypeError,
        "header keys must be strings",
    ),
    (
        pa.table(
            {
                "value": [b"v"],
                "headers": pa.array(
                    [[{"key": None, "value": b"v"}]],
                    pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])),
                ),
            }
        ),
        ValueError,
        "null key",
    ),
    (pa.table({"key": [b"v"]}), ValueError, "'value' column"),
    (pa.table({"value": [b"v"], "timestamp": pa.array([-2], pa.int64())}), ValueError, "record 0: column 'timestamp'"),
    (
        pa.table({"value": [b"v", b"w"], "timestamp": pa.array([5, MAX_TIMESTAMP_MS + 1], pa.int64())}),
        ValueError,
        "record 1: column 'timestamp'",
    ),
    (pa.table({"value": [b"v"], "timestamp": pa.array([2**63], pa.uint64())}), ValueError, "timestamp"),
    ([{"value": b"v"}, {"key": b"k"}], ValueError, "record 1 has no 'value'"),
    ([{"value": b"v", "headers": [(b"k", b"v")]}], TypeError, "header keys must be str"),
    ([{"value": b"v", "headers": [("k", 5)]}], TypeError, "headers"),
    ([{"value": 5}], TypeError, "'value'"),
    ([{"value": b"v", "timestamp": 1.5}], TypeError, "'timestamp'"),
    ([{"value": b"v", "timestamp": -7}], ValueError, "record 0: column 'timestamp'"),
    ([b"not a dict"], TypeError, "record 0: expected a dict"),
    ("value", TypeError, "records must be"),
    ({"value": b"v"}, TypeError, "records must be"),
    (42, TypeError, "records must be"),
]


@pytest.mark.parametrize("records,error,match", BAD_RECORDS, ids=range(len(BAD_RECORDS)))
def test_bad_records(records, error, match, tmp_path):
    with pytest.raises(error, match=match):
        encode(records)
    target = tmp_path / "new" / "orders-0" / "00000000000000000000.log"
    with pytest.raises(error, match=match):
        write_segment(target, records)
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("magic", [0, 1])
def test_headers_need_magic_2(magic):
    with pytest.raises(ValueError, match="record 1: column 'headers'.*magic 2") as info:
        encode([{"value": b"a"}, {"value": b"b", "headers": [("h", b"v")]}], magic=magic)
    assert (info.value.argument, info.value.record) == ("headers", 1)


def test_timestamps_per_magic():
    assert kb.decode(encode([{"value": b"v", "timestamp": -1}], magic=1)).column("timestamp").to_pylist()[
        0
    ] == dt.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=dt.UTC)
    for magic in (1, 2):
        with pytest.raises(ValueError, match=f"magic {magic}"):
            encode([{"value": b"v", "timestamp": -2}], magic=magic)
    # v0 has no timestamps: any value is dropped
    data = encode([{"value": b"v", "timestamp": -123}, {"value": b"w", "timestamp": 5}], magic=0)
    assert pc.cast(kb.decode(data).column("timestamp"), pa.int64()).to_pylist() == [-1000, -1000]


# --------------------------------------------------------------------------
# write_segment
# --------------------------------------------------------------------------


def test_write_segment_writes_and_reads_back(tmp_path):
    path = tmp_path / "logs" / "orders-2" / "00000000000000000100.log"
    n = write_segment(path, _sample_dicts(), base_offset=100, compression="snappy")
    assert n == path.stat().st_size == len(encode(_sample_dicts(), base_offset=100, compression="snappy"))
    table = kb.read_segment(path)
    assert table.column("topic").to_pylist() == ["orders"] * 3
    assert table.column("partition").to_pylist() == [2] * 3
    assert table.column("offset").to_pylist() == [100, 101, 102]
    assert os.listdir(path.parent) == [path.name]
    # replacing an existing segment
    write_segment(str(path), [{"value": b"new"}])
    assert kb.read_segment(path).column("value").to_pylist() == [b"new"]


def test_write_segment_failure_leaves_nothing(tmp_path, monkeypatch):
    path = tmp_path / "orders-0" / "00000000000000000000.log"
    write_segment(path, [{"value": b"old"}])
    before = path.read_bytes()
    with pytest.raises(ValueError):
        write_segment(path, [{"value": b"v", "timestamp": -9}])
    assert path.read_bytes() == before

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="No space"):
        write_segment(path, [{"value": b"new"}] * 100)
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temp file left


def test_write_segment_paths(tmp_path):
    assert write_segment(Path(tmp_path) / "a" / "b" / "x.log", []) == 0
    assert (tmp_path / "a" / "b" / "x.log").read_bytes() == b""


def test_sliced_tables():
    dicts = _sample_dicts() * 3
    table = kb.decode(encode(dicts))
    for start, length in ((1, 4), (4, 5), (8, 1)):
        assert encode(table.slice(start, length)) == encode(dicts[start : start + length])
    sliced = pa.table(
        {
            "value": pa.array([b"a", b"b", b"c"], pa.large_binary()).slice(1),
            "headers": pa.array(
                [[{"key": "x", "value": b"1"}], [], [{"key": "y", "value": None}]], kb.SCHEMA.field("headers").type
            ).slice(1),
        }
    )
    assert table_rows(kb.decode(encode(sliced))) == [
        {"key": None, "value": b"b", "timestamp": -1000, "headers": []},
        {"key": None, "value": b"c", "timestamp": -1000, "headers": [("y", None)]},
    ]


@pytest.mark.parametrize("magic,codec", [(2, "none"), (2, "lz4"), (1, "gzip")])
def test_max_batch_bytes(magic, codec):
    records = [{"key": b"k%03d" % i, "value": b"x" * 100} for i in range(100)]
    data = encode(records, magic=magic, compression=codec, max_batch_bytes=1024)
    batches = list(kb.iter_batches(data))
    assert 10 < len(batches) < 20
    assert sum(b.record_count for b in batches) == 100
    if codec == "none":
        assert all(b.size_in_bytes <= 1024 for b in batches)
    assert kb.decode(data).column("key").to_pylist() == [r["key"] for r in records]
    # records_per_batch wins over max_batch_bytes
    assert (
        len(
            list(
                kb.iter_batches(
                    encode(records, magic=magic, compression=codec, max_batch_bytes=1024, records_per_batch=50)
                )
            )
        )
        == 2
    )
