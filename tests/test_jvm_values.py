"""Typed values on the JVM source (``kafka-log-jvm``): ``valueFormat=json`` with a Spark DDL ``valueSchema``.

Rows, bad values (an error naming the record, or nulls with ``onValueError``)
and the errors for the value options it does not take yet, each against the
Python source on the same session. (tests/test_spark_values.py holds both
sources against Spark's own ``from_json``.)
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import kafkabatch as kb

pytest.importorskip("pyspark")

import kafkabatch.spark as kbs  # noqa: E402

if shutil.which("javac") is None:
    pytest.skip("no javac on PATH: the JVM data source's jar can't be built here", allow_module_level=True)

JVM, PYTHON = "kafka-log-jvm", "kafka-log-python"


@pytest.fixture(scope="module")
def jvm_spark(spark):
    kbs.jar_path()  # with a JDK the jar is part of the build: missing is a failure
    return spark


@pytest.fixture()
def events(tmp_path) -> Path:
    folder = tmp_path / "events-3"
    folder.mkdir()
    values = [json.dumps({"n": i, "tags": ["a"] * (i % 3), "at": "2024-05-01T10:00:00Z"}).encode() for i in range(40)]
    values[5] = b'{"n": '
    values[9] = None
    kb.write_segment(folder / "00000000000000000000.log", [{"value": v} for v in values], base_offset=90)
    return tmp_path


def rows(spark, source: str, path: Path, **options) -> list:
    reader = (
        spark.read.format(source)
        .option("valueFormat", "json")
        .option("valueSchema", "n int, tags array<string>, at timestamp")
    )
    df = reader.options(**options).load(str(path))
    return [(r["offset"], None if r["value"] is None else r["value"].asDict()) for r in df.orderBy("offset").collect()]


@pytest.mark.spark
@pytest.mark.parametrize("transfer", ["zero-copy", "ipc"])
def test_json_values_with_nulls_for_bad_ones_are_the_python_sources(jvm_spark, events, transfer):
    jvm_spark.conf.set("spark.kafkabatch.arrowTransfer", transfer)
    try:
        got = rows(jvm_spark, JVM, events, onValueError="null")
    finally:
        jvm_spark.conf.unset("spark.kafkabatch.arrowTransfer")
    assert got == rows(jvm_spark, PYTHON, events, onValueError="null")
    assert got[5] == (95, None) and got[9] == (99, None) and got[6][1]["n"] == 6


@pytest.mark.spark
def test_a_bad_value_fails_naming_its_record_as_the_python_source_does(jvm_spark, events):
    for source in (JVM, PYTHON):
        with pytest.raises(Exception, match=r"value at offset 95 of events-3: "):
            rows(jvm_spark, source, events)
    schema = jvm_spark.read.format(JVM).option("valueFormat", "json").option("valueSchema", "n int").load(str(events))
    assert schema.schema == (
        jvm_spark.read.format(PYTHON)
        .option("valueFormat", "json")
        .option("valueSchema", "n int")
        .load(str(events))
        .schema
    )


@pytest.mark.spark
@pytest.mark.parametrize(
    "options",
    [
        {"valueFormat": "avro", "valueSchema": "{}"},
        {"valueFormat": "json", "valueSchema": "n int", "keyFormat": "string"},
    ],
)
def test_value_options_not_taken_yet_are_refused_at_load(jvm_spark, events, options):
    with pytest.raises(Exception, match="kafka-log-python"):
        jvm_spark.read.format(JVM).options(**options).load(str(events))
