"""Filter pushdown in the ``kafka-log`` source and ``scan_log(where=...)``: pruning never changes rows.

Every pushed query is checked against the same predicate evaluated by Spark on
a cached DataFrame (a scan whose filters Spark can't push), on folders written
by other people's encoders (``test_logdir.build_log``: kafka-python and
aiokafka batches, out-of-order CreateTime timestamps, a legacy v1 segment, an
empty segment, garbage index files), on a partition of interleaved producers
whose clocks disagree, and on a generated folder with Kafka's index files
(some deleted or stale) and aborted transactions for ``read_committed``.
"""

from __future__ import annotations

import datetime as dt
import shutil
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from test_logdir import BASE_TS, build_log

import kafkabatch as kb
from kafkabatch._kafkabatch import kept_ranges
from kafkabatch.log.prune import NotPushable, RecordFilter

pyspark = pytest.importorskip("pyspark")
from pyspark.sql.datasource import DataSourceReader  # noqa: E402

HAS_PUSHDOWN = hasattr(DataSourceReader, "pushFilters")
needs_pushdown = pytest.mark.skipif(not HAS_PUSHDOWN, reason="filter pushdown needs PySpark 4.1+")
CONF = "spark.sql.python.filterPushdown.enabled"


def ms(value: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(value / 1000, dt.UTC)


def write_producers(root: Path) -> None:
    """``events-0``: two producers appending in turn, one's clock 60 s behind
    (CreateTime out of order across batches, and within them), one
    LogAppendTime batch, in three segments without index files."""
    offset = 0
    for seg in range(3):
        base = offset
        parts = []
        for turn in range(4):
            for pid, skew in ((7, 0), (8, -60_000)):
                n = 5
                stamps = [BASE_TS + 10_000 * (offset + i) + skew - (3_000 if i == 2 else 0) for i in range(n)]
                records = [{"value": f"e{offset + i}".encode(), "timestamp": t} for i, t in enumerate(stamps)]
                log_append = seg == 1 and turn == 2 and pid == 7
                parts.append(
                    kb.encode(
                        records,
                        base_offset=offset,
                        producer_id=pid,
                        producer_epoch=0,
                        base_sequence=offset,
                        timestamp_type="log_append" if log_append else "create",
                        log_append_time=BASE_TS + 10_000 * (offset + 9) if log_append else None,
                        compression="zstd" if pid == 7 else "none",
                    )
                )
                offset += n
        (root / "events-0").mkdir(parents=True, exist_ok=True)
        (root / "events-0" / f"{base:020d}.log").write_bytes(b"".join(parts))


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = build_log(tmp_path_factory.mktemp("pushdown") / "data")
    write_producers(root)
    return root


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """A generated folder with Kafka's .index/.timeindex and transactions:
    one .timeindex deleted, one stale (copied from a later segment, so it
    claims timestamps the log doesn't have), one .index of garbage."""
    root = tmp_path_factory.mktemp("pushdown-gen") / "data"
    kb.generate(root, size="2MB", seed=3, segment_bytes="128KB", progress=False, topics={"orders": 2, "payments": 1})
    segs = sorted((root / "orders-0").glob("*.log"))
    assert len(segs) >= 4
    segs[0].with_suffix(".timeindex").unlink()
    shutil.copy(segs[-1].with_suffix(".timeindex"), segs[1].with_suffix(".timeindex"))
    segs[2].with_suffix(".index").write_bytes(b"\x00\x00\x00\x09" * 5)
    return root


@pytest.fixture(scope="module")
def pushed(spark):
    """Filter pushdown on, asked for explicitly (PySpark 4.1-4.3 need the opt-in, see
    ``test_default_is_safe_on_a_reused_dataframe``); the session's registration restored after."""
    import kafkabatch.spark as kbs

    kbs.register(spark, filter_pushdown=True, check_workers=False)
    assert spark.conf.get(CONF) == "true"
    yield spark
    spark.conf.unset(CONF)
    kbs.register(spark, check_workers=False)


def load(spark, path, **options):
    """A DataFrame per query: PySpark 4.1-4.3 reuse a loaded DataFrame's pushed read plan."""
    return spark.read.format("kafka-log-python").options(**options).load(str(path))


def keys(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


def selected(df):
    return df.select("topic", "partition", "offset", "timestamp")


def plan_of(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def explained(df) -> str:
    """What ``df.explain("formatted")`` prints."""
    return df._sc._jvm.PythonSQLUtils.explainString(df._jdf.queryExecution(), "formatted")


def test_default_is_safe_on_a_reused_dataframe(spark, logs):
    """register()'s default pushes filters only where Spark keeps a planned
    read to its query: on PySpark 4.1-4.3 the source's last read planned with
    pushed filters is reused by a later query on the same DataFrame."""
    from kafkabatch.spark.session import scan_scoped_reads

    df = spark.read.format("kafka-log-python").load(str(logs))
    total = df.count()
    assert df.where("offset < 5").count() < total
    assert df.count() == total
    if not scan_scoped_reads():
        assert "PushedFilters: [" not in explained(df.where("offset < 5")) or "PushedFilters: []" in explained(
            df.where("offset < 5")
        )


def test_register_keeps_an_explicit_false(spark):
    import kafkabatch.spark as kbs

    try:
        spark.conf.set(CONF, "false")
        kbs.register(spark, check_workers=False)
        assert spark.conf.get(CONF) == "false"
        kbs.register(spark, filter_pushdown=True, check_workers=False)  # asked for: on
        assert spark.conf.get(CONF) == ("true" if HAS_PUSHDOWN else "false")
    finally:
        spark.conf.unset(CONF)
        kbs.register(spark, check_workers=False)


# (where clause, filters Spark must keep evaluating in its own Filter) - every
# kind of pushed filter, combined, on the columns kafkabatch decides
CASES = [
    ("topic = 'orders' AND partition IN (0) AND offset > 12 AND offset <= 25", ""),
    ("topic <=> 'orders' AND timestamp >= '{t15}' AND timestamp < '{t27}'", ""),
    ("NOT (topic = 'payments') AND partition != 1 AND NOT (offset < 3) AND offset < 20", ""),
    ("offset IN (3, 17, 1030, 1039, 45) AND timestamp > '{t10}'", "offset"),
    ("topic LIKE 'ev%' AND offset IS NOT NULL AND timestamp <= '{t50}' AND timestamp >= '{t20}'", ""),
    ("timestamp = '{t35}' OR offset = 2", "timestamp"),  # an OR: nothing pushed, still right
    ("topic NOT IN ('orders') AND key IS NULL AND timestamp > '{t8}'", "key"),
    ("offset IS NULL", ""),
]


def clause(text: str) -> str:
    stamps = {f"t{k}": ms(BASE_TS + 1000 * k).strftime("%Y-%m-%d %H:%M:%S") for k in (8, 10, 15, 20, 27, 35, 50)}
    return text.format(**stamps)


@needs_pushdown
def test_every_filter_kind_matches_spark_unpushed(pushed, logs):
    cached = load(pushed, logs).cache()
    try:
        assert cached.count() > 200
        for text, kept in CASES:
            where = clause(text)
            got = selected(load(pushed, logs).where(where))
            assert keys(got) == keys(selected(cached.where(where))), where
            plan, formatted = plan_of(got), explained(got)  # the plan that ran
            if "OR" not in text:
                assert "PushedFilters: [" in formatted and "PushedFilters: []" not in formatted, where
            filters = plan[: plan.index("BatchScan")]
            if not kept:
                assert "Filter" not in filters, (where, plan)
            else:
                assert kept in filters, (where, plan)
        # whole rows agree too
        where = clause(CASES[1][0])
        assert sorted(map(str, load(pushed, logs).where(where).collect())) == sorted(
            map(str, cached.where(where).collect())
        )
    finally:
        cached.unpersist()


@needs_pushdown
def test_generated_folder_stale_indexes_and_read_committed(pushed, generated):
    table = kb.scan_log(generated / "orders-*").read_all()
    stamps = sorted(table.column("timestamp").to_pylist())
    t = stamps[len(stamps) * 2 // 3]
    where = f"timestamp >= '{t:%Y-%m-%d %H:%M:%S.%f}' AND topic = 'orders'"
    for isolation in ("read_uncommitted", "read_committed"):
        cached = load(pushed, generated, isolation=isolation).cache()
        try:
            got = keys(selected(load(pushed, generated, isolation=isolation).where(where)))
            assert got == keys(selected(cached.where(where))), isolation
            assert 0 < len(got) < table.num_rows
        finally:
            cached.unpersist()


@needs_pushdown
def test_the_switch_off(pushed, logs):
    import kafkabatch.spark as kbs

    where = clause(CASES[1][0])
    cached = load(pushed, logs).cache()
    want = keys(selected(cached.where(where)))
    cached.unpersist()
    try:
        pushed.conf.set(CONF, "false")  # after register(): a reader without pushFilters, Spark filters
        df = selected(load(pushed, logs).where(where))
        assert keys(df) == want
        assert "PushedFilters: [" not in explained(df) or "PushedFilters: []" in explained(df)
        kbs.register(pushed, filter_pushdown=False, check_workers=False)  # the way register() offers
        pushed.conf.set(CONF, "true")
        df = selected(load(pushed, logs).where(where))
        assert keys(df) == want
        assert "timestamp" in plan_of(df)[: plan_of(df).index("BatchScan")]  # Spark filters
    finally:
        kbs.register(pushed, filter_pushdown=True, check_workers=False)


# --------------------------------------------------------------------------
# what is read: the planner and the decoder, without Spark's JVM
# --------------------------------------------------------------------------


def planned_bytes(path: Path, filters: list, **options) -> tuple[int, list]:
    from kafkabatch.spark.source import KafkaLogDataSource

    source = KafkaLogDataSource({"path": str(path), **options})
    reader = source.reader(source.schema())
    rest = list(reader.pushFilters(filters)) if filters else []
    parts = reader.partitions()
    splits = [s for p in parts for s in getattr(p, "splits", [p])]
    return sum(s.end - s.start for s in splits), rest


@needs_pushdown
def test_pruning_reads_less(generated):
    from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual, In, LessThan

    table = kb.scan_log(generated).read_all()
    stamps = sorted(table.column("timestamp").to_pylist())
    late = stamps[len(stamps) * 97 // 100]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kb.IndexFileWarning)
        everything, _ = planned_bytes(generated, [])
        tail, rest = planned_bytes(generated, [GreaterThanOrEqual(("timestamp",), late)])
        one, _ = planned_bytes(generated, [EqualTo(("topic",), "payments"), EqualTo(("partition",), 0)])
        offsets_in = In(("offset",), (5, 6))
        head, rest_in = planned_bytes(generated, [offsets_in, LessThan(("partition",), 1)])
        by_option, _ = planned_bytes(generated, [], startingTimestamp=str(int(late.timestamp() * 1000)))
    assert rest == [] and rest_in == [offsets_in]  # IN on offsets narrows the read, Spark decides
    assert tail < everything * 0.2
    assert by_option < everything * 0.2  # the option prunes the same way
    folder = sum(p.stat().st_size for p in (generated / "payments-0").glob("*.log"))
    assert one == folder
    assert head < everything * 0.1


@pytest.mark.filterwarnings("ignore::kafkabatch.IndexFileWarning")  # build_log's folders have no usable indexes
def test_batches_pruned_by_header_with_out_of_order_times(logs):
    """Batches are skipped only when their max timestamp proves it; rows are exact."""
    table = kb.scan_log(logs).read_all()
    for lo, hi in ((BASE_TS + 300_000, None), (None, BASE_TS + 100_000), (BASE_TS + 120_000, BASE_TS + 250_000)):
        where = RecordFilter()
        if lo is not None:
            where = where.and_(RecordFilter.where("timestamp", ">=", ms(lo)))
        if hi is not None:
            where = where.and_(RecordFilter.where("timestamp", "<", ms(hi)))
        results = []
        got = kb.scan_log(logs, where=where, on_segment=results.append).read_all()
        mask = pc.and_kleene(
            pc.greater_equal(table["timestamp"], pa.scalar(ms(lo or 0), table.schema.field("timestamp").type)),
            pc.less(table["timestamp"], pa.scalar(ms(hi or 2**42), table.schema.field("timestamp").type)),
        )
        want = table.filter(mask)
        assert got.sort_by([("topic", "ascending"), ("partition", "ascending"), ("offset", "ascending")]).equals(
            want.sort_by([("topic", "ascending"), ("partition", "ascending"), ("offset", "ascending")])
        )
        assert 0 < got.num_rows < table.num_rows
    # the producers' folder: batches of the lagging producer are skipped by header, not by position
    data = (logs / "events-0" / f"{0:020d}.log").read_bytes()
    bounds = RecordFilter.where("timestamp", ">=", ms(BASE_TS + 10_000 * 24)).bounds()
    ranges, skipped = kept_ranges(data, start_ts_us=bounds.start_ts)  # the core's rule, as the plan applies it
    batches = list(kb.iter_batches(data))
    verdicts = [any(a <= b.position < z for a, z in ranges) for b in batches]
    assert verdicts[-1] is True and False in verdicts[verdicts.index(True) :]
    assert skipped == sum(b.size_in_bytes for b, kept in zip(batches, verdicts) if not kept)
    # never a batch holding a match
    for batch, kept in zip(batches, verdicts):
        if any(r.timestamp * 1000 >= bounds.start_ts for r in batch.records()):
            assert kept


def test_record_filter_refuses_what_it_cannot_decide():
    for column, op, value in (
        ("offset", "!=", 3),
        ("offset", "==", "3"),
        ("partition", "==", True),
        ("timestamp", ">", 1.5),
        ("key", "==", b"k"),
        ("topic", "in", "orders"),
    ):
        with pytest.raises(NotPushable):
            RecordFilter.where(column, op, value)
    assert not RecordFilter.where("offset", "in", []).keeps("orders", 0)


@pytest.mark.filterwarnings("ignore::kafkabatch.IndexFileWarning")
def test_scan_log_read_committed_with_markers_pruned(generated):
    """Markers older than the bound are skipped by header: visibility still
    comes from the partition's transactions, so the rows are exact."""
    committed = kb.scan_log(generated, isolation="read_committed").read_all()
    stamps = sorted(committed.column("timestamp").to_pylist())
    for t in (stamps[len(stamps) // 2], stamps[-len(stamps) // 20]):
        results = []
        where = RecordFilter.where("timestamp", ">=", t)
        got = kb.scan_log(generated, isolation="read_committed", where=where, on_segment=results.append).read_all()
        want = committed.filter(
            pc.greater_equal(committed["timestamp"], pa.scalar(t, committed.schema.field("timestamp").type))
        )
        assert got.equals(want)
        assert sum(r.end - r.start for r in results) < sum(r.segment.size for r in results) / 2
