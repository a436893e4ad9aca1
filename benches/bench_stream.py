"""Streaming vs batch: ``readStream`` with ``Trigger.AvailableNow`` against
``spark.read`` of the same folder, both into Parquet.

One generated log folder (``kafkabatch.generate``, magic-2 topics, about
``--size``), one ``local[2]`` session, three ways to write every record to
Parquet (to a fresh directory and, for streams, a fresh checkpoint, each run):

* ``batch``         - ``spark.read.format("kafka-log").load(folder).write.parquet(out)``
* ``stream``        - ``spark.readStream.format("kafka-log").load(folder)`` with
                      ``trigger(availableNow=True)`` into a Parquet sink: one micro-batch
* ``stream-limited``- the same with ``maxOffsetsPerTrigger`` = a quarter of the records:
                      about four micro-batches (each planned from the driver's header walk)

The runs are interleaved (one of each per round, in rotating order), after a
warm-up round; the medians of ``--repeat`` rounds and the ratios to
``batch`` are printed (target: the stream within 1.3x of the batch read)::

    .venv/bin/python benches/bench_stream.py [--folder DIR] [--size 200MB] [--repeat 3] [--json OUT]
"""

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _spark import ensure_folder, log_bytes, spark_session  # the Spark bench's folder and session


def parquet_rows(folder: Path) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(f).metadata.num_rows for f in folder.glob("*.parquet"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()) / "kafkabatch-bench-stream")
    parser.add_argument("--size", default="200MB")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    ensure_folder(args.folder, args.size, args.seed)

    folder_bytes = log_bytes(args.folder)
    spark = spark_session("kafkabatch-bench-stream", conf={"spark.driver.memory": "4g"})
    records = spark.read.format("kafka-log").load(str(args.folder)).count()
    work = Path(tempfile.mkdtemp(prefix="kafkabatch-bench-stream-"))

    def batch(out: Path) -> float | None:
        spark.read.format("kafka-log").load(str(args.folder)).write.mode("overwrite").parquet(str(out))
        return None

    def stream(out: Path, **options: object) -> float | None:
        reader = spark.readStream.format("kafka-log")
        for name, value in options.items():
            reader = reader.option(name, value)
        query = (
            reader.load(str(args.folder))
            .writeStream.format("parquet")
            .option("checkpointLocation", str(out) + "-checkpoint")
            .trigger(availableNow=True)
            .start(str(out))
        )
        query.awaitTermination()
        if query.exception() is not None:
            raise query.exception()
        # time inside micro-batches (planning, reading, writing, the offset/commit logs),
        # without the query's start and stop
        return sum(p["durationMs"].get("triggerExecution", 0) for p in query.recentProgress) / 1000

    methods = {
        "batch": batch,
        "stream": stream,
        "stream-limited": lambda out: stream(out, maxOffsetsPerTrigger=max(1, records // 4)),
    }
    names = list(methods)
    times: dict[str, list[float]] = {name: [] for name in names}
    inside: dict[str, list[float]] = {name: [] for name in names}
    try:
        for round_ in range(args.repeat + 1):
            order = names[round_ % len(names) :] + names[: round_ % len(names)]
            for name in order:
                out = work / f"{name}-{round_}"
                start = time.perf_counter()
                in_batches = methods[name](out)
                elapsed = time.perf_counter() - start
                rows = parquet_rows(out)
                if rows != records:
                    raise SystemExit(f"{name}: {rows} rows in Parquet, expected {records}")
                shutil.rmtree(out, ignore_errors=True)
                shutil.rmtree(str(out) + "-checkpoint", ignore_errors=True)
                if round_:  # round 0 warms up
                    times[name].append(elapsed)
                    inside[name].append(elapsed if in_batches is None else in_batches)
                print(f"round {round_} {name}: {elapsed:.2f} s", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        spark.stop()

    medians = {name: statistics.median(t) for name, t in times.items()}
    in_medians = {name: statistics.median(t) for name, t in inside.items()}
    print(f"{folder_bytes / 1e6:.0f} MB of segments, {records:,} records, local[2], median of {args.repeat} runs")
    for name in names:
        ratio = medians[name] / medians["batch"]
        print(
            f"  {name:15s} {medians[name]:6.2f} s  {folder_bytes / 1e6 / medians[name]:6.1f} MB/s  "
            f"{ratio:4.2f}x batch   (in micro-batches: {in_medians[name]:5.2f} s, "
            f"{in_medians[name] / medians['batch']:4.2f}x batch)"
        )
    if args.json:
        args.json.write_text(
            json.dumps(
                {"bytes": folder_bytes, "records": records, "seconds": times, "medians": medians, "inside": inside},
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
