"""The JVM data source's reader (``kafka-log-jvm``): how batches cross from the Rust core into Spark,
what it counts, and what ``mode`` does with corrupt batches.

Both transports (the zero-copy hand-off, the default, and Arrow IPC behind
``spark.kafkabatch.arrowTransfer=ipc``) give the Python source's rows, and
every native handle is given back once reads end. The custom metrics are read
from the executed plan's scan node and checked against the files' sizes and the
records in them; each mode's rows and log lines are the Python source's.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from test_logdir import build_log, expected_table, rows_of

import kafkabatch as kb

pytest.importorskip("pyspark")

from test_spark import corrupt, read_in_process  # noqa: E402, F401 - corrupt: the fixture, bad-0's batch flipped

if shutil.which("javac") is None:
    pytest.skip("no javac on PATH: the JVM data source's jar can't be built here", allow_module_level=True)

SOURCE = "kafka-log-jvm"
TRANSFER = "spark.kafkabatch.arrowTransfer"


@pytest.fixture(scope="module")
def log(tmp_path_factory) -> Path:
    return build_log(tmp_path_factory.mktemp("jvm-reader-logs") / "kafka-data")


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("jvm-reader-generated") / "gen"
    kb.generate(out, size="2MB", segment_bytes="256KB", seed=1938)
    return out


@contextmanager
def transfer(spark, how: str | None) -> Iterator[None]:
    if how is None:
        spark.conf.unset(TRANSFER)
    else:
        spark.conf.set(TRANSFER, how)
    try:
        yield
    finally:
        spark.conf.unset(TRANSFER)


def live_handles(spark) -> int:
    return spark._jvm.io.github.kafkabatch.spark.Diagnostics.liveHandles()


def sorted_rows(table) -> list[tuple]:
    return sorted(rows_of(table), key=lambda r: (r[0], r[1], r[2]))


READS = [
    {},
    # rows filtered by their offsets and timestamps: batches the core rebuilt
    {"startingOffsets": '{"orders": {"0": 17}}', "endingTimestamp": "2023-11-14T22:13:25Z"},
    {"maxRecordsPerBatch": "7", "isolation": "read_committed"},
]


@pytest.mark.spark
@pytest.mark.parametrize("options", READS, ids=["whole", "bounds", "small-batches"])
def test_both_transports_read_the_python_sources_rows(jvm_spark, log, options):
    python = sorted_rows(jvm_spark.read.format("kafka-log-python").options(**options).load(str(log)).toArrow())
    for how in (None, "zero-copy", "ipc"):
        with transfer(jvm_spark, how):
            got = sorted_rows(jvm_spark.read.format(SOURCE).options(**options).load(str(log)).toArrow())
        assert got == python, how
    assert len(python) > 0


@pytest.mark.spark
def test_both_transports_agree_through_spark_operators(jvm_spark, generated):
    query = (
        "SELECT topic, count(*), sum(length(value)), sum(length(key)), max(timestamp), "
        "sum(size(headers)), min(offset), count(DISTINCT partition) FROM {} GROUP BY topic"
    )
    results = []
    for how in ("zero-copy", "ipc"):
        with transfer(jvm_spark, how):
            jvm_spark.read.format(SOURCE).load(str(generated)).createOrReplaceTempView("jr_gen")
            results.append(sorted(map(tuple, jvm_spark.sql(query.format("jr_gen")).collect())))
    jvm_spark.read.format("kafka-log-python").load(str(generated)).createOrReplaceTempView("jr_py")
    want = sorted(map(tuple, jvm_spark.sql(query.format("jr_py")).collect()))
    assert results == [want, want]
    assert {t for t, *_ in want} >= {"orders", "clicks", "audit-legacy"}


@pytest.mark.spark
def test_no_native_handle_outlives_its_read(jvm_spark, generated, log):
    assert live_handles(jvm_spark) == 0
    df = jvm_spark.read.format(SOURCE).load(str(generated))
    want = df.count()
    for _ in range(15):
        assert df.count() == want
        assert len(df.limit(3).collect()) == 3  # a task stopped early closes its reader too
    rows = jvm_spark.read.format(SOURCE).load(str(log)).toArrow().num_rows
    assert rows > 0 and want > 0
    assert live_handles(jvm_spark) == 0


@pytest.mark.spark
def test_an_unknown_transfer_is_refused_in_the_confs_words(jvm_spark, log):
    with transfer(jvm_spark, "carrier-pigeon"), pytest.raises(Exception, match="must be zero-copy or ipc") as raised:
        jvm_spark.read.format(SOURCE).load(str(log)).collect()
    assert TRANSFER in str(raised.value)


def scan_metrics(df) -> dict[str, int]:
    """Run ``df`` and read the custom metrics of its scan node (summed over tasks)."""
    df.collect()
    plan = df._jdf.queryExecution().executedPlan()
    leaves = plan.collectLeaves()
    scan = leaves.apply(0)
    metrics = scan.metrics()
    return {name: metrics.apply(name).value() for name in ("bytesRead", "recordsRead", "batchesSkipped", "crcErrors")}


def log_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*.log"))


@pytest.mark.spark
def test_metrics_count_bytes_records_and_skipped_batches(jvm_spark, corrupt, generated):  # noqa: F811
    root, _seg = corrupt
    want = expected_table(root, on_error="skip")
    metrics = scan_metrics(jvm_spark.read.format(SOURCE).option("mode", "DROPMALFORMED").load(str(root)))
    # every byte of both segments decoded; the flipped batch's 10 records never made it
    assert metrics == {"bytesRead": log_bytes(root), "recordsRead": want.num_rows, "batchesSkipped": 1, "crcErrors": 1}
    # CRCs not checked: the flipped batch is a decompression or record error, not a CRC one
    unchecked = scan_metrics(
        jvm_spark.read.format(SOURCE).options(mode="DROPMALFORMED", validateCrc="false").load(str(root))
    )
    assert unchecked["crcErrors"] == 0 and unchecked["bytesRead"] == log_bytes(root)
    clean = scan_metrics(jvm_spark.read.format(SOURCE).load(str(generated)))
    records = jvm_spark.read.format("kafka-log-python").load(str(generated)).count()
    assert clean == {"bytesRead": log_bytes(generated), "recordsRead": records, "batchesSkipped": 0, "crcErrors": 0}


@contextmanager
def jvm_log(spark, name: str = "kafkabatch.spark") -> Iterator[Callable[[], list[str]]]:
    """The lines the driver's JVM (which runs local[*] tasks) logs under ``name`` at WARN and above."""
    jvm = spark._jvm
    log4j = jvm.org.apache.logging.log4j
    context = log4j.LogManager.getContext(False)
    writer = jvm.java.io.StringWriter()
    layout = log4j.core.layout.PatternLayout.newBuilder().withPattern("%m%n").build()
    appender = log4j.core.appender.WriterAppender.createAppender(layout, None, writer, "kb-test-capture", False, True)
    appender.start()
    log4j.core.config.Configurator.setLevel(name, log4j.Level.WARN)
    logger = context.getConfiguration().getLoggerConfig(name)
    logger.addAppender(appender, None, None)
    context.updateLoggers()
    try:
        yield lambda: [line for line in writer.toString().splitlines() if line]
    finally:
        logger.removeAppender("kb-test-capture")
        appender.stop()
        context.updateLoggers()


@pytest.mark.spark
def test_modes_read_and_log_what_the_python_source_does(jvm_spark, corrupt, caplog):  # noqa: F811
    root, seg = corrupt
    reader = jvm_spark.read.format(SOURCE)
    with pytest.raises(Exception, match=seg.name) as info:
        reader.load(str(root)).collect()
    assert "CRC mismatch" in str(info.value)
    want = sorted_rows(expected_table(root, on_error="skip"))
    python = jvm_spark.read.format("kafka-log-python")
    with jvm_log(jvm_spark) as lines:
        for mode in ("DROPMALFORMED", "dropmalformed"):
            rows = sorted_rows(reader.option("mode", mode).load(str(root)).toArrow())
            assert rows == want == sorted_rows(python.option("mode", mode).load(str(root)).toArrow())
        assert lines() == []
        permissive = sorted_rows(reader.option("mode", "PERMISSIVE").load(str(root)).toArrow())
        logged = lines()
    assert permissive == want == sorted_rows(python.option("mode", "PERMISSIVE").load(str(root)).toArrow())
    # the Python source's line for the same split, logged in-process
    with caplog.at_level(logging.WARNING, logger="kafkabatch.spark"):
        read_in_process({"path": str(root), "mode": "PERMISSIVE"})
    python_lines = [r.getMessage() for r in caplog.records if r.name == "kafkabatch.spark"]
    assert logged == python_lines
    assert len(logged) == 1 and seg.name in logged[0] and "skipped 1 corrupt batch" in logged[0], logged
