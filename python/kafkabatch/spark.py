"""PySpark integration: a ``kafka-log`` data source and UDFs over raw batches.

Read broker log folders (local, or anything :mod:`pyarrow.fs` reaches:
``s3a://``, ``gs://``, ``hdfs://``) into a DataFrame with exactly the schema
of Spark's Kafka source::

    import kafkabatch.spark as kbs

    kbs.register(spark)
    df = (spark.read.format("kafka-log")
          .option("startingOffsets", '{"orders": {"0": 1000}}')
          .option("mode", "DROPMALFORMED")
          .load("/var/lib/kafka/data"))

Or decode a column of raw batch bytes (Fetch responses, ``binaryFile``
loads, bytes kept in a table)::

    raw = spark.read.format("binaryFile").load("/dumps/orders-0/*.log")
    records = kbs.explode_batches(raw, "content", path_column="path")
    nested = raw.select(kbs.decode_batches("content", topic="orders", partition=0).alias("records"))

Every Arrow batch handed to Spark is built by kafkabatch's Rust core and
already has the Arrow types Spark expects for this schema (see
:data:`SPARK_ARROW_SCHEMA`); the headers list is relabelled without copying.
Needs PySpark 4.0+ (``pip install 'kafkabatch[spark]'``);
:func:`decode_batches_arrow` needs 4.1+. See ``docs/spark.md``.
"""

import difflib
import fnmatch
import json
import logging
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa

import kafkabatch as kb
from kafkabatch import logdir
from kafkabatch.index import IndexFileWarning, offset_index_entries
from kafkabatch.logdir import Segment, SegmentResult, Transaction, _Bounds

try:
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )
except ImportError as _error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "kafkabatch.spark needs PySpark 4.0 or later (with Python data sources): pip install 'kafkabatch[spark]'"
    ) from _error

from kafkabatch import sparkvalues
from kafkabatch.sparkvalues import SparkValueColumns

__all__ = [
    "DEFAULT_MAX_BYTES_PER_PARTITION",
    "DEFAULT_MAX_RECORDS_PER_BATCH",
    "HEADERS_TYPE",
    "KAFKA_SCHEMA",
    "SPARK_ARROW_SCHEMA",
    "KNOWN_OPTIONS",
    "KafkaLogDataSource",
    "WorkerImportError",
    "check_option_names",
    "check_worker_import",
    "decode_batches",
    "decode_batches_arrow",
    "explode_batches",
    "parse_values",
    "register",
    "to_spark_arrow",
]

log = logging.getLogger("kafkabatch.spark")

#: Spark's Kafka source header type: ``array<struct<key: string, value: binary>>``.
HEADERS_TYPE = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))

#: The schema of Spark's Kafka source (with ``includeHeaders``), the schema of
#: the ``kafka-log`` data source and of each element of :func:`decode_batches`.
KAFKA_SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
        StructField("headers", HEADERS_TYPE),
    ]
)

_SPARK_HEADERS_ARROW = pa.list_(pa.field("element", pa.struct([("key", pa.string()), ("value", pa.binary())])))

#: The Arrow schema Spark derives from :data:`KAFKA_SCHEMA`
#: (``pyspark.sql.pandas.types.to_arrow_schema(KAFKA_SCHEMA, timezone="UTC")``):
#: kafkabatch's :data:`kafkabatch.SCHEMA` with the list item called ``element``.
SPARK_ARROW_SCHEMA = pa.schema(
    [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("timestampType", pa.int32()),
        ("headers", _SPARK_HEADERS_ARROW),
    ]
)

_SPARK_RECORD_STRUCT = pa.struct(list(SPARK_ARROW_SCHEMA))
_SPARK_RECORDS_LIST = pa.list_(pa.field("element", _SPARK_RECORD_STRUCT))

#: Default ``maxBytesPerPartition``: segments larger than this are split at batch boundaries.
DEFAULT_MAX_BYTES_PER_PARTITION = 128 << 20
#: Default ``maxRecordsPerBatch``: rows per Arrow batch handed to Spark.
DEFAULT_MAX_RECORDS_PER_BATCH = 10_000


def to_spark_arrow(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A record batch of :data:`kafkabatch.SCHEMA` with exactly
    :data:`SPARK_ARROW_SCHEMA`'s types (zero-copy: only the headers list's
    item field is renamed, ``item`` → ``element``)."""
    if batch.schema.equals(SPARK_ARROW_SCHEMA) and batch.column(7).type.value_field.name == "element":
        return batch
    columns = list(batch.columns)
    headers = columns[7]
    if pa.types.is_list(headers.type) and headers.type.value_type.equals(_SPARK_HEADERS_ARROW.value_type):
        columns[7] = headers.view(_SPARK_HEADERS_ARROW)
        try:
            return pa.RecordBatch.from_arrays(columns, schema=SPARK_ARROW_SCHEMA)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            pass
    return batch.cast(SPARK_ARROW_SCHEMA)


# --------------------------------------------------------------------------
# options
# --------------------------------------------------------------------------

_MODES = {"FAILFAST": "raise", "DROPMALFORMED": "skip", "PERMISSIVE": "skip"}
_ISOLATIONS = ("read_uncommitted", "read_committed")

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
    *sparkvalues.VALUE_OPTIONS,
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
            close = difflib.get_close_matches(lower, list(spelled), n=1, cutoff=0.6)
            hint = f"; did you mean {spelled[close[0]]!r}?" if close else ""
        raise ValueError(
            f"unknown kafka-log option {name!r}{hint} Known options (case-insensitive): "
            f"{', '.join(spelled.values())}; see docs/spark.md"
        )


class _Options:
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
        isolation = opts.get("isolation", opts.get("kafka.isolation.level", "read_uncommitted"))
        isolation = str(isolation).strip().lower()
        if isolation not in _ISOLATIONS:
            raise ValueError(
                f"kafka-log option 'isolation' must be read_uncommitted or read_committed, not {isolation!r}"
            )
        self.isolation = isolation
        self.validate_crc = _bool_option(opts, "validateCrc", True)
        self.include_control = _bool_option(opts, "includeControl", False)
        mode = str(opts.get("mode", "FAILFAST")).strip().upper()
        if mode not in _MODES:
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
        self.max_decompressed_size = _size_option(opts, "maxDecompressedSize", kb.DEFAULT_MAX_DECOMPRESSED_SIZE)
        # Decode threads per task: None = the task's CPUs (spark.task.cpus), see _task_threads.
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
        self.value_options = {k: v for k, v in opts.items() if k in {o.lower() for o in sparkvalues.VALUE_OPTIONS}}

    def check_batch(self) -> None:
        """Refuse what only a stream can do (startingOffsets latest), for a batch read."""
        if self._batch_error:
            raise ValueError(self._batch_error)

    def decode_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {
            "validate_crc": self.validate_crc,
            "include_control": self.include_control,
            "on_error": _MODES[self.mode],
            "max_decompressed_size": self.max_decompressed_size,
            "threads": _task_threads(self.threads),
        }
        if self.isolation != "read_uncommitted":
            options["isolation"] = self.isolation
        return options

    def bounds(self, topic: str, partition: int) -> _Bounds:
        return _Bounds(
            self.starting_offsets.get((topic, partition)),
            self.ending_offsets.get((topic, partition)),
            self.starting_timestamp,
            self.ending_timestamp,
        )


def _task_threads(threads: int | None) -> int:
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


_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def _bool_option(opts: dict[str, Any], name: str, default: bool) -> bool:
    value = opts.get(name.lower())
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
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
        return logdir.parse_size(str(value))
    except ValueError:
        raise ValueError(
            f"kafka-log option '{name}' must be a size in bytes such as 134217728 or '128m', not {value!r}"
        ) from None


def _timestamp_option(opts: dict[str, Any], name: str) -> int | None:
    value = opts.get(name.lower())
    if value is None or value == "":
        return None
    try:
        return logdir.parse_timestamp(str(value))
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


# --------------------------------------------------------------------------
# the data source
# --------------------------------------------------------------------------


class _LogSplit(InputPartition):
    """One Spark task: bytes ``[start, end)`` of one segment (a batch-aligned range)."""

    def __init__(
        self,
        segment: Segment,
        start: int,
        end: int,
        bounds: _Bounds,
        transactions: list[Transaction] | None,
        check_start: bool = False,
        work: int | None = None,
    ) -> None:
        super().__init__((segment.path, start, end))
        self.segment = segment
        self.start = start
        self.end = end
        self.bounds = bounds
        self.transactions = transactions
        self.check_start = check_start  # the start came from a .index file: make sure it's a batch
        # Spark's work for these bytes, in bytes of wire data (see _estimate_work).
        self.work = end - start if work is None else work


class _LogSplitGroup(InputPartition):
    """One Spark task reading several consecutive splits, in order."""

    def __init__(self, splits: list[_LogSplit]) -> None:
        super().__init__(tuple(split.value for split in splits))
        self.splits = splits


#: Spark's ``spark.sql.files.openCostInBytes``: what a split costs beyond its bytes when packing tasks.
OPEN_COST_BYTES = 4 << 20

#: Estimating a split's work for Spark from its first batch headers: a
#: compressed batch counts this many times its wire size, and each record
#: :data:`_RECORD_WORK` bytes more. Fitted on the JVM CPU time of
#: ``kafka-log`` -> Parquet tasks (one segment each, every codec): about 2 ms
#: per 1,000 rows plus 5.8 ms per MB of Arrow, so rows count about as much as
#: 350 bytes; lz4/zstd/snappy batches of JSON-like values decode to 3.2-4x
#: their wire size.
_COMPRESSED_WORK = 3
_RECORD_WORK = 350
_V2_HEADER = 61  # a v2 batch header, through its records count
_SAMPLE_BATCHES = 16


def _estimate_work(source: Any, start: int, end: int) -> int:
    """What decoding ``[start, end)`` of a segment costs Spark downstream, in
    bytes, judged by its first data batches (up to :data:`_SAMPLE_BATCHES`;
    control batches skipped): their compression and records per byte. The
    JVM's work (Arrow to rows, then the sink) follows rows and decoded
    bytes, not wire bytes: a segment of compressed small records costs it
    3x one of uncompressed large ones of the same size."""
    size = end - start
    pos = start
    sampled = compressed = records = 0
    for _ in range(_SAMPLE_BATCHES):
        if end - pos < _V2_HEADER:
            break
        header = bytes(source.read(pos, _V2_HEADER))
        length = logdir._batch_length(header)
        if length is None or header[16] != 2 or length <= _V2_HEADER or pos + length > end:
            break  # legacy message sets don't count records in a header; or the end
        attributes = int.from_bytes(header[21:23], "big")
        count = int.from_bytes(header[57:61], "big", signed=True)
        if not 0 < count <= length:
            break  # not a plausible header
        if not attributes & 0x20:  # control batches (transaction markers) say nothing of the data
            sampled += length
            records += count
            compressed += length if attributes & 0x07 else 0
        pos += length
    if not sampled:
        return size
    factor = 1 + (_COMPRESSED_WORK - 1) * compressed / sampled
    return int(size * factor + size * records * _RECORD_WORK / sampled)


def _pack(splits: list[_LogSplit], max_bytes: int, min_partitions: int) -> list[InputPartition]:
    """Consecutive splits packed into balanced tasks, so a task reads a
    partition's segments in offset order.

    The number of tasks is ``min_partitions``, or, when that would make
    tasks read more than ``max_bytes`` of segments, the next multiple of
    ``min_partitions`` that doesn't, so the last wave of tasks keeps every
    core busy (Spark's greedy packing of 201 MB into 128 MiB tasks gives 3
    tasks for 2 cores: the third one runs alone). Each split also costs
    :data:`OPEN_COST_BYTES` (as in Spark's ``FilePartition``) when placing
    cuts and in the smallest task allowed, but not against ``max_bytes``: a
    split is a memory-mapped byte range, and counting 4 MiB for each of 35
    small segments turned 201 MB on 2 cores into two waves of 2 tasks, each
    Parquet task costing ~0.2 s of JVM CPU of its own. Never more tasks than
    splits. Cuts go where the running estimated work (``split.work``, see
    :func:`_estimate_work`) is nearest to a multiple of ``total / tasks``,
    so tasks take about the same time."""
    if not splits:
        return []
    total = sum(s.end - s.start + OPEN_COST_BYTES for s in splits)
    wire = sum(s.end - s.start for s in splits)
    minimum = max(min_partitions, 1)
    count = minimum
    if max_bytes > 0 and wire > count * max_bytes:
        count = -(-wire // max_bytes)
        count = -(-count // minimum) * minimum
    count = max(1, min(count, len(splits), total // OPEN_COST_BYTES))
    if count == len(splits):
        return list(splits)
    costs = [s.work + OPEN_COST_BYTES for s in splits]
    total = sum(costs)
    groups: list[list[_LogSplit]] = []
    last = -1
    done = 0
    for split, cost in zip(splits, costs):
        task = min(count - 1, (2 * done + cost) * count // (2 * total))  # where the split's middle falls
        done += cost
        if task != last:
            groups.append([])
            last = task
        groups[-1].append(split)
    return [group[0] if len(group) == 1 else _LogSplitGroup(group) for group in groups]


class KafkaLogDataSource(DataSource):
    """``spark.read.format("kafka-log").load(path)``: Kafka log folders as Spark's Kafka source schema.

    ``path`` is what :func:`kafkabatch.logdir.list_segments` takes (a broker
    log dir, ``<topic>-<partition>`` folders, segment files, globs; local or
    a pyarrow.fs URI such as ``s3a://bucket/kafka/``); ``load([...])`` takes
    several. Segments larger than ``maxBytesPerPartition`` are split at batch
    boundaries, and small ones share a task (at least ``minPartitions``
    tasks, packed like Spark's file sources). Options: see ``docs/spark.md``.

    >>> import kafkabatch.spark as kbs
    >>> kbs.register(spark)                                                  # doctest: +SKIP
    >>> spark.read.format("kafka-log").option("mode", "PERMISSIVE").load("/data/kafka").count()  # doctest: +SKIP
    1000000
    """

    def __init__(self, options: Any) -> None:
        super().__init__(options)
        self._options = _Options(options)
        # List once, at load(): errors about paths and folder names surface
        # there, and every action on the DataFrame reads the same files (as
        # Spark's file sources do).
        self._segments = self._list()
        # valueFormat/keyFormat: schemas fetched here, on the driver, once.
        self._values = sparkvalues.value_columns(self._options.value_options, sorted({s.topic for s in self._segments}))

    @classmethod
    def name(cls) -> str:
        return "kafka-log"

    def schema(self) -> StructType:
        return KAFKA_SCHEMA if self._values is None else self._values.schema(KAFKA_SCHEMA)

    def reader(self, schema: StructType) -> "KafkaLogReader":
        _check_schema(schema, self.schema())
        self._options.check_batch()
        return KafkaLogReader(self._options, self._segments, self._values)

    def streamReader(self, schema: StructType) -> Any:
        """``spark.readStream.format("kafka-log")``: see :mod:`kafkabatch.stream`
        (PySpark 4.2+: a stream reader with read limits and Trigger.AvailableNow)."""
        _check_schema(schema, self.schema())
        try:
            from kafkabatch.stream import KafkaLogStreamReader
        except ImportError as error:
            import pyspark

            raise RuntimeError(
                "spark.readStream.format('kafka-log') needs PySpark 4.2 or later (streaming Python data sources "
                f"with read limits and Trigger.AvailableNow); this is PySpark {pyspark.__version__} ({error}). "
                "Batch reads (spark.read) work here"
            ) from None
        return KafkaLogStreamReader(self._options, self._values)

    def _list(self) -> list[Segment]:
        return _list_segments(self._options)


def _check_schema(schema: StructType, expected: StructType) -> None:
    if schema != expected:
        raise ValueError(
            "kafka-log has a fixed schema (Spark's Kafka source schema, value and key typed by "
            f"valueFormat/keyFormat): {expected.simpleString()}; got {schema.simpleString()}"
        )


def _list_segments(options: _Options) -> list[Segment]:
    """The segments under the ``path``/``paths`` options (see :func:`kafkabatch.logdir.list_segments`),
    filtered by ``pathGlobFilter``, in topic, partition, offset order."""
    segments: dict[str, Segment] = {}
    for path in options.paths:
        for seg in logdir.list_segments(path, topic=options.topic, partition=options.partition):
            if options.path_glob_filter and not fnmatch.fnmatchcase(
                logdir._basename(seg.path), options.path_glob_filter
            ):
                continue  # as Spark's pathGlobFilter: a glob on file names only
            segments.setdefault(seg.path, seg)
    return sorted(segments.values(), key=logdir._sort_key)


class KafkaLogReader(DataSourceReader):
    """Plans one input partition per segment (split when large) and decodes them."""

    def __init__(self, options: _Options, segments: list[Segment], values: SparkValueColumns | None = None) -> None:
        self._options = options
        self._segments = segments
        self._values = values
        self._arrow_schema = None if values is None else values.arrow_schema(KAFKA_SCHEMA)

    def partitions(self) -> list[InputPartition]:
        opts = self._options
        splits: list[_LogSplit] = []
        for group in logdir._by_partition(self._segments):
            bounds = opts.bounds(group[0].topic, group[0].partition)
            if bounds.empty():
                continue
            transactions = None
            if opts.isolation == "read_committed":
                transactions = logdir._partition_transactions(group)
            splits.extend(_plan_partition(opts, group, bounds, transactions))
        return _pack(splits, opts.max_bytes_per_partition, opts.min_partitions)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, _LogSplitGroup):
            for split in partition.splits:
                yield from self._read_split(split)
        elif isinstance(partition, _LogSplit):
            yield from self._read_split(partition)
        # else: Spark's placeholder when there is nothing to read

    def _read_split(self, partition: _LogSplit) -> Iterator[pa.RecordBatch]:
        opts = self._options
        seg = partition.segment
        result = SegmentResult(seg)
        source = logdir._open_source(seg.path)
        try:
            if partition.check_start:
                _check_batch_start(source, seg, partition.start)
            for batch in logdir.decode_range(
                source,
                seg,
                start=partition.start,
                end=partition.end,
                max_chunk_bytes=min(logdir.DEFAULT_MAX_CHUNK_BYTES, max(partition.end - partition.start, 1)),
                bounds=partition.bounds,
                transactions=partition.transactions,
                max_records_per_batch=opts.max_records_per_batch,
                result=result,
                value_specs=() if self._values is None else self._values.specs,
                **opts.decode_options(),
            ):
                if self._values is None or self._arrow_schema is None:
                    yield to_spark_arrow(batch)
                else:
                    yield self._values.to_spark(batch, self._arrow_schema)
        finally:
            source.close()
        if opts.mode == "PERMISSIVE" and (result.skipped or result.trailing_bytes):
            log.warning("kafka-log PERMISSIVE: %s", result.describe())


def _plan_partition(
    opts: _Options,
    group: list[Segment],
    bounds: _Bounds,
    transactions: list[Transaction] | None,
    seek: Callable[[Segment, _Bounds, Any], tuple[int, int | None]] = logdir.seek_position,
) -> list[_LogSplit]:
    """The splits (byte ranges, at most ``maxBytesPerPartition`` each) that read
    ``bounds`` of one topic-partition's segments ``group`` (in offset order);
    shared by the batch reader and the stream reader's micro-batches (whose
    ``seek`` knows batch positions from its own walk of the headers)."""
    splits: list[_LogSplit] = []
    for i, seg in enumerate(group):
        if seg.size == 0 or logdir._segment_skippable(group, i, bounds):
            continue
        txns = None if transactions is None else _transactions_for(transactions, group, i)
        source = logdir._open_source(seg.path)
        try:
            start, end = seek(seg, bounds, source)
            # Remote objects: a read per split would cost a request each; count wire bytes.
            local = not logdir._is_remote(seg.path)
            for a, b, from_index in _split(seg, start, opts.max_bytes_per_partition):
                if end is not None:
                    if a >= end:
                        break
                    b = min(b, end)
                splits.append(
                    _LogSplit(
                        seg,
                        a,
                        b,
                        bounds,
                        txns,
                        check_start=from_index and a > 0,
                        work=_estimate_work(source, a, b) if local else None,
                    )
                )
        finally:
            source.close()
    return splits


def _transactions_for(transactions: list[Transaction], group: list[Segment], i: int) -> list[Transaction]:
    """The transactions a task reading segment ``i`` of a partition may need."""
    seg = group[i]
    nxt = group[i + 1].base_offset if i + 1 < len(group) else None
    out = []
    for t in transactions:
        if seg.base_offset is not None and t.last_offset is not None and t.last_offset < seg.base_offset:
            continue
        if nxt is not None and t.first_offset >= nxt:
            continue
        out.append(t)
    return out


def _split(seg: Segment, start: int, max_bytes: int) -> list[tuple[int, int, bool]]:
    """Byte ranges of one segment for separate tasks: ``(start, end, from_index)``."""
    if max_bytes <= 0 or seg.size - start <= max_bytes:
        return [(start, seg.size, False)]
    if logdir._is_remote(seg.path):
        # Walking batch headers would read the whole object: use the broker's
        # offset index (an entry every index.interval.bytes, 4 KiB by default).
        cuts = _index_cuts(seg, start, max_bytes)
        if not cuts:
            return [(start, seg.size, False)]
        edges = [start, *cuts, seg.size]
        return [(a, b, True) for a, b in zip(edges, edges[1:])]
    source = logdir._open_source(seg.path)
    try:
        return [(a, b, False) for a, b in logdir.batch_ranges(source, start, seg.size, max_bytes)]
    finally:
        source.close()


def _index_cuts(seg: Segment, start: int, max_bytes: int) -> list[int]:
    """Task cuts of a remote segment from its ``.index`` (parsed by
    :func:`kafkabatch.index.offset_index_entries`, as the seek path does),
    each checked to be a batch start that agrees with its entry. An index
    that is missing, stale or garbage gives no cuts (one task for the
    segment, with an :class:`~kafkabatch.IndexFileWarning`), never an error."""
    base, _, query = seg.path.partition("?")
    if not base.endswith(".log") or seg.base_offset is None:
        return []
    index_path = base[: -len(".log")] + ".index" + (f"?{query}" if query else "")
    try:
        filesystem, fs_path = logdir._resolve_remote(index_path)
        with filesystem.open_input_file(fs_path) as f:
            offsets, positions = offset_index_entries(f.read(), seg.base_offset)
    except (OSError, ValueError) as e:
        if not isinstance(e, FileNotFoundError):
            warnings.warn(f"{index_path}: {e}; reading {seg.path} in one task", IndexFileWarning, stacklevel=2)
        return []
    cuts = []
    last = start
    for offset, position in zip(offsets, positions):
        if position >= seg.size:
            break
        if position - last >= max_bytes:
            cuts.append((offset, position))
            last = position
    if not cuts:
        return []
    source = logdir._open_source(seg.path)
    try:
        for offset, position in cuts:
            header = bytes(source.read(position, 61))
            length = logdir._batch_length(header) if len(header) >= 17 else None
            base_offset = int.from_bytes(header[:8], "big", signed=True) if len(header) >= 8 else None
            if (
                length is None
                or position + length > seg.size
                or header[16] > 2
                or base_offset is None
                or (base_offset > offset)
            ):
                warnings.warn(
                    f"{index_path}: entry {offset} -> byte {position} is not a batch of that offset in "
                    f"{seg.path} (a stale index?); reading the segment in one task",
                    IndexFileWarning,
                    stacklevel=2,
                )
                return []
    finally:
        source.close()
    return [position for _, position in cuts]


def _check_batch_start(source: Any, seg: Segment, position: int) -> None:
    header = source.read(position, 12)
    size = logdir._batch_length(header) if len(header) == 12 else None
    ok = False
    if size is not None and position + size <= source.size:
        data = source.read(position, size)
        ok = kb.valid_bytes(data) == size and all(
            b.is_valid for b in kb.iter_batches(data, validate_crc=True, on_error="keep")
        )
        del data
    source.release()
    if not ok:
        raise kb.CorruptBatchError(
            f"{seg.path}: byte {position} (from the segment's .index) is not the start of a valid batch; "
            "the .index file may be stale. Read this segment in one task with option maxBytesPerPartition=0"
        )


class WorkerImportError(RuntimeError):
    """Spark's Python workers can't import this kafkabatch (see :func:`register`)."""


#: Spark applications whose Python workers were found to import this kafkabatch.
_CHECKED_APPLICATIONS: set[str] = set()


def register(spark: Any = None, *, check_workers: bool | None = None) -> None:
    """Register the ``kafka-log`` data source with a SparkSession (the active
    one by default), and check once per Spark application that its Python
    workers import this same kafkabatch version.

    A worker started with another interpreter would otherwise fail deep
    inside the first task (``ModuleNotFoundError: No module named
    'kafkabatch'``); the check runs one tiny task and raises
    :class:`WorkerImportError` saying what to set instead. Turn it off with
    ``check_workers=False`` or the Spark conf
    ``spark.kafkabatch.checkWorkers=false`` (clusters where starting a task
    at registration is unwanted).

    >>> import kafkabatch.spark as kbs
    >>> kbs.register(spark)                                                  # doctest: +SKIP
    >>> df = spark.read.format("kafka-log").load("/var/lib/kafka/data")     # doctest: +SKIP
    """
    if spark is None:
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
        if spark is None:
            raise RuntimeError("no active SparkSession: pass one, kbs.register(spark)")
    spark.dataSource.register(KafkaLogDataSource)
    if check_workers is None:
        setting = str(spark.conf.get("spark.kafkabatch.checkWorkers", "true")).strip().lower()
        check_workers = setting not in _FALSE
    if check_workers:
        check_worker_import(spark)


def _probe_worker(_: Any) -> tuple[str, str, str | None, str | None]:
    """Runs in a Spark Python worker: its interpreter, Python version, and
    kafkabatch version or import error. Pickled by value (see
    :func:`check_worker_import`), so unpickling it needs no kafkabatch."""
    import sys

    try:
        import kafkabatch
    except BaseException as error:  # any failure to import is the answer
        return sys.executable, sys.version.split()[0], None, f"{type(error).__name__}: {error}"
    return sys.executable, sys.version.split()[0], str(kafkabatch.__version__), None


def check_worker_import(spark: Any) -> None:
    """Run one task in ``spark``'s Python workers and raise
    :class:`WorkerImportError` unless they import kafkabatch
    ``kafkabatch.__version__``. Cached per Spark application.

    >>> kbs.check_worker_import(spark)                                      # doctest: +SKIP
    """
    import sys

    from pyspark import cloudpickle  # the pickler PySpark ships functions with

    try:
        context = spark.sparkContext
        application = f"{context.applicationId}"
    except Exception:  # Spark Connect: no SparkContext (nor RDDs) on the client
        log.info("kafkabatch.spark: Spark Connect session, the worker check is skipped")
        return
    if application in _CHECKED_APPLICATIONS:
        return
    import pickle

    # By value, not by reference to kafkabatch.spark: a worker without
    # kafkabatch must still be able to run it and say so.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        probe = pickle.loads(cloudpickle.dumps(_probe_worker))
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    try:
        executable, version, found, error = context.parallelize([0], 1).map(probe).collect()[0]
    except Exception as failure:
        first = next((line for line in str(failure).splitlines() if line.strip()), type(failure).__name__)
        raise WorkerImportError(
            f"kafkabatch.spark.register: Spark could not run a Python task to check its workers ({first[:300]}). "
            f"Set PYSPARK_PYTHON (or spark.pyspark.python) to a Python with kafkabatch {kb.__version__} installed "
            f"(this driver runs {sys.executable}); or skip the check with register(spark, check_workers=False)"
        ) from None
    if found != kb.__version__:
        problem = f"can't import kafkabatch ({error})" if found is None else f"import kafkabatch {found}"
        raise WorkerImportError(
            f"Spark's Python workers ({executable}, Python {version}) {problem}, but this driver runs kafkabatch "
            f"{kb.__version__} ({sys.executable}): set PYSPARK_PYTHON (or spark.pyspark.python) to a Python with "
            f"kafkabatch {kb.__version__} installed, or install that wheel on the cluster's workers. "
            "Skip this check with register(spark, check_workers=False) or spark.kafkabatch.checkWorkers=false"
        )
    _CHECKED_APPLICATIONS.add(application)


# --------------------------------------------------------------------------
# UDFs over columns of raw batches
# --------------------------------------------------------------------------

_DECODE_KWARGS = ("topic", "partition", *logdir.DECODE_OPTIONS)


def _check_decode_kwargs(options: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(options) - set(_DECODE_KWARGS))
    if unknown:
        raise TypeError(
            f"unexpected option(s) {', '.join(unknown)}; the options are those of "
            f"kafkabatch.decode(): {', '.join(_DECODE_KWARGS)}"
        )
    if options.get("on_error", "raise") not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', not {options['on_error']!r}")
    if options.get("isolation", "read_uncommitted") not in _ISOLATIONS:
        raise ValueError(f"isolation must be read_uncommitted or read_committed, not {options['isolation']!r}")
    threads = options.get("threads")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ValueError(f"threads must be a positive integer (default: the task's CPUs), not {threads!r}")
    return {k: v for k, v in options.items() if not (k == "isolation" and v == "read_uncommitted")}


def _as_buffer(value: Any) -> Any:
    """A pyarrow binary scalar, bytes or bytearray as something the decoder
    reads without copying; None for a null cell (None, a null scalar,
    pandas' NA)."""
    if isinstance(value, pa.Scalar):
        buffer = value.as_buffer()
        return None if buffer is None else memoryview(buffer).cast("B")
    if value is None or isinstance(value, (bytes, bytearray, memoryview)):
        return value
    if type(value).__name__ in ("NAType", "NaTType") or (isinstance(value, float) and value != value):
        return None  # pandas' missing-value markers
    return value


def _decode_to_list(values: Iterable[Any], options: dict[str, Any]) -> pa.ListArray:
    """One list of records per input value (null in, null out)."""
    import numpy as np

    options = {**options, "threads": _task_threads(options.get("threads"))}
    tables = []
    lengths = []
    nulls = []
    for value in values:
        data = _as_buffer(value)
        if data is None:
            lengths.append(0)
            nulls.append(True)
            continue
        table = kb.decode(data, **options)
        tables.append(table)
        lengths.append(table.num_rows)
        nulls.append(False)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] > np.iinfo(np.int32).max:
        raise ValueError(
            "more than 2**31 records in one Arrow batch of input rows; "
            "lower spark.sql.execution.arrow.maxRecordsPerBatch"
        )
    batches = [to_spark_arrow(b) for t in tables for b in t.to_batches()]
    if batches:
        records = pa.Table.from_batches(batches, schema=SPARK_ARROW_SCHEMA).combine_chunks().to_struct_array()
        values = records.chunk(0) if records.num_chunks == 1 else pa.concat_arrays(records.chunks)
    else:  # every cell null or empty (pyarrow 18 can't make a struct array of a table with no chunks)
        values = pa.array([], type=_SPARK_RECORD_STRUCT)
    return pa.ListArray.from_arrays(
        pa.array(offsets.astype(np.int32)), values, type=_SPARK_RECORDS_LIST, mask=pa.array(nulls, type=pa.bool_())
    )


def decode_batches(col: Any, **options: Any) -> Any:
    """A column of ``array<struct<key, value, topic, partition, offset,
    timestamp, timestampType, headers>>``: the records of each row's raw
    Kafka batches (a ``pandas_udf``; null in, null out).

    ``options`` are those of :func:`kafkabatch.decode` (``topic``,
    ``partition``, ``validate_crc``, ``include_control``, ``isolation``,
    ``on_error``, ``max_decompressed_size``).

    >>> from pyspark.sql import functions as F
    >>> raw = spark.read.format("binaryFile").load("/data/orders-0/*.log")   # doctest: +SKIP
    >>> records = raw.select(F.explode(kbs.decode_batches("content", topic="orders", partition=0)).alias("r")) \\
    ...              .select("r.*")                                             # doctest: +SKIP
    """
    import pandas as pd
    from pyspark.sql.functions import pandas_udf

    opts = _check_decode_kwargs(options)

    def decode_kafka_batches(content: pd.Series) -> pd.Series:
        import pandas as pd

        records = pd.arrays.ArrowExtensionArray(_decode_to_list(content, opts))
        if records.isna().any():
            # Spark converts the result value by value and only knows None as
            # null: pd.NA would fail the task ("'NAType' object is not iterable").
            return pd.Series(records.to_numpy(dtype=object, na_value=None), index=content.index, dtype=object)
        return pd.Series(records, index=content.index)

    return pandas_udf(decode_kafka_batches, ArrayType(KAFKA_SCHEMA))(col)  # type: ignore[call-overload]


def decode_batches_arrow(col: Any, **options: Any) -> Any:
    """Like :func:`decode_batches`, as an Arrow UDF (``pyspark.sql.functions.arrow_udf``,
    PySpark 4.1+): Arrow in, Arrow out, no pandas.

    >>> raw.select(kbs.decode_batches_arrow("content", topic="orders", partition=0))  # doctest: +SKIP
    """
    opts = _check_decode_kwargs(options)
    try:
        from pyspark.sql.functions import arrow_udf
    except ImportError:
        import pyspark

        raise RuntimeError(
            f"decode_batches_arrow needs PySpark 4.1 or later (pyspark.sql.functions.arrow_udf); "
            f"this is PySpark {pyspark.__version__}: use decode_batches or explode_batches"
        ) from None

    def decode_kafka_batches(content: pa.Array) -> pa.Array:
        return _decode_to_list(content, opts)

    return arrow_udf(decode_kafka_batches, ArrayType(KAFKA_SCHEMA))(col)  # type: ignore[call-overload]


#: ``kbs.parse_values(col, format=..., schema=..., schema_registry=..., on_value_error=..., subject=...)``:
#: see :func:`kafkabatch.sparkvalues.parse_values_udf`.
parse_values = sparkvalues.parse_values_udf


def explode_batches(
    df: Any,
    column: str,
    *,
    keep: Iterable[str] = (),
    path_column: str | None = None,
    max_records_per_batch: int = DEFAULT_MAX_RECORDS_PER_BATCH,
    **options: Any,
) -> Any:
    """One row per record of the raw Kafka batches in ``df[column]``
    (``df.mapInArrow``: Arrow in, Arrow out), with the columns of
    :data:`KAFKA_SCHEMA` followed by the input columns named in ``keep``.

    ``path_column`` names a column of file paths (``binaryFile``'s
    ``path``): topic and partition then come from each file's folder
    ``<topic>-<partition>`` unless given in ``options``. Other ``options``
    are those of :func:`kafkabatch.decode`. Null inputs give no rows.

    >>> raw = spark.read.format("binaryFile").load("/data/*/*.log")           # doctest: +SKIP
    >>> kbs.explode_batches(raw, "content", path_column="path", keep=["path"]).count()  # doctest: +SKIP
    12345
    """
    opts = _check_decode_kwargs(options)
    keep = list(keep)
    names = set(df.columns)
    for name in [column, *keep, *([path_column] if path_column else [])]:
        if name not in names:
            raise ValueError(f"no column {name!r} in the DataFrame (columns: {', '.join(df.columns)})")
    clash = sorted(set(keep) & set(KAFKA_SCHEMA.fieldNames()))
    if clash:
        raise ValueError(f"kept column(s) {', '.join(clash)} clash with the record columns; rename them first")
    if max_records_per_batch <= 0:
        raise ValueError("max_records_per_batch must be positive")
    out_schema = StructType(KAFKA_SCHEMA.fields + [df.schema[name] for name in keep])
    wanted = list(dict.fromkeys([column, *keep, *([path_column] if path_column else [])]))

    def explode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import numpy as np

        threads = _task_threads(opts.get("threads"))
        for rb in batches:
            content = rb.column(column)
            paths = rb.column(path_column).to_pylist() if path_column else None
            kept = [rb.column(name) for name in keep]
            schema = pa.schema(list(SPARK_ARROW_SCHEMA) + [pa.field(name, col.type) for name, col in zip(keep, kept)])
            for i in range(rb.num_rows):
                data = _as_buffer(content[i])
                if data is None:
                    continue
                row_opts = {**opts, "threads": threads}
                if (
                    paths is not None
                    and paths[i] is not None
                    and (row_opts.get("topic") is None or row_opts.get("partition") is None)
                ):
                    found = kb.topic_partition_from_path(_path_text(paths[i]))
                    if found is not None:
                        if row_opts.get("topic") is None:
                            row_opts["topic"] = found[0]
                        if row_opts.get("partition") is None:
                            row_opts["partition"] = found[1]
                table = kb.decode(data, **row_opts)
                for batch in table.to_batches(max_chunksize=max_records_per_batch):
                    batch = to_spark_arrow(batch)
                    if kept:
                        repeat = pa.array(np.full(batch.num_rows, i, dtype=np.int64))
                        batch = pa.RecordBatch.from_arrays(
                            list(batch.columns) + [col.take(repeat) for col in kept], schema=schema
                        )
                    yield batch

    return df.select(*wanted).mapInArrow(explode, out_schema)


def _path_text(path: str) -> str:
    """A local path from a Spark file URI (``file:/a/b`` → ``/a/b``); other URIs as they are."""
    return logdir._local_path(path) if path.startswith("file:") else path
