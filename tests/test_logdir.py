"""kafkabatch.log: finding segments in Kafka log folders and streaming them.

The log folders are written with other people's encoders (kafka-python's
``MemoryRecordsBuilder``, aiokafka's ``DefaultRecordBatchBuilder``); the
expected rows are ``kb.decode`` of each whole segment, which
``test_decode_real_clients`` holds against those libraries' own readers.
``build_log`` is shared with ``test_spark``.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import kafkabatch as kb
from kafkabatch import log as logdir
from kafkabatch._util import parse_size
from kafkabatch.log import Segment, fs, list_segments, parse_timestamp, scan, scan_log

BASE_TS = 1_700_000_000_000
CODEC_ID = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


# --------------------------------------------------------------------------
# building log folders
# --------------------------------------------------------------------------


def _records(topic: str, partition: int, start: int, n: int, *, jitter: bool = False) -> list[dict]:
    out = []
    for i in range(n):
        off = start + i
        ts = BASE_TS + 1000 * off + (-2500 if jitter and i % 4 == 3 else 0)  # some out of order
        out.append(
            {
                "key": None if off % 7 == 0 else f"{topic}-{partition}-key-{off}".encode(),
                "value": None if off % 11 == 5 else (f"value {off} " * (1 + off % 5)).encode(),
                "headers": [("n", str(off).encode()), ("empty", None)] if off % 3 == 0 else [],
                "timestamp": ts,
            }
        )
    return out


def kafka_python_batch(codec: str, base_offset: int, recs: list[dict], magic: int = 2) -> bytes:
    from kafka.record.memory_records import MemoryRecordsBuilder

    if magic < 2:
        assert codec == "none", "legacy compressed wrappers need the broker's offset rewrite"
        b = MemoryRecordsBuilder(magic, 0, batch_size=1 << 30, offset=base_offset)
        for r in recs:
            assert b.append(r["timestamp"] if magic else None, r["key"], r["value"], []) is not None
        b.close()
        return bytes(b.buffer())
    b = MemoryRecordsBuilder(2, CODEC_ID[codec], batch_size=1 << 30, offset=0)
    for r in recs:
        assert b.append(r["timestamp"], r["key"], r["value"], r["headers"]) is not None
    b.close()
    buf = bytearray(b.buffer())
    struct.pack_into(">q", buf, 0, base_offset)
    return bytes(buf)


def aiokafka_batch(codec: str, base_offset: int, recs: list[dict]) -> bytes:
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    b = DefaultRecordBatchBuilder(2, CODEC_ID[codec], 0, -1, -1, -1, 1 << 30)
    for i, r in enumerate(recs):
        assert b.append(i, r["timestamp"], r["key"], r["value"], r["headers"]) is not None
    buf = bytearray(b.build())
    struct.pack_into(">q", buf, 0, base_offset)
    return bytes(buf)


def write_segment(root: Path, folder: str, base_offset: int, data: bytes) -> Path:
    path = root / folder / f"{base_offset:020d}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def build_log(root: Path) -> Path:
    """A broker-like log dir: two topics, three partitions, several segments,
    every codec, both v2 encoders, a legacy v1 segment, an empty segment,
    out-of-order timestamps, and the files a broker keeps beside segments."""
    root.mkdir(parents=True, exist_ok=True)
    # orders-0: three segments, 10-record batches: kafka-python none/gzip/snappy,
    # aiokafka lz4/zstd/none, kafka-python zstd (+ an empty active segment).
    plan = [
        [("kp", "none"), ("kp", "gzip"), ("kp", "snappy")],
        [("aio", "lz4"), ("aio", "zstd"), ("aio", "none")],
        [("kp", "zstd")],
    ]
    offset = 0
    for segment in plan:
        base = offset
        parts = []
        for lib, name in segment:
            recs = _records("orders", 0, offset, 10, jitter=True)
            parts.append((kafka_python_batch if lib == "kp" else aiokafka_batch)(name, offset, recs))
            offset += 10
        write_segment(root, "orders-0", base, b"".join(parts))
    write_segment(root, "orders-0", offset, b"")
    # orders-1: one segment of two zstd batches, starting at offset 1000 (retention).
    recs = _records("orders", 1, 1000, 40)
    write_segment(
        root,
        "orders-1",
        1000,
        aiokafka_batch("zstd", 1000, recs[:25]) + kafka_python_batch("gzip", 1025, recs[25:]),
    )
    # payments-0: legacy v1 messages, then v2 after an upgrade.
    legacy = kafka_python_batch("none", 0, _records("payments", 0, 0, 5), magic=1)
    write_segment(root, "payments-0", 0, legacy + kafka_python_batch("lz4", 5, _records("payments", 0, 5, 15)))
    # what else a broker keeps in there
    (root / "orders-0" / f"{0:020d}.index").write_bytes(bytes(16))
    (root / "orders-0" / f"{0:020d}.timeindex").write_bytes(bytes(24))
    (root / "orders-0" / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    (root / "orders-0" / "partition.metadata").write_text("version: 0\n")
    (root / "orders-0" / f"{5:020d}.log.deleted").write_bytes(b"old")
    (root / "orders-1" / f"{0:020d}.log.cleaned").write_bytes(b"old")
    (root / "orders-1" / f"{0:020d}.log.swap").write_bytes(b"old")
    (root / "meta.properties").write_text("version=1\n")
    (root / "recovery-point-offset-checkpoint").write_text("0\n0\n")
    deleting = root / "orders-7.0123456789abcdef0123456789abcdef-delete"
    deleting.mkdir()
    (deleting / f"{0:020d}.log").write_bytes(b"being deleted")
    return root


def expected_table(root: Path, **options) -> pa.Table:
    """kb.decode of every segment, whole, in topic/partition/offset order."""
    tables = [
        kb.decode(Path(s.path).read_bytes(), topic=s.topic, partition=s.partition, **options)
        for s in list_segments(root)
    ]
    return pa.concat_tables(tables) if tables else kb.SCHEMA.empty_table()


def rows_of(table: pa.Table) -> list[tuple]:
    """Sortable plain rows: (topic, partition, offset, key, value, timestamp µs, timestampType, headers)."""
    ts = table.column("timestamp").cast(pa.int64()).to_pylist()
    out = []
    for r, t in zip(table.to_pylist(), ts):
        headers = tuple((h["key"], h["value"]) for h in (r["headers"] or []))
        out.append((r["topic"], r["partition"], r["offset"], r["key"], r["value"], t, r["timestampType"], headers))
    return out


@pytest.fixture(scope="module")
def log(tmp_path_factory) -> Path:
    return build_log(tmp_path_factory.mktemp("logs") / "kafka-data")


# --------------------------------------------------------------------------
# list_segments
# --------------------------------------------------------------------------


def test_list_log_dir(log):
    segs = list_segments(log)
    assert [(s.topic, s.partition, s.base_offset) for s in segs] == [
        ("orders", 0, 0),
        ("orders", 0, 30),
        ("orders", 0, 60),
        ("orders", 0, 70),
        ("orders", 1, 1000),
        ("payments", 0, 0),
    ]
    assert all(isinstance(s, Segment) and s.size == os.path.getsize(s.path) for s in segs)
    assert segs[3].size == 0
    assert Path(segs[0].path) == log / "orders-0" / f"{0:020d}.log"
    with pytest.raises(AttributeError):
        segs[0].topic = "x"  # frozen


def test_list_partition_folder_file_and_glob(log):
    assert [s.base_offset for s in list_segments(log / "orders-0")] == [0, 30, 60, 70]
    one = list_segments(log / "orders-1" / f"{1000:020d}.log")
    assert [(s.topic, s.partition, s.base_offset) for s in one] == [("orders", 1, 1000)]
    globbed = list_segments(str(log / "orders-*"))
    assert [(s.topic, s.partition) for s in globbed] == [("orders", 0)] * 4 + [("orders", 1)]
    # a glob over files keeps only .log files
    assert len(list_segments(str(log / "*" / "*"))) == 6
    assert [s.base_offset for s in list_segments(str(log / "orders-0" / "0000000000000000003*"))] == [30]
    # file: URIs as Spark prints them
    assert list_segments(f"file:{log / 'orders-1'}") == list_segments(log / "orders-1")


def test_list_overrides(log):
    segs = list_segments(log / "orders-1", topic="renamed", partition=9)
    assert [(s.topic, s.partition) for s in segs] == [("renamed", 9)]
    assert [(s.topic, s.partition) for s in list_segments(log / "orders-1", partition=3)] == [("orders", 3)]


def test_folder_not_named_topic_partition(tmp_path):
    folder = tmp_path / "backup"
    write_segment(tmp_path, "backup", 0, kafka_python_batch("none", 0, _records("t", 0, 0, 3)))
    with pytest.raises(ValueError, match=r"backup.*not named <topic>-<partition>"):
        list_segments(tmp_path)
    with pytest.raises(ValueError, match="backup"):
        list_segments(folder / f"{0:020d}.log")
    with pytest.raises(ValueError, match="partition"):
        list_segments(folder, topic="t")
    assert [(s.topic, s.partition) for s in list_segments(folder, topic="t", partition=4)] == [("t", 4)]


def test_missing_and_empty_paths(tmp_path):
    with pytest.raises(FileNotFoundError, match="does-not-exist"):
        list_segments(tmp_path / "does-not-exist")
    with pytest.raises(FileNotFoundError):
        list_segments(str(tmp_path / "nothing-*"))
    (tmp_path / "empty").mkdir()
    assert list_segments(tmp_path / "empty") == []
    table = scan_log(tmp_path / "empty").read_all()
    assert table.num_rows == 0 and table.schema.equals(kb.SCHEMA)


def test_remote_listing_through_pyarrow_fs(log, monkeypatch):
    """The pyarrow.fs code path (used for s3a:// and friends), on a local folder."""
    from pyarrow import fs as pafs

    local = pafs.LocalFileSystem()
    monkeypatch.setattr(fs, "resolve_remote", lambda uri: (local, uri.split("://", 1)[1].split("?")[0]))
    uri = f"mock://{log.as_posix()}"
    remote = list_segments(uri)
    plain = list_segments(log)
    assert [(s.topic, s.partition, s.base_offset, s.size) for s in remote] == [
        (s.topic, s.partition, s.base_offset, s.size) for s in plain
    ]
    assert remote[0].path == f"mock://{(log / 'orders-0' / f'{0:020d}.log').as_posix()}"
    assert len(list_segments(f"mock://{log.as_posix()}/orders-*")) == 5
    with pytest.raises(FileNotFoundError):
        list_segments(f"mock://{log.as_posix()}/nope")
    # reading goes through pyarrow.fs too, in windows
    got = scan_log(uri, max_chunk_bytes=300).read_all()
    assert rows_of(got) == rows_of(expected_table(log))


# --------------------------------------------------------------------------
# scan_log
# --------------------------------------------------------------------------


def test_scan_log_equals_decode(log):
    reader = scan_log(log)
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.schema.equals(kb.SCHEMA)
    table = reader.read_all()
    assert rows_of(table) == rows_of(expected_table(log))
    assert table.num_rows == 70 + 40 + 20


@pytest.mark.parametrize("chunk", [1, 200, 1000, "64MB"])
def test_scan_log_windows_do_not_change_rows(log, chunk):
    assert rows_of(scan_log(log, max_chunk_bytes=chunk).read_all()) == rows_of(expected_table(log))


def test_scan_log_max_records_per_batch(log):
    sizes = [b.num_rows for b in scan_log(log, max_records_per_batch=4)]
    assert max(sizes) <= 4 and sum(sizes) == 130


def test_scan_log_streams_segment_by_segment(log):
    seen = []
    reader = scan_log(log, on_segment=lambda r: seen.append((r.segment.base_offset, r.rows)))
    first = reader.read_next_batch()
    assert first.num_rows > 0 and len(seen) == 0  # nothing beyond the first segment was read yet
    reader.read_all()
    assert seen == [(0, 30), (30, 30), (60, 10), (70, 0), (1000, 40), (0, 20)]


def _filter(table, start=None, end=None, ts_start=None, ts_end=None):
    df = table.to_pandas()
    ts = table.column("timestamp").cast(pa.int64()).to_numpy()
    mask = df["offset"].ge(start if start is not None else -1)
    if end is not None:
        mask &= df["offset"].lt(end)
    if ts_start is not None:
        mask &= ts >= ts_start * 1000
    if ts_end is not None:
        mask &= ts < ts_end * 1000
    return table.filter(pa.array(mask.to_numpy()))


@pytest.mark.parametrize("chunk", [150, "64m"])
def test_scan_log_offset_bounds(log, chunk):
    full = expected_table(log)
    got = scan_log(log, start_offset=15, end_offset=1010, max_chunk_bytes=chunk).read_all()
    assert rows_of(got) == rows_of(_filter(full, 15, 1010))
    # per topic-partition bounds, Spark-JSON shaped
    got = scan_log(
        log, start_offset={"orders": {"0": 35, 1: 1030}}, end_offset={("orders", 0): 61}, max_chunk_bytes=chunk
    ).read_all()
    o = full.to_pandas()
    mask = (
        ((o.topic == "orders") & (o.partition == 0) & (o.offset >= 35) & (o.offset < 61))
        | ((o.topic == "orders") & (o.partition == 1) & (o.offset >= 1030))
        | (o.topic == "payments")
    )
    assert rows_of(got) == rows_of(full.filter(pa.array(mask.to_numpy())))
    assert scan_log(log, start_offset=10, end_offset=10).read_all().num_rows == 0


def test_scan_log_skips_segments_by_name_and_batches_by_header(log):
    results: list[scan.SegmentResult] = []
    got = scan_log(
        log / "orders-0", start_offset=41, end_offset=49, max_chunk_bytes=100, on_segment=results.append
    ).read_all()
    assert got.column("offset").to_pylist() == list(range(41, 49))
    decoded = {Path(r.segment.path).stem: r.batches for r in results}
    # the 40-49 batch only: segments 0, 60 and 70 skipped by name, 30-39 by header
    assert decoded == {
        "00000000000000000000": 0,
        "00000000000000000030": 1,
        "00000000000000000060": 0,
        "00000000000000000070": 0,
    }


def test_scan_log_timestamp_bounds(log):
    full = expected_table(log)
    start, end = BASE_TS + 12_000, "2023-11-14T22:14:19Z"  # = BASE_TS + 59_000
    got = scan_log(log, start_timestamp=start, end_timestamp=end).read_all()
    assert rows_of(got) == rows_of(_filter(full, ts_start=start, ts_end=BASE_TS + 59_000))
    # exact filters: an out-of-order record is judged by its own timestamp (orders-0's 13 is 2.5 s early)
    orders0 = got.filter(pc.and_(pc.equal(got["topic"], "orders"), pc.equal(got["partition"], 0)))
    assert orders0.column("offset").to_pylist()[:3] == [12, 14, 15]
    both = scan_log(log, start_offset=20, start_timestamp=start, end_timestamp=end, max_chunk_bytes=100).read_all()
    assert rows_of(both) == rows_of(_filter(full, 20, ts_start=start, ts_end=BASE_TS + 59_000))


def test_scan_log_topic_partition_override(log):
    table = scan_log(log / "orders-1", topic="x", partition=5).read_all()
    assert set(table.column("topic").to_pylist()) == {"x"} and set(table.column("partition").to_pylist()) == {5}


def test_scan_log_bad_arguments(log):
    with pytest.raises(TypeError, match="validate"):
        scan_log(log, validate=False)
    with pytest.raises(ValueError, match="timestamp"):
        scan_log(log, start_timestamp="yesterday")
    with pytest.raises(TypeError, match="start_offset"):
        scan_log(log, start_offset="10")
    with pytest.raises(ValueError):
        scan_log(log, max_chunk_bytes="lots")


# --------------------------------------------------------------------------
# corrupt segments
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corrupt(tmp_path_factory):
    """bad-0: three batches, the middle one's payload flipped (CRC mismatch),
    then a segment cut inside its framing; bad-1 is clean."""
    root = tmp_path_factory.mktemp("corrupt")
    b = [kafka_python_batch("gzip", 10 * i, _records("bad", 0, 10 * i, 10)) for i in range(3)]
    middle = bytearray(b[1])
    middle[len(middle) // 2] ^= 0x40
    seg0 = write_segment(root, "bad-0", 0, b[0] + bytes(middle) + b[2])
    first = kafka_python_batch("none", 30, _records("bad", 0, 30, 5))
    second = bytearray(kafka_python_batch("none", 35, _records("bad", 0, 35, 5)))
    struct.pack_into(">i", second, 8, -7)  # broken framing: negative length
    seg1 = write_segment(root, "bad-0", 30, first + bytes(second))
    write_segment(root, "bad-1", 0, kafka_python_batch("zstd", 0, _records("bad", 1, 0, 8)))
    return root, seg0, seg1, len(b[0]), len(middle)


def test_corrupt_raise_names_segment_and_absolute_position(corrupt):
    root, seg0, _seg1, first_len, _ = corrupt
    for chunk in (64 << 20, 1):
        with pytest.raises(kb.CrcMismatchError) as info:
            scan_log(root, max_chunk_bytes=chunk).read_all()
        err = info.value
        assert str(seg0) in str(err)
        assert err.batch_position == first_len, chunk  # counted from the start of the file
        assert err.base_offset == 10


def test_corrupt_skip_keeps_good_batches(corrupt):
    root, seg0, seg1, _first_len, middle_len = corrupt
    results = []
    table = scan_log(root, on_error="skip", on_segment=results.append, max_chunk_bytes=50).read_all()
    offsets = table.column("offset").to_pylist()
    assert offsets == list(range(0, 10)) + list(range(20, 35)) + list(range(0, 8))
    r0, r1, r2 = results
    assert len(r0.skipped) == 1 and r0.skipped_bytes == middle_len and isinstance(r0.skipped[0], kb.CrcMismatchError)
    assert str(seg0) in str(r0.skipped[0])
    assert r1.status == "broken" and r1.trailing_bytes > 0 and r1.problems
    assert not r2.problems
    assert "skipped 1 corrupt batch" in r0.describe()
    # the same as decoding each whole segment
    whole = [kb.decode_report(Path(p).read_bytes(), on_error="skip") for p in (seg0, seg1)]
    assert [w.trailing_bytes for w in whole] == [r0.trailing_bytes, r1.trailing_bytes]
    assert whole[1].end == "broken"


# --------------------------------------------------------------------------
# helpers: sizes, timestamps, offset index, transactions
# --------------------------------------------------------------------------


def test_parse_size():
    assert parse_size("128m") == parse_size("128MB") == parse_size("128MiB") == 128 << 20
    assert parse_size("1g") == 1 << 30 and parse_size("100") == 100 and parse_size(5) == 5
    assert parse_size("1.5k") == 1536
    for bad in ("", "lots", "-1", "12 parsecs", True):
        with pytest.raises(ValueError):
            parse_size(bad)


def test_parse_timestamp():
    assert parse_timestamp(BASE_TS) == BASE_TS * 1000
    assert parse_timestamp(str(BASE_TS)) == BASE_TS * 1000
    assert parse_timestamp("2023-11-14T22:13:20Z") == BASE_TS * 1000
    assert parse_timestamp("2023-11-14T23:13:20.5+01:00") == BASE_TS * 1000 + 500_000
    assert parse_timestamp("2023-11-14 22:13:20") == BASE_TS * 1000  # no zone: UTC
    assert parse_timestamp("1970-01-01") == 0
    import datetime as dt

    assert parse_timestamp(dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=dt.UTC)) == BASE_TS * 1000
    for bad in ("yesterday", "2023-13-01", None, True):
        with pytest.raises(ValueError):
            parse_timestamp(bad)


def test_batch_ranges_cut_at_batch_boundaries(log):
    path = log / "orders-0" / f"{0:020d}.log"
    data = path.read_bytes()
    spans = [(b.position, b.position + b.size_in_bytes) for b in kb.iter_batches(data)]
    source = fs.open_source(str(path))
    try:
        assert logdir.batch_ranges(source, 0, len(data), 1) == spans  # each batch alone
        assert logdir.batch_ranges(source, 0, len(data), 1 << 30) == [(0, len(data))]
        two = logdir.batch_ranges(source, 0, len(data), spans[1][1])
        assert two == [(0, spans[1][1]), (spans[1][1], len(data))]
    finally:
        source.close()


def test_read_offset_index():
    from kafkabatch.index import offset_index_entries

    entries = struct.pack(">ii", 3, 4096) + struct.pack(">ii", 9, 8200) + bytes(16)  # preallocated zero tail
    assert offset_index_entries(entries, 100) == ([103, 109], [4096, 8200])
    assert offset_index_entries(b"", 0) == ([], [])


def test_hidden_transactions_match_reference():
    import realclients as rc

    fx = rc.transactions_hand_built()
    source = _BytesSource(fx.data)
    txns = logdir.hidden_transactions([source])
    # P2's data at 3 aborted by the marker at 8; P1's second transaction (6) by the marker at 9
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in txns] == [(2000, 3, 8), (1000, 6, 9)]
    aborted_positions = rc.aborted_batch_positions(fx.batches)
    by_pos = {b["position"]: b for b in fx.batches}
    assert sorted((by_pos[p]["producer_id"], by_pos[p]["base_offset"]) for p in aborted_positions) == [
        (1000, 6),
        (2000, 3),
    ]
    # a transaction with no marker yet is reported open
    cut = [p for p, _ in rc.batch_spans(fx.data)][4]  # before P2's ABORT
    open_txns = logdir.hidden_transactions([_BytesSource(fx.data[:cut])])
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in open_txns] == [(2000, 3, None), (1000, 6, None)]
    # a piece read from any batch on, given the partition's transactions, shows what a whole read shows from there
    committed = kb.decode(fx.data, topic="t", partition=0, isolation="read_committed")
    segment = Segment("t-0/00000000000000000000.log", "t", 0, 0, len(fx.data))
    for batch in kb.iter_batches(fx.data):
        got = pa.Table.from_batches(
            logdir.decode_range(
                _BytesSource(fx.data), segment, start=batch.position, transactions=txns, isolation="read_committed"
            ),
            schema=kb.SCHEMA,
        )
        want = committed.filter(pc.greater_equal(committed["offset"], batch.base_offset))
        assert got.equals(want), batch.base_offset


class _BytesSource:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.size = len(data)

    def read(self, position, length):
        return memoryview(self.data)[position : position + length]

    def release(self):
        pass


def test_read_committed_across_segments(tmp_path):
    """A transaction whose marker lands in the next segment (or window) is
    still judged by it."""
    import realclients as rc

    fx = rc.transactions_hand_built()
    data, spans = fx.data, rc.batch_spans(fx.data)
    # segment 1: P1's committed data, its COMMIT is in segment 2; segment 3
    # starts with P1's second transaction, whose ABORT follows P2's.
    cuts = [0, spans[1][0], spans[3][0], len(data)]
    for a, b in zip(cuts, cuts[1:]):
        write_segment(tmp_path, "txn-0", rc.parse_header(data, a)["base_offset"], data[a:b])
    naive = kb.decode(data[: cuts[1]], isolation="read_committed")
    assert naive.num_rows == 0  # alone, segment 1's transaction looks open
    want = [r["offset"] for r in fx.records(isolation="read_committed")]
    assert want[:3] == [0, 1, 2]
    for chunk in (1, 64 << 20):
        got = scan_log(tmp_path, isolation="read_committed", max_chunk_bytes=chunk).read_all()
        assert got.column("offset").to_pylist() == want, chunk
    everything = [r["offset"] for r in fx.records()]
    assert scan_log(tmp_path).read_all().column("offset").to_pylist() == everything


def test_scan_log_names_a_text_file_posing_as_a_segment(tmp_path):
    folder = tmp_path / "notes-0"
    folder.mkdir()
    (folder / "00000000000000000000.log").write_text("plain text, not a Kafka batch at all\n" * 20)
    with pytest.raises(kb.CorruptBatchError) as raised:
        scan_log(folder).read_all()
    text = str(raised.value)
    assert text.startswith(f"{folder / '00000000000000000000.log'}: batch at byte 0, at byte 16: not a Kafka batch")
    assert text.endswith("this looks like a text file, not a Kafka segment")
    assert raised.value.batch_position == 0
