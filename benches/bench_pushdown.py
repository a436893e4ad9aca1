"""Filter pushdown: ``WHERE`` clauses that read less, in Spark (``kafka-log``) and polars (``kb.scan_polars``).

One generated log folder (magic-2 topics, with Kafka's index files), one
``local[2]`` session, every query run once per round, in a shuffled order (one
warm-up round, then the median of ``--repeat`` rounds), each into ``count()``
(polars: ``collect()``). ``T`` is the timestamp above which the last 3 % of
the folder's records lie.

Spark rows, each next to what it is held against:

* ``where-ts-pushed``   ``WHERE timestamp >= T`` with filter pushdown
* ``where-ts-unpushed`` the same predicate written so Spark can't push it
                        (``timestamp + INTERVAL 0 SECONDS >= T``)
* ``where-ts-empty``    a pushed ``WHERE timestamp >= <after every record>``: Spark's
                        own cost of a pushed query that reads nothing (the pushed 3 %
                        read is also given above it, against the unpushed one above it)
* ``starting-ts``       the same bound as ``option("startingTimestamp", T)``
* ``where-tp-pushed``   ``WHERE topic = ... AND partition = ...``
* ``load-folder``       ``load()`` of that one ``<topic>-<partition>`` folder
* ``limit-10``          ``.limit(10).collect()`` on the whole folder
* ``ten-records``       ``load()`` of a folder holding 10 records, ``collect()``

polars rows: ``polars-filtered`` (``scan_polars(...).filter(timestamp >= T).collect()``)
and ``polars-full`` (``scan_polars(...).collect()``)::

    .venv/bin/python benches/bench_pushdown.py [--folder DIR] [--size 100MB] [--repeat 5] [--json OUT]

``--selective`` measures in-process selective reads instead (no Spark): on a
folder of every default topic (``audit-legacy``'s magic-1 message sets
included, 512 MB unless ``--size``), each partition folder is read whole with
``scan_log(folder)`` and from ``start_timestamp=T_p``, ``T_p`` the timestamp
above which the partition's newest 3 % of records lie; both reads of every
partition run in each round, in a shuffled order (one warm-up round, then
medians of ``--repeat`` rounds). Rows: per topic and in all, the summed
medians of the selective reads against the full ones, and one
``scan_log(root, start_timestamp=T)`` call over the whole folder with ``T``
the folder's own 97 % point::

    .venv/bin/python benches/bench_pushdown.py --selective [--folder DIR] [--size 512MB] [--repeat 5]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def ensure_folder(folder: Path, size: str, seed: int) -> None:
    if folder.exists() and any(folder.iterdir()):
        return
    import kafkabatch as kb
    from kafkabatch.generate import DEFAULT_TOPICS

    summary = kb.generate(
        folder, size=size, seed=seed, topics=[t for t in DEFAULT_TOPICS if t.magic == 2], progress=False
    )
    print(summary, file=sys.stderr)


def selective(folder: Path, size: str, seed: int, repeat: int, json_out: Path | None) -> int:
    """The ``--selective`` rows (see the module notes)."""
    import datetime as dt

    import pyarrow.compute as pc

    import kafkabatch as kb

    if not (folder.exists() and any(folder.iterdir())):
        print(kb.generate(folder, size=size, seed=seed, progress=False), file=sys.stderr)
    parts = sorted(d for d in folder.iterdir() if d.is_dir() and any(d.glob("*.log")))

    def at(us: int) -> dt.datetime:
        return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=us)

    def rows(path: Path, **options: object) -> int:
        return sum(batch.num_rows for batch in kb.scan_log(str(path), **options))

    starts: dict[str, dt.datetime] = {}
    expected: dict[str, int] = {}
    everything = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for part in parts:
            stamps = pc.cast(kb.scan_log(str(part)).read_all().column("timestamp"), "int64")
            everything.append(stamps)
            cutoff = int(pc.quantile(stamps, q=0.97)[0].as_py())
            starts[part.name] = at(cutoff)
            expected[part.name] = int(pc.sum(pc.greater_equal(stamps, cutoff)).as_py())
        import pyarrow as pa

        all_stamps = pa.chunked_array(everything)
        t_all = int(pc.quantile(all_stamps, q=0.97)[0].as_py())
        expected["(root)"] = int(pc.sum(pc.greater_equal(all_stamps, t_all)).as_py())
    total = sum(f.stat().st_size for f in folder.glob("*/*.log"))
    print(f"folder {folder}: {len(parts)} partitions, {total / 1e6:.1f} MB; load {loadavg()}", flush=True)

    jobs: dict[tuple[str, str], Callable[[], int]] = {}
    for part in parts:
        jobs[(part.name, "full")] = functools.partial(rows, part)
        jobs[(part.name, "newest-3%")] = functools.partial(rows, part, start_timestamp=starts[part.name])
    jobs[("(root)", "full")] = functools.partial(rows, folder)
    jobs[("(root)", "newest-3%")] = functools.partial(rows, folder, start_timestamp=at(t_all))
    times: dict[tuple[str, str], list[float]] = {key: [] for key in jobs}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for round_ in range(repeat + 1):
            keys = list(jobs)
            random.Random(seed + round_).shuffle(keys)
            for key in keys:
                start = time.perf_counter()
                n = jobs[key]()
                elapsed = time.perf_counter() - start
                if key[1] == "newest-3%":
                    assert n == expected[key[0]], (key, n, expected[key[0]])
                if round_:
                    times[key].append(elapsed)
            print(f"round {round_} done; load {loadavg()}", flush=True)
    median = {key: statistics.median(v) for key, v in times.items()}
    topics: dict[str, list[str]] = {}
    for part in parts:
        topics.setdefault(part.name.rpartition("-")[0], []).append(part.name)
    groups = {**topics, "all partitions": [p.name for p in parts], "one call on the root": ["(root)"]}
    print(f"\n{'rows of':22} {'full s':>8} {'newest 3% s':>12} {'ratio':>7}")
    table = {}
    for name, members in groups.items():
        full = sum(median[(m, "full")] for m in members)
        part_ = sum(median[(m, "newest-3%")] for m in members)
        table[name] = {"full": full, "selective": part_, "ratio": part_ / full}
        print(f"{name:22} {full:>8.3f} {part_:>12.3f} {part_ / full:>6.3f}x")
    print(f"\nload at the end {loadavg()}; {platform.platform()}; {os.cpu_count()} cores")
    if json_out:
        json_out.write_text(json.dumps({"folder": str(folder), "bytes": total, "rows": table}, indent=2))
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--folder", type=Path, help="the generated folder (made when missing)")
    p.add_argument("--size", help="size to generate when the folder is missing (default 100MB, --selective 512MB)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=5, help="timed rounds after one warm-up (median reported)")
    p.add_argument("--json", type=Path, help="write the results as JSON here")
    p.add_argument("--selective", action="store_true", help="in-process scan_log selective reads, no Spark")
    args = p.parse_args()
    if args.selective:
        folder = args.folder or Path(tempfile.gettempdir()) / "kafkabatch-bench-selective"
        return selective(folder, args.size or "512MB", args.seed, args.repeat, args.json)
    args.folder = args.folder or Path(tempfile.gettempdir()) / "kafkabatch-bench-pushdown"
    args.size = args.size or "100MB"

    import polars as pl
    import pyarrow.compute as pc

    import kafkabatch as kb

    ensure_folder(args.folder, args.size, args.seed)
    folder = str(args.folder)
    logs = sorted(args.folder.glob("*/*.log"))
    total = sum(f.stat().st_size for f in logs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stamps = kb.scan_log(folder).read_all().column("timestamp")
    cutoff = int(pc.quantile(pc.cast(stamps, "int64"), q=0.97)[0].as_py())  # µs
    t_ms = cutoff // 1000
    import datetime as dt

    t = dt.datetime.fromtimestamp(t_ms / 1000, dt.UTC)
    t_sql = t.strftime("%Y-%m-%d %H:%M:%S.%f")
    newest_ms = int(pc.max(pc.cast(stamps, "int64")).as_py()) // 1000
    empty_sql = (dt.datetime.fromtimestamp(newest_ms / 1000, dt.UTC) + dt.timedelta(days=1)).strftime(
        "%Y-%m-%d %H:%M:%S.%f"
    )
    part = max(
        (d for d in args.folder.iterdir() if d.is_dir()), key=lambda d: sum(f.stat().st_size for f in d.glob("*.log"))
    )
    topic, _, partition = part.name.rpartition("-")
    tiny = Path(tempfile.mkdtemp(prefix="kb-bench-pushdown-")) / "tiny-0"
    kb.write_segment(tiny / f"{0:020d}.log", [{"value": f"v{i}".encode()} for i in range(10)])
    print(
        f"folder {folder}: {len(logs)} segments, {total / 1e6:.1f} MB; T = {t.isoformat()} "
        f"({len(stamps) - int(pc.sum(pc.greater_equal(pc.cast(stamps, 'int64'), cutoff)).as_py())} of "
        f"{len(stamps)} records before it); one folder {part.name}; load {loadavg()}",
        flush=True,
    )

    from _spark import spark_session
    from pyspark.sql import functions as F

    import kafkabatch.spark as kbs

    spark = spark_session("kafkabatch-bench-pushdown", conf={"spark.driver.memory": "4g"})
    # PySpark 4.1-4.3 need the opt-in (see kbs.register); a DataFrame is loaded per query
    kbs.register(spark, filter_pushdown=True)

    def load(path: str = folder, **options: str):
        return spark.read.format("kafka-log").options(**options).load(path)

    ts_col = F.col("timestamp")
    queries = {
        "where-ts-pushed": lambda: load().where(ts_col >= F.lit(t_sql).cast("timestamp")).count(),
        "where-ts-unpushed": lambda: (
            load().where(ts_col + F.expr("INTERVAL 0 SECONDS") >= F.lit(t_sql).cast("timestamp")).count()
        ),
        "where-ts-empty": lambda: load().where(ts_col >= F.lit(empty_sql).cast("timestamp")).count(),
        "starting-ts": lambda: load(startingTimestamp=str(t_ms)).count(),
        "where-tp-pushed": lambda: (
            load().where((F.col("topic") == topic) & (F.col("partition") == int(partition))).count()
        ),
        "load-folder": lambda: load(str(part)).count(),
        "polars-filtered": lambda: kb.scan_polars(folder).filter(pl.col("timestamp") >= t).collect().height,
        "polars-full": lambda: kb.scan_polars(folder).collect().height,
        "ten-records": lambda: len(load(str(tiny.parent)).collect()),
        "limit-10": lambda: len(load().limit(10).collect()),
    }

    def warm() -> None:
        """Two tasks, untimed: a LIMIT stops reading its task's output early, so
        Spark can't reuse that Python worker; the next round would pay for
        starting one."""
        load(str(tiny.parent)).union(load(str(tiny.parent))).count()

    times: dict[str, list[float]] = {name: [] for name in queries}
    rows: dict[str, int] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for round_ in range(args.repeat + 1):
            warm()
            # a new order each round (a rotation keeps each query after the same
            # neighbour, whose leftovers it then always pays); the LIMIT last (see warm)
            names = list(queries)[:-1]
            random.Random(args.seed + round_).shuffle(names)
            for name in [*names, "limit-10"]:
                query = queries[name]
                start = time.perf_counter()
                rows[name] = query()
                elapsed = time.perf_counter() - start
                if round_:
                    times[name].append(elapsed)
            print(f"round {round_} done; load {loadavg()}", flush=True)
    assert rows["where-ts-pushed"] == rows["where-ts-unpushed"] == rows["starting-ts"] == rows["polars-filtered"], rows
    assert rows["where-tp-pushed"] == rows["load-folder"], rows
    assert rows["where-ts-empty"] == 0, rows
    median = {name: statistics.median(v) for name, v in times.items()}

    def ratio(a: str, b: str) -> float:
        return median[a] / median[b]

    def above_empty(a: str, b: str) -> float:
        """``a``'s time above Spark's cost of an empty pushed query, against ``b``'s."""
        return (median[a] - median["where-ts-empty"]) / (median[b] - median["where-ts-empty"])

    print(f"\n{'query':20} {'rows':>10} {'median s':>9} {'min':>7} {'max':>7}")
    for name, values in times.items():
        print(f"{name:20} {rows[name]:>10,} {median[name]:>9.3f} {min(values):>7.3f} {max(values):>7.3f}")
    ratios = {
        "where-ts pushed / unpushed (target <= 0.35)": ratio("where-ts-pushed", "where-ts-unpushed"),
        "where-ts pushed / unpushed, both above an empty pushed query (target <= 0.15)": above_empty(
            "where-ts-pushed", "where-ts-unpushed"
        ),
        "startingTimestamp / unpushed": ratio("starting-ts", "where-ts-unpushed"),
        "where topic+partition / load(folder) (target <= 1.2)": ratio("where-tp-pushed", "load-folder"),
        "limit 10 / 10-record read (target < 1.5)": ratio("limit-10", "ten-records"),
        "polars filtered / full (target <= 0.35)": ratio("polars-filtered", "polars-full"),
    }
    print()
    for text, value in ratios.items():
        print(f"{text:55} {value:.2f}x")
    print(f"\nload at the end {loadavg()}; {platform.platform()}; {os.cpu_count()} cores")
    if args.json:
        args.json.write_text(
            json.dumps(
                {"folder": folder, "bytes": total, "times": times, "median": median, "rows": rows, "ratios": ratios},
                indent=2,
            )
        )
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
