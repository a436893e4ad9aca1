"""Streaming on the JVM source: ``spark.readStream.format("kafka-log-jvm")``
(a DataSource V2 ``MicroBatchStream`` over the core's stream state) over log
folders that grow between triggers, on the real local Spark session.

The records each run adds are compared with a batch read of the folder by
the Python source (``kafka-log-python``, exactly once across restarts from the
checkpoint), and the micro-batches and offsets with those of the Python
stream reader over the same folder: the same batch sizes under
``maxOffsetsPerTrigger``/``maxBytesPerTrigger``, the same offsets JSON (Spark's
Kafka source's) in the checkpoints.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("pyspark.sql.streaming.datasource")  # PySpark 4.2+, as test_stream

from sparkver import requires_spark41  # noqa: E402
from test_stream import CODECS, Writer, assert_exactly_once, input_rows, sink  # noqa: E402
from test_stream import run as stream_run  # noqa: E402

if shutil.which("javac") is None:
    pytest.skip("no javac on PATH: the JVM data source's jar can't be built here", allow_module_level=True)

pytestmark = [requires_spark41, pytest.mark.spark]

JVM = "kafka-log-jvm"
PYTHON = "kafka-log-python"


def run(spark, path: Path, ck: Path, out: Path, *, source: str = JVM, **options):
    """One availableNow run of ``source`` (the JVM source unless told), as test_stream runs them."""
    return stream_run(spark, path, ck, out, source=source, wait=180, **options)


def checkpoint_offsets(ck: Path) -> list[dict]:
    """The end offsets of each micro-batch in a checkpoint's offset log, in order."""
    out = []
    for batch in sorted((ck / "offsets").iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else -1):
        if batch.name.isdigit():
            out.append(json.loads(batch.read_text().splitlines()[-1]))
    return out


def test_growing_log_restarts_exactly_once(jvm_spark, tmp_path):
    """Appends in every codec, a half-written batch at the tail, a segment
    roll, a new partition and a new topic: each availableNow run (a restart
    from the checkpoint) adds exactly what arrived, as the Python source reads it."""
    spark = jvm_spark
    data, ck, out = tmp_path / "data", tmp_path / "ck", tmp_path / "out"
    w = Writer(data)
    for i, name in enumerate(CODECS):
        w.append("orders", 0, 5 + i, name)
        w.append("orders", 1, 3, name)
    run(spark, data, ck, out)
    assert sum(assert_exactly_once(spark, data, out).values()) == 35 + 15

    for name in CODECS:
        w.append("orders", 0, 4, name)
    tail = w.batch("orders", 0, 6, "zstd")
    w.write("orders", 0, tail[: len(tail) // 2])  # half a batch: not an error, not read yet
    run(spark, data, ck, out)
    assert sum(assert_exactly_once(spark, data, out).values()) == 35 + 15 + 20

    w.write("orders", 0, tail[len(tail) // 2 :])
    w.roll("orders", 0)
    w.append("orders", 0, 7, "gzip")
    w.append("orders", 2, 4, "snappy")
    w.append("payments", 0, 2)
    run(spark, data, ck, out)
    got = assert_exactly_once(spark, data, out)
    assert sum(got.values()) == 35 + 15 + 20 + 6 + 7 + 4 + 2

    query = run(spark, data, ck, out)  # nothing new
    assert input_rows(query) == []
    assert_exactly_once(spark, data, out)
    latest = json.loads(query.lastProgress["sources"][0]["latestOffset"])
    assert latest == {"orders": {"0": 68, "1": 15, "2": 4}, "payments": {"0": 2}}
    assert checkpoint_offsets(ck)[-1] == latest


def test_rate_limits_plan_the_python_sources_micro_batches(jvm_spark, tmp_path):
    """maxOffsetsPerTrigger, then maxBytesPerTrigger: the JVM source's
    micro-batches have the Python source's sizes and end offsets (the same
    core state plans both), and read every offset once."""
    spark = jvm_spark
    data = tmp_path / "data"
    w = Writer(data)
    for _ in range(6):
        w.append("r", 0, 10, "lz4")
    w.append("r", 1, 20, "zstd")
    got = {}
    for source in (PYTHON, JVM):
        ck, out = tmp_path / f"ck-{source}", tmp_path / f"out-{source}"
        query = run(spark, data, ck, out, source=source, maxOffsetsPerTrigger=25)
        got[source] = (input_rows(query), checkpoint_offsets(ck))
        assert_exactly_once(spark, data, out)
    rows = got[JVM][0]
    assert sum(rows) == 80 and max(rows) <= 25 and len(rows) >= 4, rows
    assert got[JVM] == got[PYTHON]

    sizes = set()
    for _ in range(6):
        batch = w.batch("r", 0, 10)
        w.write("r", 0, batch)
        sizes.add(len(batch))
    budget = str(int(max(sizes) * 2.5))
    for source in (PYTHON, JVM):
        ck, out = tmp_path / f"ck-{source}", tmp_path / f"out-{source}"
        query = run(spark, data, ck, out, source=source, maxBytesPerTrigger=budget)
        got[source] = (input_rows(query), checkpoint_offsets(ck))
        assert_exactly_once(spark, data, out)
    rows = got[JVM][0]
    assert sum(rows) == 60 and max(rows) <= 20, rows
    assert got[JVM] == got[PYTHON]


def test_read_committed_waits_for_open_transactions(jvm_spark, tmp_path):
    """read_committed: an open transaction holds back its partition at the
    last stable offset; its records come once COMMIT arrives, aborted ones never."""
    spark = jvm_spark
    data, ck, out = tmp_path / "data", tmp_path / "ck", tmp_path / "out"
    w = Writer(data)
    w.append("t", 0, 3)
    w.txn("t", 0, 4, producer_id=7)  # open: offsets 3-6
    w.append("t", 0, 2)  # after the LSO: held back
    w.append("t", 1, 5, "zstd")
    run(spark, data, ck, out, isolation="read_committed")
    got = sink(spark, out)
    assert sorted((p, o) for _, p, o, _ in got) == [(0, 0), (0, 1), (0, 2)] + [(1, i) for i in range(5)]

    w.marker("t", 0, "commit", 7)
    w.txn("t", 0, 3, producer_id=8)
    w.marker("t", 0, "abort", 8)
    w.append("t", 0, 2, "gzip")
    run(spark, data, ck, out, isolation="read_committed")
    got = assert_exactly_once(spark, data, out, isolation="read_committed")
    assert sorted(o for _, p, o, _ in got if p == 0) == list(range(9)) + [14, 15]  # 9, 13 markers; 10-12 aborted


def test_fail_on_data_loss(jvm_spark, tmp_path):
    """Retention deletes a segment before the stream read it: the query fails
    saying so (failOnDataLoss=true, the default), or goes on (false)."""
    spark = jvm_spark
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
    run(spark, data, ck, out, failOnDataLoss="false")
    got = sink(spark, out)
    assert sorted(o for _, _, o, _ in got) == [0, 1, 2, 3, 7, 8, 9, 10, 11]


def test_starting_offsets_and_clear_errors(jvm_spark, tmp_path):
    spark = jvm_spark
    data = tmp_path / "data"
    w = Writer(data)
    w.append("s", 0, 5)
    w.append("s", 1, 5)
    run(spark, data, tmp_path / "ck1", tmp_path / "out1", startingOffsets="latest")
    w.append("s", 0, 2)
    run(spark, data, tmp_path / "ck1", tmp_path / "out1", startingOffsets="latest")
    assert sorted(o for _, _, o, _ in sink(spark, tmp_path / "out1")) == [5, 6]
    run(spark, data, tmp_path / "ck2", tmp_path / "out2", startingOffsets='{"s": {"0": 3}}')
    got = sink(spark, tmp_path / "out2")
    assert sorted((p, o) for _, p, o, _ in got) == [(0, 3), (0, 4), (0, 5), (0, 6)] + [(1, i) for i in range(5)]
    with pytest.raises(Exception, match="endingOffsets/endingTimestamp are for batch reads"):
        run(spark, data, tmp_path / "ck3", tmp_path / "out3", endingOffsets="latest")


def each_micro_batch(spark, source: str, path: Path, ck: Path, step, **options) -> None:
    """An availableNow run of ``source`` handing each micro-batch's DataFrame to ``step(df, id)``."""
    reader = spark.readStream.format(source)
    for name, value in options.items():
        reader = reader.option(name, value)
    query = (
        reader.load(str(path))
        .writeStream.foreachBatch(step)
        .option("checkpointLocation", str(ck))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(180)
    assert not query.isActive
    if query.exception() is not None:
        raise query.exception()


def test_micro_batches_are_cut_and_packed_as_the_python_sources(jvm_spark, tmp_path):
    """A micro-batch's segments are cut at maxBytesPerPartition and packed into
    tasks as a batch read's: the same tasks and rows as the Python stream's."""
    spark = jvm_spark
    data = tmp_path / "data"
    w = Writer(data)
    for _ in range(4):
        for name in CODECS:
            w.append("big", 0, 200, name)
            w.append("big", 1, 10, name)
    w.roll("big", 0)
    w.append("big", 0, 30, "zstd")
    seen: dict[str, list[tuple[int, list[tuple[int, int]]]]] = {}
    for source in (JVM, PYTHON):

        def step(df, batch_id, source=source):
            rows = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
            seen.setdefault(source, []).append((df.rdd.getNumPartitions(), rows))

        each_micro_batch(
            spark, source, data, tmp_path / f"ck-{source}", step, maxBytesPerPartition="16k", minPartitions="2"
        )
    assert seen[JVM] == seen[PYTHON]
    (tasks, rows), *_ = seen[JVM]
    assert len(rows) == 4 * 5 * 210 + 30
    assert tasks > 3  # three segments, cut into more tasks


@pytest.mark.parametrize("fail", ["true", "false"])
def test_a_segment_deleted_after_the_micro_batch_was_planned(jvm_spark, tmp_path, fail):
    """Retention deletes a segment between a micro-batch's planning and its read
    (the second action on the micro-batch's DataFrame reads its planned tasks
    again): failOnDataLoss=true fails naming the option, false leaves the
    segment out with a warning; the Python source does the same."""
    spark = jvm_spark
    outcomes: dict[str, list] = {}
    for source in (JVM, PYTHON):
        data = tmp_path / source / "data"
        w = Writer(data)
        w.append("gone", 0, 4)
        first = w.active[("gone", 0)]
        w.roll("gone", 0)
        w.append("gone", 0, 3)

        def step(df, batch_id, source=source, first=first):
            got = outcomes.setdefault(source, [])
            got.append(sorted(r.offset for r in df.select("offset").collect()))
            first.unlink()
            try:
                got.append(sorted(r.offset for r in df.select("offset").collect()))
            except Exception as e:  # noqa: BLE001 - py4j's or PySpark's wrapping of the task's error
                text = str(e)
                got.append("failOnDataLoss=false to skip it with a warning" in text and str(first) in text)

        each_micro_batch(spark, source, data, tmp_path / source / "ck", step, failOnDataLoss=fail)
    assert outcomes[JVM] == outcomes[PYTHON]
    assert outcomes[JVM] == [list(range(7)), True if fail == "true" else [4, 5, 6]]
