"""``count()`` of legacy message sets (magic 0 and 1) on the JVM source.

A legacy wrapper's header doesn't say how many records it holds, so the core
inflates the wrappers to count them, once per driver process and file: the
next ``count()`` of the same unchanged files is answered on the driver (a
``LocalTableScan``, no task reading the source). Folders: compressed v0 and
v1 message sets written by kafka-python and aiokafka (``realclients``) and
the core's own legacy writer (``kb.generate``'s ``audit-legacy`` topic);
every count is compared with the rows the Python source returns.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from test_logdir import write_segment

import kafkabatch as kb

pytest.importorskip("pyspark")

if shutil.which("javac") is None:
    pytest.skip("no javac on PATH: the JVM data source's jar can't be built here", allow_module_level=True)

pytestmark = pytest.mark.spark

CLIENTS = [
    "kafka-python-v0-gzip-mixed",
    "kafka-python-v1-snappy-mixed",
    "kafka-python-v1-lz4-mixed",
    "aiokafka-v1-gzip-mixed",
    "aiokafka-v0-snappy-mixed",
    "kafka-python-mixed-magic",
]


def settle(root: Path) -> None:
    """Dates the segments an hour back: old enough for their tallies to be remembered."""
    an_hour_ago = time.time() - 3600
    for log in root.rglob("*.log"):
        os.utime(log, (an_hour_ago, an_hour_ago))


@pytest.fixture
def legacy(golden, tmp_path) -> Path:
    out = tmp_path / "legacy"
    generated = tmp_path / "gen"
    kb.generate(generated, size="1MB", segment_bytes="64KB", seed=11)
    shutil.copytree(generated / "audit-legacy-0", out / "audit-legacy-0")
    for partition, name in enumerate(CLIENTS):
        fx = golden(name)
        write_segment(out, f"clients-{partition}", fx.batches[0]["base_offset"], fx.data)
    settle(out)
    return out


def plan_of(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def counted_on_the_driver(df) -> bool:
    plan = plan_of(df.groupBy().count())
    return "LocalTableScan" in plan and "BatchScan" not in plan


def test_a_second_count_of_legacy_message_sets_is_answered_on_the_driver(jvm_spark, legacy):
    python = jvm_spark.read.format("kafka-log-python").load(str(legacy))
    rows = python.select("topic").count()
    per_topic = sorted(tuple(r) for r in python.groupBy("topic", "partition").count().collect())
    assert rows > 0 and {t for t, _, _ in per_topic} == {"audit-legacy", "clients"}

    first = jvm_spark.read.format("kafka-log-jvm").load(str(legacy))
    assert first.count() == rows
    second = jvm_spark.read.format("kafka-log-jvm").load(str(legacy))
    assert counted_on_the_driver(second)
    assert second.count() == rows
    grouped = second.groupBy("topic", "partition").count()
    assert "LocalTableScan" in plan_of(grouped) and "BatchScan" not in plan_of(grouped)
    assert sorted(tuple(r) for r in grouped.collect()) == per_topic

    # an append (a copy of a segment's first wrapper): the file is counted again
    log = sorted((legacy / "audit-legacy-0").glob("*.log"))[-1]
    data = log.read_bytes()
    first_wrapper = next(kb.iter_batches(data))
    log.write_bytes(data + data[: first_wrapper.size_in_bytes])
    settle(legacy)
    grown = jvm_spark.read.format("kafka-log-python").load(str(legacy)).select("offset").count()
    assert grown > rows
    again = jvm_spark.read.format("kafka-log-jvm").load(str(legacy))
    assert again.count() == grown
    assert counted_on_the_driver(again)


def test_a_bound_inside_a_legacy_segment_is_counted_by_tasks(jvm_spark, legacy):
    python = jvm_spark.read.format("kafka-log-python").load(str(legacy)).where("offset >= 3")
    jvm = jvm_spark.read.format("kafka-log-jvm").load(str(legacy)).where("offset >= 3")
    query = jvm.groupBy().count()
    assert "(partial, in tasks" in plan_of(query)
    assert query.collect()[0][0] == python.select("offset").count()
