"""Decode threads inside Spark tasks: the task's CPUs by default
(``spark.task.cpus``), not every core of the executor."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

import kafkabatch.spark as kbs  # noqa: E402
from kafkabatch.spark.options import task_threads  # noqa: E402


def test_outside_a_task_one_thread_unless_given():
    assert task_threads(None) == 1
    assert task_threads(3) == 3


@pytest.mark.spark
def test_inside_a_task_the_task_cpus(spark):
    def probe(_):

        return task_threads(None), task_threads(2)

    cpus = int(spark.conf.get("spark.task.cpus", "1"))
    assert spark.sparkContext.parallelize([0], 1).map(probe).collect() == [(cpus, 2)]


def test_threads_option_is_checked(tmp_path):
    (tmp_path / "t-0").mkdir()
    with pytest.raises(ValueError, match="threads"):
        kbs.KafkaLogDataSource({"path": str(tmp_path), "threads": "0"})
    assert kbs.KafkaLogDataSource({"path": str(tmp_path), "THREADS".lower(): "4"})._options.threads == 4
    with pytest.raises(ValueError, match="threads"):
        kbs.decode_batches("content", threads=0)
