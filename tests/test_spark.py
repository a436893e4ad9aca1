"""kafkabatch.spark: the ``kafka-log`` data source and the batch-decoding UDFs.

Tests marked ``spark`` share one local SparkSession (``local[2]``) and keep
to a few actions each; the rest drive the data source classes in-process
(they need PySpark importable, not a running Spark). Expected rows are
``kb.decode`` of each whole segment (``test_logdir.expected_table``).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from sparkver import pyspark_version
from test_logdir import (
    BASE_TS,
    _records,
    build_log,
    expected_table,
    kafka_python_batch,
    rows_of,
    write_segment,
)

import kafkabatch as kb

pyspark = pytest.importorskip("pyspark")

from pyspark.sql.types import (  # noqa: E402
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

import kafkabatch.spark as kbs  # noqa: E402
from kafkabatch.spark import udf  # noqa: E402

# Spark's Kafka source schema with includeHeaders=true, spelled out here
# independently of kafkabatch.spark (KafkaRecordToRowConverter in Spark).
SPARK_KAFKA_SCHEMA = StructType(
    [
        StructField("key", BinaryType(), True),
        StructField("value", BinaryType(), True),
        StructField("topic", StringType(), True),
        StructField("partition", IntegerType(), True),
        StructField("offset", LongType(), True),
        StructField("timestamp", TimestampType(), True),
        StructField("timestampType", IntegerType(), True),
        StructField(
            "headers",
            ArrayType(
                StructType(
                    [
                        StructField("key", StringType(), True),
                        StructField("value", BinaryType(), True),
                    ]
                ),
                True,
            ),
            True,
        ),
    ]
)


# --------------------------------------------------------------------------
# fixtures
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def log(tmp_path_factory) -> Path:
    return build_log(tmp_path_factory.mktemp("spark-logs") / "kafka-data")


@pytest.fixture(scope="module")
def corrupt(tmp_path_factory) -> tuple[Path, Path]:
    """bad-0: three batches, the middle one's payload flipped; bad-1 clean."""
    root = tmp_path_factory.mktemp("spark-corrupt")
    b = [kafka_python_batch("gzip", 10 * i, _records("bad", 0, 10 * i, 10)) for i in range(3)]
    middle = bytearray(b[1])
    middle[len(middle) // 2] ^= 0x40
    seg = write_segment(root, "bad-0", 0, b[0] + bytes(middle) + b[2])
    write_segment(root, "bad-1", 0, kafka_python_batch("zstd", 0, _records("bad", 1, 0, 8)))
    return root, seg


def sorted_rows(table: pa.Table) -> list[tuple]:
    return sorted(rows_of(table), key=lambda r: (r[0], r[1], r[2]))


def read_in_process(options: dict) -> tuple[list, pa.Table]:
    """Plan and read like Spark does, without Spark: DataSource → reader →
    partitions → read(partition) each."""
    source = kbs.KafkaLogDataSource(options)
    assert source.schema() == SPARK_KAFKA_SCHEMA
    reader = source.reader(source.schema())
    splits = reader.partitions()
    batches = [b for split in splits for b in reader.read(split)]
    for b in batches:
        assert b.schema.equals(kbs.SPARK_ARROW_SCHEMA)
        assert b.schema.field("headers").type.value_field.name == "element"
    table = pa.Table.from_batches(batches, schema=kbs.SPARK_ARROW_SCHEMA)
    return splits, table


# --------------------------------------------------------------------------
# without a SparkSession
# --------------------------------------------------------------------------


def test_schema_is_sparks_kafka_schema():
    assert kbs.KAFKA_SCHEMA == SPARK_KAFKA_SCHEMA
    assert kbs.KafkaLogDataSource.name() == "kafka-log"


def test_spark_arrow_schema_is_what_spark_derives():
    import inspect

    from pyspark.sql.pandas.types import to_arrow_schema

    if "timezone" in inspect.signature(to_arrow_schema).parameters:  # PySpark 4.1+
        derived = to_arrow_schema(SPARK_KAFKA_SCHEMA, timezone="UTC")
    else:  # PySpark 4.0
        derived = to_arrow_schema(SPARK_KAFKA_SCHEMA, timestamp_utc=True)
    assert derived.equals(kbs.SPARK_ARROW_SCHEMA)
    assert (
        derived.field("headers").type.value_field.name == kbs.SPARK_ARROW_SCHEMA.field("headers").type.value_field.name
    )
    # kafkabatch's own schema differs only in the list item's name
    assert [f.type.id for f in kb.SCHEMA] == [f.type.id for f in kbs.SPARK_ARROW_SCHEMA]


def test_to_spark_arrow_is_zero_copy(log):
    batch = kb.decode(Path(log / "orders-1" / f"{1000:020d}.log").read_bytes(), topic="t", partition=1).to_batches()[0]
    converted = kbs.to_spark_arrow(batch)
    assert converted.schema.field("headers").type.value_field.name == "element"
    assert converted.column(0).buffers()[2].address == batch.column(0).buffers()[2].address
    assert converted.column(7).to_pylist() == batch.column(7).to_pylist()
    assert kbs.to_spark_arrow(converted) is converted


def test_import_needs_no_session():
    code = (
        "import kafkabatch.spark as kbs; from pyspark.sql import SparkSession; "
        "assert SparkSession.getActiveSession() is None; print(len(kbs.KAFKA_SCHEMA))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "8"


def test_in_process_read_equals_decode(log):
    from pyspark.sql.datasource import CaseInsensitiveDict

    splits, table = read_in_process(CaseInsensitiveDict({"path": str(log), "minPartitions": "100"}))
    assert len(splits) == 5  # one per non-empty segment when enough tasks are asked for
    assert sorted_rows(table) == sorted_rows(expected_table(log))
    assert rows_of(table) == rows_of(expected_table(log))  # and in topic, partition, offset order
    # By default small segments share tasks (packed like Spark's file sources), in order.
    packed, table = read_in_process(CaseInsensitiveDict({"path": str(log), "minPartitions": "2"}))
    assert 2 <= len(packed) < 5
    assert rows_of(table) == rows_of(expected_table(log))


def _pack(sizes: list[int], max_bytes: int, min_partitions: int, work: list[int] | None = None) -> list[list[int]]:
    """The core's packing of splits of ``sizes`` bytes (and estimated ``work``,
    by default their sizes) into tasks, as the source plans them: each task's split indices."""
    from kafkabatch import _kafkabatch

    groups = _kafkabatch._spark_pack(sizes, sizes if work is None else work, max_bytes, min_partitions)
    return [list(range(a, b)) for a, b in groups]


def test_pack_balances_tasks_in_multiples_of_min_partitions():
    mib = 1 << 20

    def pack(sizes: list[int], max_bytes: int, min_partitions: int) -> list[list[int]]:
        return _pack([size * mib for size in sizes], max_bytes, min_partitions)

    def sizes(seg_sizes: list[int], tasks: list[list[int]]) -> list[int]:
        return [sum(seg_sizes[i] for i in task) for task in tasks]

    # 35 segments of about 6 MiB (201 MB), 2 cores, 128 MiB cap: Spark's greedy
    # packing (4 MiB open cost a file) gives 3 tasks, the third running alone;
    # here 2 even ones (the open cost doesn't count against the cap).
    seg_sizes = [6] * 30 + [4] * 5
    tasks = pack(seg_sizes, 128 * mib, 2)
    assert len(tasks) == 2 and max(sizes(seg_sizes, tasks)) - min(sizes(seg_sizes, tasks)) <= 6
    # 300 MiB: 3 tasks of at most 128 MiB would do, 4 even ones keep both cores busy
    bigger = pack([6] * 50, 128 * mib, 2)
    assert len(bigger) == 4 and max(sizes([6] * 50, bigger)) - min(sizes([6] * 50, bigger)) <= 6
    # consecutive, in order, all there
    flat = [i for t in tasks for i in t]
    assert flat == list(range(35))
    # as many as asked when under the cap; one per split when more are asked for
    assert len(pack(seg_sizes, 128 * mib, 3)) == 3
    assert len(pack(seg_sizes, 0, 1)) == 1
    assert len(pack(seg_sizes, 128 * mib, 1000)) == 35
    # tiny splits: no task smaller than the open cost (4 MiB each, as Spark)
    assert len(pack([0, 0, 0], 128 * mib, 100)) == 3
    assert pack([], 128 * mib, 2) == []
    # a big split goes whole to the task its middle falls in
    assert sizes([1, 1, 100, 1, 1], pack([1, 1, 100, 1, 1], 0, 2)) == [2, 102]


def test_pack_balances_estimated_work_not_wire_bytes():
    mib = 1 << 20
    # Equal wire sizes, but the first split is 4x the work (compressed small
    # records): it gets a task of its own.
    tasks = _pack([10 * mib] * 4, 128 * mib, 2, work=[40 * mib, 10 * mib, 10 * mib, 10 * mib])
    assert tasks == [[0], [1, 2, 3]]


#: The weights of the core's work estimate (``kafkabatch::scan::tasks``), as
#: the tests state them: a compressed batch counts this many times its wire
#: size, and each record ``_RECORD_WORK`` bytes more.
_COMPRESSED_WORK = 3
_RECORD_WORK = 350


def test_estimate_work_from_the_first_batch_header():
    from kafkabatch import _kafkabatch

    def estimate(data: bytes, end: int | None = None) -> int:
        return _kafkabatch._spark_estimate_work(data, 0, len(data) if end is None else end)

    records = [{"key": b"k%d" % i, "value": b"v" * 200} for i in range(500)]
    plain = kb.encode(records, compression="none", records_per_batch=100)
    packed = kb.encode(records, compression="zstd", records_per_batch=100)
    for data in (plain, packed):
        work = estimate(data)
        wire = len(data) * (_COMPRESSED_WORK if data is packed else 1)
        # wire bytes (x3 compressed) plus 350 bytes a record
        assert abs(work - (wire + 500 * _RECORD_WORK)) <= 2
    # a transaction marker first says nothing of the data after it
    marker = kb.control_batch("commit", producer_id=7, producer_epoch=0, base_offset=0)
    data = marker + kb.encode(records, compression="zstd", records_per_batch=100, base_offset=1)
    work = estimate(data)
    data_bytes = len(data) - len(marker)
    assert abs(work - len(data) * (_COMPRESSED_WORK + 500 * _RECORD_WORK / data_bytes)) <= 2
    # too short for a header, or not a v2 header: wire bytes
    assert estimate(b"\0" * 100, 40) == 40
    assert estimate(b"\0" * 100, 100) == 100


def test_in_process_split_large_segments(log):
    splits, table = read_in_process({"path": str(log), "maxbytesperpartition": "300", "maxrecordsperbatch": "4"})
    assert len(splits) > 5
    by_segment: dict[str, list[tuple[int, int]]] = {}
    for s in splits:
        by_segment.setdefault(s.segment.path, []).append((s.start, s.end))
    for path, ranges in by_segment.items():  # contiguous, batch-aligned, covering the file
        data = Path(path).read_bytes()
        starts = {b.position for b in kb.iter_batches(data)}
        assert ranges[0][0] == 0 and ranges[-1][1] == len(data)
        assert all(a in starts for a, _ in ranges) and all(b == c for (_, b), (c, _) in zip(ranges, ranges[1:]))
    assert rows_of(table) == rows_of(expected_table(log))
    assert max(b.num_rows for b in table.to_batches()) <= 4


def test_in_process_index_splits_for_remote_files(log, monkeypatch):
    """Remote segments are split by their .index entries (a local folder
    read through pyarrow.fs stands in for S3)."""
    import struct

    from pyarrow import fs as pafs

    from kafkabatch.log import fs

    local = pafs.LocalFileSystem()
    monkeypatch.setattr(fs, "resolve_remote", lambda uri: (local, uri.split("://", 1)[1].split("?")[0]))
    seg = log / "orders-0" / f"{30:020d}.log"
    data = seg.read_bytes()
    batches = list(kb.iter_batches(data))
    index = seg.with_suffix(".index")
    entries = b"".join(struct.pack(">ii", b.last_offset - 30, b.position) for b in batches[1:]) + bytes(32)
    index.write_bytes(entries)
    try:
        splits, table = read_in_process({"path": f"mock://{seg.parent.as_posix()}", "maxBytesPerPartition": "1"})
        ranges = [(s.start, s.end) for s in splits if s.segment.base_offset == 30]
        assert ranges == [(b.position, b.position + b.size_in_bytes) for b in batches]
        assert all(s.check_start for s in splits if s.segment.base_offset == 30 and s.start > 0)
        assert rows_of(table) == rows_of(expected_table(seg.parent))
        # a stale index entry (not a batch start) is caught at planning, as
        # the seek path catches it: one task for the segment, every row read
        index.write_bytes(struct.pack(">ii", 5, batches[1].position + 3) + bytes(8))
        with pytest.warns(kb.IndexFileWarning, match="stale"):
            splits, table = read_in_process({"path": f"mock://{seg.parent.as_posix()}", "maxBytesPerPartition": "1"})
        assert [(s.start, s.end) for s in splits if s.segment.base_offset == 30] == [(0, len(data))]
        assert rows_of(table) == rows_of(expected_table(seg.parent))
    finally:
        index.unlink()


def test_in_process_modes(corrupt, caplog):
    root, seg = corrupt
    with pytest.raises(kb.CrcMismatchError, match=seg.name):
        read_in_process({"path": str(root)})
    want = expected_table(root, on_error="skip")
    _, dropped = read_in_process({"path": str(root), "mode": "dropmalformed"})
    assert rows_of(dropped) == rows_of(want)
    assert 10 not in dropped.column("offset").to_pylist()
    with caplog.at_level(logging.WARNING, logger="kafkabatch.spark"):
        _, permissive = read_in_process({"path": str(root), "mode": "PERMISSIVE"})
    assert rows_of(permissive) == rows_of(want)
    lines = [r.getMessage() for r in caplog.records if r.name == "kafkabatch.spark"]
    assert len(lines) == 1 and seg.name in lines[0] and "skipped 1 corrupt batch" in lines[0], lines


@pytest.mark.parametrize(
    "option, value, message",
    [
        ("validateCrc", "maybe", "'validateCrc' must be true or false"),
        ("includeControl", "2", "'includeControl' must be true or false"),
        ("mode", "LENIENT", "'mode' must be FAILFAST, DROPMALFORMED or PERMISSIVE"),
        ("isolation", "serializable", "'isolation' must be read_uncommitted or read_committed"),
        ("maxRecordsPerBatch", "lots", "'maxRecordsPerBatch' must be an integer"),
        ("maxRecordsPerBatch", "0", "'maxRecordsPerBatch' must be at least 1"),
        ("maxBytesPerPartition", "big", "'maxBytesPerPartition' must be a size"),
        ("partition", "-1", "'partition' must be at least 0"),
        ("startingOffsets", "{orders: 1}", "'startingOffsets' must be earliest or JSON"),
        ("startingOffsets", '{"orders": {"zero": 5}}', "partition 'zero' of topic 'orders'"),
        ("startingOffsets", '{"orders": {"0": "5"}}', "offset '5' for orders-0"),
        ("startingOffsets", '{"orders": [5]}', "topic 'orders' must map partitions to offsets"),
        ("endingOffsets", "earliest", "'endingOffsets' can't be earliest"),
        ("endingOffsets", '{"orders": {"0": -2}}', "orders-0 can't end at earliest"),
        ("startingTimestamp", "yesterday", "'startingTimestamp' must be epoch milliseconds or an ISO-8601"),
        ("endingTimestamp", "2024-13-45", "'endingTimestamp' must be epoch milliseconds"),
        ("paths", "not json", "'paths' must be a JSON list"),
    ],
)
def test_bad_option_values(log, option, value, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        kbs.KafkaLogDataSource({"path": str(log), option.lower(): value})


@pytest.mark.parametrize(
    "value, message",
    [("latest", "'startingOffsets' can't be latest"), ('{"orders": {"0": -1}}', "orders-0 can't start at latest")],
)
def test_batch_reads_cant_start_at_latest(log, value, message):
    # a stream can (spark.readStream), so load() takes it and the batch reader refuses it
    source = kbs.KafkaLogDataSource({"path": str(log), "startingoffsets": value})
    with pytest.raises(ValueError, match=message):
        source.reader(kbs.KAFKA_SCHEMA)


def test_option_spellings(log):
    opts = kbs.KafkaLogDataSource(
        {
            "path": str(log),
            "validatecrc": "FALSE",
            "includecontrol": "true",
            "mode": "permissive",
            "kafka.isolation.level": "read_committed",
            "maxbytesperpartition": "1m",
            "maxrecordsperbatch": "7",
            "startingoffsets": '{"orders": {"0": 5, "1": -2}}',
            "endingoffsets": "latest",
            "startingtimestamp": "2023-11-14T22:13:21Z",
            "endingtimestamp": str(BASE_TS + 60_000),
        }
    )._options
    assert (opts.validate_crc, opts.include_control, opts.mode, opts.isolation) == (
        False,
        True,
        "PERMISSIVE",
        "read_committed",
    )
    assert (opts.max_bytes_per_partition, opts.max_records_per_batch) == (1 << 20, 7)
    assert opts.starting_offsets == {("orders", 0): 5} and opts.ending_offsets == {}
    assert (opts.starting_timestamp, opts.ending_timestamp) == ((BASE_TS + 1000) * 1000, (BASE_TS + 60_000) * 1000)
    assert opts.decode_options()["on_error"] == "skip"


def test_missing_path_and_bad_folders(tmp_path):
    with pytest.raises(ValueError, match="needs a path"):
        kbs.KafkaLogDataSource({})
    with pytest.raises(FileNotFoundError, match="nowhere"):
        kbs.KafkaLogDataSource({"path": str(tmp_path / "nowhere")})
    write_segment(tmp_path, "snapshot", 0, kafka_python_batch("none", 0, _records("t", 0, 0, 2)))
    with pytest.raises(ValueError, match="snapshot"):
        kbs.KafkaLogDataSource({"path": str(tmp_path)})
    _, table = read_in_process({"path": str(tmp_path / "snapshot"), "topic": "t", "partition": "3"})
    assert table.column("topic").to_pylist() == ["t", "t"] and table.column("partition").to_pylist() == [3, 3]


def test_udf_options_are_checked_up_front():
    with pytest.raises(TypeError, match="validate"):
        kbs.decode_batches("content", validate=False)
    with pytest.raises(ValueError, match="on_error"):
        kbs.decode_batches_arrow("content", on_error="ignore")


# --------------------------------------------------------------------------
# on Spark
# --------------------------------------------------------------------------


@pytest.mark.spark
def test_read_log_dir(spark, kafka_log, log):
    df = spark.read.format(kafka_log).option("minPartitions", 100).load(str(log))
    assert df.schema == SPARK_KAFKA_SCHEMA
    assert df.rdd.getNumPartitions() == 5
    assert spark.read.format(kafka_log).load(str(log)).rdd.getNumPartitions() <= 5
    table = df.toArrow()
    assert sorted_rows(table) == sorted_rows(expected_table(log))
    # topic and partition come from the folder names
    assert sorted({(r[0], r[1]) for r in rows_of(table)}) == [("orders", 0), ("orders", 1), ("payments", 0)]


@pytest.mark.spark
def test_read_split_segments_and_several_paths(spark, kafka_log, log):
    df = (
        spark.read.format(kafka_log)
        .option("maxBytesPerPartition", 300)
        .option("maxRecordsPerBatch", 3)
        .load([str(log / "orders-0"), str(log / "payments-0")])
    )
    assert df.rdd.getNumPartitions() > 4
    want = pa.concat_tables([expected_table(log / "orders-0"), expected_table(log / "payments-0")])
    assert sorted_rows(df.toArrow()) == sorted_rows(want)


@pytest.mark.spark
def test_modes(spark, kafka_log, corrupt):
    root, seg = corrupt
    reader = spark.read.format(kafka_log)
    with pytest.raises(Exception, match=seg.name) as info:
        reader.load(str(root)).collect()
    assert "CrcMismatchError" in str(info.value) or "CRC mismatch" in str(info.value)
    want = sorted_rows(expected_table(root, on_error="skip"))
    assert sorted_rows(reader.option("mode", "DROPMALFORMED").load(str(root)).toArrow()) == want
    assert sorted_rows(reader.option("mode", "PERMISSIVE").load(str(root)).toArrow()) == want


@pytest.mark.spark
def test_offset_and_timestamp_bounds(spark, kafka_log, log):
    full = expected_table(log).to_pandas()
    full["ts"] = expected_table(log).column("timestamp").cast(pa.int64()).to_numpy()
    df = (
        spark.read.format(kafka_log)
        .option("startingOffsets", '{"orders": {"0": 15, "1": -2}, "payments": {"0": 3}}')
        .option("endingOffsets", '{"orders": {"0": 55, "1": 1030}}')
        .option("startingTimestamp", "2023-11-14T22:13:24Z")  # BASE_TS + 4 s
        .option("endingTimestamp", str(BASE_TS + 1_025_000))
        .load(str(log))
    )
    start = {("orders", 0): 15, ("payments", 0): 3}
    end = {("orders", 0): 55, ("orders", 1): 1030}
    keep = [
        start.get((t, p), -1) <= o < end.get((t, p), 1 << 62)
        and (BASE_TS + 4000) * 1000 <= ts < (BASE_TS + 1_025_000) * 1000
        for t, p, o, ts in zip(full.topic, full.partition, full.offset, full.ts)
    ]
    want = expected_table(log).filter(pa.array(keep))
    got = df.toArrow()
    assert got.num_rows == sum(keep) > 0
    assert sorted_rows(got) == sorted_rows(want)


@pytest.mark.spark
def test_empty_file_and_folder(spark, kafka_log, tmp_path):
    (tmp_path / "empty-0").mkdir()
    write_segment(tmp_path, "zero-0", 0, b"")
    for path in (tmp_path / "empty-0", tmp_path / "zero-0" / f"{0:020d}.log", tmp_path):
        df = spark.read.format(kafka_log).load(str(path))
        assert df.schema == SPARK_KAFKA_SCHEMA
        assert df.count() == 0


@pytest.mark.spark
def test_bad_input_errors_name_the_culprit(spark, kafka_log, log, tmp_path):
    with pytest.raises(Exception, match="'validateCrc' must be true or false"):
        spark.read.format(kafka_log).option("validateCrc", "sometimes").load(str(log))
    with pytest.raises(Exception, match="'startingOffsets'"):
        spark.read.format(kafka_log).option("startingOffsets", "{oops").load(str(log))
    with pytest.raises(Exception, match="does not exist"):
        spark.read.format(kafka_log).load(str(tmp_path / "missing"))
    write_segment(tmp_path, "not_a_partition", 0, kafka_python_batch("none", 0, _records("t", 0, 0, 1)))
    with pytest.raises(Exception, match="not_a_partition"):
        spark.read.format(kafka_log).load(str(tmp_path))


def planned_by_both(jvm_spark, given: dict[str, str]) -> tuple[list, list]:
    """The tasks the Python source and the JVM source's driver plan for the
    options ``given``: per task, its splits as ``(path, start, end)``."""
    import json

    from pyspark.sql.datasource import CaseInsensitiveDict

    from kafkabatch.spark.planning import splits_of

    source = kbs.KafkaLogDataSource(CaseInsensitiveDict(given))
    python = [[(s.path, s.start, s.end) for s in splits_of(t)] for t in source.reader(source.schema()).partitions()]
    # the JVM driver's call (KafkaLogScan.planInputPartitions), reached by reflection: Native is package-private
    jvm = jvm_spark._jvm
    gateway = jvm_spark.sparkContext._gateway
    loader = jvm.Thread.currentThread().getContextClassLoader()
    native = jvm.java.lang.Class.forName("io.github.kafkabatch.spark.Native", True, loader)
    types = gateway.new_array(jvm.java.lang.Class, 2)
    types[0], types[1] = jvm.java.lang.String._java_lang_class, jvm.java.lang.Integer.TYPE
    plan_tasks = native.getDeclaredMethod("planTasks", types)
    plan_tasks.setAccessible(True)
    args = gateway.new_array(jvm.java.lang.Object, 2)
    args[0], args[1] = json.dumps({"options": given}), jvm.java.lang.Integer(source._options.min_partitions)
    tasks = plan_tasks.invoke(None, args)
    jvm_tasks = [[json.loads(bytes(split)) for split in task] for task in tasks]
    return python, [[(s["path"], s["start"], s["end"]) for s in task] for task in jvm_tasks]


@pytest.mark.spark
@pytest.mark.parametrize("options", [{"minPartitions": "3"}, {"maxBytesPerPartition": "300", "minPartitions": "2"}])
def test_python_and_jvm_sources_plan_the_same_tasks(jvm_spark, log, options):
    """Both sources plan a folder through the core: the same tasks, of the same
    splits (segment, byte range), in the same order."""
    python, jvm = planned_by_both(jvm_spark, {"path": str(log), **options})
    assert python == jvm
    assert len(python) >= 2 and sum(len(t) for t in python) >= 5


@pytest.mark.spark
@pytest.mark.parametrize("layout", ["broker", "aiven"])
def test_python_and_jvm_sources_cut_remote_segments_the_same(jvm_spark, moto_s3, tmp_path, monkeypatch, layout):
    """Segments on an S3 server (moto's) are cut for tasks by the core on both
    sources (a broker folder's at its ``.index`` entries, an Aiven bucket's at
    chunks): the same tasks, several per segment, and the JVM source reads the
    rows ``kb.scan_log`` reads from the same URI."""
    import json

    from pyarrow import fs as pafs

    from kafkabatch.log import fs

    filesystem, endpoint, _ = moto_s3
    # the keys travel in the URI (the session's JVM has no AWS_* environment); pyarrow's
    # URIs take no keys, so the Python side lists through the fixture's filesystem
    monkeypatch.setattr(fs, "resolve_remote", lambda uri: (filesystem, uri.split("://", 1)[1].split("?")[0]))
    broker = tmp_path / "broker"
    kb.generate(broker, size="600KB", topics=[kb.TopicSpec("orders", 2, codec="lz4")], segment_bytes="128KB", seed=38)
    keys: dict[str, str] = {}
    source = broker
    if layout == "aiven":
        pytest.importorskip("Crypto")
        pytest.importorskip("cryptography")
        import tiered_fixtures as tf

        key = tf.make_key_pair("key-1")
        keys = {key.key_id: key.private_pem}
        source = tmp_path / "bucket"
        uploader = tf.Uploader(source, "zstd+encrypted", 8 << 10, key, prefix="tiered/")
        for partition in (0, 1):
            for log in tf.broker_segments(broker / f"orders-{partition}"):
                batches = list(kb.iter_batches(log.read_bytes()))
                end, max_ts = batches[-1].last_offset, max(b.max_timestamp for b in batches)
                uploader.upload(log, "orders", partition, end_offset=end, max_timestamp=max_ts)
    pafs.copy_files(str(source), "tiered/data", destination_filesystem=filesystem)
    uri = f"s3://tiered/data/?endpoint_override={endpoint}&scheme=http&access_key=test&secret_key=test&region=us-east-1"
    given = {"path": uri, "maxBytesPerPartition": str(24 << 10), "minPartitions": "2"}
    if keys:
        given["tieredKeys"] = json.dumps(keys)
    python, jvm = planned_by_both(jvm_spark, given)
    assert python == jvm
    pieces = [split for task in python for split in task]
    segments = sorted({path for path, _, _ in pieces})
    assert len(segments) == len(list(broker.glob("*/*.log"))) >= 4
    assert len(python) > len(segments)
    for path in segments:  # each segment's pieces follow each other, the first from its start
        ranges = [(start, end) for p, start, end in pieces if p == path]
        assert ranges[0][0] == 0 and all(b == c for (_, b), (c, _) in zip(ranges, ranges[1:]))
    assert sum(1 for _, start, _ in pieces if start > 0) >= len(segments)
    df = jvm_spark.read.format("kafka-log-jvm").options(**given).load()
    assert df.rdd.getNumPartitions() == len(python)
    got = sorted(
        (r.topic, r.partition, r.offset, r.value) for r in df.select("topic", "partition", "offset", "value").collect()
    )
    want = kb.scan_log(uri, tiered_keys=keys or None).read_all()
    assert got == sorted(zip(*(want[c].to_pylist() for c in ("topic", "partition", "offset", "value"))))
    assert len(got) == kb.scan_log(broker).read_all().num_rows
    assert df.count() == len(got)  # counted from the pieces' headers (planAggregateTasks)


@pytest.mark.spark
def test_read_committed_across_tasks(spark, kafka_log, tmp_path):
    if not _read_committed_available():
        pytest.skip("isolation='read_committed' is not available in this build")
    import realclients as rc

    fx = rc.transactions_hand_built()
    data = fx.data
    write_segment(tmp_path, "txn-0", 0, data)
    df = (
        spark.read.format(kafka_log)
        .option("isolation", "read_committed")
        .option("maxBytesPerPartition", 1)
        .load(str(tmp_path))
    )
    assert df.rdd.getNumPartitions() == len(rc.batch_spans(data))  # every batch its own task
    want = kb.decode(data, isolation="read_committed").column("offset").to_pylist()
    assert want == [0, 1, 2, 10, 11]
    assert [r.offset for r in df.orderBy("offset").select("offset").collect()] == want


def _read_committed_available() -> bool:
    try:
        kb.decode(b"", isolation="read_committed")
    except (NotImplementedError, TypeError):
        return False
    return True


@pytest.fixture(scope="module")
def raw(spark, log):
    """The segments as one row each (binaryFile skips the 0-byte one)."""
    return (
        spark.read.format("binaryFile")
        .option("pathGlobFilter", "*.log")
        .option("recursiveFileLookup", "true")
        .load(str(log))
    )


@pytest.mark.spark
def test_decode_batches_and_arrow_udf(spark, log, raw):
    from pyspark.sql import functions as F

    orders0 = raw.filter(F.col("path").contains("/orders-0/"))
    columns = ["path", kbs.decode_batches("content", topic="orders", partition=0).alias("pandas")]
    if pyspark_version() >= (4, 1):  # arrow_udf
        columns.append(kbs.decode_batches_arrow(F.col("content"), topic="orders", partition=0).alias("arrow"))
    got = orders0.select(*columns).toArrow()
    assert got.schema.field("pandas").type.equals(pa.list_(pa.struct(list(kbs.SPARK_ARROW_SCHEMA))))
    if pyspark_version() >= (4, 1):
        assert got.column("pandas").to_pylist() == got.column("arrow").to_pylist()
    by_path = dict(zip(got.column("path").to_pylist(), got.column("pandas").to_pylist()))
    assert len(by_path) == 3
    for path, records in by_path.items():
        want = kb.decode(Path(udf.path_text(path)).read_bytes(), topic="orders", partition=0)
        assert rows_of(pa.Table.from_pylist(records, schema=kb.SCHEMA)) == rows_of(want)


@pytest.mark.spark
def test_explode_batches(spark, log, raw):
    exploded = kbs.explode_batches(raw, "content", path_column="path", keep=["path", "length"])
    assert exploded.schema.fieldNames() == SPARK_KAFKA_SCHEMA.fieldNames() + ["path", "length"]
    assert StructType(exploded.schema.fields[:8]) == SPARK_KAFKA_SCHEMA
    table = exploded.toArrow()
    assert sorted_rows(table.select(SPARK_KAFKA_SCHEMA.fieldNames())) == sorted_rows(expected_table(log))
    # kept columns are repeated per record
    for path, length in set(zip(table.column("path").to_pylist(), table.column("length").to_pylist())):
        assert os.path.getsize(udf.path_text(path)) == length


@pytest.mark.spark
def test_demo_end_to_end(tmp_path):
    """``python -m kafkabatch.demo`` (what ``make demo`` runs), small."""
    import importlib.util

    if importlib.util.find_spec("kafkabatch.generate") is None:
        pytest.skip("kafkabatch.generate is not in this build yet")
    out = tmp_path / "demo"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable, COLUMNS="160")
    run = subprocess.run(
        [sys.executable, "-m", "kafkabatch.demo", "--out", str(out), "--size", "2MB", "--master", "local[1]"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "Parquet:" in run.stdout
    topics = sorted(p.name for p in (out / "parquet").iterdir() if p.name.startswith("topic="))
    assert topics, list((out / "parquet").iterdir())
    import pyarrow.parquet as pq

    written = pa.concat_tables([pq.read_table(p) for p in (out / "parquet").rglob("*.parquet")])
    committed = "read_committed" if _read_committed_available() else "read_uncommitted"
    from kafkabatch.log import scan_log

    assert written.num_rows == scan_log(out / "logs", isolation=committed).read_all().num_rows
    # Spark's start is shown apart from the read, and one Avro-typed result.
    assert "Spark start: session " in run.stdout and "first Python data source query" in run.stdout
    assert "shipments by carrier (valueFormat=avro" in run.stdout
    shipments = scan_log(out / "logs" / "shipments-0", value_format="avro", schema_registry=json_registry(out))
    carriers = {v["carrier"] for v in shipments.read_all().column("value").to_pylist()}
    assert carriers and all(c in run.stdout for c in carriers)


def json_registry(out):
    """The ``{schema id: schema}`` file the generator wrote beside the log."""
    import json

    return json.loads((out / "logs" / "schemas" / "registry.json").read_text())


@pytest.mark.spark
def test_register_says_which_source_kafka_log_is(spark, log, caplog):
    """register() names the source ``kafka-log`` reads with, once per
    application, and always registers the Python one as ``kafka-log-python``."""
    from kafkabatch.spark import session

    jvm = session.jvm_source_name(spark)
    session._TOLD_APPLICATIONS.clear()
    with caplog.at_level(logging.INFO, logger="kafkabatch.spark"):
        kbs.register(spark, check_workers=False)
        kbs.register(spark, check_workers=False)
    told = [r.getMessage() for r in caplog.records if "kafka-log is the" in r.getMessage()]
    assert len(told) == 1, told
    if jvm is None:
        assert told[0].startswith("kafkabatch.spark: kafka-log is the Python source"), told
    elif jvm == "kafka-log":
        assert told[0].startswith("kafkabatch.spark: kafka-log is the JVM source"), told
    else:
        assert f"the JVM source is {jvm}" in told[0], told
    python_rows = spark.read.format("kafka-log-python").load(str(log)).toArrow()
    assert sorted_rows(python_rows) == sorted_rows(expected_table(log))
