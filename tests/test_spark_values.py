"""Typed values in Spark: the kafka-log source's valueFormat options and kbs.parse_values.

JSON is held against Spark's own ``from_json`` on the same bytes; Avro
against fastavro on values confluent-kafka's ``AvroSerializer`` wrote.
"""

from __future__ import annotations

import base64
import datetime
import json

import pytest

import kafkabatch as kb

pytest.importorskip("pyspark")
fastavro = pytest.importorskip("fastavro")
tv = pytest.importorskip("test_values")

from pyspark.sql import functions as F  # noqa: E402

import kafkabatch.spark as kbs  # noqa: E402

registry = tv.registry  # fixtures shared with test_values
registry_server = tv.registry_server

ORDER_DDL = (
    "order_id string, qty bigint, price double, paid boolean, "
    "items array<struct<sku: string, n: bigint>>, customer struct<name: string, vip: boolean>, missing string, "
    "at timestamp"
)


@pytest.fixture()
def json_folder(tmp_path):
    values = [json.dumps(tv.json_order(i)).encode() for i in range(500)]
    values[7] = None
    folder = tmp_path / "orders-0"
    folder.mkdir()
    kb.write_segment(folder / "00000000000000000000.log", [{"value": v} for v in values], compression="zstd")
    return tmp_path, values


def _rows(df, column="value"):
    return [None if r[column] is None else r[column].asDict(recursive=True) for r in df.orderBy("offset").collect()]


def test_kafka_log_json_equals_spark_from_json(spark, kafka_log, json_folder):
    path, values = json_folder
    typed = spark.read.format(kafka_log).option("valueFormat", "json").option("valueSchema", ORDER_DDL).load(str(path))
    assert typed.schema["value"].dataType.simpleString() == (
        "struct<order_id:string,qty:bigint,price:double,paid:boolean,items:array<struct<sku:string,n:bigint>>,"
        "customer:struct<name:string,vip:boolean>,missing:string,at:timestamp>"
    )
    plain = spark.read.format(kafka_log).load(str(path))
    reference = plain.select("offset", F.from_json(F.col("value").cast("string"), ORDER_DDL).alias("value"))
    assert _rows(typed) == _rows(reference)
    assert (
        typed.select("topic", "partition", "offset").collect() == plain.select("topic", "partition", "offset").collect()
    )


def test_json_timestamps_without_an_offset_in_a_non_utc_session(spark, kafka_log, tmp_path):
    """An ISO-8601 string without a UTC offset: the JVM source reads it in the session time zone, as
    Spark's ``from_json`` does; the Python source (which can't see the session's settings) as UTC.
    A string with an offset is the same instant on both, and equal to ``from_json``'s."""
    folder = tmp_path / "t-0"
    folder.mkdir()
    docs = [{"local": f"2024-03-0{d}T12:30:00", "zoned": f"2024-03-0{d}T12:30:00+02:00"} for d in range(1, 4)]
    kb.write_segment(folder / "00000000000000000000.log", [{"value": json.dumps(d).encode()} for d in docs])
    ddl = "local timestamp, zoned timestamp"
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        typed = (
            spark.read.format(kafka_log).option("valueFormat", "json").option("valueSchema", ddl).load(str(tmp_path))
        )
        got = typed.orderBy("offset").selectExpr("unix_timestamp(value.local) l", "unix_timestamp(value.zoned) z")
        plain = spark.read.format(kafka_log).load(str(tmp_path)).orderBy("offset")
        spark_reads = plain.select(F.from_json(F.col("value").cast("string"), ddl).alias("v")).selectExpr(
            "unix_timestamp(v.local) l", "unix_timestamp(v.zoned) z"
        )
        got_rows, spark_rows = got.collect(), spark_reads.collect()
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)
    assert [r.z for r in got_rows] == [r.z for r in spark_rows]
    if kafka_log == "kafka-log-jvm":
        assert [r.l for r in got_rows] == [r.l for r in spark_rows]
    else:
        utc = [int(datetime.datetime.fromisoformat(d["local"] + "+00:00").timestamp()) for d in docs]
        assert [r.l for r in got_rows] == utc
        assert [r.l - s.l for r, s in zip(got_rows, spark_rows)] == [-5 * 3600] * 3, "New York is UTC-5 in early March"


def test_kafka_log_confluent_avro_with_a_registry(spark, kafka_log, tmp_path):
    registry = tv.sr.SchemaRegistryClient.new_client({"url": "mock://spark-avro"})
    values = tv.confluent_avro(registry, tv.ORDER_V1, [tv.order(i) for i in range(200)])
    folder = tmp_path / "orders-1"
    folder.mkdir()
    kb.write_segment(folder / "00000000000000000000.log", [{"value": v} for v in values], records_per_batch=40)
    writers = tv.registry_dict(registry, values)
    # A V1 reader (no score union of three types, which Spark can't hold) over the writer schema.
    reader = {**tv.ORDER_V1, "fields": [f for f in tv.ORDER_V1["fields"] if f["name"] != "score"]}
    df = (
        spark.read.format(kafka_log)
        .option("valueFormat", "avro")
        .option("valueSchema", json.dumps(reader))
        .option("schemaRegistry", json.dumps({str(k): v for k, v in writers.items()}))
        .load(str(tmp_path))
    )
    got = _rows(df)
    expected = [tv.fastavro_read(v, tv.ORDER_V1, reader) for v in values]
    for row, want in zip(got, expected, strict=True):
        assert row["status"] == want["status"], "an enum arrives as its symbol"
        assert row["uid"] == want["uid"].bytes
        assert row["attrs"] == want["attrs"]
        assert row["ts"] == want["ts"].replace(tzinfo=None), "session time zone UTC"
        assert row["day"] == want["day"] and row["price"] == want["price"]
        assert row["items"] == want["items"] and row["note"] == want["note"] and row["qty"] == want["qty"]


def test_kafka_log_registry_url_with_basic_auth(spark, kafka_log, tmp_path, registry_server):
    registry = tv.sr.SchemaRegistryClient.new_client({"url": "mock://spark-url"})
    reader = {**tv.ORDER_V1, "fields": [f for f in tv.ORDER_V1["fields"] if f["name"] != "score"]}
    values = tv.confluent_avro(registry, reader, [tv.order(i) for i in range(50)])
    tv._publish(registry, "orders-value")
    tv._RegistryHandler.auth = "Basic " + base64.b64encode(b"bob:pw").decode()
    folder = tmp_path / "orders-0"
    folder.mkdir()
    kb.write_segment(folder / "00000000000000000000.log", [{"value": v} for v in values])
    df = (
        spark.read.format(kafka_log)
        .option("valueFormat", "avro")
        .option("schemaRegistry", registry_server)
        .option("schemaRegistry.basic.auth.user.info", "bob:pw")
        .load(str(tmp_path))
    )
    assert [r["id"] for r in _rows(df)] == [f"o{i}" for i in range(50)]
    assert set(tv._RegistryHandler.seen_auth) == {tv._RegistryHandler.auth}


def test_bad_values_fail_with_their_offset_or_become_null(spark, kafka_log, tmp_path):
    folder = tmp_path / "events-3"
    folder.mkdir()
    values = [b'{"n": 1}', b'{"n": ', b'{"n": 3}']
    kb.write_segment(folder / "00000000000000000000.log", [{"value": v, "key": b"k"} for v in values], base_offset=90)
    reader = (
        spark.read.format(kafka_log)
        .option("valueFormat", "json")
        .option("valueSchema", "n int")
        .option("keyFormat", "string")
    )
    with pytest.raises(Exception, match=r"value at offset 91 of events-3"):
        reader.load(str(tmp_path)).collect()
    rows = reader.option("onValueError", "null").load(str(tmp_path)).orderBy("offset").collect()
    assert [None if r["value"] is None else r["value"]["n"] for r in rows] == [1, None, 3]
    assert [r["key"] for r in rows] == ["k"] * 3


def test_value_options_are_checked_at_load(spark, kafka_log, tmp_path):
    folder = tmp_path / "t-0"
    folder.mkdir()
    kb.write_segment(folder / "00000000000000000000.log", [{"value": b"{}"}])
    with pytest.raises(Exception, match="valueFormat=json needs valueSchema"):
        spark.read.format(kafka_log).option("valueFormat", "json").load(str(tmp_path)).collect()
    with pytest.raises(Exception, match="cannot be reached"):
        (
            spark.read.format(kafka_log)
            .option("valueFormat", "avro")
            .option("schemaRegistry", "http://127.0.0.1:9")
            .load(str(tmp_path))
            .collect()
        )


def test_parse_values_udf_on_a_binary_column(spark, registry_server):
    docs = [json.dumps(tv.json_order(i)).encode() for i in range(300)] + [None]
    df = spark.createDataFrame([(i, d) for i, d in enumerate(docs)], "offset long, value binary")
    ours = df.select("offset", kbs.parse_values("value", format="json", schema=ORDER_DDL).alias("value"))
    spark_json = df.select("offset", F.from_json(F.col("value").cast("string"), ORDER_DDL).alias("value"))
    assert _rows(ours) == _rows(spark_json)

    registry = tv.sr.SchemaRegistryClient.new_client({"url": "mock://spark-udf"})
    reader = {**tv.ORDER_V1, "fields": [f for f in tv.ORDER_V1["fields"] if f["name"] != "score"]}
    values = tv.confluent_avro(registry, reader, [tv.order(i) for i in range(120)])
    tv._publish(registry, "orders-value")
    avro_df = spark.createDataFrame([(i, v) for i, v in enumerate(values)], "offset long, value binary")
    parsed = avro_df.select(
        "offset", kbs.parse_values("value", format="avro", schema_registry=registry_server).alias("value")
    )
    assert [r["id"] for r in _rows(parsed)] == [f"o{i}" for i in range(120)]
    with_client = avro_df.select(
        "offset", kbs.parse_values("value", format="avro", schema_registry=registry).alias("value")
    )
    assert _rows(with_client) == _rows(parsed), "confluent-kafka's client object, asked on the driver"


def test_json_edge_cases_follow_from_json(spark):
    ddl = "i bigint, s string, d double, t timestamp"
    good = [
        b'{"s": {"x": 1, "y": [true, null, "q\\""]}}',
        b'{"s": [1, "a"]}',
        b'{"s": 5}',
        b'{"s": true, "d": 1}',
        b'{"t": 1714521600}',
        b'{"t": "2024-05-01T12:00:00Z"}',
        b'{"i": null, "extra": {"deep": 1}}',
        b'{"I": 3}',
        b'{"d": "NaN"}',
    ]
    bad = [b'{"i": 1.5}', b'{"i": "5"}', b'{"i": 1e2}', b'{"d": "1.5"}', b'{"i": 9223372036854775808}']
    df = spark.createDataFrame([(i, v) for i, v in enumerate(good + bad)], "offset long, value binary")
    ours = _rows(
        df.select("offset", kbs.parse_values("value", format="json", schema=ddl, on_value_error="null").alias("value"))
    )
    theirs = _rows(df.select("offset", F.from_json(F.col("value").cast("string"), ddl).alias("value")))
    for doc, mine, spark_row in zip(good, ours, theirs, strict=False):
        if spark_row["d"] != spark_row["d"]:  # NaN
            assert mine["d"] != mine["d"], doc
            continue
        assert mine == spark_row, doc
    for doc, mine, spark_row in zip(bad, ours[len(good) :], theirs[len(good) :], strict=True):
        assert mine is None and set(spark_row.values()) == {None}, doc


def test_value_schema_as_a_struct_type_object(spark, kafka_log, json_folder):
    from pyspark.sql.types import ArrayType, LongType, StringType, StructField, StructType

    path, _ = json_folder
    schema = StructType(
        [
            StructField("order_id", StringType()),
            StructField(
                "items", ArrayType(StructType([StructField("sku", StringType()), StructField("n", LongType())]))
            ),
        ]
    )
    # PySpark passes option values as str(value): the StructType's repr
    df = spark.read.format(kafka_log).option("valueFormat", "json").option("valueSchema", schema).load(str(path))
    assert df.schema["value"].dataType == schema
    first = df.orderBy("offset").first()["value"]
    assert first["order_id"] == "o-0" and first["items"] == []


def test_parse_values_through_pandas_as_on_pyspark_40(spark, monkeypatch):
    import pyspark.sql.functions

    monkeypatch.delattr(pyspark.sql.functions, "arrow_udf", raising=False)  # PySpark 4.0 has none
    docs = [json.dumps(tv.json_order(i)).encode() for i in range(50)]
    df = spark.createDataFrame([(i, d) for i, d in enumerate(docs)], "offset long, value binary")
    ours = df.select("offset", kbs.parse_values("value", format="json", schema=ORDER_DDL).alias("value"))
    spark_json = df.select("offset", F.from_json(F.col("value").cast("string"), ORDER_DDL).alias("value"))
    assert _rows(ours) == _rows(spark_json)
    strings = df.select(kbs.parse_values("value", format="string").alias("s")).collect()
    assert [r.s for r in strings] == [d.decode() for d in docs]
