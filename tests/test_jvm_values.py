"""Typed values on the JVM source (``kafka-log-jvm``) beside the Python source's on the same session.

JSON rows and bad values (an error naming the record, or nulls with
``onValueError``); struct values over the many batches of one task, through
both transports; Confluent-framed Avro from a registry (test_values' HTTP
stand-in over confluent-kafka's mock registry, values written by its
``AvroSerializer``) with basic and bearer auth, string keys, the registry file
``kafkabatch generate`` writes; and the errors of the value options and of the
registry, each the Python source's text. (tests/test_spark_values.py and
test_protobuf.py hold both sources against Spark's ``from_json``, fastavro and
protobuf's own parser.)
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import kafkabatch as kb

pytest.importorskip("pyspark")
tv = pytest.importorskip("test_values")


if shutil.which("javac") is None:
    pytest.skip("no javac on PATH: the JVM data source's jar can't be built here", allow_module_level=True)

JVM, PYTHON = "kafka-log-jvm", "kafka-log-python"

registry = tv.registry  # fixtures shared with test_values
registry_server = tv.registry_server

#: ORDER_V1 without its union of three types (Spark has no union type).
READER = {**tv.ORDER_V1, "fields": [f for f in tv.ORDER_V1["fields"] if f["name"] != "score"]}


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


@pytest.fixture()
def parcels(tmp_path) -> tuple[Path, list[dict]]:
    """Three partitions of JSON parcels with a nested struct, and the values written (by partition, offset)."""
    written = []
    for partition in range(3):
        folder = tmp_path / f"parcels-{partition}"
        folder.mkdir()
        values = [
            {"id": f"p{partition}-{i}", "weight": i / 4, "to": {"city": f"c{i % 5}", "zip": 1000 + i}}
            for i in range(45 + 10 * partition)
        ]
        kb.write_segment(
            folder / "00000000000000000000.log",
            [{"value": json.dumps(v).encode()} for v in values],
            records_per_batch=7,
        )
        written += values
    return tmp_path, written


@pytest.mark.spark
@pytest.mark.parametrize("transfer", ["zero-copy", "ipc"])
def test_struct_values_over_many_batches_of_a_task_are_the_python_sources(jvm_spark, parcels, transfer):
    """One task reads three partitions in batches of 8 rows: Spark closes each batch before the next one,
    and a closed struct vector loses its children (the next batch's load used to fail)."""
    path, written = parcels
    options = {
        "valueFormat": "json",
        "valueSchema": "id string, weight double, to struct<city: string, zip: int>",
        "minPartitions": "1",
        "maxRecordsPerBatch": "8",
    }

    def read(source: str) -> list:
        df = jvm_spark.read.format(source).options(**options).load(str(path))
        assert df.rdd.getNumPartitions() == 1
        got = df.select("partition", "offset", "value").collect()
        return [r["value"].asDict(recursive=True) for r in sorted(got, key=lambda r: (r["partition"], r["offset"]))]

    jvm_spark.conf.set("spark.kafkabatch.arrowTransfer", transfer)
    try:
        got = read(JVM)
    finally:
        jvm_spark.conf.unset("spark.kafkabatch.arrowTransfer")
    assert got == read(PYTHON)
    assert got == written and len(got) == 165


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


def _both(spark, options: dict[str, str], path):
    """The schema and rows (in offset order) of each source's read."""
    out = []
    for source in (PYTHON, JVM):
        df = spark.read.format(source).options(**options).load(str(path))
        out.append((df.schema, [r.asDict(recursive=True) for r in df.orderBy("offset").collect()]))
    return out


def _orders(registry, tmp_path, n=60):
    values = tv.confluent_avro(registry, READER, [tv.order(i) for i in range(n)])
    tv._publish(registry, "orders-value")
    folder = tmp_path / "orders-0"
    folder.mkdir()
    kb.write_segment(
        folder / "00000000000000000000.log",
        [{"key": f"k{i}".encode(), "value": v} for i, v in enumerate(values)],
        records_per_batch=16,
    )
    return tmp_path


@pytest.mark.spark
def test_registry_bearer_token_and_string_keys_read_as_the_python_source(
    jvm_spark, registry, registry_server, tmp_path
):
    path = _orders(registry, tmp_path)
    tv._RegistryHandler.auth = "Bearer t0k3n"
    options = {
        "valueFormat": "avro",
        "keyFormat": "string",
        "schemaRegistry": registry_server,
        "schemaRegistry.bearer.auth.token": "t0k3n",
    }
    (py_schema, py_rows), (jvm_schema, jvm_rows) = _both(jvm_spark, options, path)
    assert jvm_schema == py_schema
    assert jvm_rows == py_rows
    assert [r["key"] for r in jvm_rows] == [f"k{i}" for i in range(60)]
    assert [r["value"]["id"] for r in jvm_rows] == [f"o{i}" for i in range(60)]
    assert set(tv._RegistryHandler.seen_auth) == {"Bearer t0k3n"}


@pytest.mark.spark
def test_registry_credentials_in_the_url(jvm_spark, registry, registry_server, tmp_path):
    path = _orders(registry, tmp_path, n=10)
    tv._RegistryHandler.auth = "Basic Ym9iOnB3"  # bob:pw
    url = registry_server.replace("http://", "http://bob:pw@")
    df = (
        jvm_spark.read.format("kafka-log-jvm")
        .option("valueFormat", "avro")
        .option("schemaRegistry", url)
        .load(str(path))
    )
    assert [r["value"]["qty"] for r in df.orderBy("offset").collect()] == [i * 7 - 3 for i in range(10)]


@pytest.mark.spark
def test_registry_errors_are_the_python_sources(jvm_spark, registry, registry_server, tmp_path):
    path = _orders(registry, tmp_path, n=5)
    tv._RegistryHandler.auth = "Basic Ym9iOnB3"
    for source in (PYTHON, JVM):
        wrong = (
            jvm_spark.read.format(source)
            .option("valueFormat", "avro")
            .option("schemaRegistry", registry_server)
            .option("schemaRegistry.basic.auth.user.info", "bob:nope")
        )
        with pytest.raises(Exception, match=rf"schema registry {registry_server}: GET /subjects answered 401"):
            wrong.load(str(path)).collect()
        bad_url = jvm_spark.read.format(source).option("valueFormat", "avro").option("schemaRegistry", "registry:8081")
        with pytest.raises(
            Exception, match=r"schema registry URL must be http\(s\)://host\[:port\], not 'registry:8081'"
        ):
            bad_url.load(str(path)).collect()
    tv._RegistryHandler.auth = None
    unregistered = tmp_path / "elsewhere"
    (unregistered / "returns-0").mkdir(parents=True)
    kb.write_segment(unregistered / "returns-0" / "00000000000000000000.log", [{"value": b"x"}])
    for source in (PYTHON, JVM):
        other = jvm_spark.read.format(source).option("valueFormat", "avro").option("schemaRegistry", registry_server)
        with pytest.raises(Exception, match="no writer schemas for value: the registry has none for these topics"):
            other.load(str(unregistered))


@pytest.mark.spark
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"valueFormat": "xml"}, "valueFormat must be one of binary, string, json, avro, protobuf, not 'xml'"),
        ({"keySchema": "a int"}, r"keySchema needs a typed keyFormat \('json', 'avro' or 'protobuf'\)"),
        ({"valueFormat": "avro"}, r"valueFormat=avro needs valueSchema \(the writer schema\) or schemaRegistry"),
        ({"valueFormat": "string", "onValueError": "skip"}, "onValueError must be 'raise' or 'null', not 'skip'"),
        (
            {"valueFormat": "protobuf", "valueSchema": 'syntax = "proto3";'},
            r"valueFormat=protobuf with a schema needs valueMessage \(the message's full name\)",
        ),
    ],
)
def test_value_option_errors_at_load_are_the_python_sources(jvm_spark, tmp_path, options, message):
    folder = tmp_path / "t-0"
    folder.mkdir()
    kb.write_segment(folder / "00000000000000000000.log", [{"value": b"{}"}])
    for source in (PYTHON, JVM):
        with pytest.raises(Exception, match=message):
            jvm_spark.read.format(source).options(**options).load(str(tmp_path))


@pytest.mark.spark
def test_the_registry_file_kafkabatch_generate_writes(jvm_spark, tmp_path):
    """``kafkabatch generate``'s shipments: Confluent-framed Avro with its registry file."""
    out = tmp_path / "gen"
    summary = kb.generate(out, size="256KB", seed=11, progress=False)
    topic = summary.topics["shipments"]
    options = {"valueFormat": "avro", "schemaRegistry": str(topic.schema_file)}
    (py_schema, py_rows), (jvm_schema, jvm_rows) = _both(jvm_spark, options, out / "shipments-0")
    assert jvm_schema == py_schema
    assert jvm_rows == py_rows and len(jvm_rows) > 0
