"""The ``kafka-log`` source's options: names, checks and parsing, done once at ``load()``.

>>> check_option_names(["isolaton"])  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: unknown kafka-log option 'isolaton'; did you mean 'isolation'? ...
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import kafkabatch._kafkabatch as _native
from kafkabatch.log.bounds import Bounds
from kafkabatch.spark.internal import internal_option

#: Default ``maxBytesPerPartition``: segments larger than this are split at batch boundaries.
DEFAULT_MAX_BYTES_PER_PARTITION: int = _native.SPARK_DEFAULT_MAX_BYTES_PER_PARTITION


#: Default ``maxRecordsPerBatch``: rows per Arrow batch handed to Spark.
DEFAULT_MAX_RECORDS_PER_BATCH: int = _native.SPARK_DEFAULT_MAX_RECORDS_PER_BATCH


MODES = {"FAILFAST": "raise", "DROPMALFORMED": "skip", "PERMISSIVE": "skip"}


ISOLATIONS = ("read_uncommitted", "read_committed")


#: Every option of the ``kafka-log`` source, in its documented spelling
#: (``docs/spark.md``; names are case-insensitive, as Spark's are). Any other
#: name fails at ``load()``: a misspelled ``isolation`` must not silently
#: return aborted transactions. The core's list (the JVM source takes the same).
KNOWN_OPTIONS: tuple[str, ...] = tuple(_native.SPARK_OPTIONS)


def check_option_names(names: Iterable[str], known: Iterable[str] = KNOWN_OPTIONS) -> None:
    """Raise :class:`ValueError` for the first option name that is not in
    ``known`` (case-insensitive), suggesting the closest known one (or, for
    options of other sources, what to use instead).

    >>> check_option_names(["isolaton"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown kafka-log option 'isolaton'; did you mean 'isolation'? ...
    """
    _native._spark_check_option_names([str(n) for n in names], [str(n) for n in known])


def _pairs(options: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The options as the core takes them: ``(name, text)`` pairs."""
    return [(str(k), v if isinstance(v, str) else str(v)) for k, v in dict(options).items()]


class Options:
    """The data source options, parsed and checked once (at ``load()``) by the
    core (the JVM source parses them the same way); typed values and
    ``internalTopic`` are resolved here."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self._given = _pairs(options)
        parsed = _native._spark_options(self._given)
        self.paths: list[str] = parsed["paths"]
        self.path_glob_filter: str | None = parsed["path_glob_filter"]
        self.topic: str | None = parsed["topic"]
        self.partition: int | None = parsed["partition"]
        # Kept as given (PEM paths are read when segments are listed, on the driver).
        self.tiered_keys: str | None = parsed["tiered_keys"]
        self.isolation: str = parsed["isolation"]
        self.validate_crc: bool = parsed["validate_crc"]
        self.include_control: bool = parsed["include_control"]
        self.mode: str = parsed["mode"]
        self.max_records_per_batch: int = parsed["max_records_per_batch"]
        self.max_bytes_per_partition: int = parsed["max_bytes_per_partition"]
        # As Spark's Kafka source: the least number of tasks to plan (default:
        # this machine's cores); small segments share a task up to the size
        # that gives at least that many.
        self.min_partitions: int = parsed["min_partitions"] or os.cpu_count() or 2
        self.max_decompressed_size: int = parsed["max_decompressed_size"]
        # Decode threads per task: None = the task's CPUs (spark.task.cpus), see task_threads.
        self.threads: int | None = parsed["threads"]
        # startingOffsets "latest" (or -1) only makes sense for a stream: the
        # batch reader refuses it (check_batch), the stream reader takes it.
        self.starting_spec: str | dict[tuple[str, int], int] = parsed["starting_spec"]
        self._batch_error: str | None = parsed["batch_error"]
        if parsed["without_hadoop_error"]:  # storage=hadoop, fs.* settings: the JVM source's
            raise ValueError(parsed["without_hadoop_error"])
        self.starting_offsets: dict[tuple[str, int], int] = parsed["starting_offsets"]
        self.ending_offsets: dict[tuple[str, int], int] = parsed["ending_offsets"]
        self.has_ending: bool = parsed["has_ending"]
        self.max_offsets_per_trigger: int | None = parsed["max_offsets_per_trigger"]
        self.max_bytes_per_trigger: int | None = parsed["max_bytes_per_trigger"]
        self.fail_on_data_loss: bool = parsed["fail_on_data_loss"]
        self.starting_timestamp: int | None = parsed["starting_timestamp"]
        self.ending_timestamp: int | None = parsed["ending_timestamp"]
        # Typed value/key columns: resolved by the source once the topics are listed.
        self.value_options: dict[str, str] = parsed["value_options"]
        self.internal = internal_option({k.lower(): v for k, v in self._given})
        if self.internal is not None and self.value_options:
            raise ValueError(
                "kafka-log option 'internalTopic' decodes the raw key and value: it can't be combined with "
                f"{', '.join(sorted(self.value_options))}"
            )

    def check_batch(self) -> None:
        """Refuse what only a stream can do (startingOffsets latest), for a batch read."""
        if self._batch_error:
            raise ValueError(self._batch_error)

    def check_named_partitions(self, found: Iterable[tuple[str, int]]) -> None:
        """Refuse ``startingOffsets``/``endingOffsets`` JSON naming topic-partitions
        with no log among ``found`` (as a stream does): a typo would read everything."""
        if self.starting_offsets or self.ending_offsets:
            _native._spark_check_named_partitions(self._given, [(str(t), int(p)) for t, p in found])

    def decode_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {
            "validate_crc": self.validate_crc,
            "include_control": self.include_control,
            "on_error": MODES[self.mode],
            "max_decompressed_size": self.max_decompressed_size,
            "threads": task_threads(self.threads),
        }
        if self.isolation != "read_uncommitted":
            options["isolation"] = self.isolation
        return options

    def bounds(self, topic: str, partition: int) -> Bounds:
        return Bounds(
            self.starting_offsets.get((topic, partition)),
            self.ending_offsets.get((topic, partition)),
            self.starting_timestamp,
            self.ending_timestamp,
        )


def task_threads(threads: int | None) -> int:
    """Decode threads for work inside a Spark task: ``threads`` when given,
    else the task's CPUs (``spark.task.cpus``, normally 1). An executor
    already runs one task per core; each decoding on every core would start
    cores x cores threads. Outside a task (planning, tests): 1."""
    if threads is not None:
        return threads
    try:
        from pyspark import TaskContext

        context = TaskContext.get()
        if context is not None:
            return max(1, int(context.cpus()))
    except Exception:  # an older PySpark without TaskContext.cpus(), or no task
        pass
    return 1


TRUE = {"true", "1", "yes", "on"}


FALSE = {"false", "0", "no", "off"}
