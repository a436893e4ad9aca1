"""``python -m kafkabatch.demo``: Kafka log folder → Spark → Parquet, end to end.

Generates a sample broker log dir (several topics and partitions, mixed
codecs, transactions) with :func:`kafkabatch.generate.generate`, reads it
with the ``kafka-log`` Spark data source in local mode, writes Parquet
partitioned by topic, and prints a summary::

    python -m kafkabatch.demo                      # ./demo-output, 64 MB of log
    python -m kafkabatch.demo --size 1GB --master 'local[4]' --out /tmp/kb-demo
    python -m kafkabatch.demo --logs /var/lib/kafka/data   # read an existing log dir instead

``make demo`` runs it from a fresh clone. Needs Java 17+ for Spark.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from kafkabatch._util import format_bytes, size_arg
from kafkabatch.log.listing import list_segments, open_segment

_MARKER = ".kafkabatch-demo"


#: The generated orders' JSON, as Spark DDL (see kafkabatch.generate).
ORDERS_SCHEMA = (
    "order_id string, customer_id string, created_at timestamp, status string, channel string, currency string, "
    "items array<struct<sku: string, name: string, qty: bigint, unit_price: double>>, total double, "
    "shipping struct<method: string, country: string, city: string, postcode: string>, coupon string, note string"
)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m kafkabatch.demo",
        description="Generate a sample Kafka log dir, read it with Spark's kafka-log data source, "
        "write Parquet partitioned by topic, and summarise.",
    )
    p.add_argument(
        "--out",
        default="demo-output",
        metavar="DIR",
        help="output folder: DIR/logs (generated log dir) and DIR/parquet (default: ./demo-output)",
    )
    p.add_argument(
        "--size",
        type=size_arg,
        default=64 << 20,
        metavar="SIZE",
        help="how much log to generate (default 64MB; k/m/g are powers of 1024)",
    )
    p.add_argument("--master", default="local[*]", help="Spark master (default: local[*])")
    p.add_argument("--logs", metavar="DIR", help="read this existing log dir instead of generating one")
    return p


def _prepare_out(out: Path, generating: bool) -> tuple[Path, Path]:
    """DIR/logs and DIR/parquet, clearing what an earlier demo run left there
    (only in a folder this demo created: it leaves a marker file)."""
    if out.exists() and any(out.iterdir()) and not (out / _MARKER).exists():
        raise SystemExit(f"demo: {out} exists and wasn't made by this demo; pass --out with a new or empty folder")
    out.mkdir(parents=True, exist_ok=True)
    (out / _MARKER).write_text("made by python -m kafkabatch.demo; its logs/ and parquet/ are replaced on each run\n")
    logs, parquet = out / "logs", out / "parquet"
    for folder in ([logs] if generating else []) + [parquet]:
        if folder.exists():
            shutil.rmtree(folder)
    return logs, parquet


def _check_java() -> None:
    if os.environ.get("JAVA_HOME") or shutil.which("java"):
        return
    raise SystemExit("demo: Spark needs Java 17 or later: install a JDK (or set JAVA_HOME) and try again")


def _read_committed_available() -> bool:
    import kafkabatch as kb

    try:
        kb.decode(b"", isolation="read_committed")
    except (NotImplementedError, TypeError, ValueError):
        return False
    return True


def _log_facts(logs: Path) -> dict[str, dict[str, Any]]:
    """Per topic, from batch headers only (no decompression): codecs by
    batch count, partitions, bytes."""

    facts: dict[str, dict[str, Any]] = defaultdict(lambda: {"codecs": Counter(), "bytes": 0, "partitions": set()})
    for seg in list_segments(logs):
        f = facts[seg.topic]
        f["bytes"] += seg.size
        f["partitions"].add(seg.partition)
        if not seg.size:
            continue
        source = open_segment(seg)
        try:
            _count_batches(source.read(0, source.size), f)
        finally:
            source.close()
    return facts


def _count_batches(data: Any, f: dict[str, Any]) -> None:
    import kafkabatch as kb

    for batch in kb.iter_batches(data, validate_crc=False, on_error="keep"):
        if batch.error is None and not batch.is_control:
            f["codecs"][batch.compression] += 1


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    _check_java()

    from rich.console import Console
    from rich.table import Table

    console = Console(stderr=False, width=None if sys.stdout.isatty() else 140)
    out = Path(args.out).absolute()
    logs, parquet = _prepare_out(out, generating=args.logs is None)

    t0 = time.perf_counter()
    if args.logs is None:
        try:
            from kafkabatch.generate import generate
        except ImportError as e:
            if e.name == "kafkabatch.generate":
                raise SystemExit(
                    "demo: this kafkabatch has no data generator (kafkabatch.generate); "
                    "pass --logs DIR to read an existing Kafka log dir"
                ) from None
            raise
        console.print(f"[bold]1/4[/] generating about {format_bytes(args.size)} of Kafka log in {logs} ...")
        generate(str(logs), size=args.size, seed=0)
    else:
        logs = Path(args.logs).absolute()
        console.print(f"[bold]1/4[/] reading the existing log dir {logs}")
    t_gen = time.perf_counter() - t0
    facts = _log_facts(logs)
    log_bytes = sum(f["bytes"] for f in facts.values())

    console.print(f"[bold]2/4[/] starting Spark ({args.master}) ...")
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import kafkabatch.spark as kbs

    spark = (
        SparkSession.builder.master(args.master)
        .appName("kafkabatch-demo")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        kbs.register(spark)
        committed = _read_committed_available()
        isolation = "read_committed" if committed else "read_uncommitted"
        reader = spark.read.format("kafka-log").option("isolation", isolation)
        df = reader.load(str(logs))
        parts = df.rdd.getNumPartitions()

        console.print(
            f"[bold]3/4[/] decoding {format_bytes(log_bytes)} in {parts} Spark tasks ({isolation}) "
            f"→ Parquet partitioned by topic ..."
        )
        t1 = time.perf_counter()
        df.write.mode("overwrite").partitionBy("topic").parquet(str(parquet))
        t_write = time.perf_counter() - t1

        console.print("[bold]4/4[/] summarising ...")
        written = spark.read.parquet(str(parquet))
        summary = {
            r["topic"]: r
            for r in written.groupBy("topic")
            .agg(
                F.count(F.lit(1)).alias("records"),
                F.countDistinct("partition").alias("partitions"),
                F.date_format(F.min("timestamp"), "yyyy-MM-dd HH:mm:ss").alias("first"),
                F.date_format(F.max("timestamp"), "yyyy-MM-dd HH:mm:ss").alias("last"),
            )
            .collect()
        }
        # Typed values: the orders' JSON parsed into columns in the Rust core as they are read.
        orders = (
            spark.read.format("kafka-log")
            .option("isolation", isolation)
            .option("valueFormat", "json")
            .option("valueSchema", ORDERS_SCHEMA)
            .load(str(logs / "orders-*"))
        )
        by_status = (
            orders.groupBy(F.col("value.status").alias("status"))
            .agg(F.count(F.lit(1)).alias("orders"), F.round(F.sum("value.total"), 2).alias("total"))
            .orderBy(F.desc("orders"))
            .collect()
        )
        hidden: dict[str, int] = {}
        if committed:
            everything = spark.read.format("kafka-log").load(str(logs)).groupBy("topic").count().collect()
            hidden = {
                r["topic"]: r["count"] - (summary[r["topic"]]["records"] if r["topic"] in summary else 0)
                for r in everything
            }
    finally:
        spark.stop()

    table = Table(title="Kafka log → Parquet, by topic", show_lines=False)
    for column, justify in (
        ("topic", "left"),
        ("parts", "right"),
        ("records", "right"),
        ("hidden", "right"),
        ("codecs", "left"),
        ("first (UTC)", "left"),
        ("last (UTC)", "left"),
        ("log", "right"),
    ):
        table.add_column(column, justify=justify, overflow="fold")  # type: ignore[arg-type]
    topics = sorted(set(facts) | set(summary))
    total_records = 0
    for topic in topics:
        row = summary.get(topic)
        f = facts.get(topic, {"codecs": Counter(), "bytes": 0, "partitions": set()})
        records = row["records"] if row else 0
        total_records += records
        codecs = ", ".join(f"{c} {n}" for c, n in f["codecs"].most_common()) or "-"
        table.add_row(
            topic,
            str(row["partitions"] if row else len(f["partitions"])),
            f"{records:,}",
            f"{hidden.get(topic, 0):,}" if committed else "n/a",
            codecs,
            str(row["first"]) if row else "-",
            str(row["last"]) if row else "-",
            format_bytes(f["bytes"]),
        )
    console.print(table)
    speed = log_bytes / t_write / (1 << 20) if t_write > 0 else float("inf")
    if args.logs is None:
        console.print(f"generated {format_bytes(log_bytes)} of log in {t_gen:.1f}s")
    console.print(
        f"Spark read + Parquet write: {total_records:,} records, {format_bytes(log_bytes)} of log in "
        f"{t_write:.1f}s ({speed:.0f} MiB/s, {args.master})"
    )
    if committed:
        console.print(
            "records: what a read_committed consumer sees; hidden: records of aborted or still-open "
            "transactions; codecs: batches per codec"
        )
    if by_status:
        statuses = Table(title="orders by status (valueFormat=json: the JSON parsed as it is read)")
        for column, justify in (("status", "left"), ("orders", "right"), ("total", "right")):
            statuses.add_column(column, justify=justify)  # type: ignore[arg-type]
        for r in by_status:
            statuses.add_row(str(r["status"]), f"{r['orders']:,}", f"{r['total']:,.2f}")
        console.print(statuses)
    console.print(f"[bold]Parquet:[/] {parquet}")
    console.print(f"  spark.read.parquet({str(parquet)!r}).where(\"topic = '{topics[0] if topics else 'orders'}'\")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
