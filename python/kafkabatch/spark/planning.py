"""Planning a ``kafka-log`` read: the core plans it (listing, seeks, pruning,
the read_committed pre-pass, cuts at ``maxBytesPerPartition``, packing into
Spark tasks), as it plans the JVM source's; here are the input partitions that
carry its serialised splits to the tasks.

>>> [len(getattr(t, "splits", [t])) for t in plan_tasks(options, [])]  # doctest: +SKIP
[17, 18]
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

from pyspark.sql.datasource import InputPartition

import kafkabatch._kafkabatch as _native
from kafkabatch._util import segment_base_offset
from kafkabatch.log.index import IndexFileWarning
from kafkabatch.log.listing import Segment
from kafkabatch.log.roots import list_roots
from kafkabatch.spark.options import Options

log = logging.getLogger("kafkabatch.spark")


class LogSplit(InputPartition):
    """One split of a Spark task: bytes ``[start, end)`` of one segment, as the
    core planned it (``split``: its serialised form, which the task reads)."""

    def __init__(
        self,
        split: bytes,
        path: str,
        topic: str,
        partition: int,
        start: int,
        end: int,
        size: int,
        check_start: bool = False,
    ) -> None:
        super().__init__((path, start, end))
        self.split = split
        self.path = path
        self.topic = topic
        self.partition = partition
        self.start = start
        self.end = end
        self.size = size
        # The start came from the segment's .index (checked to be a batch of its offset when planned).
        self.check_start = check_start

    @property
    def segment(self) -> Segment:
        """The segment it reads (name, partition, size), for logs."""
        name = self.path.partition("?")[0].rsplit("/", 1)[-1]
        return Segment(self.path, self.topic, self.partition, segment_base_offset(name), self.size)


class LogSplitGroup(InputPartition):
    """One Spark task reading several consecutive splits, in order."""

    def __init__(self, splits: list[LogSplit]) -> None:
        super().__init__(tuple(split.value for split in splits))
        self.splits = splits


def splits_of(partition: InputPartition) -> list[LogSplit]:
    """The splits a task reads, in order (none for Spark's placeholder when there is nothing to read)."""
    if isinstance(partition, LogSplitGroup):
        return partition.splits
    if isinstance(partition, LogSplit):
        return [partition]
    return []


def tasks_of(planned: Sequence[Sequence[tuple[Any, ...]]]) -> list[InputPartition]:
    """The core's tasks (each a list of splits, see ``_spark_plan_tasks``) as Spark's input partitions."""
    tasks: list[InputPartition] = []
    for task in planned:
        splits = [LogSplit(*split) for split in task]
        tasks.append(splits[0] if len(splits) == 1 else LogSplitGroup(splits))
    return tasks


def plan_tasks(options: Options, predicates: Iterable[Any] = ()) -> tuple[list[InputPartition], int]:
    """A batch read's tasks, planned by the core from the source's options and
    the pushed filters' ``predicates`` (see :func:`kafkabatch.spark.pushdown.pushed`),
    and how many topic-partitions the filters kept. An index file that could not
    be trusted is an :class:`~kafkabatch.IndexFileWarning` (its segment is read from its start)."""
    planned = _native._spark_plan_tasks(options._given, list(predicates), options.min_partitions)
    for text in planned["index_warnings"]:
        warnings.warn(text, IndexFileWarning, stacklevel=3)
    return tasks_of(planned["tasks"]), planned["partitions"]


def list_source_segments(options: Options) -> list[Segment]:
    """The segments under the ``path``/``paths`` options (see :func:`kafkabatch.list_segments`),
    filtered by ``pathGlobFilter``, in topic, partition, offset order."""
    if not options.paths:
        return []
    problems: list[tuple[Segment, Exception]] | None = None if options.mode == "FAILFAST" else []
    # Every path joined (each offset once where a partition lies under several), as scan_log joins a list.
    segments = list_roots(
        list(options.paths),
        topic=options.topic,
        partition=options.partition,
        tiered_keys=options.tiered_keys,
        problems=problems,
        name_glob=options.path_glob_filter or None,  # as Spark's pathGlobFilter: a glob on file names only
    )
    for _seg, error in problems or ():  # mode DROPMALFORMED/PERMISSIVE: left out, and said
        log.warning("kafka-log %s: skipped %s", options.mode, error)
    # each partition's segments come in offset order: sorted by partition alone (a stable sort)
    return sorted(segments, key=lambda s: (s.topic, s.partition))
