"""Magic-1 compressed wrappers exactly as producers send them.

A producer writes a v1 wrapper with offset 0 and inner relative offsets
0..n-1 (the broker assigns the wrapper's offset later). Kafka's Java deep
iterator (``AbstractLegacyRecordBatch``) shifts inner offsets by
``wrapper offset - last inner offset`` only when that is >= 0, so such a
wrapper reads as offsets 0..n-1, never -(n-1)..0. kafka-python and aiokafka
read it the same way: they are the reference here, over bytes written by
all three producers (kafka-python's and aiokafka's builders, and librdkafka's
Produce requests captured by ``fakebroker``), for every legacy codec, through
every way kafkabatch hands out offsets (decode, iter_batches/records(),
read_committed, dump, Spark).
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
import realclients as rc
from golden_params import missing

import kafkabatch as kb
from kafkabatch.cli import main as cli_main

LEGACY_CODECS = ("gzip", "snappy", "lz4")


def producer_wrapper(source: str, codec: str, n: int = 9) -> tuple[bytes, list[dict]]:
    """One magic-1 wrapper of ``n`` records as ``source``'s producer builds it
    (no broker offset assignment), and the records given to it."""
    records = [
        {"key": f"k{i}".encode(), "value": f"value {i}".encode() * (i + 1), "timestamp": rc.BASE_TS + 10 * i}
        for i in range(n)
    ]
    cid = rc.CODEC_ID[codec]
    if source == "kafka-python":
        from kafka.record.memory_records import MemoryRecordsBuilder

        builder = MemoryRecordsBuilder(1, cid, batch_size=1 << 30, offset=0)
        for r in records:
            assert builder.append(r["timestamp"], r["key"], r["value"]) is not None
        builder.close()
        data = bytes(builder.buffer())
    else:
        from aiokafka.record.legacy_records import LegacyRecordBatchBuilder

        builder = LegacyRecordBatchBuilder(1, cid, 1 << 30)
        for i, r in enumerate(records):
            assert builder.append(i, r["timestamp"], r["key"], r["value"]) is not None
        data = bytes(builder.build())
    header = rc.parse_header(data)
    assert (header["magic"], header["offset"]) == (1, 0), "the producer's wrapper offset is 0"
    return data, records


CELLS = [(source, codec) for source in ("kafka-python", "aiokafka") for codec in LEGACY_CODECS]


def _skip_if_missing(source: str) -> None:
    module = "kafka" if source == "kafka-python" else "aiokafka"
    if missing(module):
        pytest.skip(f"{module} is not importable")


@pytest.mark.parametrize(("source", "codec"), CELLS, ids=[f"{s}-{c}" for s, c in CELLS])
@pytest.mark.parametrize("reader", ["kafka-python", "aiokafka"])
def test_decode_matches_the_readers(source, codec, reader):
    _skip_if_missing(source)
    data, given = producer_wrapper(source, codec)
    expected = [r for b in rc.reference_batches(data, reader) for r in b["records"]]
    assert [r["offset"] for r in expected] == list(range(len(given)))
    table = kb.decode(data, topic="t", partition=0)
    assert table.column("offset").to_pylist() == [r["offset"] for r in expected]
    assert table.column("key").to_pylist() == [r["key"] for r in expected]
    assert table.column("value").to_pylist() == [r["value"] for r in expected]
    assert table.column("timestamp").cast(pa.int64()).to_pylist() == [rc.timestamp_us(r["timestamp"]) for r in expected]


@pytest.mark.parametrize(("source", "codec"), CELLS, ids=[f"{s}-{c}" for s, c in CELLS])
def test_batches_and_records_follow_java(source, codec):
    """Batch.base_offset is the first deep record's offset and last_offset
    the wrapper's (Java's AbstractLegacyRecordBatch), as the readers say."""
    _skip_if_missing(source)
    data, given = producer_wrapper(source, codec)
    (reference,) = rc.reference_batches(data, "kafka-python")
    (batch,) = list(kb.iter_batches(data))
    assert (batch.base_offset, batch.last_offset) == (reference["base_offset"], reference["last_offset"]) == (0, 0)
    assert [r.offset for r in batch.records()] == [r["offset"] for r in reference["records"]]
    from aiokafka.record.memory_records import MemoryRecords

    assert batch.next_offset == MemoryRecords(data).next_batch().next_offset == 1  # aiokafka: wrapper offset + 1
    assert [r.value for r in batch.records()] == [r["value"] for r in given]


@pytest.mark.parametrize("codec", LEGACY_CODECS)
def test_broker_assigned_wrapper_still_gives_absolute_offsets(codec):
    data, given = producer_wrapper("kafka-python", codec)
    stored = rc.legacy_broker_assign(data, 1_000 + len(given) - 1)
    expected = [r["offset"] for b in rc.reference_batches(stored, "kafka-python") for r in b["records"]]
    assert expected == list(range(1_000, 1_000 + len(given)))
    assert kb.decode(stored).column("offset").to_pylist() == expected
    (batch,) = list(kb.iter_batches(stored))
    assert (batch.base_offset, batch.last_offset) == (1_000, 1_000 + len(given) - 1)


@pytest.mark.parametrize("codec", LEGACY_CODECS)
def test_v0_wrapper_is_unchanged(codec):
    """v0 inner offsets are absolute, whatever the wrapper's offset."""
    if codec == "lz4":
        rc._ensure_xxhash()
    from kafka.record.memory_records import MemoryRecordsBuilder

    builder = MemoryRecordsBuilder(0, rc.CODEC_ID[codec], batch_size=1 << 30, offset=40)
    for i in range(5):
        assert builder.append(None, None, f"v{i}".encode()) is not None
    builder.close()
    data = bytes(builder.buffer())
    expected = [r["offset"] for b in rc.reference_batches(data, "kafka-python") for r in b["records"]]
    assert expected == [40, 41, 42, 43, 44]
    assert kb.decode(data).column("offset").to_pylist() == expected


def test_read_committed_and_skip_keep_producer_offsets():
    data, given = producer_wrapper("aiokafka", "gzip")
    for options in ({"isolation": "read_committed"}, {"on_error": "skip"}, {"threads": 2}):
        assert kb.decode(data, **options).column("offset").to_pylist() == list(range(len(given))), options


def test_dump_prints_producer_offsets(tmp_path, capsys):
    data, given = producer_wrapper("kafka-python", "snappy")
    rc.write_segment(tmp_path, "orders", 0, data)
    assert cli_main(["dump", "--json", str(tmp_path / "orders-0")]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [line["offset"] for line in lines] == list(range(len(given)))


def test_read_segment_and_scan_log(tmp_path):
    data, given = producer_wrapper("kafka-python", "lz4")
    rc.write_segment(tmp_path, "orders", 0, data)
    segment = tmp_path / "orders-0" / "00000000000000000000.log"
    assert kb.read_segment(segment).column("offset").to_pylist() == list(range(len(given)))
    assert kb.scan_log(tmp_path).read_all().column("offset").to_pylist() == list(range(len(given)))
    window = kb.scan_log(tmp_path, start_offset=3, end_offset=6).read_all()
    assert window.column("offset").to_pylist() == [3, 4, 5]


@pytest.mark.spark
def test_spark_reads_producer_offsets(spark, kafka_log, tmp_path):
    data, given = producer_wrapper("aiokafka", "snappy")
    rc.write_segment(tmp_path, "orders", 0, data)
    df = spark.read.format(kafka_log).load(str(tmp_path))
    assert [r.offset for r in df.orderBy("offset").collect()] == list(range(len(given)))
    window = (
        spark.read.format(kafka_log)
        .option("startingOffsets", '{"orders": {"0": 3}}')
        .option("isolation", "read_committed")
        .load(str(tmp_path))
    )
    assert [r.offset for r in window.orderBy("offset").collect()] == list(range(3, len(given)))


def librdkafka_wrapper(codec: str, n: int = 9, magic: int = 1) -> bytes:
    """The record set librdkafka sends in a Produce request for ``n``
    messages, captured by a fake broker on 127.0.0.1: a 0.10.0 one (Produce
    v2, magic 1) or a 0.9 one (Produce v1, magic 0)."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from fakebroker import FakeBroker

    sets: list[bytes] = []
    # Up to three producers: on a loaded machine librdkafka now and then sends the
    # first message alone before the rest (two record sets), whatever the linger.
    for _attempt in range(3):
        with FakeBroker(magic) as broker:
            producer = confluent_kafka.Producer(
                {
                    "bootstrap.servers": broker.address,
                    "api.version.request": False,
                    "broker.version.fallback": "0.10.0.0" if magic == 1 else "0.9.0.0",
                    "compression.codec": codec,
                    # One record set of all n: sent once the n-th message is
                    # queued; a 200 ms linger split it on a loaded machine.
                    "linger.ms": 5000,
                    "batch.num.messages": n,
                    "acks": 1,
                }
            )
            for i in range(n):
                producer.produce("orders", f"value {i}".encode() * (i + 1), key=f"k{i}".encode(), partition=0)
            assert producer.flush(30) == 0, "librdkafka did not deliver to the fake broker"
            sets = [data for topic, _, data in broker.record_sets if topic == "orders"]
        if len(sets) == 1:
            break
    assert len(sets) == 1, f"expected one Produce record set, got {len(sets)}"
    return sets[0]


@pytest.mark.parametrize("codec", LEGACY_CODECS)
@pytest.mark.parametrize("reader", ["kafka-python", "aiokafka"])
def test_librdkafka_producer_wrapper(codec, reader):
    data = librdkafka_wrapper(codec)
    header = rc.parse_header(data)
    assert header["magic"] == 1 and header["attributes"] & 0x07 == rc.CODEC_ID[codec]
    assert header["offset"] == 0, "a producer's wrapper, offsets never assigned"
    expected = [r for b in rc.reference_batches(data, reader) for r in b["records"]]
    assert [r["offset"] for r in expected] == list(range(9))
    table = kb.decode(data)
    assert table.column("offset").to_pylist() == [r["offset"] for r in expected]
    assert table.column("key").to_pylist() == [f"k{i}".encode() for i in range(9)]
    assert table.column("value").to_pylist() == [r["value"] for r in expected]
    assert table.column("timestamp").cast(pa.int64()).to_pylist() == [rc.timestamp_us(r["timestamp"]) for r in expected]


@pytest.mark.parametrize("codec", LEGACY_CODECS)
def test_librdkafka_v0_producer_wrapper_is_unchanged(codec):
    """A v0 wrapper's inner offsets are absolute: taken as they are, as both readers do."""
    data = librdkafka_wrapper(codec, magic=0)
    assert rc.parse_header(data)["magic"] == 0
    # aiokafka reads no magic-0 lz4 (KAFKA-3160's frame): kafka-python is the reference there
    for reader in ("kafka-python",) if codec == "lz4" else ("kafka-python", "aiokafka"):
        if codec == "lz4":
            rc._ensure_xxhash()
        expected = [r["offset"] for b in rc.reference_batches(data, reader) for r in b["records"]]
        assert kb.decode(data).column("offset").to_pylist() == expected == list(range(9)), reader
