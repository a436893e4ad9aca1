"""Streaming: ``spark.readStream.format("kafka-log")`` over log folders that grow
between triggers, on a real local Spark (the session fixture), no mocks.

A :class:`Writer` appends batches as a broker would (every codec, through
``kb.encode``): into the active segment, half a batch at a time, rolling to
new segments, new partitions and topics, transactions committed and aborted
later. After each ``availableNow`` run the Parquet sink must hold, as a
multiset of (topic, partition, offset, value), exactly what a batch
``spark.read.format("kafka-log")`` of the folder gives with the same
isolation: every visible record once, across restarts from the checkpoint.
"""

from __future__ import annotations

import collections
import json
import time
from pathlib import Path

import pytest
from sparkver import requires_spark41

import kafkabatch as kb

pytest.importorskip("pyspark.sql.streaming.datasource")  # PySpark 4.2+: read limits, availableNow

pytestmark = [requires_spark41, pytest.mark.spark]

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


class Writer:
    """Appends batches to ``<root>/<topic>-<partition>/<base offset>.log`` as a broker does."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.next: dict[tuple[str, int], int] = {}
        self.active: dict[tuple[str, int], Path] = {}
        self.counter = 0

    def segment(self, topic: str, partition: int) -> Path:
        tp = (topic, partition)
        if tp not in self.active:
            self.roll(topic, partition)
        return self.active[tp]

    def roll(self, topic: str, partition: int) -> Path:
        """Start a new (empty) segment at the next offset, as a broker rolls its log."""
        base = self.next.setdefault((topic, partition), 0)
        path = self.root / f"{topic}-{partition}" / f"{base:020d}.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        self.active[(topic, partition)] = path
        return path

    def batch(self, topic: str, partition: int, n: int, compression: str = "none", **options) -> bytes:
        """``n`` records in one batch at the partition's next offset (not written yet)."""
        tp = (topic, partition)
        self.segment(topic, partition)  # a new partition's first segment starts at 0
        base = self.next.setdefault(tp, 0)
        records = []
        for _ in range(n):
            self.counter += 1
            records.append(
                {"key": f"k{self.counter}".encode(), "value": f"{topic}-{partition}#{self.counter}".encode()}
            )
        data = kb.encode(records, base_offset=base, compression=compression, **options)
        self.next[tp] = base + n
        return data

    def write(self, topic: str, partition: int, data: bytes) -> None:
        with open(self.segment(topic, partition), "ab") as f:
            f.write(data)

    def append(self, topic: str, partition: int, n: int, compression: str = "none", **options) -> None:
        self.write(topic, partition, self.batch(topic, partition, n, compression, **options))

    def marker(self, topic: str, partition: int, kind: str, producer_id: int) -> None:
        tp = (topic, partition)
        base = self.next[tp]
        self.segment(topic, partition)
        self.write(topic, partition, kb.control_batch(kind, producer_id, 0, base_offset=base))
        self.next[tp] = base + 1

    def txn(self, topic: str, partition: int, n: int, producer_id: int) -> None:
        self.append(
            topic, partition, n, "lz4", producer_id=producer_id, producer_epoch=0, base_sequence=0, transactional=True
        )


def run(spark, path: Path, ck: Path, out: Path, *, source: str = "kafka-log-python", wait: float = 120, **options):
    """One availableNow run of ``source`` from the checkpoint ``ck`` into Parquet at ``out``."""
    reader = spark.readStream.format(source)
    for name, value in options.items():
        reader = reader.option(name, value)
    query = (
        reader.load(str(path))
        .writeStream.format("parquet")
        .option("checkpointLocation", str(ck))
        .trigger(availableNow=True)
        .start(str(out))
    )
    query.awaitTermination(wait)
    assert not query.isActive
    if query.exception() is not None:
        raise query.exception()
    return query


def sink(spark, out: Path) -> collections.Counter:
    rows = spark.read.parquet(str(out)).select("topic", "partition", "offset", "value").collect()
    return collections.Counter((r.topic, r.partition, r.offset, bytes(r.value)) for r in rows)


def batch_read(spark, path: Path, **options) -> collections.Counter:
    reader = spark.read.format("kafka-log-python")
    for name, value in options.items():
        reader = reader.option(name, value)
    rows = reader.load(str(path)).select("topic", "partition", "offset", "value").collect()
    return collections.Counter((r.topic, r.partition, r.offset, bytes(r.value)) for r in rows)


def assert_exactly_once(spark, path: Path, out: Path, **options) -> collections.Counter:
    got = sink(spark, out)
    assert max(got.values(), default=1) == 1, [k for k, v in got.items() if v > 1][:5]  # no record twice
    want = batch_read(spark, path, **options)
    assert got == want, (sorted(set(want) - set(got))[:5], sorted(set(got) - set(want))[:5])
    return got


def input_rows(query) -> list[int]:
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]


# --------------------------------------------------------------------------
# tests
# --------------------------------------------------------------------------


def test_growing_log_restarts_exactly_once(spark, tmp_path):
    """Appends in every codec, a half-written batch at the tail, a segment
    roll, a new partition and a new topic: each availableNow run (a restart
    from the checkpoint) adds exactly what arrived."""
    data, ck, out = tmp_path / "data", tmp_path / "ck", tmp_path / "out"
    w = Writer(data)
    for i, name in enumerate(CODECS):
        w.append("orders", 0, 5 + i, name)
        w.append("orders", 1, 3, name)
    run(spark, data, ck, out)
    assert sum(assert_exactly_once(spark, data, out).values()) == 35 + 15

    # half a batch at the tail of orders-0: not an error, not read yet
    for name in CODECS:
        w.append("orders", 0, 4, name)
    tail = w.batch("orders", 0, 6, "zstd")
    w.write("orders", 0, tail[: len(tail) // 2])
    run(spark, data, ck, out)
    got = assert_exactly_once(spark, data, out)
    assert sum(got.values()) == 35 + 15 + 20

    # the rest of it, a roll, a new partition and a new topic
    w.write("orders", 0, tail[len(tail) // 2 :])
    w.roll("orders", 0)
    w.append("orders", 0, 7, "gzip")
    w.append("orders", 2, 4, "snappy")
    w.append("payments", 0, 2)
    run(spark, data, ck, out)
    got = assert_exactly_once(spark, data, out)
    assert sum(got.values()) == 35 + 15 + 20 + 6 + 7 + 4 + 2
    assert ("payments", 0, 1, b"payments-0#" + str(w.counter).encode()) in got

    # nothing new: a run adds nothing; progress reports the latest offsets
    query = run(spark, data, ck, out)
    assert input_rows(query) == []
    assert_exactly_once(spark, data, out)
    latest = json.loads(query.lastProgress["sources"][0]["latestOffset"])
    assert (
        latest
        == {"orders": {"0": 68, "1": 15, "2": 4}, "payments": {"0": 2}}
        == {t: {str(p): w.next[(t, p)] for (t2, p) in sorted(w.next) if t2 == t} for t, _ in w.next}
    )


def test_read_committed_waits_for_open_transactions(spark, tmp_path):
    """read_committed: an open transaction holds back its partition's offsets
    (the last stable offset), so its records come once COMMIT arrives, and
    aborted ones never."""
    data, ck, out = tmp_path / "data", tmp_path / "ck", tmp_path / "out"
    w = Writer(data)
    w.append("t", 0, 3)
    w.txn("t", 0, 4, producer_id=7)  # open: offsets 3-6
    w.append("t", 0, 2)  # after the LSO: held back
    w.append("t", 1, 5, "zstd")  # another partition is not held back
    run(spark, data, ck, out, isolation="read_committed")
    got = sink(spark, out)
    assert sorted((p, o) for _, p, o, _ in got) == [(0, 0), (0, 1), (0, 2)] + [(1, i) for i in range(5)]

    w.marker("t", 0, "commit", 7)
    w.txn("t", 0, 3, producer_id=8)  # opened and aborted after a trigger
    w.txn("t", 1, 2, producer_id=9)  # open at the end of the next run
    run(spark, data, ck, out, isolation="read_committed")
    got = sink(spark, out)
    assert sorted(o for _, p, o, _ in got if p == 0) == list(range(9))  # 3 + 4 committed + 2
    w.marker("t", 0, "abort", 8)
    w.append("t", 0, 2, "gzip")
    w.marker("t", 1, "commit", 9)
    run(spark, data, ck, out, isolation="read_committed")
    got = assert_exactly_once(spark, data, out, isolation="read_committed")
    assert sorted(o for _, p, o, _ in got if p == 0) == list(range(9)) + [14, 15]  # 9-11 aborted, 12 marker
    assert sorted(o for _, p, o, _ in got if p == 1) == list(range(7))


def test_max_offsets_per_trigger(spark, tmp_path):
    data, ck, out = tmp_path / "data", tmp_path / "ck", tmp_path / "out"
    w = Writer(data)
    for _ in range(6):
        w.append("r", 0, 10, "lz4")
    w.append("r", 1, 20, "zstd")
    query = run(spark, data, ck, out, maxOffsetsPerTrigger=25)
    rows = input_rows(query)
    assert sum(rows) == 80 and max(rows) <= 25 and len(rows) >= 4, rows
    assert_exactly_once(spark, data, out)
    # bytes: every batch is ~ the same size, so a budget of 2.5 batches reads 2 a trigger
    sizes = set()
    for _ in range(6):
        batch = w.batch("r", 0, 10)
        w.write("r", 0, batch)
        sizes.add(len(batch))
    size = max(sizes)
    query = run(spark, data, ck, out, maxBytesPerTrigger=str(int(size * 2.5)))
    rows = input_rows(query)
    assert sum(rows) == 60 and max(rows) <= 20, rows
    assert_exactly_once(spark, data, out)


def test_processing_time_trigger_sees_a_batch_completed_later(spark, tmp_path):
    """A running query (processingTime trigger): a half-written batch is
    skipped until complete, then read once."""
    data, ck, out = tmp_path / "data", tmp_path / "ck", tmp_path / "out"
    w = Writer(data)
    w.append("live", 0, 3)
    query = (
        spark.readStream.format("kafka-log-python")
        .load(str(data))
        .writeStream.format("parquet")
        .option("checkpointLocation", str(ck))
        .trigger(processingTime="200 milliseconds")
        .start(str(out))
    )
    try:
        query.processAllAvailable()
        tail = w.batch("live", 0, 5, "snappy")
        w.write("live", 0, tail[:20])
        time.sleep(0.5)
        query.processAllAvailable()
        assert sum(sink(spark, out).values()) == 3
        w.write("live", 0, tail[20:])
        w.append("live", 0, 2)
        query.processAllAvailable()
        assert query.exception() is None
        assert sum(sink(spark, out).values()) == 10
    finally:
        query.stop()
    assert_exactly_once(spark, data, out)


def test_fail_on_data_loss(spark, tmp_path):
    """Retention deletes a segment before the stream read it: the query fails
    saying so (failOnDataLoss=true, the default), or goes on (false)."""
    data, ck, out = tmp_path / "data", tmp_path / "ck", tmp_path / "out"
    w = Writer(data)
    w.append("gone", 0, 4)
    run(spark, data, ck, out)
    first = w.active[("gone", 0)]
    w.append("gone", 0, 3)  # 4-6, never read
    w.roll("gone", 0)
    w.append("gone", 0, 5)  # 7-11
    first.unlink()
    with pytest.raises(Exception, match="were deleted .retention. before this stream read them"):
        run(spark, data, ck, out)
    run(spark, data, ck, out, failOnDataLoss="false")  # warns in the driver's log
    got = sink(spark, out)
    assert sorted(o for _, _, o, _ in got) == [0, 1, 2, 3, 7, 8, 9, 10, 11]


def test_starting_offsets(spark, tmp_path):
    data = tmp_path / "data"
    w = Writer(data)
    w.append("s", 0, 5)
    w.append("s", 1, 5)
    # latest: only what arrives after the query started
    run(spark, data, tmp_path / "ck1", tmp_path / "out1", startingOffsets="latest")
    w.append("s", 0, 2)
    run(spark, data, tmp_path / "ck1", tmp_path / "out1", startingOffsets="latest")
    assert sorted(o for _, _, o, _ in sink(spark, tmp_path / "out1")) == [5, 6]
    # JSON: from offset 3 of s-0, earliest (-2) for s-1, partitions not named from the earliest
    run(spark, data, tmp_path / "ck2", tmp_path / "out2", startingOffsets='{"s": {"0": 3}}')
    got = sink(spark, tmp_path / "out2")
    assert sorted((p, o) for _, p, o, _ in got) == [(0, 3), (0, 4), (0, 5), (0, 6)] + [(1, i) for i in range(5)]


def test_clear_errors(spark, tmp_path):
    data = tmp_path / "data"
    Writer(data).append("e", 0, 2)
    with pytest.raises(Exception, match=r"names topic-partitions that have no log.*e-7"):
        run(spark, data, tmp_path / "ck1", tmp_path / "out1", startingOffsets='{"e": {"7": 0}}')
    (tmp_path / "empty").mkdir()
    with pytest.raises(Exception, match="found no Kafka log segments"):
        run(spark, tmp_path / "empty", tmp_path / "ck2", tmp_path / "out2")
    with pytest.raises(Exception, match="endingOffsets/endingTimestamp are for batch reads"):
        run(spark, data, tmp_path / "ck3", tmp_path / "out3", endingOffsets="latest")
    # a checkpoint ahead of the data (the folder was recreated)
    run(spark, data, tmp_path / "ck4", tmp_path / "out4")
    for path in (data / "e-0").iterdir():
        path.unlink()
    Writer(data).roll("e", 0)
    with pytest.raises(Exception, match="is ahead of the log"):
        run(spark, data, tmp_path / "ck4", tmp_path / "out4")
    w = Writer(data)
    w.active[("e", 0)] = data / "e-0" / f"{0:020d}.log"
    w.append("e", 0, 1)
    run(spark, data, tmp_path / "ck4", tmp_path / "out4", failOnDataLoss="false")
    assert sum(sink(spark, tmp_path / "out4").values()) == 3  # the 2 first records, then the new one


def _read_plan(reader, start: dict, end: dict) -> list[tuple[int, int]]:
    rows = []
    for part in reader.partitions(start, end):
        for batch in reader.read(part):
            rows += zip(batch.column("partition").to_pylist(), batch.column("offset").to_pylist())
    return sorted(rows)


def test_replayed_micro_batch_reads_the_same_records(tmp_path):
    """What Spark does after a crash between writing a micro-batch's offsets and
    committing it: a new reader plans the same (start, end) from the offset
    log, after the log grew (more data, a new transaction, its abort), and
    must read exactly the same records, also when ``end`` cuts a batch."""
    from pyspark.sql.streaming.datasource import ReadMaxRows

    import kafkabatch.spark as kbs

    data = tmp_path / "data"
    w = Writer(data)
    w.append("x", 0, 4)
    w.txn("x", 0, 3, producer_id=5)
    w.append("x", 0, 5, "zstd")
    w.marker("x", 0, "abort", 5)
    w.append("x", 1, 9, "gzip")
    options = {"path": str(data), "isolation": "read_committed", "maxoffsetspertrigger": "7"}

    def reader():
        return kbs.KafkaLogDataSource(options).streamReader(kbs.KAFKA_SCHEMA)

    first = reader()
    start = first.initialOffset()
    seen = []
    plans = []
    while True:
        end = first.latestOffset(start, ReadMaxRows(7))
        if end == start:
            break
        plans.append((start, end, _read_plan(first, start, end)))
        seen += plans[-1][2]
        first.commit(end)
        start = end
    assert len(plans) >= 3
    assert sorted(seen) == [(0, o) for o in [0, 1, 2, 3, 7, 8, 9, 10, 11]] + [(1, o) for o in range(9)]
    w.append("x", 0, 3)
    w.txn("x", 0, 2, producer_id=6)
    for start, end, rows in plans:
        assert _read_plan(reader(), start, end) == rows


def test_three_runs_read_committed_with_a_rate_limit(spark, tmp_path):
    """One query, three availableNow runs, read_committed and maxOffsetsPerTrigger
    together, the folder growing between runs in every way at once: a
    half-written batch, appends, a rolled segment, a new partition and a
    transaction open across a run, committed before the next."""
    data, ck, out = tmp_path / "data", tmp_path / "ck", tmp_path / "out"
    options = {"isolation": "read_committed", "maxOffsetsPerTrigger": 7}
    w = Writer(data)
    w.append("acc", 0, 6, "zstd")
    w.txn("acc", 0, 5, producer_id=42)  # open across the first run
    w.append("acc", 0, 3, "lz4")
    w.append("acc", 1, 9, "snappy")
    half = w.batch("acc", 1, 4, "gzip")
    w.write("acc", 1, half[:10])
    query = run(spark, data, ck, out, **options)
    assert max(input_rows(query)) <= 7
    # Not yet a batch read's rows: a read_committed consumer stops at the last
    # stable offset (6), so 11-13 after the open transaction wait too.
    got = sink(spark, out)
    assert max(got.values()) == 1
    assert sorted(o for _, p, o, _ in got if p == 0) == list(range(6)), "held back at the open transaction"
    assert sorted(o for _, p, o, _ in got if p == 1) == list(range(9))

    w.write("acc", 1, half[10:])
    w.marker("acc", 0, "commit", 42)
    w.roll("acc", 0)
    w.append("acc", 0, 8, "gzip")
    w.append("acc", 2, 5, "none")
    query = run(spark, data, ck, out, **options)
    assert max(input_rows(query)) <= 7
    got = assert_exactly_once(spark, data, out, isolation="read_committed")
    assert sorted(o for _, p, o, _ in got if p == 0) == [*range(14), *range(15, 23)], "14 is the COMMIT marker"

    w.txn("acc", 2, 3, producer_id=43)
    w.marker("acc", 2, "abort", 43)
    w.append("acc", 2, 2, "lz4")
    w.append("acc", 1, 3, "zstd")
    run(spark, data, ck, out, **options)
    got = assert_exactly_once(spark, data, out, isolation="read_committed")
    assert sorted(o for _, p, o, _ in got if p == 2) == [0, 1, 2, 3, 4, 9, 10], "aborted 5-7, marker 8"


def test_stream_takes_the_value_formats(spark, tmp_path):
    data, ck, out = tmp_path / "data", tmp_path / "ck", tmp_path / "out"
    folder = data / "j-0"
    folder.mkdir(parents=True)
    kb.write_segment(folder / "00000000000000000000.log", [{"value": json.dumps({"n": i}).encode()} for i in range(5)])
    run(spark, data, ck, out, valueFormat="json", valueSchema="n int", keyFormat="string")
    with open(folder / "00000000000000000000.log", "ab") as f:
        f.write(kb.encode([{"value": b'{"n": 5}', "key": b"k"}], base_offset=5))
    run(spark, data, ck, out, valueFormat="json", valueSchema="n int", keyFormat="string")
    rows = spark.read.parquet(str(out)).orderBy("offset").collect()
    assert [r.value.n for r in rows] == list(range(6))
    assert [r.key for r in rows] == [None] * 5 + ["k"]


@pytest.fixture()
def s3(moto_s3):
    """A real S3 protocol server (moto's) on loopback, a pyarrow filesystem on
    it, and the query string that points a URI at it."""
    filesystem, endpoint, _recording = moto_s3
    return filesystem, f"endpoint_override={endpoint}&scheme=http"


def test_stream_over_an_object_store(spark, tmp_path, s3):
    """Tiered storage: segments arrive as new objects; each run reads the new ones once."""
    filesystem, query = s3
    ck, out = tmp_path / "ck", tmp_path / "out"

    def put(path: str, data: bytes) -> None:
        with filesystem.open_output_stream(f"tiered/{path}") as f:
            f.write(data)

    put(
        "orders-0/00000000000000000000.log",
        kb.encode([{"value": f"a{i}".encode()} for i in range(10)], compression="zstd"),
    )
    put("orders-1/00000000000000000000.log", kb.encode([{"value": f"b{i}".encode()} for i in range(4)]))
    uri = f"s3://tiered/orders-*/?{query}"
    options = {"maxOffsetsPerTrigger": 5, "valueFormat": "string"}
    run(spark, uri, ck, out, **options)
    put("orders-0/00000000000000000010.log", kb.encode([{"value": f"c{i}".encode()} for i in range(6)], base_offset=10))
    put("orders-2/00000000000000000000.log", kb.encode([{"value": b"d"}], compression="lz4"))
    query_run = run(spark, uri, ck, out, **options)
    assert max(input_rows(query_run)) <= 5
    rows = spark.read.parquet(str(out)).select("topic", "partition", "offset", "value").collect()
    got = collections.Counter((r.partition, r.offset, r.value) for r in rows)
    assert max(got.values()) == 1
    want = [(0, i, f"a{i}") for i in range(10)] + [(1, i, f"b{i}") for i in range(4)]
    want += [(0, 10 + i, f"c{i}") for i in range(6)] + [(2, 0, "d")]
    assert sorted(got) == sorted(want)
