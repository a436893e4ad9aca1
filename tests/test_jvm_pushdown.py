"""What Spark pushes into the JVM source (``kafka-log-jvm``): columns, filters,
limits and aggregates, on by default.

Every answer is compared with the same query over the Python source
(``kafka-log-python``) on the same session, which pushes no aggregate or limit: Spark
aggregates, limits and filters its rows itself. Folders: ``kb.generate``'s
(transactions with aborts, a legacy v1 topic) and a log dir of batches
written by kafka-python and aiokafka (``test_logdir.build_log``: control
batches, compacted and LogAppendTime batches, legacy message sets), and a
folder mixing v2 topics with legacy compressed wrappers from kafka-python and
aiokafka (``realclients``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_logdir import build_log, write_segment

import kafkabatch as kb

pytest.importorskip("pyspark")

from pyspark.sql import functions as F  # noqa: E402

if shutil.which("javac") is None:
    pytest.skip("no javac on PATH: the JVM data source's jar can't be built here", allow_module_level=True)

pytestmark = pytest.mark.spark

JVM = "kafka-log-jvm"


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("jvm-push-gen") / "gen"
    kb.generate(out, size="3MB", segment_bytes="256KB", seed=38)
    return out


@pytest.fixture(scope="module")
def generated_v2(generated, tmp_path_factory) -> Path:
    """The generated folder without its legacy (magic 1) topic."""
    out = tmp_path_factory.mktemp("jvm-push-gen-v2") / "gen"
    for folder in generated.iterdir():
        if folder.is_dir() and not folder.name.startswith("audit-legacy"):
            shutil.copytree(folder, out / folder.name)
    return out


@pytest.fixture(scope="module")
def client_log(tmp_path_factory) -> Path:
    return build_log(tmp_path_factory.mktemp("jvm-push-logs") / "kafka-data")


@pytest.fixture(scope="module")
def mixed(generated_v2, golden, tmp_path_factory) -> Path:
    """The generated v2 topics beside a topic of legacy message sets written by real clients: compressed
    v0 and v1 wrappers (records counted only by decompressing them) and a v0 -> v1 -> v2 upgrade."""
    out = tmp_path_factory.mktemp("jvm-push-mixed") / "gen"
    shutil.copytree(generated_v2, out)
    names = ["kafka-python-mixed-magic", "aiokafka-v1-gzip-mixed", "kafka-python-v0-snappy-mixed"]
    for partition, name in enumerate(names):
        fx = golden(name)
        write_segment(out, f"legacy-{partition}", fx.batches[0]["base_offset"], fx.data)
    return out


def both(spark, root: Path, **options: str):
    """The same folder through the JVM source and through the Python source."""
    jvm = spark.read.format(JVM).options(**options).load(str(root))
    python = spark.read.format("kafka-log-python").options(**options).load(str(root))
    return jvm, python


def plan_of(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def filter_nodes(df) -> list[str]:
    """The Filter operators of the executed plan (what Spark still evaluates on rows)."""
    return [line for line in plan_of(df).splitlines() if line.lstrip(" +-*():0123456789").startswith("Filter ")]


def keys(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.select("topic", "partition", "offset").collect())


def middle_timestamp(df):
    stamps = sorted(r[0] for r in df.select("timestamp").collect())
    return stamps[len(stamps) // 2]


def test_a_reused_dataframe_is_not_filtered_by_an_earlier_query(jvm_spark, generated):
    """Pushed state belongs to one scan: no option is needed for pushdown, and a
    DataFrame queried with a WHERE then without one returns every row."""
    jvm, python = both(jvm_spark, generated)
    everything = python.count()
    t = middle_timestamp(python)
    where = jvm.where(F.col("timestamp") >= F.lit(t))
    assert "pushed=" in plan_of(where) and not filter_nodes(where)
    assert where.count() == python.where(F.col("timestamp") >= F.lit(t)).count() < everything
    assert jvm.count() == everything
    assert keys(jvm.where(F.col("offset") < 10)) == keys(python.where(F.col("offset") < 10))
    assert len(keys(jvm)) == everything


@pytest.mark.parametrize(
    "condition",
    [
        "topic = 'orders'",
        "'orders' = topic AND offset >= 100",
        "partition IN (0, 2) AND offset < 50",
        "NOT (offset < 120) AND topic <> 'clicks'",
        "offset IN (3, 70, 400)",
        "topic LIKE 'ord%'",
        "offset = 7 OR offset = 900",
        "key IS NULL OR offset > 1000",
        "timestamp >= TIMESTAMP '{t}' AND timestamp < TIMESTAMP '{t}' + INTERVAL 1 MINUTE",
        "NOT (timestamp < TIMESTAMP '{t}')",
        "offset IS NULL",
        "value IS NOT NULL AND offset >= 5",
    ],
)
def test_filters_return_the_python_sources_rows(jvm_spark, generated, condition):
    jvm, python = both(jvm_spark, generated)
    t = middle_timestamp(python).strftime("%Y-%m-%d %H:%M:%S.%f")
    condition = condition.format(t=t)
    got, want = jvm.where(condition), python.where(condition)
    assert keys(got) == keys(want)
    # the key and value columns are read only where a query needs them
    assert sorted(map(tuple, got.select("topic", "offset", "timestampType").collect())) == sorted(
        map(tuple, want.select("topic", "offset", "timestampType").collect())
    )


def test_only_the_columns_a_query_needs_are_read(jvm_spark, generated):
    jvm, python = both(jvm_spark, generated)
    query = jvm.select("offset", "headers")
    scan = [line for line in plan_of(query).splitlines() if "BatchScan" in line]
    assert scan and "offset" in scan[0] and "headers" in scan[0] and "value" not in scan[0], scan
    got = sorted((r.offset, str(r.headers)) for r in query.collect())
    assert got == sorted((r.offset, str(r.headers)) for r in python.select("offset", "headers").collect())
    # no column at all (a count Spark computes itself: a CreateTime minimum is not in the headers)
    assert jvm.select(F.min("timestamp")).collect() == python.select(F.min("timestamp")).collect()


def test_limits(jvm_spark, generated):
    jvm, python = both(jvm_spark, generated)
    all_keys = set(keys(python))
    rows = jvm.limit(5).collect()
    assert len(rows) == 5 and {(r.topic, r.partition, r.offset) for r in rows} <= all_keys
    orders = jvm.where("topic = 'orders'").limit(7)
    assert "limit=7" in plan_of(orders)
    assert orders.count() == 7
    assert {r[0] for r in orders.select("topic").collect()} == {"orders"}
    assert jvm.limit(10**9).count() == len(all_keys)


AGGREGATE_QUERIES = [
    "SELECT count(*) AS n FROM {t}",
    "SELECT count(*), count(offset), min(offset), max(offset), max(timestamp) FROM {t}",
    "SELECT topic, count(*), min(offset), max(offset), max(timestamp) FROM {t} GROUP BY topic",
    "SELECT partition, topic, count(*), max(offset) FROM {t} GROUP BY topic, partition",
    "SELECT topic, min(timestamp) FROM {t} GROUP BY topic",
    "SELECT partition, count(*) FROM {t} GROUP BY partition",
    "SELECT topic, count(*) FROM {t} WHERE offset >= 100 GROUP BY topic",
    "SELECT count(*), max(offset) FROM {t} WHERE topic IN ('orders', 'clicks') AND offset < 300",
    "SELECT count(*) FROM {t} WHERE timestamp >= TIMESTAMP '2000-01-01 00:00:00'",
    "SELECT count(key), count(DISTINCT partition) FROM {t}",
    "SELECT count(*) FROM {t} WHERE offset > 1000000",
]


def same_aggregates(spark, root: Path, query: str, **options: str) -> str:
    """The query over both sources gives the same rows; returns the JVM plan."""
    jvm, python = both(spark, root, **options)
    jvm.createOrReplaceTempView("jvm_agg")
    python.createOrReplaceTempView("python_agg")
    got = spark.sql(query.format(t="jvm_agg"))
    want = sorted(map(tuple, spark.sql(query.format(t="python_agg")).collect()))
    assert sorted(map(tuple, got.collect())) == want, query
    return plan_of(got)


# the aggregates the core computes (alone or grouped by topic, or topic and partition)
PUSHED = AGGREGATE_QUERIES[:5] + AGGREGATE_QUERIES[6:9] + AGGREGATE_QUERIES[10:]


def pushed(plan: str, query: str) -> str:
    """How the plan took the query's aggregates: ``whole`` (rows from batch headers on the driver, no task),
    ``partial`` (tasks' partial rows, Spark's final aggregation) or ``no``."""
    if "LocalTableScan" in plan and "BatchScan" not in plan:
        assert query in PUSHED, plan
        return "whole"
    if "(partial, in tasks" in plan:
        assert query in PUSHED and "HashAggregate" in plan, plan
        return "partial"
    assert query not in PUSHED, plan
    return "no"


def with_legacy(plan: str, query: str) -> None:
    """A query over legacy message sets with no bound: their wrappers are read on the driver (a small folder)
    and answered whole, as a v2 folder's (one whose bound cuts a legacy segment: partially)."""
    how = pushed(plan, query)
    if query in AGGREGATE_QUERIES[:4]:
        assert how == "whole", plan


@pytest.mark.parametrize("query", AGGREGATE_QUERIES)
@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_aggregates_on_a_generated_folder(jvm_spark, generated, generated_v2, query, isolation):
    # audit-legacy (magic 1): its wrappers read on the driver, the headers the rest
    with_legacy(same_aggregates(jvm_spark, generated, query, isolation=isolation), query)
    plan = same_aggregates(jvm_spark, generated_v2, query, isolation=isolation)
    how = pushed(plan, query)
    if query in AGGREGATE_QUERIES[:4]:
        # v2 batches, no bound: answered on the driver, rows Spark takes as they are
        assert how == "whole", plan
    if "min(timestamp)" in query:
        assert how == "partial", plan  # a CreateTime minimum is not in the headers


@pytest.mark.parametrize("query", AGGREGATE_QUERIES)
def test_aggregates_on_a_folder_of_v2_and_legacy_client_batches(jvm_spark, mixed, query):
    with_legacy(same_aggregates(jvm_spark, mixed, query), query)


def test_a_partial_count_of_nothing_is_zero(jvm_spark, mixed):
    jvm, python = both(jvm_spark, mixed)
    empty = jvm.where("topic = 'legacy' AND offset > 1000000")
    assert empty.count() == 0 == python.where("topic = 'legacy' AND offset > 1000000").count()
    query = empty.select(F.count("*"), F.min("timestamp"), F.max("offset"))
    assert "(partial, in tasks" in plan_of(query)
    assert tuple(query.collect()[0]) == (0, None, None)


@pytest.mark.filterwarnings("ignore:.*no offset index")
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"isolation": "read_committed"},
        {"includeControl": "true"},
        {"validateCrc": "false"},
    ],
)
def test_aggregates_on_real_clients_batches(jvm_spark, client_log, options):
    for query in AGGREGATE_QUERIES:
        # payments-0 holds a legacy message set (compacted v2 batches and control records: not all whole)
        pushed(same_aggregates(jvm_spark, client_log, query, **options), query)
