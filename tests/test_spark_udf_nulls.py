"""The UDF helpers over columns of raw batches take null and empty cells
(a missing file, an outer join, an empty fetch) without failing the task:
null in, null out for the column UDFs, no rows from ``explode_batches``,
and an empty list for empty bytes. Records are compared with what
kafka-python's reader makes of the same bytes."""

from __future__ import annotations

import pytest
import realclients as rc
from sparkver import requires_spark41

pytest.importorskip("pyspark")

import kafkabatch.spark as kbs  # noqa: E402

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def cells(spark):
    from kafka.record.memory_records import MemoryRecordsBuilder

    builder = MemoryRecordsBuilder(2, rc.CODEC_ID["gzip"], batch_size=1 << 20, offset=0)
    for i in range(5):
        assert builder.append(rc.BASE_TS + i, f"k{i}".encode(), f"v{i}".encode(), []) is not None
    builder.close()
    data = bytes(builder.buffer())
    expected = [(r["offset"], r["value"]) for b in rc.reference_batches(data) for r in b["records"]]
    rows = [(0, None), (1, b""), (2, data), (3, None)]
    df = spark.createDataFrame(rows, "id int, content binary").repartition(1)
    return df, expected


def records_by_id(rows, column):
    return {r.id: None if r[column] is None else [(x.offset, x.value) for x in r[column]] for r in rows}


def test_decode_batches_with_null_and_empty_cells(cells):
    df, expected = cells
    got = records_by_id(df.select("id", kbs.decode_batches("content").alias("r")).collect(), "r")
    assert got == {0: None, 1: [], 2: expected, 3: None}


@requires_spark41
def test_decode_batches_arrow_with_null_and_empty_cells(cells):
    df, expected = cells
    got = records_by_id(df.select("id", kbs.decode_batches_arrow("content").alias("r")).collect(), "r")
    assert got == {0: None, 1: [], 2: expected, 3: None}


def test_explode_batches_with_null_and_empty_cells(cells):
    df, expected = cells
    rows = kbs.explode_batches(df, "content", keep=["id"]).collect()
    assert [(r.id, r.offset, r.value) for r in rows] == [(2, o, v) for o, v in expected]


def test_outer_join_with_a_missing_file(spark, cells, tmp_path):
    """binaryFile rows joined to a list of expected files: the missing one is a null cell."""
    _, expected = cells
    segment = tmp_path / "orders-0" / "00000000000000000000.log"
    segment.parent.mkdir()
    from kafka.record.memory_records import MemoryRecordsBuilder

    builder = MemoryRecordsBuilder(2, 0, batch_size=1 << 20, offset=0)
    for i in range(3):
        builder.append(rc.BASE_TS + i, None, f"x{i}".encode(), [])
    builder.close()
    segment.write_bytes(bytes(builder.buffer()))
    files = spark.read.format("binaryFile").load(str(segment.parent)).selectExpr("path", "content")
    wanted = spark.createDataFrame(
        [(f"file:{segment}",), (f"file:{tmp_path}/orders-1/00000000000000000000.log",)], "path string"
    )
    joined = wanted.join(files, "path", "left_outer")
    got = {
        r.path: r.n
        for r in joined.select("path", kbs.decode_batches("content").alias("r"))
        .selectExpr("path", "size(r) as n")
        .collect()
    }
    assert sorted(got.values(), key=lambda n: (n is None, n)) in ([3, -1], [3, None])
    exploded = kbs.explode_batches(joined, "content", path_column="path")
    assert sorted(r.value for r in exploded.collect()) == [b"x0", b"x1", b"x2"]
