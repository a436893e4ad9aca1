"""The ``kafka-log`` source's options: names, checks and parsing, done once at ``load()``.

>>> check_option_names(["isolaton"])  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: unknown kafka-log option 'isolaton'; did you mean 'isolation'? ...
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import Any

import kafkabatch.spark.values as spark_values
from kafkabatch._decode import DEFAULT_MAX_DECOMPRESSED_SIZE
from kafkabatch._util import closest, parse_size
from kafkabatch.log.bounds import Bounds, parse_timestamp
from kafkabatch.spark.internal import internal_option

#: Default ``maxBytesPerPartition``: segments larger than this are split at batch boundaries.
DEFAULT_MAX_BYTES_PER_PARTITION = 128 << 20


#: Default ``maxRecordsPerBatch``: rows per Arrow batch handed to Spark.
DEFAULT_MAX_RECORDS_PER_BATCH = 10_000


MODES = {"FAILFAST": "raise", "DROPMALFORMED": "skip", "PERMISSIVE": "skip"}


ISOLATIONS = ("read_uncommitted", "read_committed")


#: Every option of the ``kafka-log`` source, in its documented spelling
#: (``docs/spark.md``; names are case-insensitive, as Spark's are). Any other
#: name fails at ``load()``: a misspelled ``isolation`` must not silently
#: return aborted transactions.
KNOWN_OPTIONS: tuple[str, ...] = (
    # where to read: Spark's own path/paths (load(path), load([...])) and the
    # generic file-source options that make sense for log folders
    "path",
    "paths",
    "pathGlobFilter",
    "recursiveFileLookup",
    "topic",
    "partition",
    # tiered storage: key-pair id -> PEM private key (JSON object, or ID=PEM,ID=PEM)
    "tieredKeys",
    # which records are visible
    "isolation",
    "kafka.isolation.level",
    "includeControl",
    "validateCrc",
    "mode",
    "maxDecompressedSize",
    "startingOffsets",
    "endingOffsets",
    "startingTimestamp",
    "endingTimestamp",
    # planning
    "minPartitions",
    "maxBytesPerPartition",
    "maxRecordsPerBatch",
    "threads",
    # streaming (spark.readStream; ignored by batch reads, as Spark's Kafka source does)
    "maxOffsetsPerTrigger",
    "maxBytesPerTrigger",
    "failOnDataLoss",
    # typed values and keys (JSON, Avro, Schema Registry)
    *spark_values.VALUE_OPTIONS,
    # Kafka's internal topics as typed struct columns (auto, a kind, or {topic: kind})
    "internalTopic",
    "definitions",
)


#: Options people bring from Spark's file sources or Spark's Kafka source,
#: with what to do instead (a plain "did you mean" would mislead).
_OPTION_ADVICE = {
    "ignorecorruptfiles": "use option mode=DROPMALFORMED or PERMISSIVE to skip corrupt batches",
    "ignoremissingfiles": "segments are listed once, at load(); a segment deleted before it is read fails the task",
    "modifiedbefore": "records are chosen by their own time: use endingTimestamp",
    "modifiedafter": "records are chosen by their own time: use startingTimestamp",
    "subscribe": "kafka-log reads log folders, not a cluster: name them in load(), e.g. load('/data/orders-*')",
    "subscribepattern": "kafka-log reads log folders, not a cluster: name them in load(), e.g. load('/data/orders-*')",
    "assign": "kafka-log reads log folders, not a cluster: name them in load(), e.g. load(['/data/orders-0'])",
    "kafka.bootstrap.servers": "kafka-log reads log folders, not a cluster: pass their path to load()",
    "includeheaders": "the headers column is always there; select the columns you want",
}


def check_option_names(names: Iterable[str], known: Iterable[str] = KNOWN_OPTIONS) -> None:
    """Raise :class:`ValueError` for the first option name that is not in
    ``known`` (case-insensitive), suggesting the closest known one.

    >>> check_option_names(["isolaton"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown kafka-log option 'isolaton'; did you mean 'isolation'? ...
    """
    spelled = {name.lower(): name for name in known}
    for name in names:
        lower = str(name).lower()
        if lower in spelled:
            continue
        advice = _OPTION_ADVICE.get(lower)
        if advice:
            hint = f" ({advice})"
        else:
            close = closest(lower, spelled)
            hint = f"; did you mean {spelled[close]!r}?" if close else ""
        raise ValueError(
            f"unknown kafka-log option {name!r}{hint} Known options (case-insensitive): "
            f"{', '.join(spelled.values())}; see docs/spark.md"
        )


class Options:
    """The data source options, parsed and checked once (at ``load()``)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        # Spark hands Python data sources a dict with lower-case keys.
        opts = {str(k).lower(): v for k, v in dict(options).items()}
        check_option_names(opts)
        self.paths = _paths(opts)
        self.path_glob_filter: str | None = opts.get("pathglobfilter") or None
        if not _bool_option(opts, "recursiveFileLookup", True):
            raise ValueError(
                "kafka-log option 'recursiveFileLookup' can't be false: kafka-log always looks for "
                "<topic>-<partition> folders at any depth; name the folders to read, or a glob such as /data/orders-*"
            )
        self.topic: str | None = opts.get("topic") or None
        self.partition = _int_option(opts, "partition", minimum=0)
        # Kept as given (PEM paths are read when segments are listed, on the driver).
        self.tiered_keys: str | None = opts.get("tieredkeys") or None
        isolation = opts.get("isolation", opts.get("kafka.isolation.level", "read_uncommitted"))
        isolation = str(isolation).strip().lower()
        if isolation not in ISOLATIONS:
            raise ValueError(
                f"kafka-log option 'isolation' must be read_uncommitted or read_committed, not {isolation!r}"
            )
        self.isolation = isolation
        self.validate_crc = _bool_option(opts, "validateCrc", True)
        self.include_control = _bool_option(opts, "includeControl", False)
        mode = str(opts.get("mode", "FAILFAST")).strip().upper()
        if mode not in MODES:
            raise ValueError(
                f"kafka-log option 'mode' must be FAILFAST, DROPMALFORMED or PERMISSIVE, not {opts['mode']!r}"
            )
        self.mode = mode
        self.max_records_per_batch = _int_option(
            opts, "maxRecordsPerBatch", minimum=1, default=DEFAULT_MAX_RECORDS_PER_BATCH
        )
        self.max_bytes_per_partition = _size_option(opts, "maxBytesPerPartition", DEFAULT_MAX_BYTES_PER_PARTITION)
        # As Spark's Kafka source: the least number of tasks to plan (default:
        # this machine's cores); small segments share a task up to the size
        # that gives at least that many.
        self.min_partitions: int = _int_option(opts, "minPartitions", minimum=1, default=os.cpu_count() or 2) or 1
        self.max_decompressed_size = _size_option(opts, "maxDecompressedSize", DEFAULT_MAX_DECOMPRESSED_SIZE)
        # Decode threads per task: None = the task's CPUs (spark.task.cpus), see task_threads.
        self.threads = _int_option(opts, "threads", minimum=1)
        # startingOffsets "latest" (or -1) only makes sense for a stream: the
        # batch reader refuses it (check_batch), the stream reader takes it.
        self.starting_spec = _offsets_spec(opts, "startingOffsets")
        self._batch_error: str | None = None
        try:
            self.starting_offsets = _offsets_option(opts, "startingOffsets")
        except ValueError as error:
            self.starting_offsets = {}
            self._batch_error = str(error)
        self.ending_offsets = _offsets_option(opts, "endingOffsets")
        self.has_ending = any(name in opts for name in ("endingoffsets", "endingtimestamp"))
        self.max_offsets_per_trigger = _int_option(opts, "maxOffsetsPerTrigger", minimum=1)
        self.max_bytes_per_trigger = (
            _size_option(opts, "maxBytesPerTrigger", 0) if opts.get("maxbytespertrigger") not in (None, "") else None
        )
        if self.max_bytes_per_trigger is not None and self.max_bytes_per_trigger < 1:
            raise ValueError("kafka-log option 'maxBytesPerTrigger' must be at least 1 byte")
        self.fail_on_data_loss = _bool_option(opts, "failOnDataLoss", True)
        self.starting_timestamp = _timestamp_option(opts, "startingTimestamp")
        self.ending_timestamp = _timestamp_option(opts, "endingTimestamp")
        # Typed value/key columns: resolved by the source once the topics are listed.
        self.value_options = {k: v for k, v in opts.items() if k in {o.lower() for o in spark_values.VALUE_OPTIONS}}
        self.internal = internal_option(opts)
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
        found = set(found)
        for name, named in (("startingOffsets", self.starting_offsets), ("endingOffsets", self.ending_offsets)):
            unknown = sorted(set(named) - found)
            if unknown:
                raise ValueError(
                    f"kafka-log option '{name}' names topic-partitions that have no log under "
                    f"{', '.join(map(repr, self.paths))}: {', '.join(f'{t}-{p}' for t, p in unknown)} "
                    f"(found: {', '.join(f'{t}-{p}' for t, p in sorted(found)) or 'none'})"
                )

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


def _paths(opts: dict[str, Any]) -> list[str]:
    if "paths" in opts:  # load(["a", "b"]) arrives as a JSON list
        try:
            paths = json.loads(opts["paths"])
        except json.JSONDecodeError:
            raise ValueError(f"kafka-log option 'paths' must be a JSON list of paths, not {opts['paths']!r}") from None
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise ValueError(f"kafka-log option 'paths' must be a JSON list of paths, not {opts['paths']!r}")
        if "path" in opts:
            paths = [opts["path"], *paths]
    elif "path" in opts:
        paths = [opts["path"]]
    else:
        paths = []
    if not paths:
        raise ValueError("kafka-log needs a path: spark.read.format('kafka-log').load('/var/lib/kafka/data')")
    return paths


TRUE = {"true", "1", "yes", "on"}


FALSE = {"false", "0", "no", "off"}


def _bool_option(opts: dict[str, Any], name: str, default: bool) -> bool:
    value = opts.get(name.lower())
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in TRUE:
        return True
    if text in FALSE:
        return False
    raise ValueError(f"kafka-log option '{name}' must be true or false, not {value!r}")


def _int_option(opts: dict[str, Any], name: str, *, minimum: int, default: int | None = None) -> int | None:
    value = opts.get(name.lower())
    if value is None or value == "":
        return default
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ValueError(f"kafka-log option '{name}' must be an integer, not {value!r}") from None
    if number < minimum:
        raise ValueError(f"kafka-log option '{name}' must be at least {minimum}, not {number}")
    return number


def _size_option(opts: dict[str, Any], name: str, default: int) -> int:
    value = opts.get(name.lower())
    if value is None or value == "":
        return default
    try:
        return parse_size(str(value))
    except ValueError:
        raise ValueError(
            f"kafka-log option '{name}' must be a size in bytes such as 134217728 or '128m', not {value!r}"
        ) from None


def _timestamp_option(opts: dict[str, Any], name: str) -> int | None:
    value = opts.get(name.lower())
    if value is None or value == "":
        return None
    try:
        return parse_timestamp(str(value))
    except ValueError:
        raise ValueError(
            f"kafka-log option '{name}' must be epoch milliseconds or an ISO-8601 timestamp "
            f"such as '2024-05-01T12:00:00Z', not {value!r}"
        ) from None


def _offsets_spec(opts: dict[str, Any], name: str) -> str | dict[tuple[str, int], int]:
    """``startingOffsets``/``endingOffsets`` as a stream takes them: ``"earliest"``,
    ``"latest"``, or ``{(topic, partition): offset}`` with -2 (earliest) and -1
    (latest) kept. Checked as :func:`_offsets_option` checks them, without the
    batch-only refusals."""
    value = opts.get(name.lower())
    if value is None:
        return "earliest" if name == "startingOffsets" else "latest"
    text = str(value).strip()
    if text.lower() in ("earliest", "latest"):
        return text.lower()
    words = "earliest" if name == "startingOffsets" else "latest"
    return dict(_offsets_json(name, value, words, " (a stream also takes earliest/latest)"))


def _offsets_json(name: str, value: Any, words: str, note: str = "") -> list[tuple[tuple[str, int], int]]:
    """The ``((topic, partition), offset)`` pairs of an offsets JSON option, each offset >= -2."""
    try:
        parsed = json.loads(str(value).strip())
    except json.JSONDecodeError:
        parsed = None
    example = '\'{"orders": {"0": 23, "1": -2}}\''
    if not isinstance(parsed, dict):
        raise ValueError(f"kafka-log option '{name}' must be {words} or JSON like {example}{note}, not {value!r}")
    pairs = []
    for topic, partitions in parsed.items():
        if not isinstance(partitions, dict):
            raise ValueError(
                f"kafka-log option '{name}': topic {topic!r} must map partitions to offsets, like {example}"
            )
        for part, offset in partitions.items():
            try:
                part_number = int(part)
            except ValueError:
                raise ValueError(
                    f"kafka-log option '{name}': partition {part!r} of topic {topic!r} is not a number"
                ) from None
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < -2:
                raise ValueError(
                    f"kafka-log option '{name}': offset {offset!r} for {topic}-{part} must be "
                    "an offset >= 0, -2 (earliest) or -1 (latest)"
                )
            pairs.append(((topic, part_number), offset))
    return pairs


def _offsets_option(opts: dict[str, Any], name: str) -> dict[tuple[str, int], int]:
    """``startingOffsets``/``endingOffsets`` as Spark's Kafka source takes them:
    ``earliest``/``latest`` or JSON ``{"topic": {"partition": offset}}`` with -2
    for earliest and -1 for latest. Batch queries can't start at latest nor
    end at earliest. Returns the specific bounds only."""
    starting = name == "startingOffsets"
    value = opts.get(name.lower())
    if value is None:
        return {}
    text = str(value).strip()
    if text.lower() == ("earliest" if starting else "latest"):
        return {}
    if text.lower() in ("earliest", "latest"):
        raise ValueError(
            f"kafka-log option '{name}' can't be {text.lower()} for a batch read "
            f"(use {'earliest' if starting else 'latest'} or JSON like "
            '\'{"orders": {"0": 23, "1": -2}}\')'
        )
    bounds: dict[tuple[str, int], int] = {}
    for (topic, part_number), offset in _offsets_json(name, value, "earliest" if starting else "latest"):
        if offset == (-1 if starting else -2):
            raise ValueError(
                f"kafka-log option '{name}': {topic}-{part_number} can't "
                f"{'start at latest (-1)' if starting else 'end at earliest (-2)'} "
                "in a batch read"
            )
        if offset >= 0:
            bounds[(topic, part_number)] = offset
    return bounds
