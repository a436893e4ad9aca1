"""Typed values (issue 16): parsing in the core against what people do today.

The ``orders`` topic of a generated log folder (realistic JSON documents:
nested shipping struct, an items array, nullable coupon and note), decoded
and parsed into typed Arrow columns four ways, and the same records as
Confluent-framed Avro (fastavro's ``schemaless_writer`` behind the 5-byte
prefix, as confluent-kafka's ``AvroSerializer`` writes them):

* ``json``             - ``kb.decode(data, value_format="json", value_schema=ORDERS)``
* ``decode+polars``    - ``kb.decode(data)``, then polars ``str.json_decode(dtype)`` on the value column
* ``decode+json.loads``- ``kb.decode(data)``, ``json.loads`` per value, ``pa.array(rows, ORDERS)``
* ``json threads=1``   - the first, on one thread (MB/s of JSON values per core)
* ``json threads=1, back to back`` - the same, called three times in a row (as a Spark task reads
                         file after file); the time of one call
* ``decode+duckdb``    - ``kb.decode(data)``, then DuckDB ``json_transform(decode(value), '<T>')`` over the
                         Arrow table, fetched as Arrow (DuckDB's default threads)
* ``decode+pyarrow.json`` - ``kb.decode(data)``, values joined by newlines, ``pyarrow.json.read_json``
                         with the schema
* the same JSON rows on a flat 10-field record of numbers and short strings (``flat ...``)
* ``avro``             - ``kb.decode(data, value_format="avro", schema_registry={1: schema})``
* ``decode+fastavro``  - ``kb.decode(data)``, fastavro ``schemaless_reader`` per value (dicts, no Arrow)
* ``spark``            - ``kafka-log`` with ``valueFormat=json`` → Parquet, against ``kafka-log`` +
                         ``from_json`` → Parquet, the same two into an aggregate (revenue per
                         status and channel), and the binary read → Parquet (``--spark``; local[2])

Every method runs once per round, rounds interleaved; the median of
``--repeat`` rounds after a warm-up::

    .venv/bin/python benches/bench_values.py [--size 96MB] [--repeat 5] [--spark]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
from _spark import spark_session

import kafkabatch as kb

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

ORDERS_DDL = (
    "order_id string, customer_id string, created_at string, status string, channel string, currency string, "
    "items array<struct<sku: string, name: string, qty: bigint, unit_price: double>>, total double, "
    "shipping struct<method: string, country: string, city: string, postcode: string>, coupon string, note string"
)
ITEM = pa.struct([("sku", pa.string()), ("name", pa.string()), ("qty", pa.int64()), ("unit_price", pa.float64())])
SHIPPING = pa.struct([(n, pa.string()) for n in ("method", "country", "city", "postcode")])
ORDERS = pa.struct(
    [(n, pa.string()) for n in ("order_id", "customer_id", "created_at", "status", "channel", "currency")]
    + [("items", pa.list_(ITEM)), ("total", pa.float64()), ("shipping", SHIPPING)]
    + [("coupon", pa.string()), ("note", pa.string())]
)
ORDERS_AVRO = {
    "type": "record",
    "name": "Order",
    "fields": [
        *({"name": n, "type": "string"} for n in ("order_id", "customer_id", "created_at", "status", "channel")),
        {"name": "currency", "type": "string"},
        {
            "name": "items",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "Item",
                    "fields": [
                        {"name": "sku", "type": "string"},
                        {"name": "name", "type": "string"},
                        {"name": "qty", "type": "long"},
                        {"name": "unit_price", "type": "double"},
                    ],
                },
            },
        },
        {"name": "total", "type": "double"},
        {
            "name": "shipping",
            "type": {
                "type": "record",
                "name": "Shipping",
                "fields": [{"name": n, "type": "string"} for n in ("method", "country", "city", "postcode")],
            },
        },
        {"name": "coupon", "type": ["null", "string"], "default": None},
        {"name": "note", "type": ["null", "string"], "default": None},
    ],
}


def orders_bytes(folder: Path, size: str) -> bytes:
    """Every segment of the generated ``orders`` topic, concatenated."""
    if not folder.exists():
        from kafkabatch.generate import DEFAULT_TOPICS

        kb.generate(
            folder, size=size, seed=16, topics=[t for t in DEFAULT_TOPICS if t.name == "orders"], progress=False
        )
    return b"".join(p.read_bytes() for p in sorted(folder.glob("orders-*/*.log")))


def avro_bytes(values: list[bytes]) -> bytes:
    import fastavro

    parsed = fastavro.parse_schema(ORDERS_AVRO)
    out = []
    for v in values:
        doc = json.loads(v)
        doc.setdefault("note", None)
        buf = io.BytesIO()
        buf.write(b"\0\0\0\0\1")
        fastavro.schemaless_writer(buf, parsed, doc)
        out.append(buf.getvalue())
    return kb.encode([{"value": v} for v in out], compression="lz4", records_per_batch=500)


FLAT = pa.struct(
    [(n, pa.int64()) for n in ("id", "user", "ts")]
    + [("score", pa.float64()), ("price", pa.float64()), ("qty", pa.int64())]
    + [(n, pa.string()) for n in ("country", "event", "device")]
    + [("rank", pa.int64())]
)


def flat_bytes(rows: int) -> bytes:
    """`rows` flat records (numbers and short strings) as JSON values, lz4 batches."""
    import random

    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "delta", "eu-west", "ok", "FR", "click", "view", "buy"]
    values = [
        json.dumps(
            {
                "id": i,
                "user": rng.randrange(10**9),
                "ts": 1714521600000 + i * 37,
                "score": round(rng.random() * 100, 3),
                "price": round(rng.random() * 1000, 2),
                "qty": rng.randrange(100),
                "country": rng.choice(words),
                "event": rng.choice(words),
                "device": f"d{rng.randrange(1000)}",
                "rank": rng.randrange(10**6),
            }
        ).encode()
        for i in range(rows)
    ]
    return kb.encode([{"value": v} for v in values], compression="lz4", records_per_batch=500)


def duckdb_structure(t: pa.DataType) -> object:
    """`t` as a json_transform structure."""
    if pa.types.is_struct(t):
        return {f.name: duckdb_structure(f.type) for f in t}
    if pa.types.is_list(t):
        return [duckdb_structure(t.value_type)]
    return {pa.string(): "VARCHAR", pa.int64(): "BIGINT", pa.float64(): "DOUBLE"}[t]


#: Calls in a row of the ``back to back`` rows (their time is divided by this).
BACK_TO_BACK = 3


def json_peers(name: str, data: bytes, schema: pa.DataType) -> dict:
    """kafkabatch's typed JSON against DuckDB's json_transform and pyarrow.json on the same values."""
    import duckdb
    import pyarrow.json as paj

    structure = json.dumps(duckdb_structure(schema))
    arrow_schema = pa.schema(list(schema))

    def decode_duckdb():
        records = kb.decode(data)  # noqa: F841 (read by DuckDB's replacement scan)
        con = duckdb.connect()
        out = con.sql(f"select json_transform(decode(value), '{structure}') as value from records").arrow()
        return out.num_rows if isinstance(out, pa.Table) else out.read_all().num_rows

    def decode_pyarrow_json():
        values = kb.decode(data).column("value").combine_chunks()
        text = b"\n".join(v.as_py() for v in values)
        return paj.read_json(io.BytesIO(text), parse_options=paj.ParseOptions(explicit_schema=arrow_schema)).num_rows

    return {
        f"{name}json": lambda: kb.decode(data, value_format="json", value_schema=schema).num_rows,
        f"{name}json threads=1": lambda: kb.decode(data, value_format="json", value_schema=schema, threads=1).num_rows,
        f"{name}json threads=1, back to back": lambda: [
            kb.decode(data, value_format="json", value_schema=schema, threads=1).num_rows for _ in range(BACK_TO_BACK)
        ][0],
        f"{name}decode+duckdb": decode_duckdb,
        f"{name}decode+pyarrow.json": decode_pyarrow_json,
        f"{name}decode only": lambda: kb.decode(data).num_rows,
    }


def python_methods(json_data: bytes, avro_data: bytes) -> dict:
    import fastavro
    import polars as pl

    polars_type = pl.from_arrow(pa.array([], ORDERS)).dtype
    registry = {1: json.dumps(ORDERS_AVRO)}
    parsed_avro = fastavro.parse_schema(ORDERS_AVRO)

    def decode_polars():
        values = pl.from_arrow(kb.decode(json_data).column("value")).cast(pl.Utf8)
        return values.str.json_decode(polars_type).len()

    def decode_json_loads():
        values = kb.decode(json_data).column("value").to_pylist()
        return len(pa.array([json.loads(v) for v in values], ORDERS))

    def decode_fastavro():
        values = kb.decode(avro_data).column("value").to_pylist()
        return len([fastavro.schemaless_reader(io.BytesIO(v[5:]), parsed_avro, None) for v in values])

    return {
        "json": lambda: kb.decode(json_data, value_format="json", value_schema=ORDERS).num_rows,
        "decode+polars": decode_polars,
        "decode+json.loads": decode_json_loads,
        "avro": lambda: kb.decode(avro_data, value_format="avro", schema_registry=registry).num_rows,
        "decode+fastavro": decode_fastavro,
    }


def spark_methods(folder: Path, out: Path) -> dict:
    from pyspark.sql import functions as F

    spark = spark_session("kafkabatch-bench-values")

    def typed():
        df = spark.read.format("kafka-log").option("valueFormat", "json").option("valueSchema", ORDERS_DDL)
        df.load(str(folder)).write.mode("overwrite").parquet(str(out / "typed"))

    def typed_df():
        df = spark.read.format("kafka-log").option("valueFormat", "json").option("valueSchema", ORDERS_DDL)
        return df.load(str(folder))

    def from_json_df():
        df = spark.read.format("kafka-log").load(str(folder))
        return df.withColumn("value", F.from_json(F.col("value").cast("string"), ORDERS_DDL))

    def aggregate(df):
        # Revenue per status and channel: reads the parsed fields, writes nothing.
        df.groupBy("value.status", "value.channel").agg(F.sum("value.total"), F.count("*")).collect()

    return {
        "spark valueFormat=json": lambda: typed_df().write.mode("overwrite").parquet(str(out / "typed")),
        "spark from_json": lambda: from_json_df().write.mode("overwrite").parquet(str(out / "from_json")),
        "spark binary": lambda: (
            spark.read.format("kafka-log").load(str(folder)).write.mode("overwrite").parquet(str(out / "binary"))
        ),
        "spark agg valueFormat=json": lambda: aggregate(typed_df()),
        "spark agg from_json": lambda: aggregate(from_json_df()),
    }


def run(methods: dict, repeat: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in methods}
    for round_ in range(repeat + 1):
        for name, method in methods.items():
            t0 = time.perf_counter()
            method()
            if round_:  # round 0 warms up
                times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(t) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folder", type=Path, help="a generated folder to reuse (default: a temporary one)")
    parser.add_argument("--size", default="96MB", help="generated size of the orders topic")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--spark", action="store_true", help="also time the Spark jobs (local[2])")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-values-"))
    try:
        folder = args.folder or tmp / "logs"
        json_data = orders_bytes(folder, args.size)
        records = kb.decode(json_data)
        avro_data = avro_bytes(records.column("value").to_pylist())
        print(
            f"# {records.num_rows} orders, {len(json_data) / 2**20:.1f} MiB of JSON batches, "
            f"{len(avro_data) / 2**20:.1f} MiB as Confluent Avro; {platform.machine()}, {os.cpu_count()} cores, "
            f"load {os.getloadavg()[0]:.2f}"
        )
        flat_data = flat_bytes(200_000)
        flat_records = kb.decode(flat_data)
        sizes = {
            "": (records.num_rows, sum(len(v) for v in records.column("value").to_pylist())),
            "flat ": (flat_records.num_rows, sum(len(v) for v in flat_records.column("value").to_pylist())),
        }
        methods = python_methods(json_data, avro_data)
        methods.update(json_peers("", json_data, ORDERS))
        methods.update(json_peers("flat ", flat_data, FLAT))
        medians = run(methods, args.repeat)
        for name in medians:
            if name.endswith("back to back"):
                medians[name] /= BACK_TO_BACK
        rows = records.num_rows
        print(f"{'method':34} {'median s':>9} {'MB/s':>8}  ratio (JSON values: MB of value bytes)")
        for prefix, (n, size) in sizes.items():
            base = medians[f"{prefix}json"]
            peers = ("json", "json threads=1", "json threads=1, back to back", "decode+duckdb", "decode+pyarrow.json")
            for peer in (*peers, "decode only"):
                name = f"{prefix}{peer}"
                ratio = "" if peer == "json" else f"{medians[name] / base:.2f}x the time of {prefix}json"
                print(f"{name:34} {medians[name]:9.3f} {size / medians[name] / 1e6:8.0f}  {ratio}  ({n} rows)")
        print(f"{'method':24} {'median s':>9} {'M rec/s':>8}  ratio")
        for name, base in (("json", None), ("decode+polars", "json"), ("decode+json.loads", "json")):
            ratio = "" if base is None else f"{medians[name] / medians[base]:.1f}x slower than json"
            print(f"{name:24} {medians[name]:9.3f} {rows / medians[name] / 1e6:8.2f}  {ratio}")
        for name, base in (("avro", None), ("decode+fastavro", "avro")):
            ratio = "" if base is None else f"{medians[name] / medians[base]:.1f}x slower than avro"
            print(f"{name:24} {medians[name]:9.3f} {rows / medians[name] / 1e6:8.2f}  {ratio}")
        if args.spark:
            spark = run(spark_methods(folder, tmp / "out"), max(3, args.repeat // 2))
            for sink in ("", "agg "):
                typed, baseline = spark[f"spark {sink}valueFormat=json"], spark[f"spark {sink}from_json"]
                print(f"{f'spark {sink}valueFormat=json':28} {typed:9.3f} {rows / typed / 1e6:8.2f}")
                print(
                    f"{f'spark {sink}from_json':28} {baseline:9.3f} {rows / baseline / 1e6:8.2f}"
                    f"  {baseline / typed:.2f}x the time of valueFormat=json"
                )
            binary = spark["spark binary"]
            print(f"{'spark binary (no parse)':28} {binary:9.3f} {rows / binary / 1e6:8.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
