"""Spark end to end: kafkabatch vs aiokafka's Cython reader in a UDF.

One generated log folder (magic-2 topics only: aiokafka's reader misreads
buffers that mix magics), one ``local[2]`` session, four ways to get the
records of Spark's Kafka schema, each into ``count()``, a Parquet write
(to a temporary directory) with Spark's defaults, and the same write with
``spark.sql.parquet.outputTimestampType=TIMESTAMP_MICROS`` (``parquet-micros``:
Spark's default INT96 timestamps are dictionary-encoded 12-byte values, a
good part of its Parquet writing time here):

* ``kafka-log``    - ``spark.read.format("kafka-log").load(folder)``: the JVM source where its jar is
                     loaded (``kafka-log-jvm`` among the methods), else the Python source
* ``kafka-log-python`` - the Python data source by its own name
* ``explode``      - ``binaryFile`` of the ``.log`` files + ``kbs.explode_batches`` (mapInArrow)
* ``aiokafka-udf`` - the baseline people use today: ``binaryFile`` + a scalar ``pandas_udf``
                     returning, per file, ``array<struct<...>>`` of the records decoded with
                     ``aiokafka.record.memory_records.MemoryRecords`` (CRC checked, control
                     batches skipped), then ``explode`` + ``select("r.*")``
* ``aiokafka-map`` - a stronger baseline: ``binaryFile`` + ``mapInPandas`` with the same
                     decoding, one pandas DataFrame of records per file
* ``kafka-log-jvm`` - the JVM data source (``make jvm``'s jar): Java DataSource V2, columnar,
                     over the Rust core through JNI; no Python worker
* ``parquet-copy`` - the same rows as Parquet (written once by ``kafka-log`` with
                     TIMESTAMP_MICROS before the timed rounds): Spark's own columnar reader

Sinks besides those: ``groupby`` (``groupBy(topic).agg(count, sum(length(value)),
max(timestamp))``, collected); ``where3`` (``count()`` of ``WHERE timestamp >= T``, the
newest ~3 % of records: a filter the sources may push), ``where-empty`` (the same with
``T`` after every record: what Spark spends on a query that reads nothing) and
``where-unpushed`` (the 3 % written ``CAST(timestamp AS long) >= T``, which no source
can push: every record read). ``(where3 - where-empty) / (where-unpushed - where-empty)``
is the pushed read's cost against the full one's. The JVM source against the Python
one and Parquet::

    .venv/bin/python benches/bench_spark.py --only kafka-log-jvm,kafka-log-python,parquet-copy \
        --sinks count,groupby,where3,where-empty,where-unpushed,parquet-micros

The runs are interleaved (every method and sink once per round, so load
changes hit all of them alike; the methods in rotating order, since the job
after another method's heaviest one pays for its leftovers); one warm-up
round, then the median of ``--repeat`` rounds (a multiple of the number of
methods puts each first equally often)::

    .venv/bin/python benches/bench_spark.py [--folder DIR] [--size 192MB] [--repeat 3] [--json OUT]
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _spark import ensure_folder, spark_session


def loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def topic_partition(path: str):
    """(topic, partition) from a ``<topic>-<partition>/<file>`` path, else (None, None)."""
    import re

    m = re.search(r"([^/]+)-(\d+)/[^/]*$", path)
    return (m.group(1), int(m.group(2))) if m else (None, None)


def aiokafka_batches(content, path: str):
    """The data batches of one file read by aiokafka's Cython reader, each
    CRC-checked (control batches skipped), for both aiokafka baselines."""
    from aiokafka.record.memory_records import MemoryRecords

    records = MemoryRecords(bytes(content))
    while records.has_next():
        batch = records.next_batch()
        if batch is None:
            break
        if not batch.validate_crc():
            raise ValueError(f"CRC mismatch in {path} at offset {batch.base_offset}")
        if not batch.is_control_batch:
            yield batch


def aiokafka_decode(pdfs):
    """mapInPandas body: (path, content) rows -> one row per record, Spark's Kafka schema."""
    import pandas as pd

    for pdf in pdfs:
        for path, content in zip(pdf["path"], pdf["content"]):
            topic, partition = topic_partition(path)
            keys, values, offsets, timestamps, ts_types, headers = [], [], [], [], [], []
            for batch in aiokafka_batches(content, path):
                ts_type = batch.timestamp_type
                for r in batch:
                    keys.append(r.key)
                    values.append(r.value)
                    offsets.append(r.offset)
                    timestamps.append(r.timestamp)
                    ts_types.append(ts_type)
                    headers.append([{"key": k, "value": v} for k, v in r.headers])
            n = len(offsets)
            if n == 0:
                continue
            yield pd.DataFrame(
                {
                    "key": keys,
                    "value": values,
                    "topic": [topic] * n,
                    "partition": pd.Series([partition] * n, dtype="int32"),
                    "offset": pd.Series(offsets, dtype="int64"),
                    "timestamp": pd.to_datetime(pd.Series(timestamps, dtype="int64"), unit="ms"),
                    "timestampType": pd.Series(ts_types, dtype="int32"),
                    "headers": headers,
                }
            )


def aiokafka_udf():
    """The baseline people use today: a scalar ``pandas_udf`` over
    (content, path) returning, per file, an array of Kafka-schema structs
    decoded with aiokafka's Cython reader; then ``explode`` + ``select("r.*")``."""
    import pandas as pd
    from pyspark.sql.functions import pandas_udf
    from pyspark.sql.types import ArrayType

    import kafkabatch.spark as kbs

    @pandas_udf(ArrayType(kbs.KAFKA_SCHEMA))  # type: ignore[call-overload]
    def decode_kafka(content: pd.Series, path: pd.Series) -> pd.Series:
        import datetime as dt

        epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
        out = []
        for data, file in zip(content, path):
            topic, partition = topic_partition(file)
            rows = []
            for batch in aiokafka_batches(data, file):
                ts_type = batch.timestamp_type
                for r in batch:
                    rows.append(
                        {
                            "key": r.key,
                            "value": r.value,
                            "topic": topic,
                            "partition": partition,
                            "offset": r.offset,
                            "timestamp": epoch + dt.timedelta(milliseconds=r.timestamp),
                            "timestampType": ts_type,
                            "headers": [{"key": k, "value": v} for k, v in r.headers],
                        }
                    )
            out.append(rows)
        return pd.Series(out, index=content.index)

    return decode_kafka


def parquet_rows(folder: Path) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(f).metadata.num_rows for f in folder.glob("*.parquet"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--folder",
        type=Path,
        default=Path(tempfile.gettempdir()) / "kafkabatch-bench-spark",
        help="log folder (generated with magic-2 topics if missing or empty)",
    )
    p.add_argument("--size", default="192MB", help="size to generate when the folder is missing")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=3, help="timed runs after one warm-up (median reported)")
    p.add_argument("--only", default="kafka-log,explode,aiokafka-udf,aiokafka-map", help="comma-separated methods")
    p.add_argument(
        "--sinks",
        default="count,parquet,parquet-micros",
        help="comma-separated: count, groupby, where3, where-empty, where-unpushed, parquet, parquet-micros",
    )
    p.add_argument("--json", type=Path, help="write the results as JSON here")
    p.add_argument(
        "--transfer",
        choices=["zero-copy", "ipc"],
        default="zero-copy",
        help="how kafka-log-jvm's batches cross into the JVM (spark.kafkabatch.arrowTransfer)",
    )
    args = p.parse_args()

    ensure_folder(args.folder, args.size, args.seed)
    logs = sorted(args.folder.glob("*/*.log"))
    total = sum(f.stat().st_size for f in logs)
    print(f"folder {args.folder}: {len(logs)} segments, {total / 1e6:.1f} MB; load {loadavg()}", flush=True)

    from pyspark.sql import functions as F

    import kafkabatch.spark as kbs

    conf = {"spark.driver.memory": "4g", "spark.sql.sources.binaryFile.maxLength": str(2**31 - 1)}
    if "kafka-log-jvm" in args.only.split(","):
        conf["spark.jars"] = kbs.jar_path()
        conf["spark.kafkabatch.arrowTransfer"] = args.transfer
    spark = spark_session("kafkabatch-bench-spark", conf=conf, log_level="WARN")
    folder = str(args.folder)
    decode_udf = aiokafka_udf()

    def binary():
        return (
            spark.read.format("binaryFile")
            .option("pathGlobFilter", "*.log")
            .option("recursiveFileLookup", "true")
            .load(folder)
        )

    methods = {
        "kafka-log": lambda: spark.read.format("kafka-log").load(folder),
        "explode": lambda: kbs.explode_batches(binary(), "content", path_column="path"),
        # every core in every task: the default before tasks decoded on spark.task.cpus threads
        "kafka-log-python": lambda: spark.read.format("kafka-log-python").load(folder),
        "kafka-log-allcores": lambda: (
            spark.read.format("kafka-log-python").option("threads", os.cpu_count()).load(folder)
        ),
        "explode-allcores": lambda: kbs.explode_batches(
            binary(), "content", path_column="path", threads=os.cpu_count()
        ),
        "aiokafka-udf": lambda: binary().select(F.explode(decode_udf("content", "path")).alias("r")).select("r.*"),
        "aiokafka-map": lambda: binary().select("path", "content").mapInPandas(aiokafka_decode, kbs.KAFKA_SCHEMA),
        "kafka-log-jvm": lambda: spark.read.format("kafka-log-jvm").load(folder),
        "parquet-copy": lambda: spark.read.parquet(str(parquet_copy)),
    }
    out_root = Path(tempfile.mkdtemp(prefix="kb-bench-spark-"))
    parquet_copy = out_root / "copy"
    if "parquet-copy" in args.only.split(","):
        spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        spark.read.format("kafka-log").load(folder).write.parquet(str(parquet_copy))
        spark.conf.unset("spark.sql.parquet.outputTimestampType")
    # "aiokafka" was the mapInPandas baseline's name before aiokafka-udf was added
    names = ["aiokafka-map" if name == "aiokafka" else name for name in args.only.split(",")]
    unknown = sorted(set(names) - set(methods))
    if unknown:
        p.error(f"unknown method(s) {', '.join(unknown)}; the methods are {', '.join(methods)}")
    if any(sink.startswith("where") for sink in args.sinks.split(",")):
        # the newest ~3 % of records, and a time after every record
        t3, last = (
            methods[names[0]]().agg(F.percentile_approx("timestamp", 0.97, 10_000), F.max("timestamp")).collect()[0]
        )
        after = last + datetime.timedelta(seconds=1)
        wheres = {
            "where3": F.col("timestamp") >= F.lit(t3),
            "where-empty": F.col("timestamp") >= F.lit(after),
            "where-unpushed": F.col("timestamp").cast("long") >= F.lit(int(t3.timestamp())),
        }
    cases = [(name, sink) for name in names for sink in args.sinks.split(",")]
    times: dict[tuple[str, str], list[float]] = {case: [] for case in cases}
    rows: dict[tuple[str, str], int | None] = {case: None for case in cases}
    try:
        for i in range(args.repeat + 1):
            # Methods in rotating order: whatever runs right after another method's
            # heaviest job (Python workers, GC) pays for it, so it must not always be the same one.
            shift = i % len(names)
            rotated = names[shift:] + names[:shift]
            for name, sink in sorted(cases, key=lambda case: rotated.index(case[0])):
                df = methods[name]()
                t0 = time.perf_counter()
                if sink == "count":
                    rows[(name, sink)] = df.count()
                elif sink == "groupby":
                    agg = df.groupBy("topic").agg(F.count("*"), F.sum(F.length("value")), F.max("timestamp"))
                    rows[(name, sink)] = sum(r[1] for r in agg.collect())
                elif sink.startswith("where"):
                    rows[(name, sink)] = df.where(wheres[sink]).count()
                else:
                    out = out_root / f"{name}-{i}"
                    if sink == "parquet-micros":
                        spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
                    try:
                        df.write.mode("overwrite").parquet(str(out))
                    finally:
                        spark.conf.unset("spark.sql.parquet.outputTimestampType")
                dt = time.perf_counter() - t0
                if sink.startswith("parquet"):
                    rows[(name, sink)] = parquet_rows(out)
                    shutil.rmtree(out, ignore_errors=True)
                if i:
                    times[(name, sink)].append(dt)
                print(
                    f"  {name:<12} {sink:<14} round {i} {dt:7.2f} s{'' if i else ' (warm-up)'} load {loadavg()}",
                    flush=True,
                )
    finally:
        shutil.rmtree(out_root, ignore_errors=True)
        spark.stop()

    results = [
        {
            "method": name,
            "sink": sink,
            "times": times[(name, sink)],
            "median": statistics.median(times[(name, sink)]),
            "rows": rows[(name, sink)],
        }
        for name, sink in cases
    ]
    for sink in args.sinks.split(","):
        counts = {r["rows"] for r in results if r["rows"] is not None and r["sink"] == sink}
        if len(counts) > 1:
            print(f"ROW COUNTS DIFFER ({sink}): {sorted(counts)}", file=sys.stderr)
    med = {(r["method"], r["sink"]): r["median"] for r in results}
    print(
        f"\n{total / 1e6:.1f} MB, {len(logs)} segments, local[2]; median of {args.repeat} interleaved rounds "
        f"after a warm-up round; load after: {loadavg()}\n"
    )
    bases = ("aiokafka-udf", "aiokafka-map", "parquet-copy")
    print("| method | sink | median s | MB/s | rows | " + " | ".join(f"vs {b}" for b in bases) + " |")
    print("|---|---|---:|---:|---:|" + "---:|" * len(bases))
    for r in results:
        ratios = []
        for base_name in bases:
            base = med.get((base_name, r["sink"]))
            ratios.append(f"{base / r['median']:.2f}x" if base else "-")
        n = f"{r['rows']:,}" if r["rows"] is not None else "-"
        print(
            f"| {r['method']} | {r['sink']} | {r['median']:.2f} | {total / 1e6 / r['median']:.1f} | {n} | "
            f"{' | '.join(ratios)} |"
        )
    for name in names:
        w = [med.get((name, sink)) for sink in ("where3", "where-empty", "where-unpushed")]
        if None not in w and w[2] > w[1]:
            print(f"{name}: pushed 3 % above the empty query / unpushed above it: {(w[0] - w[1]) / (w[2] - w[1]):.3f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "folder": folder,
                    "bytes": total,
                    "segments": len(logs),
                    "python": platform.python_version(),
                    "results": results,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
