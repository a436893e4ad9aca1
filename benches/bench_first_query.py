"""The first query of a fresh Spark session: ``kafka-log`` against Parquet of the same rows.

Each round starts two new Python processes, one per source, in alternating
order (``kafka-log`` first in odd rounds), each building a ``local[2]`` session
the way docs/spark.md shows and running one ``count()``:

* ``kafka-log`` - ``SparkSession.builder.config("spark.jars", kbs.jar_path())``,
  ``kbs.register(spark)``, ``spark.read.format("kafka-log").load(folder).count()``;
* ``parquet``   - a plain session, ``spark.read.parquet(copy).count()``.

Timed in the child: ``session`` (``getOrCreate()``, the JVM's start), then from
``getOrCreate()`` returning: ``register`` (kafka-log only: the session's first
SQL call), ``load``, the first ``count()``, and a second ``count()`` in the same
session. ``first query`` is register + load + count. Medians over ``--rounds``::

    .venv/bin/python benches/bench_first_query.py --folder /tmp/gen512 --parquet /tmp/gen512-parquet --rounds 8

The Parquet copy is written by ``kafka-log`` (TIMESTAMP_MICROS) when
``--parquet`` does not exist yet; ``--folder`` is generated with
``kb.generate(size=--size)`` when it does not exist.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

PARTS = ("session", "register", "load", "count", "second")


def child(source: str, path: str) -> None:
    """One fresh session, one source: print the parts' seconds as JSON."""
    from pyspark.sql import SparkSession

    import kafkabatch.spark as kbs

    t0 = time.perf_counter()
    builder = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
    builder = builder.config("spark.ui.showConsoleProgress", "false").config("spark.sql.session.timeZone", "UTC")
    if source == "kafka-log":
        builder = builder.config("spark.jars", kbs.jar_path())
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    t1 = time.perf_counter()
    if source == "kafka-log":
        kbs.register(spark)
    t2 = time.perf_counter()
    df = spark.read.parquet(path) if source == "parquet" else spark.read.format("kafka-log").load(path)
    t3 = time.perf_counter()
    rows = df.count()
    t4 = time.perf_counter()
    again = df.count()
    t5 = time.perf_counter()
    spark.stop()
    assert rows == again, (rows, again)
    parts = dict(zip(PARTS, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4)))
    print(json.dumps({"source": source, "rows": rows, **parts}))


def run_child(source: str, path: Path) -> dict:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    out = subprocess.run(
        [sys.executable, __file__, "--child", source, str(path)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def ensure_parquet(folder: Path, parquet: Path) -> None:
    if parquet.exists():
        return
    sys.path.insert(0, str(Path(__file__).parent))
    from _spark import spark_session

    spark = spark_session(
        "kafkabatch-first-query-copy", conf={"spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS"}
    )
    spark.read.format("kafka-log").load(str(folder)).write.parquet(str(parquet))
    spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, default=Path("/tmp/kafkabatch-bench-first-query"))
    parser.add_argument("--parquet", type=Path, help="the Parquet copy (default: FOLDER-parquet)")
    parser.add_argument("--size", default="512MB")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--child", nargs=2, metavar=("SOURCE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    if not args.folder.exists():
        import kafkabatch as kb

        print(kb.generate(args.folder, size=args.size, progress=False), file=sys.stderr)
    parquet = args.parquet or args.folder.with_name(args.folder.name + "-parquet")
    ensure_parquet(args.folder, parquet)
    runs: dict[str, list[dict]] = {"kafka-log": [], "parquet": []}
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for i in range(args.rounds):
        order = ("kafka-log", "parquet") if i % 2 == 0 else ("parquet", "kafka-log")
        for source in order:
            run = run_child(source, args.folder if source == "kafka-log" else parquet)
            runs[source].append(run)
            first = run["register"] + run["load"] + run["count"]
            print(
                f"round {i + 1} {source:9} first query {first:5.2f} s  " + "  ".join(f"{p} {run[p]:.2f}" for p in PARTS)
            )
    assert runs["kafka-log"][0]["rows"] == runs["parquet"][0]["rows"], "the Parquet copy holds other rows"
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"medians of {args.rounds} rounds:")
    for source, rs in runs.items():
        firsts = [r["register"] + r["load"] + r["count"] for r in rs]
        parts = "  ".join(f"{p} {statistics.median(r[p] for r in rs):.2f}" for p in PARTS)
        print(
            f"  {source:9} first query {statistics.median(firsts):.2f} s ({min(firsts):.2f}-{max(firsts):.2f})  {parts}"
        )
    ratio = statistics.median(r["register"] + r["load"] + r["count"] for r in runs["kafka-log"]) / statistics.median(
        r["register"] + r["load"] + r["count"] for r in runs["parquet"]
    )
    print(f"  kafka-log / parquet, first query: {ratio:.2f}x")


if __name__ == "__main__":
    main()
